"""The experiments' crash and pause points: a hook armed by the environment a harness starts a worker with.

INTERLOCK_KILL_AT=<point> kills the process there by SIGKILL, after writing the time to INTERLOCK_KILL_MARKER
(when set): the crash marker a harness times recovery from. INTERLOCK_PAUSE_AT=<point> stops there until the file
named by INTERLOCK_PAUSE_FILE, which this process creates, is removed: the harness acts in that window (a human
write between a re-check and a resend) and then lets the process go on. Gated workers pass `HOOK` to the gate;
baseline workers call `reach` at the same names, so one schedule drives every system. The variables are read at
each point, so a harness thread may arm a pause after the worker started.
"""

from __future__ import annotations

import os
import signal
import time

from interlock.hooks import (AFTER_COMMIT, AFTER_PROPOSED, BEFORE_REQUEST, BEFORE_SEND, RECOVERY_AFTER_RESEND,
                             RECOVERY_BEFORE_RESEND)

__all__ = ["AFTER_COMMIT", "AFTER_PROPOSED", "BEFORE_REQUEST", "BEFORE_SEND", "HOOK", "POINTS",
           "RECOVERY_AFTER_RESEND", "RECOVERY_BEFORE_RESEND", "EnvironmentHook", "reach"]

# The points the experiments' schedules arm: the ones every system (baselines too) reaches.
POINTS = (AFTER_PROPOSED, BEFORE_SEND, AFTER_COMMIT, RECOVERY_BEFORE_RESEND, RECOVERY_AFTER_RESEND)
PAUSE_LIMIT_SECONDS = 60.0


class EnvironmentHook:
    """Dies or pauses at the point this process's environment arms; passes every other point."""

    def reach(self, point: str) -> None:
        """SIGKILL or pause here if INTERLOCK_KILL_AT / INTERLOCK_PAUSE_AT names this point."""
        if point == os.environ.get("INTERLOCK_PAUSE_AT"):
            _pause(os.environ["INTERLOCK_PAUSE_FILE"])
        if point == os.environ.get("INTERLOCK_KILL_AT"):
            marker = os.environ.get("INTERLOCK_KILL_MARKER")
            if marker:
                _write_synced(marker, repr(time.time()))
            os.kill(os.getpid(), signal.SIGKILL)


HOOK = EnvironmentHook()


def reach(point: str) -> None:
    """The baseline workers' call at a point: the same hook the gated workers pass to the gate."""
    HOOK.reach(point)


def _pause(path: str) -> None:
    _write_synced(path, str(os.getpid()))
    deadline = time.monotonic() + PAUSE_LIMIT_SECONDS
    while os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"paused at {path} for over {PAUSE_LIMIT_SECONDS}s; nobody released it")
        time.sleep(0.002)


def _write_synced(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
