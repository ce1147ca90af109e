"""The peers: DBOS Transact (`dbos_step`) and Powertools for AWS Lambda idempotency (`powertools_idempotent`),
run in the same faults as the other systems, on real local backends (SQLite or PostgreSQL, a real redis-server).

Each scenario hands a peer a `PeerJob` (the job id, the request, the one call that sends it: `gcp_resource`,
`calendar`); `dbos_step` and `powertools_idempotent` run it as their documentation recommends; `run_peer` leaves the
peer's own record in the cell beside the scenario worker's outcome file, `observe_record` has the harness read that
record once more after the last worker exited, and `peer_services` starts the backends a run needs. A scenario's table of systems has one entry per peer that calls its adapter. The package root loads
neither library: each worker imports only its own peer. Nothing here judges an outcome.
"""

from experiments.peers.job import (AFTER_RUN_FILE, DBOS_STEP, IN_PROGRESS, POWERTOOLS_IDEMPOTENT, REDIS_URL_ENV,
                                   SCENARIOS, SYSTEMS, VALIDATION_ERROR, WORKFLOW_ERROR, PeerJob, record_file)
from experiments.peers.provenance import peers_provenance
from experiments.peers.run import observe_record, peer_services, run_peer

__all__ = ["AFTER_RUN_FILE", "DBOS_STEP", "IN_PROGRESS", "POWERTOOLS_IDEMPOTENT", "REDIS_URL_ENV", "SCENARIOS",
           "SYSTEMS", "VALIDATION_ERROR", "WORKFLOW_ERROR", "PeerJob", "observe_record", "peer_services",
           "peers_provenance", "record_file", "run_peer"]
