"""What each system costs per effect, measured in one run on one disk: a direct call, Interlock's decorator on a JSONL
journal and on PostgreSQL, DBOS on SQLite and on PostgreSQL, Powertools idempotency on Redis.

Every system wraps the same call: a local service that appends the effect to a file and fsyncs it before answering.
Each is configured as the experiments run it (experiments.peers for the two peers). Per-effect median and p99 come
from the one-worker runs; effects per second from 1, 4 and 16 worker processes sharing the system's store, timed from
a barrier after every worker finished its set-up (imports, DBOS launch, connections) while every worker runs
(`bench._throughput`). The benchmark starts and deletes its own PostgreSQL cluster and redis-server.
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._results import against
from ._scratch import scratch
from ._throughput import Call, durable_service, expect, run_workers

if TYPE_CHECKING:
    from experiments.services.postgres import TempCluster

WORKERS = (1, 4, 16)
EFFECTS = 320  # per run, split evenly between the workers
# and at least this many a worker: with 20 each, a 16-worker run of the direct call had a worker done before the
# last one started, leaving no moment when every worker ran
AT_LEAST_PER_WORKER = 80
ROUNDS = 4  # the one-worker figures: each system runs EFFECTS // ROUNDS effects per round, the systems in turn
SYSTEMS = ("direct", "interlock_decorator_jsonl", "interlock_decorator_postgresql", "dbos_sqlite", "dbos_postgresql",
           "powertools_redis")
BACKENDS = {
    "direct": "none: the call itself",
    "interlock_decorator_jsonl": "interlock.Interlock (@app.effect) on one JSONL journal with file claims",
    "interlock_decorator_postgresql": "interlock.Interlock (@app.effect) on the PostgreSQL journal and claims",
    "dbos_sqlite": "one @DBOS.workflow with one @DBOS.step, SQLite system database",
    "dbos_postgresql": "one @DBOS.workflow with one @DBOS.step, PostgreSQL system database",
    "powertools_redis": "@idempotent_function behind a Lambda handler, RedisCachePersistenceLayer",
}


def caller(system: str, address: str, folder: str, worker: int) -> Call:
    """Set the system up in this process and return the call that makes one effect through it."""
    send = durable_service(Path(folder) / f"service-{worker}.jsonl")
    if system == "direct":
        return lambda key: expect(send(key, {"key": key}), {"stored": key})
    if system.startswith("interlock"):
        from interlock import Interlock, current_effect

        app = Interlock(address)

        @app.effect(key=lambda key: key, name="bench")
        def act(key: str) -> dict[str, Any]:
            return send(current_effect(), {"key": key})

        return lambda key: expect(act(key).status, "COMMITTED")
    if system.startswith("dbos"):
        from experiments.peers import dbos_step

        dbos_step.launch(address, f"bench-{worker}", lambda request: ("WRITTEN", send(request["key"], request)))
        return lambda key: expect(dbos_step.start(key, {"key": key})["outcome"], "WRITTEN")
    from experiments.peers import powertools_idempotent as powertools

    handler = powertools.handler_for(lambda request: ("WRITTEN", send(request["key"], request)),
                                     powertools.store(address), powertools.config())
    return lambda key: expect(handler({"job_id": key, "request": {"key": key}},
                                       powertools.LambdaContext())["outcome"], "WRITTEN")


def _address(system: str, folder: Path, cluster: TempCluster, redis_url: str) -> str:
    if system == "interlock_decorator_jsonl":
        return str(folder / "journal.jsonl")
    if system == "interlock_decorator_postgresql":
        return cluster.create_database(f"interlock_{folder.name}")
    if system == "dbos_sqlite":
        return f"sqlite:///{folder / 'dbos_system.sqlite'}"
    if system == "dbos_postgresql":
        return cluster.create_database(f"dbos_{folder.name}")
    return redis_url if system == "powertools_redis" else ""


def run() -> dict[str, Any]:
    """Every system at every worker count; one worker runs in rounds that take the systems in turn, so a noisy
    moment of the shared disk falls on all of them alike."""
    from experiments.services.postgres import TempCluster
    from experiments.services.redis import RedisServer

    figures: dict[str, dict[str, Any]] = {s: {"backend": BACKENDS[s], "effects_per_second": {}} for s in SYSTEMS}
    medians: dict[str, list[float]] = {system: [] for system in SYSTEMS}  # each one-worker round's median latency
    with scratch("bench-peers-") as tmp, TempCluster() as cluster, \
            RedisServer() as redis_server:
        for workers in WORKERS:
            rounds = ROUNDS if workers == 1 else 1
            per_run = max(EFFECTS, workers * AT_LEAST_PER_WORKER)
            places = {}
            for system in SYSTEMS:
                folder = tmp / f"w{workers}_{system}"
                folder.mkdir()
                places[system] = folder, _address(system, folder, cluster, redis_server.url)
            seconds, effects = dict.fromkeys(SYSTEMS, 0.0), dict.fromkeys(SYSTEMS, 0)  # while every worker ran
            latencies: dict[str, list[float]] = {system: [] for system in SYSTEMS}
            for number in range(rounds):
                for system in SYSTEMS:
                    folder, address = places[system]
                    measured = run_workers(caller, (system, address, str(folder)), workers, per_run // rounds,
                                           f"{system}-{workers}-{number}")
                    seconds[system] += measured.window_seconds
                    effects[system] += measured.window_effects
                    latencies[system] += measured.latencies
                    if workers == 1:
                        medians[system].append(statistics.median(measured.latencies))
            for system in SYSTEMS:
                figures[system]["effects_per_second"][str(workers)] = round(effects[system] / seconds[system], 1)
                if workers == 1:
                    figures[system]["median_ms"] = round(statistics.median(latencies[system]) * 1e3, 3)
                    figures[system]["p99_ms"] = round(statistics.quantiles(latencies[system], n=100)[98] * 1e3, 3)
    direct = figures["direct"]["median_ms"]
    for system in SYSTEMS:
        figures[system]["added_median_ms"] = round(figures[system]["median_ms"] - direct, 3)
    interlock, dbos = figures["interlock_decorator_jsonl"], figures["dbos_sqlite"]
    ratio = round(interlock["median_ms"] / dbos["median_ms"], 3)
    by_round = [round(i / d, 3) for i, d in zip(medians["interlock_decorator_jsonl"], medians["dbos_sqlite"])]
    return {
        "note": "one worker process per concurrent worker; every effect fsyncs the service's file; the systems "
                "commit durably as configured (Interlock flushes its JSONL journal once per effect, before the "
                "request; DBOS and PostgreSQL their defaults)",
        "effects_per_run": {str(w): max(EFFECTS, w * AT_LEAST_PER_WORKER) for w in WORKERS},
        "cpus": os.cpu_count(),
        "systems": figures,
        "interlock_decorator_over_dbos_sqlite_median": ratio,
        "interlock_decorator_over_dbos_sqlite_median_each_round": by_round,
        "interlock_decorator_over_dbos_sqlite_added": round(interlock["added_median_ms"] / dbos["added_median_ms"], 3),
        "targets": {"interlock_decorator_over_dbos_sqlite_median": against(ratio, "<=", 0.2, rounds=by_round)},
    }
