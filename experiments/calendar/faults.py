"""The rows of the calendar scenario: where the first worker stops and what the world does meanwhile.

What each row wants the calendar to hold afterwards is the pipeline's fault catalogue, not the runner's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from experiments import crash
from experiments.runner import Fault

SLOT_BUSY, REQUEST_CANCELLED, PRE_BUSY, RACED_BUSY = "slot_busy", "request_cancelled", "pre_busy", "raced_busy"


@dataclass(frozen=True)
class CalendarFault(Fault):
    """A row, named `<crash_point>/<outage_action>` as the published file names it."""

    crash_point: str = ""
    outage_action: str = "none"


def _row(crash_point: str, action: str, **how: Any) -> CalendarFault:
    return CalendarFault(f"{crash_point}/{action}", crash_point=crash_point, outage_action=action, **how)


PUBLISHED_FAULTS = (
    *(_row(point, action, kill_at=point, outage=None if action == "none" else action, published=True)
      for point in (crash.AFTER_COMMIT, crash.BEFORE_SEND) for action in ("none", SLOT_BUSY, REQUEST_CANCELLED)),
    # The customer event is there before the job is decided: a system that refuses never reaches the crash point.
    _row(crash.BEFORE_SEND, PRE_BUSY, kill_at=crash.BEFORE_SEND, published=True),
)
EXTRA_FAULTS = (
    # Every system pauses after its own last check, right before its insert, while a customer event lands.
    _row(crash.BEFORE_SEND, RACED_BUSY, pause_at=crash.BEFORE_REQUEST, offline_only=True),
    # The stand-in stores the insert, then resets the connection: the worker never reads the answer.
    _row("network_cut", "none", cut=True, offline_only=True),
)
FAULTS = PUBLISHED_FAULTS + EXTRA_FAULTS
