"""Turns of one JSONL journal's append lock under many writer processes: how long each holder keeps it, how long
it lies free between one holder's release and the next one's take, and what share of its time a writer spends
waiting for its turn. Read beside effects per second, they say whether the writers were held up by the work done
under the lock or by the hand-over from one writer to the next, and how much of a writer's time sharing took.

Each worker times the journal module's own flock calls (CLOCK_MONOTONIC, one clock for every process on the host):
when it began trying for a turn, when it took the lock and when it let it go. After its last effect it writes its
turns and the span of its timed effects to a file; the turns of all workers are then laid end to end.
"""

from __future__ import annotations

import fcntl
import json
import statistics
import time
import types
from pathlib import Path
from typing import Any

from ._submitters import submitter
from ._throughput import WARMUP, Call, run_workers


def watched_submitter(path: str, effects: int, worker: int) -> Call:
    """`bench._submitters.submitter`, with the append lock's turns recorded for its `effects` timed effects (after
    the harness's untimed warm-up ones)."""
    import interlock.journal

    turns: list[list[float]] = []  # each turn: began trying, took the lock, let it go
    trying: list[float] = []  # when this worker began trying for the turn it has not taken yet

    def flock(fd: int, operation: int) -> None:
        if operation == fcntl.LOCK_UN:
            turns[-1].append(time.monotonic())
        elif operation & fcntl.LOCK_EX and not trying:
            trying.append(time.monotonic())
        fcntl.flock(fd, operation)  # a try that finds the lock held raises here: no turn yet
        if operation & fcntl.LOCK_EX:
            turns.append([trying.pop(), time.monotonic()])

    # The journal module's own `fcntl` import, replaced in this worker process (not part of its typed surface).
    setattr(interlock.journal, "fcntl", types.SimpleNamespace(
        flock=flock, LOCK_EX=fcntl.LOCK_EX, LOCK_UN=fcntl.LOCK_UN, LOCK_SH=fcntl.LOCK_SH, LOCK_NB=fcntl.LOCK_NB))
    call = submitter(path, worker)
    done, span = [0], []

    def make(key: str) -> None:
        if done[0] == WARMUP:
            turns.clear()  # the set-up's and the warm-up's own turns are not the run's
            span.append(time.monotonic())
        call(key)
        done[0] += 1
        if done[0] == WARMUP + effects:
            span.append(time.monotonic())
            Path(f"{path}.turns-{worker}").write_text(json.dumps({"turns": turns, "span": span}))

    return make


def lock_turns(folder: Path, workers: int, effects: int) -> dict[str, Any]:
    """Run `effects` effects over `workers` processes on one journal and report its lock's turns."""
    folder.mkdir(parents=True)
    path = folder / "journal.jsonl"
    run = run_workers(watched_submitter, (str(path), effects // workers), workers, effects, f"t{workers}")
    watched = [json.loads(file.read_text()) for file in folder.glob("journal.jsonl.turns-*")]
    turns = sorted((took, let_go) for w in watched for _, took, let_go in w["turns"])
    holds = [let_go - took for took, let_go in turns]
    held = sum(holds)
    free = [later[0] - earlier[1] for earlier, later in zip(turns, turns[1:])]
    span = turns[-1][1] - turns[0][0]
    # a worker's wait: from its first try for a turn to its take, over the span of its timed effects
    waits = [sum(took - tried for tried, took, _ in w["turns"]) / (w["span"][1] - w["span"][0]) for w in watched]
    suffix = f"{workers}_workers"
    return {
        f"jsonl_lock_effects_per_second_{suffix}_watched": round(run.effects_per_second, 1),
        f"jsonl_lock_turns_per_effect_{suffix}": round(len(turns) / effects, 2),
        f"jsonl_lock_hold_ms_mean_{suffix}": round(held / len(turns) * 1e3, 3),
        f"jsonl_lock_hold_ms_median_{suffix}": round(statistics.median(holds) * 1e3, 3),
        f"jsonl_lock_free_between_turns_ms_mean_{suffix}": round(sum(free) / len(free) * 1e3, 3),
        f"jsonl_lock_held_share_{suffix}": round(held / span, 2),
        f"jsonl_lock_wait_share_{suffix}": round(statistics.median(waits), 2),
    }
