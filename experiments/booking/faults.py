"""The faults of the calendar scenario: where the first worker dies and what the world does meanwhile."""

from __future__ import annotations

from dataclasses import dataclass

SYSTEMS = ("no_check", "hand_check", "interlock", "interlock_change_only")
GATED = frozenset({"interlock", "interlock_change_only"})


@dataclass(frozen=True)
class Fault:
    """One row: the crash point (or network cut), the outage action, and how the first worker is stopped.

    `kill_at` arms a SIGKILL at a kill point; `pause_at` pauses the first worker there while the harness acts
    (a raced dispatch); `cut` makes the stand-in store the insert and reset the connection before answering.
    """

    crash_point: str
    outage_action: str
    kill_at: str | None = None
    pause_at: str | None = None
    cut: bool = False
    published: bool = True

    @property
    def name(self) -> str:
        """`<crash_point>/<outage_action>`, the published row label."""
        return f"{self.crash_point}/{self.outage_action}"

    @property
    def want(self) -> int:
        """1 after a commit or with no change in the world; 0 when the slot was taken or the request cancelled."""
        return 1 if self.crash_point == "after_commit" or self.outage_action == "none" else 0

    @property
    def busy_before_first_worker(self) -> bool:
        """The customer event is on the slot before the job is decided."""
        return self.outage_action == "pre_busy"


PUBLISHED_FAULTS = tuple(
    [Fault(point, action, kill_at=point) for point in ("after_commit", "before_send")
     for action in ("none", "slot_busy", "request_cancelled")]
    + [Fault("before_send", "pre_busy", kill_at="before_send")]
)
EXTRA_FAULTS = (
    # The customer event lands while the worker is paused between its last check and its insert.
    Fault("before_send", "raced_busy", pause_at="before_send", published=False),
    # The stand-in stores the insert, then resets the connection: the worker never reads the answer.
    Fault("network_cut", "none", cut=True, published=False),
)
FAULTS = PUBLISHED_FAULTS + EXTRA_FAULTS


def fault_named(name: str) -> Fault:
    """The fault with that row label; KeyError names the known ones."""
    for fault in FAULTS:
        if fault.name == name:
            return fault
    raise KeyError(f"unknown fault {name!r} (known: {', '.join(f.name for f in FAULTS)})")
