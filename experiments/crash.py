"""The experiments' crash and pause points: a hook armed by the environment a harness starts a worker with.

The harness arms a worker through its environment (`armed()` builds the variables); the worker's systems call the
hook at the same named points, the baselines through `reach` and the gate as its `hooks`, so one schedule drives
every system.

| point | where every system reaches it |
|---|---|
| `after_proposed` | the gate only: PROPOSED is appended, with the facts the effect was decided on; nothing checked or sent yet |
| `before_send` | the send is recorded (the baselines' log line or queue, the gate's DISPATCHED), nothing sent yet |
| `before_request` | after the system's own last check, immediately before the request: the raced rows pause here |
| `after_commit` | the service answered, before the system records the answer |
| `recovery_before_resend` / `recovery_after_resend` | a restarted worker, around its resend |

INTERLOCK_KILL_AT=<point> kills the process there by SIGKILL, after writing the time to INTERLOCK_KILL_MARKER
(when set): the crash marker a harness times recovery from. INTERLOCK_PAUSE_AT=<point> stops there until the file
named by INTERLOCK_PAUSE_FILE, which this process creates, is removed: the harness acts in that window and then
lets the process go on. The variables are read at each point.
"""

from __future__ import annotations

import os
import signal
import time

from interlock.hooks import (AFTER_COMMIT, AFTER_PROPOSED, BEFORE_REQUEST, BEFORE_SEND, RECOVERY_AFTER_RESEND,
                             RECOVERY_BEFORE_RESEND)

__all__ = ["AFTER_COMMIT", "AFTER_PROPOSED", "BEFORE_REQUEST", "BEFORE_SEND", "HOOK", "POINTS",
           "RECOVERY_AFTER_RESEND", "RECOVERY_BEFORE_RESEND", "VARIABLES", "EnvironmentHook", "armed", "reach"]

# The points the explorer's schedules arm: the ones every system (baselines too) reaches.
POINTS = (AFTER_PROPOSED, BEFORE_SEND, AFTER_COMMIT, RECOVERY_BEFORE_RESEND, RECOVERY_AFTER_RESEND)
KILL_AT, KILL_MARKER = "INTERLOCK_KILL_AT", "INTERLOCK_KILL_MARKER"
PAUSE_AT, PAUSE_FILE = "INTERLOCK_PAUSE_AT", "INTERLOCK_PAUSE_FILE"
VARIABLES = (KILL_AT, KILL_MARKER, PAUSE_AT, PAUSE_FILE)
PAUSE_LIMIT_SECONDS = 60.0


class EnvironmentHook:
    """Dies or pauses at the point this process's environment arms; passes every other point."""

    def reach(self, point: str) -> None:
        """SIGKILL or pause here if INTERLOCK_KILL_AT / INTERLOCK_PAUSE_AT names this point."""
        if point == os.environ.get(PAUSE_AT):
            _pause(os.environ[PAUSE_FILE])
        if point == os.environ.get(KILL_AT):
            marker = os.environ.get(KILL_MARKER)
            if marker:
                _write_synced(marker, repr(time.time()))
            os.kill(os.getpid(), signal.SIGKILL)


HOOK = EnvironmentHook()


def reach(point: str) -> None:
    """The baseline workers' call at a point: the same hook the gated workers pass to the gate."""
    HOOK.reach(point)


def armed(kill_at: str | None = None, marker: str | None = None, pause_at: str | None = None,
          pause_file: str | None = None) -> dict[str, str]:
    """The environment variables that arm a worker (only the ones given)."""
    values = {KILL_AT: kill_at, KILL_MARKER: marker, PAUSE_AT: pause_at, PAUSE_FILE: pause_file}
    return {name: str(value) for name, value in values.items() if value is not None}


def _pause(path: str) -> None:
    _write_synced(path, str(os.getpid()))
    deadline = time.monotonic() + PAUSE_LIMIT_SECONDS
    while os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"paused at {path} for over {PAUSE_LIMIT_SECONDS:.0f}s; nobody released it")
        time.sleep(0.002)


def _write_synced(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
