"""The peers: DBOS Transact (`dbos_step`) and Powertools for AWS Lambda idempotency (`powertools_idempotent`),
run in the same faults as the other systems, on real local backends (SQLite or PostgreSQL, a real redis-server).

Each scenario hands a peer a `PeerJob` (the job id, the request, the one call that sends it); `dbos_step` and
`powertools_idempotent` run it as their documentation recommends; `worker` is the process entry point that leaves
the outcome file and the peer's own record in the cell. The package root loads neither library: each
worker imports only its own peer. Nothing here judges an outcome.
"""

from experiments.peers.job import (DBOS_STEP, IN_PROGRESS, POWERTOOLS_IDEMPOTENT, REDIS_URL_ENV, SCENARIOS, SYSTEMS,
                                   VALIDATION_ERROR, WORKFLOW_ERROR, PeerJob, record_file)
from experiments.peers.provenance import peers_provenance
from experiments.peers.run import peer_services, run_peer

__all__ = ["DBOS_STEP", "IN_PROGRESS", "POWERTOOLS_IDEMPOTENT", "REDIS_URL_ENV", "SCENARIOS", "SYSTEMS",
           "VALIDATION_ERROR", "WORKFLOW_ERROR", "PeerJob", "peer_services", "peers_provenance", "record_file", "run_peer"]
