"""Schedules: what goes wrong, where and when, drawn from one seed so any schedule can be replayed exactly."""

from __future__ import annotations

import random
from dataclasses import dataclass

from experiments import crash

SCENARIOS = ("gcp_resource", "calendar")
SYSTEMS = ("interlock", "hand_check", "no_check")
FIRST_KILLS = (None, crash.AFTER_PROPOSED, crash.BEFORE_SEND, crash.AFTER_COMMIT)
# A restarted worker recovers (gate), or resends a redelivered job (baselines): any point may fire in it.
RESTART_KILLS = (None, *crash.POINTS)
ACTIONS = {
    "gcp_resource": ("none", "human_write", "lease_revoked"),
    "calendar": ("none", "slot_taken", "request_cancelled"),
}
# The window between a system's last check and its send: an action paused there can only be stopped by the
# service itself (a GCS generation precondition); Calendar inserts and lease revocations have none.
CHECK_TO_SEND = frozenset({crash.BEFORE_SEND, crash.RECOVERY_BEFORE_RESEND})
MAX_RECOVERERS = 8


@dataclass(frozen=True)
class Schedule:
    """One schedule. Workers run one after another, `kills[i]` armed in worker i (the chain stops at the first
    worker without a kill); the action happens before worker `action_before` or while worker `action_pause[0]`
    is paused at point `action_pause[1]`; `cut` loses the answer of the first agent write the service commits;
    then `recoverers` restart workers run at once, with nothing armed, and must settle the job."""

    scenario: str
    seed: int
    kills: tuple[str | None, ...]
    action: str
    action_before: int | None
    action_pause: tuple[int, str] | None
    cut: bool
    recoverers: int

    @property
    def in_check_to_send_window(self) -> bool:
        """The action strikes while a worker waits between its last check and its send."""
        return self.action != "none" and self.action_pause is not None and self.action_pause[1] in CHECK_TO_SEND

    @property
    def replay(self) -> str:
        """The one command that runs this schedule again."""
        return f"python -m experiments.explore --scenario {self.scenario} --replay {self.seed}"

    def describe(self) -> str:
        """One line a person can read."""
        kills = " -> ".join(k or "runs through" for k in self.kills)
        if self.action == "none":
            when = ""
        elif self.action_pause is not None:
            when = f" while worker {self.action_pause[0]} is paused at {self.action_pause[1]}"
        elif self.action_before == len(self.kills):
            when = " before the recoverers"
        else:
            when = f" before worker {self.action_before}"
        cut = "; the first committed agent write loses its answer" if self.cut else ""
        return (f"kills: {kills}; action: {self.action}{when}{cut}; then {self.recoverers} concurrent "
                f"recoverer(s)")


def schedule_for(scenario: str, seed: int) -> Schedule:
    """The schedule a seed stands for (the same in every run and on every machine)."""
    rng = random.Random(f"{scenario}:{seed}")
    kills = [rng.choice(FIRST_KILLS)]
    while kills[-1] is not None and len(kills) < 3:
        kills.append(rng.choice(RESTART_KILLS))
    action = rng.choice(ACTIONS[scenario])
    action_before = action_pause = None
    if action != "none":
        if rng.random() < 0.5:
            action_pause = (rng.randrange(len(kills)), rng.choice(crash.POINTS))
        else:
            action_before = rng.randrange(len(kills) + 1)
    recoverers = 1 if rng.random() < 0.5 else rng.randint(2, MAX_RECOVERERS)
    return Schedule(scenario, seed, tuple(kills), action, action_before, action_pause, rng.random() < 0.25,
                    recoverers)
