"""The rows of the scenario: where the first worker stops and when the human redeploys.

What each row wants the store to hold afterwards is the pipeline's fault catalogue, not the runner's.
"""

from __future__ import annotations

from dataclasses import dataclass

from experiments import crash
from experiments.phases import RESTART
from experiments.runner import Fault


@dataclass(frozen=True)
class GcpFault(Fault):
    """A row of this scenario. `redeploy`: the human uploads v43 during the `outage`, or while the restarted worker
    is paused right before its resend (`recovery`), or never (None). `versioned`: whether the bucket keeps
    noncurrent versions; without them the recording proxy's write log is the only full history."""

    redeploy: str | None = None
    versioned: bool = True


def _published(name: str, crash_point: str, redeploy: str | None) -> tuple[GcpFault, GcpFault]:
    """A published row, and the same row on a bucket without versioning (the proxy's log is the ground truth)."""
    outage = "redeploy" if redeploy == "outage" else None
    return (GcpFault(name, kill_at=crash_point, outage=outage, redeploy=redeploy, published=True),
            GcpFault(f"{name}_versioning_off", kill_at=crash_point, outage=outage, redeploy=redeploy,
                     versioned=False, offline_only=True))


_ROWS = (
    *_published("crash_before_send_redeploy", crash.BEFORE_SEND, "outage"),
    *_published("crash_after_commit_redeploy", crash.AFTER_COMMIT, "outage"),
    *_published("crash_after_commit_no_change", crash.AFTER_COMMIT, None),
    GcpFault("cut_after_commit_no_change", cut=True, offline_only=True),
    GcpFault("crash_before_send_redeploy_during_recovery", kill_at=crash.BEFORE_SEND,
             pause_at=crash.RECOVERY_BEFORE_RESEND, pause_phase=RESTART, redeploy="recovery"),
)
FAULTS = tuple(sorted(_ROWS, key=lambda f: not f.published))  # published rows first, in the published order
