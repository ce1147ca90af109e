"""Run one schedule for one system: the crash chain, the outage action, the cut, the concurrent recoverers."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.explore.processes import Finished, Forker
from experiments.harness import wait_for_file
from experiments.explore.schedules import Schedule
from experiments.explore.worlds import Case, Truth

WORKER_TIMEOUT_SECONDS = 60.0
PAUSE_TIMEOUT_SECONDS = 30.0


@dataclass
class Ran:
    """One worker's part in a run."""

    stage: str  # "chain" or "recoverer"
    index: int
    kill: str | None
    finished: Finished


@dataclass
class Observation:
    """Everything a run left that the checks read: workers' ends, the action's time, the service's truth and the
    system's own record (the gate's journal entries, the baselines' log lines)."""

    schedule: Schedule
    system: str
    case: Case
    ran: list[Ran] = field(default_factory=list)
    acted_at: float | None = None
    acted: str | None = None  # how the action actually happened
    truth: Truth | None = None
    journal: list[dict[str, Any]] = field(default_factory=list)
    log: list[dict[str, Any]] = field(default_factory=list)


def run(world: Any, forker: Forker, schedule: Schedule, system: str, root: Path) -> Observation:
    """Play the schedule against the world with one system; the case directory is gone afterwards."""
    directory = root / f"{schedule.seed}-{system}"
    directory.mkdir(parents=True)
    try:
        with world.lock:  # the world's clients are shared by the explorer's threads
            seen = Observation(schedule, system, world.setup(directory, schedule.seed, system))
        if schedule.cut:
            world.arm_cut(seen.case)
        for index, kill in enumerate(schedule.kills):
            if schedule.action_before == index:
                _act(world, seen, f"before worker {index}")
            seen.ran.append(Ran("chain", index, kill, _chain_worker(world, forker, seen, index, kill)))
        if schedule.action_before == len(schedule.kills):
            _act(world, seen, "before the recoverers")
        recoverers = [forker.start(world.module, world.argv(seen.case, "restart"), world.env,
                                   directory / f"recoverer{i}") for i in range(schedule.recoverers)]
        seen.ran += [Ran("recoverer", i, None, w.wait(WORKER_TIMEOUT_SECONDS)) for i, w in enumerate(recoverers)]
        with world.lock:
            seen.truth = world.truth(seen.case)
        seen.journal = _lines(directory / world.journal)
        seen.log = _lines(directory / world.log)
        return seen
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _chain_worker(world: Any, forker: Forker, seen: Observation, index: int, kill: str | None) -> Finished:
    directory = seen.case.directory
    env = dict(world.env)
    if kill is not None:
        env.update(INTERLOCK_KILL_AT=kill, INTERLOCK_KILL_MARKER=str(directory / f"killed{index}"))
    pause = seen.schedule.action_pause
    paused_here = pause is not None and pause[0] == index
    pause_file = directory / f"paused{index}"
    if paused_here:
        env.update(INTERLOCK_PAUSE_AT=pause[1], INTERLOCK_PAUSE_FILE=str(pause_file))
    worker = forker.start(world.module, world.argv(seen.case, "decide" if index == 0 else "restart"), env,
                          directory / f"worker{index}")
    if paused_here:
        if wait_for_file(pause_file, worker, PAUSE_TIMEOUT_SECONDS):
            _act(world, seen, f"while worker {index} was paused at {pause[1]}")
            pause_file.unlink()
    finished = worker.wait(WORKER_TIMEOUT_SECONDS)
    if paused_here and seen.acted is None:
        _act(world, seen, f"after worker {index} exited (it never reached {pause[1]})")
    return finished


def _act(world: Any, seen: Observation, when: str) -> None:
    if seen.schedule.action == "none":
        return
    with world.lock:
        world.act(seen.case, seen.schedule.action)
    seen.acted_at, seen.acted = time.time(), when


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            parsed = json.loads(line)
        except ValueError:
            continue  # a torn last line: the journal sets it aside itself; a log line is only the baseline's record
        if isinstance(parsed, dict):
            out.append(parsed)
    return out
