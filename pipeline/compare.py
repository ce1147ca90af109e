"""Published vs ours: the re-judged published run set against a judged scenario, cell by cell, each difference
explained from the artifacts."""

from __future__ import annotations

from typing import Any, Mapping

from .model import Cell, Difference, Scenario
from .published import published_runs
from .scenarios import CALENDAR

COLUMNS = ("outcome", "agent_writes", "want", "invariant_held", "answer_matches", "can_prove", "seconds_to_settle")


def _ours(cell: Cell, column: str) -> Any:
    return cell.as_json()[column]


def _explain(scenario: Scenario, cell: Cell, column: str, published: Any, row: Mapping[str, Any]) -> str:
    """Why a column reads differently here than on the published page, in terms of this cell's artifacts."""
    same_run = scenario.provenance.published
    where = "re-judged from the published artifacts" if same_run else f"in {scenario.source}"
    truth = cell.truth
    if column == "can_prove":
        return f"{where}: proof here is {'yes' if cell.can_prove else 'no'} because {cell.proof.reason}"
    if column == "outcome":
        return f"{where}, the restarted worker reported {cell.outcome}; the published run reported {published}"
    if column in ("agent_writes", "invariant_held"):
        held = "held" if cell.invariant_held else "was violated"
        return (f"{where}, the service holds {cell.agent_writes} agent write(s) "
                f"[{', '.join(truth.agent_writes)}] against {cell.want} wanted, so the invariant {held}")
    if column == "answer_matches":
        return (f"{where}, {cell.outcome} claims {'landed' if cell.landed else 'not landed' if cell.landed is False else 'nothing'}"
                f" and the service holds {cell.agent_writes} agent write(s)")
    if column == "want":
        return f"{where}, fault {cell.fault} wants {cell.want} agent write(s)"
    if column == "seconds_to_settle":
        theirs = row.get("seconds_basis", "as the published page reported it")
        return (f"{where}, {cell.seconds_to_settle:.1f}s ({cell.seconds_basis}) against the published "
                f"{published:.1f}s ({theirs})")
    return f"{where}, {column} is {_ours(cell, column)}; the published page says {published}"


def compare_published(scenario: Scenario, published: Mapping[str, Any] | None = None) -> tuple[Difference, ...]:
    """Every cell and column where the published run and this scenario differ, in value or in scoring rule."""
    figures = (published if published is not None else published_runs()).get(scenario.name)
    if figures is None:
        return ()
    diffs: list[Difference] = []
    seen = set()
    for row in figures["cells"]:
        fault, system = row["fault"], row["system"]
        seen.add((fault, system))
        cell = scenario.cell(fault, system)
        if cell is None:
            diffs.append(Difference(fault, system, "cell", "present", None, "value",
                                    "the published run has this cell; this file does not"))
            continue
        for column in COLUMNS:
            ours, theirs = _ours(cell, column), row[column]
            if ours != theirs:
                diffs.append(Difference(fault, system, column, theirs, ours, "value",
                                        _explain(scenario, cell, column, theirs, row)))
            elif column == "can_prove" and scenario.name == CALENDAR.name:
                diffs.append(Difference(fault, system, column, theirs, ours, "basis", (
                    "the published page's proof column only asked whether a valid receipt exists; this pipeline "
                    "applies one rule to every scenario (actor named, checks recorded, and the record's list of "
                    "agent events equals the calendar's), and " + _explain(scenario, cell, column, theirs, row))))
    for cell in scenario.cells:
        if (cell.fault, cell.system) not in seen:
            diffs.append(Difference(cell.fault, cell.system, "cell", None, "present", "value",
                                    "this file has a cell the published run did not"))
    return tuple(diffs)
