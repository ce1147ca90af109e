"""Effects per second of worker processes sharing one store: the one harness every throughput benchmark runs.

Each worker is a fresh spawned process that sets its system up (imports, connections, a DBOS launch) and makes
WARMUP effects of its own untimed (so a database session's first statements, which plan and compile, and a
process's first pass through its code fall on no system's figures), waits at a barrier with the others, then
makes its share of effects one after another, timing each. The rate is every effect over the span from the first
worker's start to the last worker's end; a worker that fails stops the run at once.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import queue
import resource
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

DEADLINE_SECONDS = 600.0
WARMUP = 10  # untimed effects per worker before the barrier

Call = Callable[[str], None]  # makes the effect with this key, raising if it did not go through


@dataclass(frozen=True)
class Run:
    """What one run measured: every effect's latency, effects per second across all workers, the CPU time the
    workers spent per effect (beside the wall time per effect it says whether a run waited or computed), and how
    often per effect a worker gave up its core: to wait (voluntary) or because the scheduler took it (involuntary)."""

    effects_per_second: float
    latencies: list[float]
    seconds: float
    cpu_seconds_per_effect: float
    voluntary_switches_per_effect: float
    involuntary_switches_per_effect: float


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
    latencies = []
    for key in keys:
        t = time.perf_counter()
        call(key)
        latencies.append(time.perf_counter() - t)
    after = resource.getrusage(resource.RUSAGE_SELF)
    done.put((began, time.time(), latencies, time.process_time() - cpu, after.ru_nvcsw - usage.ru_nvcsw,
              after.ru_nivcsw - usage.ru_nivcsw))


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
    seconds = max(r[1] for r in results) - min(r[0] for r in results)
    effects = len(latencies)
    return Run(effects / seconds, latencies, seconds, sum(r[3] for r in results) / effects,
               sum(r[4] for r in results) / effects, sum(r[5] for r in results) / effects)


def _collect(done: Any, procs: list[Any]) -> list[tuple[float, float, list[float], float, int, int]]:
    """Each worker's figures; a worker that died (its set-up or an effect failed) stops the run at once."""
    results: list[tuple[float, float, list[float], float, int, int]] = []
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
