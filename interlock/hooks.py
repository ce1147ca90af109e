"""Fault-injection hooks: named points in the gate's life where a caller's test may kill or pause the process.

The library never decides to fault itself: a caller that wants crash tests passes an object with
`reach(point)` as `Gate(..., hooks=...)` or `Interlock(..., hooks=...)`, and the gate calls it at each point
below. Without one the gate calls a hook that does nothing, so no setting outside the program can stop it.

| point | where the gate is |
|---|---|
| `after_proposed` | PROPOSED is appended (on PostgreSQL in the claim's own transaction); nothing checked or sent yet |
| `before_send` | DISPATCHED is journaled (on PostgreSQL made durable by the confirm's flush); the last look at lease and premises has not run |
| `before_request` | after the last look and the claim confirm, immediately before the request |
| `after_commit` | the service answered; COMMITTED is not journaled yet |
| `recovery_before_resend` | recovery journaled REDISPATCHED; its last look has not run |
| `recovery_after_resend` | recovery's resend was answered; COMMITTED is not journaled yet |
"""

from __future__ import annotations

from typing import Protocol

AFTER_PROPOSED = "after_proposed"
BEFORE_SEND = "before_send"
BEFORE_REQUEST = "before_request"
AFTER_COMMIT = "after_commit"
RECOVERY_BEFORE_RESEND = "recovery_before_resend"
RECOVERY_AFTER_RESEND = "recovery_after_resend"
POINTS = (AFTER_PROPOSED, BEFORE_SEND, BEFORE_REQUEST, AFTER_COMMIT, RECOVERY_BEFORE_RESEND, RECOVERY_AFTER_RESEND)


class Hooks(Protocol):
    """What the gate calls at each point; a test's implementation may SIGKILL or pause the process there."""

    def reach(self, point: str) -> None:
        """Called as the gate passes `point` (one of `POINTS`)."""
        ...


class NoHooks:
    """The hook the gate uses when the caller passed none: every point passes."""

    def reach(self, point: str) -> None:
        """Do nothing: production code is never faulted."""


NO_HOOKS = NoHooks()
