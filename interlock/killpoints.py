"""Named points where a crash test may SIGKILL the current process (set INTERLOCK_KILL_AT to a point name)."""

from __future__ import annotations

import os
import signal
import time

AFTER_PROPOSED = "after_proposed"
AFTER_DISPATCHED = "after_dispatched"
AFTER_SEND = "after_send"
RECOVERY_AFTER_RECHECK = "recovery_after_recheck"
RECOVERY_AFTER_RESEND = "recovery_after_resend"
POINTS = (AFTER_PROPOSED, AFTER_DISPATCHED, AFTER_SEND, RECOVERY_AFTER_RECHECK, RECOVERY_AFTER_RESEND)

_armed = os.environ.get("INTERLOCK_KILL_AT", "")


def reach(point: str) -> None:
    """Die here, by SIGKILL, if this process was started with INTERLOCK_KILL_AT=<point>."""
    if point == _armed:
        marker = os.environ.get("INTERLOCK_KILL_MARKER")
        if marker:
            with open(marker, "w") as f:
                f.write(repr(time.time()))
                f.flush()
                os.fsync(f.fileno())
        os.kill(os.getpid(), signal.SIGKILL)
