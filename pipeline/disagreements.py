"""Stored verdicts against derived ones: every column a file stores that the pipeline also derives is compared,
and each difference becomes one `Disagreement`. The published files store all of them; the project's raw cells
store none, so they have nothing to disagree with."""

from __future__ import annotations

from typing import Any

from .load import Node
from .model import Cell, Disagreement
from .outcomes import answer_word

_MISSING = object()


def _stored(cell: Node, column: str) -> Any:
    """The stored value at a dotted column, or _MISSING when the file does not store it."""
    value: Any = cell.value
    for key in column.split("."):
        if not isinstance(value, dict) or key not in value:
            return _MISSING
        value = value[key]
    return value


def gcp_ground_truth(cell: Cell) -> str:
    """The published gcp `ground_truth` line, rebuilt from the derived ground truth."""
    truth = cell.truth
    live = (f"live generation {truth.live_generation} deployed by {truth.live_owner}"
            if truth.live_generation is not None else "no live object")
    return f"{len(truth.agent_writes)} agent write(s) {list(truth.agent_writes)!r}; {live}"


def _ids(values: Any) -> Any:
    """An id list compared as a set (the order of a listing is not a verdict)."""
    return sorted(values) if isinstance(values, list) else values


def _checks(cell: Cell) -> list[tuple[str, Any, str, bool]]:
    """(stored column, derived value, why, compare as id sets) for every column this cell's file may store."""
    truth, record = cell.truth, cell.record
    source = f"the service's {truth.source}"
    proof = f"one proof rule: {cell.proof.reason}"
    common = [
        ("outcome", cell.outcome, f"the worker's own outcome file {cell.outcome_source}", False),
        ("invariant_held", cell.invariant_held, f"{cell.agent_writes} agent write(s) in {source}, {cell.want} wanted",
         False),
        ("can_prove_what_happened", cell.can_prove, proof, False),
    ]
    if cell.seconds_derived:
        common.append(("seconds_to_settle", cell.seconds_to_settle, cell.seconds_basis, False))
    if cell.scenario == "calendar":
        if cell.receipt is not None:
            common.append(("receipt.valid", cell.receipt.get("valid"), "verify() over the receipt bundle", False))
        return common + [
            ("answer", answer_word(cell.landed), f"what {cell.outcome} claims", False),
            ("answer_matches_calendar", cell.answer_matches, f"{cell.outcome} against {source}", False),
            ("ground_truth.agent_events", list(truth.agent_writes), source, True),
            ("ground_truth.other_events", list(truth.other_events), source, True),
            ("ground_truth.double_booked", truth.double_booked, source, False),
            ("ground_truth.want_agent_events", cell.want, "the fault catalogue", False),
            ("crash_fired", cell.crash_fired, "the first worker's exit code", False),
            ("conflict_recorded_at_recovery", cell.conflict_recorded, "the receipt's re-check at recovery", False),
        ]
    says = "the system's own record alone"
    if cell.receipt is not None:
        common.append(("ids.receipt.valid", cell.receipt.get("valid"), "verify() over the journal", False))
    return common + [
        ("ids.agent_write_generations", list(truth.agent_writes), source, False),
        ("ids.live_generation", truth.live_generation, source, False),
        ("ids.all_generations", [list(pair) for pair in truth.writes], source, False),
        ("answer_matches_service", cell.answer_matches, f"{cell.outcome} against {source}", False),
        ("ground_truth", gcp_ground_truth(cell), source, False),
        ("want_agent_writes", cell.want, "the fault catalogue", False),
        ("want_live_writer", truth.want_owner, "the fault catalogue", False),
        ("record_says.actor", record.actor, says, False),
        ("record_says.checks", list(record.checks), says, False),
        ("record_says.agent_writes", None if record.writes is None else list(record.writes), says, True),
    ]


def disagreements(node: Node, cell: Cell) -> tuple[Disagreement, ...]:
    """Every stored verdict of one cell that differs from the derived one, in column order."""
    found = []
    for column, derived, why, as_ids in _checks(cell):
        stored = _stored(node, column)
        if stored is _MISSING:
            continue
        same = _ids(stored) == _ids(derived) if as_ids else stored == derived and type(stored) is type(derived)
        if column == "seconds_to_settle" and isinstance(stored, (int, float)) and not isinstance(stored, bool):
            same = round(float(stored), 1) == derived
        if not same:
            found.append(Disagreement(node.file, cell.fault, cell.system, column, stored, derived, why))
    return tuple(found)
