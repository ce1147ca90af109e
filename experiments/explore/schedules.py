"""Schedules: what goes wrong, where and when, drawn from one seed so any schedule can be replayed exactly.

Every schedule belongs to one hazard (`experiments.explore.hazards`): the plain crash schedules, or one of the
hazards beyond them (a slow service, a stopped sender, a cut journal, a send that raises, the database session
or server lost under a sender). A hazard changes only its own fields; the rest is drawn as for a crash schedule.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from experiments import crash
from experiments.services.ledger import MAX_DELAY_SECONDS
from experiments.explore.hazards import HAZARDS, JOURNALS, POINTS, SHORT_TTL, Hazard, hazard_named

# A held sender may also wait right before its request, after its last look (a point only the gate reaches in
# the scenarios' own workers: a baseline held there is recorded as never reached).
HELD_POINTS = tuple(dict.fromkeys((*POINTS, crash.BEFORE_REQUEST)))
FIRST_HELD = (crash.AFTER_PROPOSED, crash.BEFORE_SEND, crash.BEFORE_REQUEST, crash.AFTER_COMMIT)
LATER_HELD = tuple(p for p in HELD_POINTS if p != crash.AFTER_PROPOSED)  # a restarted worker proposes nothing

SCENARIOS = ("gcp_resource", "calendar", "ledger")
SYSTEMS = ("interlock", "hand_check", "no_check")
FIRST_KILLS = (None, crash.AFTER_PROPOSED, crash.BEFORE_SEND, crash.AFTER_COMMIT)
# A restarted worker recovers (gate), or resends a redelivered job (baselines): any point may fire in it.
RESTART_KILLS = (None, *POINTS)
ACTIONS = {
    "gcp_resource": ("none", "human_write", "lease_revoked"),
    "calendar": ("none", "slot_taken", "request_cancelled"),
    "ledger": ("none", "balance_moved", "lease_revoked"),
}
# The window between a system's last check and its send: an action paused there can only be stopped by the
# service itself (a GCS generation precondition); Calendar inserts and lease revocations have none.
# A sender held right before its request (after the gate's last look) is in that window for every system.
CHECK_TO_SEND = frozenset({crash.BEFORE_SEND, crash.BEFORE_REQUEST, crash.RECOVERY_BEFORE_RESEND})
MAX_RECOVERERS = 8
RAISE_POINTS = ("before_request", "after_apply")
LATE_HOLD_SECONDS = 6.0  # the longest a late request is held: past every in-flight bound the gated workers declare
# How the ledger keeps a stray write out, as the gate declares it: nothing (an in-flight bound), the claim epoch
# (a paused sender's write is refused; an in-flight one still needs the bound), a precondition on the decided
# version, or a dedupe on the effect id.
LEDGER_FENCES = ("none", "epoch", "version", "dedupe")
FENCE_TEXT = {
    "none": "the ledger has no fence (the gate waits out its in-flight bound)",
    "epoch": "the ledger refuses a write from a superseded claim epoch (and the gate keeps its in-flight bound)",
    "version": "the ledger applies a write only while the account is at the decided version",
    "dedupe": "the ledger refuses a second write of the effect id",
}
IN_FLIGHT = {"kill": ", the sender SIGKILLed while its request waits there",
             "recover": ", the recoverers started while the first request waits there"}


@dataclass(frozen=True)
class Interrupt:
    """Chain worker `worker` is held at `point` (it waits there, located exactly), then `how` strikes: SIGSTOP
    (`sigstop`), its database session ended (`terminate_session`), the database server killed and restarted
    (`restart_server`); concurrent recoverers start and run for up to `seconds`, then the worker goes on
    (SIGCONT, or released)."""

    worker: int
    point: str
    how: str
    seconds: float


@dataclass(frozen=True)
class Schedule:
    """One schedule. Workers run one after another, `kills[i]` armed in worker i (the chain stops at the first
    worker without a kill); the action happens before worker `action_before`, while worker `action_pause[0]`
    is paused at point `action_pause[1]`, or during the interrupt; `cut` loses the answer of the first agent
    write the service commits; `journal_cut` keeps only that fraction of the journal's bytes before the
    recoverers; `fence` is the ledger's (the gate declares it); `delay` makes the service land each agent write that
    many seconds after it arrived (`in_flight`: the sender SIGKILLed while its request waits there, or the
    recoverers started beside it); `raises` makes the first sender's send function raise at that point, `hold`
    makes it hold its request that many seconds before making it; then `recoverers` restart workers run at once,
    with nothing armed, and must settle the job (after an interrupt, one more settles what the concurrent ones
    left)."""

    scenario: str
    hazard: str
    journal: str  # "jsonl" or "postgresql"
    seed: int
    kills: tuple[str | None, ...]
    action: str
    action_before: int | None
    action_pause: tuple[int, str] | None
    cut: bool
    recoverers: int
    interrupt: Interrupt | None = None
    journal_cut: float | None = None
    delay: float | None = None
    in_flight: str | None = None  # "kill" the sender, or "recover" beside it, while its request waits
    raises: str | None = None
    fence: str | None = None  # the ledger's: one of LEDGER_FENCES
    hold: float | None = None

    @property
    def replay(self) -> str:
        """The one command that runs this schedule again."""
        extra = "" if self.hazard == "crash" else f" --hazard {self.hazard}"
        extra += "" if self.journal == "jsonl" else f" --journal {self.journal}"
        return f"python -m experiments.explore --scenario {self.scenario}{extra} --replay {self.seed}"

    def row(self) -> dict[str, Any]:
        """The schedule as stored in a history row."""
        return asdict(self)

    def describe(self) -> str:
        """One line a person can read."""
        kills = " -> ".join(k or "runs through" for k in self.kills)
        if self.action == "none":
            when = ""
        elif self.interrupt is not None:
            when = f" while worker {self.interrupt.worker} is held at {self.interrupt.point}"
        elif self.action_pause is not None:
            when = f" while worker {self.action_pause[0]} is paused at {self.action_pause[1]}"
        elif self.action_before == len(self.kills):
            when = " before the recoverers"
        else:
            when = f" before worker {self.action_before}"
        parts = [f"kills: {kills}", f"action: {self.action}{when}"]
        if self.fence is not None:
            parts.append(FENCE_TEXT[self.fence])
        if self.cut:
            parts.append("the first committed agent write loses its answer")
        if self.hold is not None:
            parts.append(f"the first sender's send function holds its request {self.hold:.2f}s before making it")
        if self.delay is not None:
            parts.append(f"the service lands each agent write {self.delay:.2f}s after it arrives"
                         + IN_FLIGHT.get(self.in_flight or "", ""))
        if self.raises is not None:
            parts.append(f"the first sender's send function raises {self.raises.replace('_', ' ')}")
        if self.interrupt is not None:
            i = self.interrupt
            parts.append(f"{i.how} of worker {i.worker} at {i.point}, concurrent recoverers for up to "
                         f"{i.seconds:.2f}s")
        if self.journal_cut is not None:
            parts.append(f"the journal cut to {self.journal_cut:.1%} of its bytes before the recoverers")
        parts.append(f"then {self.recoverers} concurrent recoverer(s)")
        return "; ".join(parts)


def schedule_for(scenario: str, seed: int, hazard: str = "crash", journal: str = "jsonl") -> Schedule:
    """The schedule a seed stands for under a hazard (the same in every run and on every machine)."""
    kind = hazard_named(hazard)
    if journal not in JOURNALS or journal not in kind.journals or scenario not in kind.scenarios:
        raise ValueError(f"hazard {hazard} does not run on scenario {scenario} with the {journal} journal")
    rng = random.Random(f"{scenario}:{seed}" if hazard == "crash" and journal == "jsonl"
                        else f"{scenario}:{hazard}:{journal}:{seed}")
    base = _crash(rng, scenario, hazard, journal, seed)
    if scenario == "ledger":  # the ledger stand-in cannot cut a connection; its slow writes stand for lost answers
        base = replace(base, cut=False, fence=rng.choice(LEDGER_FENCES))
    shape = SHAPES.get(hazard)
    return shape(rng, base) if shape is not None else base


def _crash(rng: random.Random, scenario: str, hazard: str, journal: str, seed: int) -> Schedule:
    kills = [rng.choice(FIRST_KILLS)]
    while kills[-1] is not None and len(kills) < 3:
        kills.append(rng.choice(RESTART_KILLS))
    action = rng.choice(ACTIONS[scenario])
    action_before = action_pause = None
    if action != "none":
        if rng.random() < 0.5:
            action_pause = (rng.randrange(len(kills)), rng.choice(POINTS))
        else:
            action_before = rng.randrange(len(kills) + 1)
    recoverers = 1 if rng.random() < 0.5 else rng.randint(2, MAX_RECOVERERS)
    return Schedule(scenario, hazard, journal, seed, tuple(kills), action, action_before, action_pause,
                    rng.random() < 0.25, recoverers)


def _chain(base: Schedule, kills: tuple[str | None, ...], action_in_interrupt: bool = False) -> Schedule:
    """The base schedule over a new chain of workers, its action moved where that chain has room for it."""
    before, pause = base.action_before, base.action_pause
    if action_in_interrupt:
        before = pause = None
    else:
        if pause is not None and pause[0] >= len(kills):
            before, pause = len(kills), None
        if before is not None:
            before = min(before, len(kills))
    return replace(base, kills=kills, action_before=before, action_pause=pause)


def _held(how: str, seconds: tuple[float, float]) -> Callable[[random.Random, Schedule], Schedule]:
    """A sender held at a point: the first one (at a point any first sender reaches), or a later one after
    workers killed with the effect still open (so it dispatches again or recovers)."""
    def shape(rng: random.Random, base: Schedule) -> Schedule:
        worker = 0 if rng.random() < 0.5 else rng.randint(1, 2)
        kills = tuple(rng.choice(FIRST_KILLS[1:]) for _ in range(worker))
        interrupt = Interrupt(worker, rng.choice(LATER_HELD if worker else FIRST_HELD), how,
                              round(rng.uniform(*seconds), 3))
        return replace(_chain(base, (*kills, None), action_in_interrupt=True), interrupt=interrupt)
    return shape


def _slow(low: float, high: float, in_flight: tuple[str | None, ...]) -> Callable[[random.Random, Schedule], Schedule]:
    def shape(rng: random.Random, base: Schedule) -> Schedule:
        before = None if base.action == "none" else rng.randrange(2)  # before the sender, or before the recoverers
        return replace(base, kills=(None,), action_before=before, action_pause=None,
                       delay=round(rng.uniform(low, high), 3), in_flight=rng.choice(in_flight))
    return shape


SHAPES: dict[str, Callable[[random.Random, Schedule], Schedule]] = {
    "concurrent_recovery": lambda rng, base: replace(base, recoverers=rng.randint(2, MAX_RECOVERERS)),
    "slow_service": _slow(0.0, MAX_DELAY_SECONDS, ("kill", "kill", "kill", None)),
    "sigstop": _held("sigstop", (0.2 * SHORT_TTL, 2.5 * SHORT_TTL)),
    "late_request": lambda rng, base: replace(_slow(0.0, MAX_DELAY_SECONDS, ("kill",))(rng, base),
                                              hold=round(rng.uniform(0.0, LATE_HOLD_SECONDS), 3)),
    "journal_cut": lambda rng, base: replace(base, journal_cut=round(rng.random(), 4)),
    "send_raises": lambda rng, base: replace(_chain(base, (None,)), raises=rng.choice(RAISE_POINTS)),
    "session_terminated": _held("terminate_session", (0.1, 1.0)),
    "server_restart": _held("restart_server", (0.1, 1.0)),
    "paused_past_ttl": _held("sigstop", (SHORT_TTL + 0.2, SHORT_TTL + 1.0)),
    "slow_send_past_ttl": _slow(1.25 * SHORT_TTL, MAX_DELAY_SECONDS, ("recover",)),
}


__all__ = ["HAZARDS", "Hazard", "Interrupt", "SCENARIOS", "SYSTEMS", "Schedule", "schedule_for"]
