"""The two scored comparisons of a system against the service: its answer, and its proof."""

from __future__ import annotations

from .model import GroundTruth, Proof, RecordSays


def answer_matches(claim: bool | None, truth: GroundTruth, *, exactly_one: bool) -> bool | None:
    """Does the outcome's claim (landed / not landed) agree with the service? None when the outcome cannot say.

    Landed means one agent write on the calendar (a second event is not the booking that was asked for), and at
    least one on the object store, where every upload is a new generation.
    """
    if claim is None:
        return None
    count = len(truth.agent_writes)
    if not claim:
        return count == 0
    return count == 1 if exactly_one else count >= 1


def _ids(writes: tuple[str, ...]) -> str:
    return "[" + ", ".join(writes) + "]"


def prove(record: RecordSays, truth: GroundTruth) -> Proof:
    """One rule for every scenario: actor named, checks recorded, and the record's list equals the service's."""
    missing = []
    if not record.actor:
        missing.append("the record names no actor")
    if not record.checks:
        missing.append("the record holds no check")
    elif record.unchecked_sends:
        missing.append(f"{record.unchecked_sends} send(s) recorded without their check")
    if record.writes is None:
        missing.append(f"the record cannot say which writes landed: {record.reason}")
    elif sorted(record.writes) != sorted(truth.agent_writes):
        missing.append(f"the record says {_ids(record.writes)}, the service holds {_ids(truth.agent_writes)}")
    if missing or record.writes is None:  # a None `writes` is already among the missing
        return Proof(False, "; ".join(missing))
    return Proof(True, f"{record.actor} named, {len(record.checks)} check(s) recorded, and the record's "
                       f"{_ids(record.writes)} equals the service's list")
