"""Effects per second through the gate with 1, 4 and 16 worker processes, PostgreSQL against JSONL, and takeover times.

Every worker submits its own effects (tier 1, a send that only returns its evidence), so the figures measure the
journal and the claims: per effect one claim, four durable entries (PROPOSED, AUTHORIZED, DISPATCHED, COMMITTED)
and a release. Both backends commit durably (fsync; PostgreSQL with synchronous_commit on). Takeover is timed
from the SIGKILL of a sender holding a claim to the moment another process holds it; after a SIGSTOP it waits
for the lease, by design. The benchmark starts and deletes its own PostgreSQL cluster.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from experiments import crash
from interlock import Effect, FunctionTarget, Gate
from interlock.backends import open_journal
from interlock.effects import effect_id_for

WORKERS = (1, 4, 16)
EFFECTS = 320  # per run, split evenly between the workers
TAKEOVERS = 5
STOPPED_TTL = 1.0


def _worker(address: str, keys: list[str], start: Any, done: Any) -> None:
    journal, claims = open_journal(address)
    gate = Gate(journal, FunctionTarget("bench", lambda eid, payload: {"id": eid}, tier=1), claims=claims)
    start.wait()
    began = time.time()
    statuses = [gate.submit(Effect(key, {"key": key})).status for key in keys]
    done.put((began, time.time(), statuses.count("COMMITTED")))


def _throughput(address: str, workers: int, run: str) -> float:
    context = multiprocessing.get_context("spawn")
    start, done = context.Barrier(workers), context.Queue()
    share = EFFECTS // workers
    procs = [context.Process(target=_worker, args=(address, [f"{run}-{w}-{i}" for i in range(share)], start, done))
             for w in range(workers)]
    for proc in procs:
        proc.start()
    results = [done.get(timeout=600) for _ in procs]
    for proc in procs:
        proc.join()
    committed = sum(r[2] for r in results)
    if committed != share * workers:
        raise RuntimeError(f"{run}: {committed} of {share * workers} effects committed")
    return round(committed / (max(r[1] for r in results) - min(r[0] for r in results)), 1)


def _victim(address: str, key: str, pause: str, ttl: float) -> None:
    os.environ.update({"INTERLOCK_PAUSE_AT": "before_send", "INTERLOCK_PAUSE_FILE": pause})
    journal, claims = open_journal(address, claim_ttl=ttl)
    Gate(journal, FunctionTarget("bench", lambda eid, payload: {"id": eid}, tier=1), claims=claims,
         hooks=crash.HOOK).submit(
        Effect(key, {"key": key}))


def _takeover(address: str, key: str, stop: bool, claims: Any) -> float:
    """Seconds from the signal to the sender until `claims` holds its effect."""
    pause = Path(tempfile.mkdtemp(prefix="interlock-bench-")) / "pause"
    ttl = STOPPED_TTL if stop else 60.0
    victim = multiprocessing.get_context("spawn").Process(target=_victim, args=(address, key, str(pause), ttl))
    victim.start()
    deadline = time.monotonic() + 60
    while not pause.exists():
        if time.monotonic() > deadline or not victim.is_alive():
            raise RuntimeError(f"the sender never reached its send ({key})")
        time.sleep(0.005)
    signalled = time.perf_counter()
    os.kill(victim.pid, signal.SIGSTOP if stop else signal.SIGKILL)
    claim = claims.acquire(effect_id_for(key), wait=60)
    taken = time.perf_counter() - signalled
    if claim is None:
        raise RuntimeError(f"no takeover within 60 s ({key})")
    claim.release()
    if stop:
        os.kill(victim.pid, signal.SIGKILL)
    victim.join()
    pause.unlink(missing_ok=True)
    return taken


def _takeovers(address: str, backend: str, stop: bool = False) -> float:
    _, claims = open_journal(address)
    kind = "stopped" if stop else "killed"
    return round(statistics.median(_takeover(address, f"{backend}-{kind}-{i}", stop, claims)
                                   for i in range(TAKEOVERS)) * 1000, 1)


def run() -> dict[str, Any]:
    """Throughput per backend and worker count, their scaling against one worker, and takeover times."""
    from experiments.services.postgres import TempCluster

    out: dict[str, Any] = {"effects_per_run": EFFECTS, "cpus": os.cpu_count()}
    with TempCluster() as cluster, tempfile.TemporaryDirectory(prefix="interlock-bench-") as tmp:
        backends = {"postgresql": cluster.create_database("bench"), "jsonl": str(Path(tmp) / "journal.jsonl")}
        for backend, address in backends.items():
            rates = {n: _throughput(address, n, f"{backend}-{n}") for n in WORKERS}
            for n, rate in rates.items():
                out[f"{backend}_effects_per_second_{n}_workers"] = rate
                out[f"{backend}_scaling_{n}_workers"] = round(rate / rates[1], 2)
            out[f"{backend}_takeover_after_sigkill_ms"] = _takeovers(address, backend)
        out["postgresql_takeover_after_sigstop_ms"] = _takeovers(backends["postgresql"], "postgresql", stop=True)
        out["postgresql_claim_ttl_seconds_when_stopped"] = STOPPED_TTL
    for n in WORKERS:
        out[f"postgresql_vs_jsonl_{n}_workers"] = round(
            out[f"postgresql_effects_per_second_{n}_workers"] / out[f"jsonl_effects_per_second_{n}_workers"], 2)
    return out
