"""Stored verdicts against derived ones: every column a file stores that the pipeline also derives is compared,
and each difference becomes one `Disagreement`. The published files store all of them; the project's raw cells
store none, so they have nothing to disagree with."""

from __future__ import annotations

from typing import Any, NamedTuple

from .load import Node
from .model import Cell, Disagreement
from .outcomes import answer_word
from .times import duration


class _Column(NamedTuple):
    """A verdict a file may store: its dotted key and JSON type, the value derived for it and what that rests on."""

    key: str
    kind: str  # the JSON type a stored value must have
    derived: Any
    why: str
    nullable: bool = False  # null is a verdict here: an answer that cannot say, no live object, no list of writes
    as_ids: bool = False  # a list of id strings, compared as a set


def _stored(cell: Node, column: _Column) -> Node | None:
    """The stored verdict of a column, of its JSON type, or None when the file does not store it.

    Only a missing key is not stored: a value on the way that is not an object, a verdict of the wrong type, or a
    settle time no run could take, is bad input naming its path, never a column left out of the comparison.
    """
    node = cell
    for key in column.key.split("."):
        if not node.has(key):
            return None
        node = node.at(key)
    node.expect(column.kind, nullable=column.nullable)
    if column.key == "seconds_to_settle":
        duration(node)  # raises on a figure no run could have measured
    if column.as_ids and node.value is not None:
        for item in node.items():
            item.expect("string")
    return node


def gcp_ground_truth(cell: Cell) -> str:
    """The published gcp `ground_truth` line, rebuilt from the derived ground truth."""
    truth = cell.truth
    live = (f"live generation {truth.live_generation} deployed by {truth.live_owner}"
            if truth.live_generation is not None else "no live object")
    return f"{len(truth.agent_writes)} agent write(s) {list(truth.agent_writes)!r}; {live}"


def _ids(values: list[str] | None) -> list[str] | None:
    """An id list compared as a set (the order of a listing is not a verdict)."""
    return sorted(values) if values is not None else None


def _columns(cell: Cell, stored: Node) -> list[_Column]:
    """Every column this cell's file may store, with the value derived for it."""
    truth, record = cell.truth, cell.record
    # what the fault wants: in words in the published files, as a count where `judge --json` names it
    want = (_Column("want", "string", cell.wants, "the fault catalogue") if isinstance(stored.value.get("want"), str)
            else _Column("want", "integer", cell.want, "the fault catalogue"))
    source = f"the service's {truth.source}"
    proof = f"one proof rule: {cell.proof.reason}"
    common = [
        _Column("outcome", "string", cell.outcome, f"the worker's own outcome file {cell.outcome_source}"),
        want,
        _Column("invariant_held", "boolean", cell.invariant_held,
                f"{cell.agent_writes} agent write(s) in {source}, {cell.want} wanted"),
        _Column("can_prove_what_happened", "boolean", cell.can_prove, proof),
        # a cell stored under the names `judge --json` gives its verdicts
        _Column("agent_writes", "integer", cell.agent_writes, source),
        _Column("answer_matches", "boolean", cell.answer_matches, f"{cell.outcome} against {source}", nullable=True),
        _Column("can_prove", "boolean", cell.can_prove, proof),
    ]
    if cell.seconds_derived:
        common.append(_Column("seconds_to_settle", "number", cell.seconds_to_settle, cell.seconds_basis))
    if cell.scenario == "calendar":
        if cell.receipt is not None:
            common.append(_Column("receipt.valid", "boolean", cell.receipt.get("valid"),
                                  "verify() over the receipt bundle"))
        return common + [
            _Column("answer", "string", answer_word(cell.landed), f"what {cell.outcome} claims"),
            _Column("answer_matches_calendar", "boolean", cell.answer_matches, f"{cell.outcome} against {source}",
                    nullable=True),
            _Column("ground_truth.agent_events", "array", list(truth.agent_writes), source, as_ids=True),
            _Column("ground_truth.other_events", "array", list(truth.other_events), source, as_ids=True),
            _Column("ground_truth.double_booked", "boolean", truth.double_booked, source),
            _Column("ground_truth.want_agent_events", "integer", cell.want, "the fault catalogue"),
            _Column("crash_fired", "boolean", cell.crash_fired, "the first worker's exit code"),
            _Column("conflict_recorded_at_recovery", "boolean", cell.conflict_recorded,
                    "the receipt's re-check at recovery"),
        ]
    says = "the system's own record alone"
    if cell.receipt is not None:
        common.append(_Column("ids.receipt.valid", "boolean", cell.receipt.get("valid"), "verify() over the journal"))
    return common + [
        _Column("ids.agent_write_generations", "array", list(truth.agent_writes), source),
        _Column("ids.live_generation", "string", truth.live_generation, source, nullable=True),
        _Column("ids.all_generations", "array", [list(pair) for pair in truth.writes], source),
        _Column("answer_matches_service", "boolean", cell.answer_matches, f"{cell.outcome} against {source}",
                nullable=True),
        _Column("ground_truth", "string", gcp_ground_truth(cell), source),
        _Column("want_agent_writes", "integer", cell.want, "the fault catalogue"),
        _Column("want_live_writer", "string", truth.want_owner, "the fault catalogue", nullable=True),
        _Column("record_says.actor", "string", record.actor, says, nullable=True),
        _Column("record_says.checks", "array", list(record.checks), says),
        _Column("record_says.unresolved_sends", "integer", record.unresolved_sends, says),
        _Column("record_says.chain_valid", "boolean", record.chain_valid, says, nullable=True),
        _Column("record_says.agent_writes", "array", None if record.writes is None else list(record.writes), says,
                nullable=True, as_ids=True),
    ]


def _same(column: _Column, stored: Any) -> bool:
    """The stored verdict equals the derived one: as id sets, as seconds to 0.1 s, or as JSON values of one type."""
    if column.as_ids:
        return _ids(stored) == _ids(column.derived)
    if column.key == "seconds_to_settle":
        return bool(round(stored, 1) == column.derived)
    return bool(stored == column.derived and type(stored) is type(column.derived))


def disagreements(node: Node, cell: Cell) -> tuple[Disagreement, ...]:
    """Every stored verdict of one cell that differs from the derived one, in column order."""
    found = []
    for column in _columns(cell, node):
        stored = _stored(node, column)
        if stored is not None and not _same(column, stored.value):
            found.append(Disagreement(node.file, cell.fault, cell.system, column.key, stored.value, column.derived,
                                      column.why))
    return tuple(found)
