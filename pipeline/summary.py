"""Per-system scores of a scenario: k of n per column, and the spread of crash-to-settled times."""

from __future__ import annotations

from statistics import median

from .model import Cell, SystemSummary, Tally


def _seconds(value: float) -> str:
    return f"{value:.1f}s"


def summarize(cells: tuple[Cell, ...], systems: tuple[str, ...]) -> tuple[SystemSummary, ...]:
    """One summary per system, in the given order."""
    summaries = []
    for system in systems:
        mine = [c for c in cells if c.system == system]
        n = len(mine)
        held = Tally(sum(c.invariant_held for c in mine), n)
        answered = Tally(sum(c.answer_matches is True for c in mine), n)
        proved = Tally(sum(c.can_prove for c in mine), n)
        low, high = min(c.seconds_to_settle for c in mine), max(c.seconds_to_settle for c in mine)
        line = (f"{system}: invariant held {held}, answer matched {answered}, can prove {proved}, "
                f"crash to settled {_seconds(low)} to {_seconds(high)}")
        middle = round(median(c.seconds_to_settle for c in mine), 1)
        summaries.append(SystemSummary(system, held, answered, proved, low, high, line, middle))
    return tuple(summaries)
