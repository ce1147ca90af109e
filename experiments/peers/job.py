"""What a scenario hands a peer for one job, and the outcome strings the peers add to the vocabulary.

A peer never sees the scenario's service: it gets the job's id, the request as plain JSON (the input DBOS records,
the payload Powertools hashes and validates) and the one call that sends it. That call reaches the experiments'
crash points itself, turns a refusal by the service into the scenario's own outcome string, and raises when the
service's answer was lost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DBOS_STEP, POWERTOOLS_IDEMPOTENT = "dbos_step", "powertools_idempotent"
SYSTEMS = (DBOS_STEP, POWERTOOLS_IDEMPOTENT)
SCENARIOS = ("gcp_resource", "calendar")
# The run's redis-server, for the Powertools workers (an address on loopback, no password).
REDIS_URL_ENV = "INTERLOCK_REDIS_URL"

Send = Callable[[dict[str, Any]], tuple[str, dict[str, Any]]]

# Outcome strings only the peers produce (the pipeline's vocabulary has a row for each):
# the idempotency record of an earlier invocation is still INPROGRESS, so Powertools refused to run the call.
IN_PROGRESS = "IN_PROGRESS"
# the durable workflow ended in ERROR: DBOS returns the recorded exception, not an answer from the service.
WORKFLOW_ERROR = "WORKFLOW_ERROR"
# Powertools refused the call because the request's hash differs from the one its record holds (payload
# validation): an error about the record, not an answer from the service.
VALIDATION_ERROR = "IDEMPOTENCY_VALIDATION_ERROR"


@dataclass(frozen=True)
class PeerJob:
    """One job as a peer runs it: `job_id` is the DBOS workflow id and the Powertools idempotency key."""

    job_id: str
    request: dict[str, Any]
    send: Send


# Where each worker names its job (so the harness can read the peer's record after the run), and where the
# harness leaves that reading.
KEY_FILE, AFTER_RUN_FILE = "peer_key.json", "peer_record_after_run.json"


def record_file(phase: str) -> str:
    """Where a worker of `phase` leaves the peer's record."""
    return f"peer_record_{phase}.json"
