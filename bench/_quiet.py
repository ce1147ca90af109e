"""Waiting for a quiet machine before a benchmark, so what the previous one left running (its database cluster
shutting down, the kernel writing out its deleted journals) does not fall on the next one's reference figures."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

BUSY_AT_MOST = 0.15  # share of all cores busy over one window
WINDOW_SECONDS = 1.0
MOST_SECONDS = 90.0
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user, nice, system, irq, softirq, steal: idle and iowait are not busy


@dataclass(frozen=True)
class Settled:
    """How a benchmark's start waited: for how long, the busy share of the last window, and whether it fell to
    the bound before the wait gave up (None: this system does not say how busy it is)."""

    waited_seconds: float
    busy_share: float | None
    quiet: bool | None

    def as_dict(self) -> dict[str, Any]:
        """As a result file's provenance records it."""
        return asdict(self)


def _cpu_times() -> tuple[int, int] | None:
    """(busy, total) clock ticks of all cores since boot, from /proc/stat; None where there is none."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(t) for t in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return sum(ticks[i] for i in _BUSY_FIELDS if i < len(ticks)), sum(ticks[:8])


def busy_share(window: float = WINDOW_SECONDS) -> float | None:
    """The share of all cores' time that was busy over the next `window` seconds."""
    before = _cpu_times()
    time.sleep(window)
    after = _cpu_times()
    if before is None or after is None or after[1] <= before[1]:
        return None
    return round((after[0] - before[0]) / (after[1] - before[1]), 3)


def wait_for_quiet(busy_at_most: float = BUSY_AT_MOST, most: float = MOST_SECONDS,
                   window: float = WINDOW_SECONDS) -> Settled:
    """Sample the machine window by window until one is at most `busy_at_most` busy, or `most` seconds passed."""
    began = time.perf_counter()
    while True:
        share = busy_share(window)
        waited = round(time.perf_counter() - began, 1)
        if share is None:
            return Settled(waited, None, None)
        if share <= busy_at_most:
            return Settled(waited, share, True)
        if waited >= most:
            return Settled(waited, share, False)
