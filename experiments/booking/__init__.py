"""The calendar scenario's parts: booking requests and their lease, the systems under test, the worker process,
the faults, the grading against the calendar, and the raced-dispatch trials.

The runner is `python -m experiments.scenario_calendar`; each worker is `python -m experiments.booking.worker`.
Every process builds its Calendar client with experiments.clients.calendar_service from the environment the runner
set up through experiments.live.services.
"""

from experiments.booking.faults import EXTRA_FAULTS, FAULTS, PUBLISHED_FAULTS, SYSTEMS, Fault, fault_named
from experiments.booking.grade import grade
from experiments.booking.request import (AGENT, CUSTOMER_SUMMARY, RequestLease, baseline_event_id, customer_event,
                                         event_body, new_request, read_request, rfc3339, write_request)

__all__ = [
    "AGENT", "CUSTOMER_SUMMARY", "EXTRA_FAULTS", "FAULTS", "PUBLISHED_FAULTS", "SYSTEMS", "Fault", "RequestLease",
    "baseline_event_id", "customer_event", "event_body", "fault_named", "grade", "new_request", "read_request",
    "rfc3339", "write_request",
]
