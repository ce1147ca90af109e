"""The experiments' fault hook: where a worker dies by SIGKILL or pauses, armed by the harness per worker.

The harness arms a worker through its environment (`armed()` builds the variables); the worker turns them into a
hook (`from_env()`) whose `reach(point)` every system calls at the same named points. The gate takes the same
object as its `hooks`, so one schedule drives the baselines and the gate alike.

| point | where every system reaches it |
|---|---|
| `before_send` | the send is recorded (the baselines' log line or queue, the gate's DISPATCHED), nothing sent yet |
| `before_request` | after the system's own last check, immediately before the request: the raced rows pause here |
| `after_commit` | the service answered, before the system records the answer |
| `recovery_before_resend` / `recovery_after_resend` | a restarted worker, around its resend |

A kill writes the time to the marker file first (the crash marker recovery is timed from). A pause writes the
pause file and waits, with a deadline, until the harness removes it.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass

AFTER_PROPOSED = "after_proposed"
BEFORE_SEND = "before_send"
BEFORE_REQUEST = "before_request"
AFTER_COMMIT = "after_commit"
RECOVERY_BEFORE_RESEND = "recovery_before_resend"
RECOVERY_AFTER_RESEND = "recovery_after_resend"
POINTS = (AFTER_PROPOSED, BEFORE_SEND, BEFORE_REQUEST, AFTER_COMMIT, RECOVERY_BEFORE_RESEND, RECOVERY_AFTER_RESEND)

KILL_AT, KILL_MARKER = "INTERLOCK_KILL_AT", "INTERLOCK_KILL_MARKER"
PAUSE_AT, PAUSE_FILE = "INTERLOCK_PAUSE_AT", "INTERLOCK_PAUSE_FILE"
VARIABLES = (KILL_AT, KILL_MARKER, PAUSE_AT, PAUSE_FILE)
PAUSE_LIMIT_SECONDS = 60.0
_POLL_SECONDS = 0.002


@dataclass(frozen=True)
class Hook:
    """One worker's armed faults: at most one kill point and one pause point."""

    kill_at: str | None = None
    marker: str | None = None
    pause_at: str | None = None
    pause_file: str | None = None

    def reach(self, point: str) -> None:
        """Pause or die here when this point is armed; otherwise return at once."""
        if point == self.pause_at and self.pause_file:
            _pause(self.pause_file)
        if point == self.kill_at:
            if self.marker:
                _write_synced(self.marker, repr(time.time()))
            os.kill(os.getpid(), signal.SIGKILL)


def from_env(env: Mapping[str, str] = os.environ) -> Hook:
    """The hook the harness armed for this worker process."""
    return Hook(env.get(KILL_AT), env.get(KILL_MARKER), env.get(PAUSE_AT), env.get(PAUSE_FILE))


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
        time.sleep(_POLL_SECONDS)


def _write_synced(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
