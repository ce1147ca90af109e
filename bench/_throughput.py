"""Effects per second of worker processes sharing one store: the one harness every throughput benchmark runs.

Each worker is a fresh spawned process that sets its system up (imports, connections, a DBOS launch) and makes
WARMUP effects of its own untimed (so a database session's first statements, which plan and compile, and a
process's first pass through its code fall on no system's figures), waits at a barrier with the others, then
makes its share of effects one after another, timing each. The rate is taken while every worker runs: the effects
finished between the last worker's start and the first worker's end, over that time. Before it lies the warm-up,
after it the cool-down, when the workers that drew the longest turns finish alone on a machine the others have
left (a fifth of a 16-worker run of 120 effects each); a fleet that keeps working has neither. The whole run's
rate, first start to last end, stands beside it, and the share of the run that came after the first worker's end.
A worker that fails stops the run at once.
"""

from __future__ import annotations

import bisect
import json
import multiprocessing
import os
import queue
import resource
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

DEADLINE_SECONDS = 600.0
WARMUP = 10  # untimed effects per worker before the barrier

Call = Callable[[str], None]  # makes the effect with this key, raising if it did not go through
# what a worker sends back: start, end, latencies, CPU seconds, voluntary and involuntary switches, finish times
Report = tuple[float, float, list[float], float, int, int, list[float]]


@dataclass(frozen=True)
class Run:
    """What one run measured: every effect's latency, effects per second across all workers while every one of them
    ran (`window_effects` over `window_seconds`) and over the whole run (`seconds` from first start to last end,
    `tail_share` of it after the first worker's end), the CPU time the workers spent per effect (beside the wall
    time per effect it says whether a run waited or computed), and how often per effect a worker gave up its core:
    to wait (voluntary) or because the scheduler took it (involuntary)."""

    latencies: list[float]
    seconds: float
    window_effects: int
    window_seconds: float
    tail_share: float
    cpu_seconds_per_effect: float
    voluntary_switches_per_effect: float
    involuntary_switches_per_effect: float

    @property
    def effects_per_second(self) -> float:
        """Effects per second while every worker ran."""
        return self.window_effects / self.window_seconds

    @property
    def whole_run_effects_per_second(self) -> float:
        """Effects per second from the first worker's start to the last one's end."""
        return len(self.latencies) / self.seconds


def durable_service(path: Path) -> Callable[[str, dict[str, Any]], dict[str, Any]]:
    """The call every benchmarked system wraps: a local service that appends the effect to its file and fsyncs
    before answering, as a durable service would."""

    def send(effect_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        with open(path, "a") as out:
            out.write(json.dumps({"effect_id": effect_id, **payload}) + "\n")
            out.flush()
            os.fsync(out.fileno())
        return {"stored": effect_id}

    return send


def expect(got: Any, want: Any) -> None:
    """Raise when an effect did not go through, so a failure is never timed as a success."""
    if got != want:
        raise RuntimeError(f"an effect did not go through: {got!r}, expected {want!r}")


def _worker(setup: Callable[..., Call], args: tuple[Any, ...], worker: int, keys: list[str], start: Any,
            done: Any) -> None:
    call = setup(*args, worker)
    for i in range(WARMUP):
        call(f"{keys[0]}-warmup-{i}")
    start.wait()
    began, cpu, usage = time.time(), time.process_time(), resource.getrusage(resource.RUSAGE_SELF)
    latencies, finished = [], []
    for key in keys:
        t = time.perf_counter()
        call(key)
        latencies.append(time.perf_counter() - t)
        finished.append(time.time())
    after = resource.getrusage(resource.RUSAGE_SELF)
    done.put((began, time.time(), latencies, time.process_time() - cpu, after.ru_nvcsw - usage.ru_nvcsw,
              after.ru_nivcsw - usage.ru_nivcsw, finished))


def run_workers(setup: Callable[..., Call], args: tuple[Any, ...], workers: int, effects: int, run: str) -> Run:
    """Run `effects` effects (keys `<run>-<worker>-<n>`) split evenly over `workers` processes, each calling
    `setup(*args, worker)` (a module-level function, so a spawned process can import it) for its `Call`."""
    context = multiprocessing.get_context("spawn")
    start, done = context.Barrier(workers), context.Queue()
    share = effects // workers
    procs = [context.Process(target=_worker, args=(setup, args, w, [f"{run}-{w}-{i}" for i in range(share)], start,
                                                   done)) for w in range(workers)]
    for proc in procs:
        proc.start()
    try:
        results = _collect(done, procs)
    finally:
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
                proc.join()
    latencies = [x for r in results for x in r[2]]
    if len(latencies) != share * workers:
        raise RuntimeError(f"{run}: {len(latencies)} of {share * workers} effects timed")
    first, last = min(r[0] for r in results), max(r[1] for r in results)
    window, window_seconds = while_all_ran(results, run)
    effects, seconds = len(latencies), last - first
    tail = last - min(r[1] for r in results)  # after the first worker's end
    return Run(latencies, seconds, window, window_seconds, tail / seconds, sum(r[3] for r in results) / effects,
               sum(r[4] for r in results) / effects, sum(r[5] for r in results) / effects)


def per_round(runs: list[Run], against: list[Run], *, whole_run: bool = False) -> float:
    """The median over the rounds of each round's rate over the rate it is set against in that round (while every
    worker ran, or over the whole runs): the machine's drift between rounds falls on both sides of each ratio alike."""
    return round(statistics.median(_ratios(runs, against, whole_run)), 2)


def each_round(runs: list[Run], against: list[Run]) -> list[float]:
    """Each round's ratio behind `per_round` (while every worker ran), in the order the rounds ran."""
    return [round(ratio, 2) for ratio in _ratios(runs, against, False)]


def _ratios(runs: list[Run], against: list[Run], whole_run: bool) -> list[float]:
    def rate(r: Run) -> float:
        return r.whole_run_effects_per_second if whole_run else r.effects_per_second

    return [rate(r) / rate(a) for r, a in zip(runs, against)]


def while_all_ran(results: list[Report], run: str) -> tuple[int, float]:
    """How many effects finished while every worker ran, from the last worker's start to the first one's end, and
    how long that was."""
    opened, closed = max(r[0] for r in results), min(r[1] for r in results)
    if closed <= opened:
        raise RuntimeError(f"{run}: a worker ended before the last one started: no moment when every worker ran")
    finished = sorted(t for r in results for t in r[6])
    return bisect.bisect_right(finished, closed) - bisect.bisect_right(finished, opened), closed - opened


def _collect(done: Any, procs: list[Any]) -> list[Report]:
    """Each worker's figures; a worker that died (its set-up or an effect failed) stops the run at once."""
    results: list[Report] = []
    deadline = time.monotonic() + DEADLINE_SECONDS
    while len(results) < len(procs):
        try:
            results.append(done.get(timeout=0.5))
        except queue.Empty:
            failed = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if failed or time.monotonic() > deadline:
                raise RuntimeError(f"a benchmark worker failed (exit codes {failed}) or the run passed "
                                   f"{DEADLINE_SECONDS:.0f}s") from None
    return results
