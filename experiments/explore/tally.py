"""The summary of one exploration, counted from its stored history rows alone: per system, schedules held and
violated, and per violation kind a count with its first few replayable examples; per hazard, what the hazard
actually did (a held worker reached, a cut inside the last line, a request caught in flight); and every run the
harness played twice because it failed itself the first time."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from experiments.explore.checks import SAFETY, VIOLATIONS, Violation, check, crash_could_leave
from experiments.explore.schedules import CHECK_TO_SEND

FIRST_SHOWN = 5
PAUSED = "while worker "  # how the runner's `acted` opens when a worker waited at its point as the action struck
SHAPE = ("first_kill", "crashes_in_a_row", "action", "action_timing", "network_cut", "recoverers")


def in_window(row: dict[str, Any]) -> bool:
    """The action struck while a worker waited between its last check and its send (held there, or paused)."""
    schedule, held = row["schedule"], row["interrupt"]
    pause = schedule["action_pause"]
    if held is not None:
        point = held["point"] if held["reached"] else None
    else:
        point = pause[1] if pause is not None and paused(row) else None
    return schedule["action"] != "none" and point in CHECK_TO_SEND


def paused(row: dict[str, Any]) -> bool:
    """The action struck while its worker waited at the pause point, not after the worker exited without reaching
    it (the runner records which in `acted`)."""
    return (row["acted"] or "").startswith(PAUSED)


class Tally:
    """Counts per system and violation kind, and the shape of the schedules, from history rows."""

    def __init__(self, systems: Iterable[str]):
        self.systems: dict[str, dict[str, Any]] = {s: {"schedules": 0, "held": 0, "violated": 0, "violated_in_window": 0,
                            "violations": {k: {"count": 0, "in_window": 0, "first": []} for k in VIOLATIONS}}
                        for s in systems}
        self.dimensions: dict[str, Counter[str]] = {k: Counter() for k in SHAPE}
        self.hazard: dict[str, Counter[str]] = {}
        self.retried: list[dict[str, Any]] = []  # runs played twice because the harness failed the first time
        self._first_system = next(iter(self.systems), None)

    def add(self, row: dict[str, Any]) -> list[Violation]:
        """Count one row; returns what it broke."""
        found = check(row)
        schedule = row["schedule"]
        window = in_window(row)
        counts = self.systems.setdefault(row["system"], {
            "schedules": 0, "held": 0, "violated": 0, "violated_in_window": 0,
            "violations": {k: {"count": 0, "in_window": 0, "first": []} for k in VIOLATIONS}})
        counts["schedules"] += 1
        if not found:
            counts["held"] += 1
        else:
            counts["violated_in_window" if window else "violated"] += 1
        for kind in dict.fromkeys(v.kind for v in found):
            cell = counts["violations"][kind]
            cell["count"] += 1
            cell["in_window"] += window
            if len(cell["first"]) < FIRST_SHOWN:
                cell["first"].append({"seed": row["seed"], "replay": row["replay"], "in_window": window,
                                      "schedule": row["describe"], "acted": row["acted"],
                                      "detail": "; ".join(v.detail for v in found if v.kind == kind)})
        self._hazard(row)
        if row.get("harness_retried"):
            self.retried.append({"seed": row["seed"], "system": row["system"], "replay": row["replay"],
                                 "first_failure": row["harness_retried"]})
        if row["system"] == self._first_system:  # each schedule's shape once
            self._shape(row)
        return found

    def _shape(self, row: dict[str, Any]) -> None:
        d, schedule = self.dimensions, row["schedule"]
        d["first_kill"][schedule["kills"][0] or "none"] += 1
        d["crashes_in_a_row"][str(sum(k is not None for k in schedule["kills"]))] += 1
        d["action"][schedule["action"]] += 1
        if schedule["action"] != "none":
            timing = ("during the hazard" if schedule["interrupt"] is not None else
                      "inside the check-to-send window" if in_window(row) else
                      "at a pause point" if schedule["action_pause"] and paused(row) else
                      "after the worker exited, its pause point not reached" if schedule["action_pause"] else
                      "between processes")
            d["action_timing"][timing] += 1
        d["network_cut"][str(schedule["cut"]).lower()] += 1
        d["recoverers"][str(schedule["recoverers"])] += 1

    def _hazard(self, row: dict[str, Any]) -> None:
        """What the hazard did in this run, per system (a hazard that never struck is counted as such)."""
        seen: list[tuple[str, str]] = []
        if row["interrupt"] is not None:
            i = row["interrupt"]
            seen.append(("interrupt", f"{i['how']} at {i['point']}: " + ("struck" if i["reached"] else
                                                                           "never reached")))
        if row["in_flight"] is not None:
            f = row["in_flight"]
            seen.append(("in_flight", f"{f['how']}: " + ("request held at the service" if f["received"] else
                                                         "no request reached the service")))
        if row["journal_cut"] is not None:
            c = row["journal_cut"]
            where = ("nothing cut" if c["kept"] == c["size"] else "inside the last line" if c["inside_last_line"]
                     else "past what was flushed" if crash_could_leave(c) else "before the last line")
            seen.append(("journal_cut", where))
            refused = any(r["refused_journal"] for r in row["ran"])
            seen.append(("journal_cut_refused", "refused to open" if refused else "opened"))
        if row["schedule"]["raises"] is not None:
            seen.append(("raises", row["schedule"]["raises"]))
        for dimension, value in seen:
            self.hazard.setdefault(dimension, Counter())[f"{row['system']}: {value}"] += 1

    def summary(self) -> dict[str, Any]:
        """The counting part of the result file."""
        return {
            "violation_kinds": VIOLATIONS,
            "safety_kinds": list(SAFETY),
            "dimensions": {k: dict(sorted(v.items())) for k, v in self.dimensions.items()},
            "hazard_effects": {k: dict(sorted(v.items())) for k, v in sorted(self.hazard.items())},
            "systems": self.systems,
            "harness_retried": self.retried,
        }
