"""The baselines' outcome strings (stored as the published files store them) and what a worker answers with.

The gate's own statuses come from the library; these are the words of the systems the experiments compare it
with. The pipeline keeps its own mapping of every outcome to landed / not landed / cannot say: a worker's answer
below is only what that worker claims, and the pipeline checks it against the service.
"""

from __future__ import annotations

WRITTEN = "WRITTEN"
ALREADY_APPLIED = "ALREADY_APPLIED"
PRECONDITION_FAILED = "PRECONDITION_FAILED"
BOOKED = "BOOKED"
ALREADY_EXISTS_409 = "ALREADY_EXISTS_409"
FOUND_BY_LOOKUP = "FOUND_BY_LOOKUP"
REFUSED = "REFUSED:"

_CLAIMS_LANDED = frozenset({WRITTEN, ALREADY_APPLIED, BOOKED, ALREADY_EXISTS_409, FOUND_BY_LOOKUP, "COMMITTED",
                            "COMMITTED_BY_RETRY", "COMMITTED_ON_QUERY", "REAPPLIED_AFTER_QUERY", "DUPLICATE_IGNORED"})
# The peers' own cannot-say answers (experiments.peers): an idempotency record still in progress, a workflow that
# ended in error, a record whose payload hash does not match.
_CANNOT_SAY = frozenset({"AMBIGUOUS", "IN_FLIGHT", "IN_PROGRESS", "WORKFLOW_ERROR", "IDEMPOTENCY_VALIDATION_ERROR"})


class UnknownOutcome(ValueError):
    """An outcome string outside the experiments' vocabulary: a check must not guess what it claims."""


def claims_landed(outcome: str) -> bool | None:
    """What a worker's outcome claims: landed (True), not landed (False) or cannot say (None), for the
    experiments' own checks (the explorer); the pipeline judges with its own mapping."""
    status = str(getattr(outcome, "value", outcome))
    if status in _CLAIMS_LANDED:
        return True
    if status == PRECONDITION_FAILED or (status.startswith(REFUSED) and len(status) > len(REFUSED)):
        return False
    if status in _CANNOT_SAY:
        return None
    raise UnknownOutcome(f"unknown outcome {outcome!r}")


def refused(reason: str) -> str:
    """A refusal outcome, `REFUSED:<reason>`."""
    return REFUSED + reason


def answer(outcome: str) -> str:
    """What a worker tells its caller: `booked`, `not_booked`, or `unknown` when its own outcome cannot say."""
    status = str(getattr(outcome, "value", outcome))
    if status in _CANNOT_SAY:
        return "unknown"
    return "booked" if status in _CLAIMS_LANDED else "not_booked"
