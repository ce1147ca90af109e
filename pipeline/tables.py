"""pandas tables of a judged scenario, for the terminal and for anyone analysing the numbers further."""

from __future__ import annotations

import pandas as pd

from .model import RacedVariant, Scenario, printable
from .reliability import Exploration

_ANSWER = {True: "matches", False: "differs", None: "cannot say"}


def cells_frame(scenario: Scenario) -> pd.DataFrame:
    """One row per cell, indexed by (fault, system), with every `judge --json` column."""
    rows = [cell.as_json() for cell in scenario.cells]
    return pd.DataFrame(rows).drop(columns="scenario").set_index(["fault", "system"])


def summary_frame(scenario: Scenario) -> pd.DataFrame:
    """One row per system: k/n per column and the crash-to-settled spread."""
    rows = [{"system": s.system, "invariant held": str(s.invariant_held), "answer matched": str(s.answer_matched),
             "can prove": str(s.can_prove), "settled min s": s.settle_min, "settled max s": s.settle_max}
            for s in scenario.summaries]
    return pd.DataFrame(rows).set_index("system")


def as_text(scenario: Scenario) -> str:
    """The scenario's table, summaries and verdict as plain text, a control character in a run's text escaped so
    each line stays one line."""
    frame = pd.DataFrame([{
        "fault": printable(c.fault), "system": printable(c.system), "outcome": printable(c.outcome),
        "agent writes": c.agent_writes, "want": c.want,
        "invariant": ("held" if c.invariant_held else "VIOLATED") + (", double booked" if c.truth.double_booked else ""),
        "answer": _ANSWER[c.answer_matches], "proof": "yes" if c.can_prove else "no",
        "seconds": f"{c.seconds_to_settle:.1f}",
    } for c in scenario.cells]).set_index(["fault", "system"])
    lines = [f"{scenario.name}: {scenario.title}", f"{scenario.source} ({scenario.provenance.summary})", "",
             *frame.to_string().splitlines(), ""]
    lines += [s.line for s in scenario.summaries]
    bases = dict.fromkeys(c.seconds_basis for c in scenario.cells)
    lines += [f"seconds: {basis}" for basis in bases]
    if scenario.raced is not None:
        lines += ["", *(_raced_line(v) for v in scenario.raced.variants)]
    lines += ["", *scenario.verdict]
    if scenario.disagreements:
        lines += ["", f"{len(scenario.disagreements)} stored verdict(s) disagree with the derived ones (listed on "
                      "stderr)"]
    return "\n".join(map(printable, lines))


def exploration_text(run: Exploration) -> str:
    """An exploration's counts per system as plain text, with every violation kind a system broke and whether
    the counts are the judge's (from the stored history) or only the file's."""
    frame = pd.DataFrame([{
        "system": printable(s.system), "schedules": s.schedules, "held": s.held,
        "broke a rule outside the window": s.violated, "inside it": s.violated_in_window,
        "kinds broken": ", ".join(f"{v.kind} {v.count}" + (f" ({v.in_window} in window)" if v.in_window else "")
                                  for v in s.violations if v.count) or "none",
    } for s in run.systems], columns=["system", "schedules", "held", "broke a rule outside the window", "inside it",
                                       "kinds broken"]).set_index("system")
    counted = (f"counted again from {run.recounted}" if run.recounted else
               "as the file stores them: no history beside it to count again")
    lines = [f"{run.scenario}: {run.hazard} ({run.journal} journal)", f"{run.source}, {counted}", "",
             *frame.to_string().splitlines()]
    if run.disagreements:
        lines += ["", f"{len(run.disagreements)} stored count(s) disagree with the history's (listed on stderr)"]
    return "\n".join(map(printable, lines))


def _raced_line(variant: RacedVariant) -> str:
    """One system's raced trials in one line."""
    window = (f"check-to-send window median {variant.window.median:.2f} ms, p99 {variant.window.p99:.2f} ms "
              f"(n {variant.window.n})" if variant.window else "no insert landed")
    return (f"raced {variant.name}: slipped {variant.slipped} (double booked), refused {variant.refused}, "
            f"booked before the customer {variant.booked_first}; {window}")
