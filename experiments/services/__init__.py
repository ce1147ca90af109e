"""Local stand-ins for the services the experiments drive, each reached over loopback HTTP by a real client.

| role | stand-in | reached by |
|---|---|---|
| object store | `fake_gcs()`: the fake-gcs-server binary, its own process | google-cloud-storage |
| object store wire log and cut | `recording_proxy(upstream, log_path)` | google-cloud-storage |
| calendar | `calendar_standin(log_path)`: the project's Calendar v3 stand-in, in a thread | google-api-python-client |
| hazard-test writes | `ledger_service()`: slow writes that outlive their sender, optional fences, apply counts, in a thread | urllib |
| model | `messages_stub()`: Messages API answers with scripted tool calls, in a thread | anthropic |
| journal database | `TempCluster()`: a throwaway PostgreSQL cluster (initdb, pg_ctl), its own processes | psycopg |

The in-thread servers log a failed exchange (a client SIGKILLed mid-request, an upstream already stopped) to
`<write log stem>.errors.log` beside their write log, never into the hosting process's output.
"""

from experiments.services.calendar_standin import CalendarStandin, calendar_standin
from experiments.services.fake_gcs import FakeGcs, fake_gcs
from experiments.services.gcs_proxy import RecordingProxy, recording_proxy
from experiments.services.ledger import Ledger, ledger_service
from experiments.services.messages_stub import MessagesStub, messages_stub
from experiments.services.postgres import PgBinariesMissing, TempCluster

__all__ = [
    "CalendarStandin", "FakeGcs", "Ledger", "MessagesStub", "PgBinariesMissing", "RecordingProxy", "TempCluster",
    "calendar_standin", "fake_gcs", "ledger_service", "messages_stub", "recording_proxy",
]
