"""The judge's reading of every outcome string a worker reports: landed, not landed, or cannot say.

This table is the pipeline's own: the library keeps its statuses and the experiments keep the baselines'
vocabulary, and neither decides what an outcome claims. A new outcome needs a row here before a run uses it;
until then the judge refuses the file rather than guess.
"""

from __future__ import annotations

from .load import Node, quote

LANDED = frozenset({
    "WRITTEN", "BOOKED", "ALREADY_APPLIED", "ALREADY_EXISTS_409", "FOUND_BY_LOOKUP",
    "COMMITTED", "COMMITTED_BY_RETRY", "COMMITTED_ON_QUERY", "REAPPLIED_AFTER_QUERY", "DUPLICATE_IGNORED",
})
NOT_LANDED = frozenset({"PRECONDITION_FAILED"})
REFUSED_PREFIX = "REFUSED:"  # REFUSED:<reason> never landed, whatever the reason
# IN_PROGRESS: a Powertools idempotency record still in progress refused the call; WORKFLOW_ERROR: DBOS handed back
# the exception its workflow recorded; IDEMPOTENCY_VALIDATION_ERROR: Powertools' record holds another payload's
# hash. Each is an answer about a record, not from the service.
CANNOT_SAY = frozenset({"AMBIGUOUS", "IN_FLIGHT", "IN_PROGRESS", "WORKFLOW_ERROR", "IDEMPOTENCY_VALIDATION_ERROR"})


class UnknownOutcome(ValueError):
    """An outcome outside the table: the judge must not guess what it claims."""


def landed(outcome: str) -> bool | None:
    """What an outcome claims about its effect: landed (True), not landed (False), or cannot say (None)."""
    if outcome in LANDED:
        return True
    if outcome in NOT_LANDED or (outcome.startswith(REFUSED_PREFIX) and len(outcome) > len(REFUSED_PREFIX)):
        return False
    if outcome in CANNOT_SAY:
        return None
    raise UnknownOutcome(f"unknown outcome {quote(outcome)}")


def claim(node: Node) -> bool | None:
    """The claim of an outcome read from a file; an unknown one is bad input naming its JSON path."""
    outcome = node.expect("string")
    try:
        return landed(outcome)
    except UnknownOutcome as exc:
        raise node.bad(str(exc)) from None


def answer_word(landed_claim: bool | None) -> str:
    """The calendar files' `answer` for a claim: booked, not_booked or unknown."""
    return {True: "booked", False: "not_booked", None: "unknown"}[landed_claim]
