"""Where a peer's write reaches the experiments' crash points: the same names every other system reaches.

A first delivery reaches `before_send` and `before_request` right before its request and `after_commit` once the
service answered; a restarted worker's resend (DBOS recovery rerunning the step, Powertools running the call
again) reaches `recovery_before_resend` and `recovery_after_resend`. A peer has no last look of its own, so the
point right before the request is the one every system pauses at.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from experiments import crash
from experiments.phases import DECIDE


@dataclass(frozen=True)
class Points:
    """The crash hook of one worker phase."""

    phase: str
    reach: Callable[[str], None]

    def before_request(self) -> None:
        """Right before the request leaves (a peer has no last look, so `before_request` follows at once)."""
        if self.phase == DECIDE:
            self.reach(crash.BEFORE_SEND)
            self.reach(crash.BEFORE_REQUEST)
        else:
            self.reach(crash.RECOVERY_BEFORE_RESEND)

    def after_answer(self) -> None:
        """The service answered; nothing is recorded yet."""
        self.reach(crash.AFTER_COMMIT if self.phase == DECIDE else crash.RECOVERY_AFTER_RESEND)
