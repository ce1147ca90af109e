"""The outcome vocabulary shared by the gate, the baselines and the judge, and what each outcome claims."""

from __future__ import annotations

COMMITTED = "COMMITTED"
COMMITTED_BY_RETRY = "COMMITTED_BY_RETRY"
COMMITTED_ON_QUERY = "COMMITTED_ON_QUERY"
REAPPLIED_AFTER_QUERY = "REAPPLIED_AFTER_QUERY"
DUPLICATE_IGNORED = "DUPLICATE_IGNORED"
AMBIGUOUS = "AMBIGUOUS"
IN_FLIGHT = "IN_FLIGHT"

LANDED = frozenset({
    "WRITTEN", "BOOKED", "ALREADY_APPLIED", "ALREADY_EXISTS_409", "FOUND_BY_LOOKUP",
    COMMITTED, COMMITTED_BY_RETRY, COMMITTED_ON_QUERY, REAPPLIED_AFTER_QUERY, DUPLICATE_IGNORED,
})
NOT_LANDED = frozenset({"PRECONDITION_FAILED"})
CANNOT_SAY = frozenset({AMBIGUOUS, IN_FLIGHT})
REFUSED_PREFIX = "REFUSED:"


class UnknownOutcome(ValueError):
    """An outcome string outside the vocabulary: a judge must not guess what it claims."""


def refused(code: str) -> str:
    """The outcome string of a refusal with a machine-readable code."""
    return REFUSED_PREFIX + code


def landed(outcome: str) -> bool | None:
    """What an outcome claims about the effect: landed (True), not landed (False) or cannot say (None)."""
    if not isinstance(outcome, str):
        raise UnknownOutcome(f"outcome must be a string, got {type(outcome).__name__}")
    if outcome in LANDED:
        return True
    if outcome in NOT_LANDED or (outcome.startswith(REFUSED_PREFIX) and len(outcome) > len(REFUSED_PREFIX)):
        return False
    if outcome in CANNOT_SAY:
        return None
    raise UnknownOutcome(f"unknown outcome {outcome!r}")
