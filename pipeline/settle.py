"""Seconds from the fault to settled, measured from the run's own clock readings, and said how.

One rule for the project's runs: from the crash (or, with no SIGKILL, the first worker's exit) to the restart
worker's exit, both read from the cell's `timeline`. The published gcp file keeps the crash marker and the restart
worker's `settled_at`, which give the published figure again; the published calendar file keeps only the figure
itself, which is shown as stored and labelled so.
"""

from __future__ import annotations

from dataclasses import dataclass

from .load import Node
from .times import duration, elapsed


@dataclass(frozen=True)
class Settle:
    """A settle time and what it was measured between."""

    seconds: float
    basis: str  # one phrase, shown beside the figure
    start: str | None  # what it counts from; None: the file's stored figure, which the pipeline cannot re-measure

    @property
    def derived(self) -> bool:
        """Measured here from the file's clock readings, not read from its stored figure."""
        return self.start is not None


def _between(start: Node, end: Node, start_kind: str = "number") -> float:
    """Seconds from the clock reading at `start` to the one at `end`, to 0.1 s."""
    return round(elapsed(start, end, start_kind), 1)


def _timeline(timeline: Node) -> Settle:
    end = timeline.at("restart_exit_at")
    if timeline.get("crashed_at", "number", nullable=True) is not None:
        return Settle(_between(timeline.at("crashed_at"), end), "crash to the restart worker's exit (timeline)",
                      "crash")
    return Settle(_between(timeline.at("first_exit_at"), end),
                  "no crash: the first worker's exit to the restart worker's exit (timeline)", "first worker's exit")


def _marker(artifacts: Node) -> Settle | None:
    """The published gcp rule: the crash marker file to the restart worker's `settled_at`."""
    restart = artifacts.opt_node("outcome_restart.json")
    crashed = artifacts.opt("crashed_at", "string")
    if restart is None or crashed is None or restart.opt("settled_at", "number") is None:
        return None
    return Settle(_between(artifacts.at("crashed_at"), restart.at("settled_at"), "string"),
                  "crash marker to the restart worker's settled_at", "crash marker")


def settle(cell: Node) -> Settle:
    """The cell's settle time: from its timeline, else its crash marker and settled_at, else as the file stored it."""
    timeline = cell.opt_node("timeline")
    if timeline is not None:
        return _timeline(timeline)
    artifacts = cell.opt_node("artifacts")
    measured = _marker(artifacts) if artifacts is not None else None
    if measured is not None:
        return measured
    if not cell.has("seconds_to_settle"):
        cell.at("timeline")  # raises: a raw cell must carry its timeline
    return Settle(duration(cell.at("seconds_to_settle")), "as stored: the file keeps no timeline to measure it from",
                  None)
