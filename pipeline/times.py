"""Clock readings and durations a result file holds, refused naming their path unless a run could have made them:
a reading from this century, a duration neither negative nor longer than any run takes."""

from __future__ import annotations

import math
from datetime import datetime, timezone

from .load import Node, quote

# A wall-clock reading in seconds since the epoch is from this century: one outside it is damage or another unit
# (milliseconds, say), and a settle time measured from it would be published as a figure.
EARLIEST = datetime(2000, 1, 1, tzinfo=timezone.utc).timestamp()
LATEST = datetime(2100, 1, 1, tzinfo=timezone.utc).timestamp()

# The longest duration a result file may hold, stored or measured between two readings: one day. The runners kill
# a worker after 90 s (experiments/runner.py WORKER_TIMEOUT_SECONDS) and a raced calendar run after 30 minutes
# (experiments/calendar/scenario.py RACED_TIMEOUT_SECONDS), so no run's figure comes near it (the committed files'
# longest settle time is about 32 s); a figure past it can only be damage.
LONGEST_SECONDS = 86_400.0
_TOO_LONG = f"longer than any run takes (the bound is {LONGEST_SECONDS:,.0f} s, one day)"


def _seconds(node: Node, kind: str) -> float:
    """A figure in seconds of JSON type `kind` (the crash marker holds text), as a finite float."""
    value = node.expect(kind)
    try:
        seconds = float(value)
    except (ValueError, OverflowError):
        raise node.bad(f"not a time in seconds: {quote(value)}") from None
    if not math.isfinite(seconds):
        raise node.bad(f"not a finite time in seconds: {quote(value)}")
    return seconds


def stamp(node: Node, kind: str = "number") -> float:
    """A wall-clock reading in seconds since the epoch, from 2000-01-01 up to 2100-01-01 UTC."""
    seconds = _seconds(node, kind)
    if not EARLIEST <= seconds < LATEST:
        raise node.bad(f"not a time between 2000-01-01 and 2100-01-01 UTC in seconds since the epoch: "
                       f"{quote(node.value)}")
    return seconds


def duration(node: Node) -> float:
    """A duration in seconds as a file stores it: not negative, and under LONGEST_SECONDS."""
    seconds = _seconds(node, "number")
    if seconds < 0:
        raise node.bad(f"a negative duration: {seconds}")
    if seconds >= LONGEST_SECONDS:
        raise node.bad(f"a duration of {seconds} s: {_TOO_LONG}")
    return seconds


def elapsed(start: Node, end: Node, start_kind: str = "number") -> float:
    """Seconds from the reading at `start` to the one at `end`: both readings from this century, the duration not
    negative and under LONGEST_SECONDS."""
    began, ended = stamp(start, start_kind), stamp(end)
    seconds = ended - began
    if seconds < 0:
        raise start.bad(f"{began} is after {end.path} ({ended}): a negative duration")
    if seconds >= LONGEST_SECONDS:
        raise start.bad(f"{began} is {seconds:,.0f} s before {end.path} ({ended}): {_TOO_LONG}")
    return seconds

