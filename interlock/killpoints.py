"""Named points where a fault test may SIGKILL or pause the current process.

INTERLOCK_KILL_AT=<point> kills the process there by SIGKILL, after writing the time to INTERLOCK_KILL_MARKER
(when set): the crash marker a harness times recovery from. INTERLOCK_PAUSE_AT=<point> stops there until the file
named by INTERLOCK_PAUSE_FILE, which this process creates, is removed: the harness acts in that window (a human
write between a re-check and a resend) and then lets the process go on. The gate and the baseline workers reach
the same names, so one schedule drives every system.
"""

from __future__ import annotations

import os
import signal
import time

AFTER_PROPOSED = "after_proposed"
BEFORE_SEND = "before_send"
AFTER_COMMIT = "after_commit"
RECOVERY_BEFORE_RESEND = "recovery_before_resend"
RECOVERY_AFTER_RESEND = "recovery_after_resend"
POINTS = (AFTER_PROPOSED, BEFORE_SEND, AFTER_COMMIT, RECOVERY_BEFORE_RESEND, RECOVERY_AFTER_RESEND)
PAUSE_LIMIT_SECONDS = 60.0


def reach(point: str) -> None:
    """Die or pause here if this process was started with that point armed; otherwise do nothing."""
    if point == os.environ.get("INTERLOCK_PAUSE_AT"):
        _pause(os.environ["INTERLOCK_PAUSE_FILE"])
    if point == os.environ.get("INTERLOCK_KILL_AT"):
        marker = os.environ.get("INTERLOCK_KILL_MARKER")
        if marker:
            _write_synced(marker, repr(time.time()))
        os.kill(os.getpid(), signal.SIGKILL)


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
