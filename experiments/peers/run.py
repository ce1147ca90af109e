"""One peer worker's run of its job: the peer's record saved as the worker found it and as it left it, and the
harness's own reading of that record once the last worker exited."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, cast

from experiments import harness
from experiments.atomic import write_json
from experiments.journals import JOURNAL_URL_ENV
from experiments.peers.job import (AFTER_RUN_FILE, DBOS_STEP, KEY_FILE, POWERTOOLS_IDEMPOTENT, REDIS_URL_ENV, PeerJob,
                                   record_file)


def _peer(system: str) -> Any:
    """The peer's module, imported only in its own workers (each loads its library and its backend's client)."""
    if system == DBOS_STEP:
        from experiments.peers import dbos_step

        return dbos_step
    from experiments.peers import powertools_idempotent

    return powertools_idempotent


def _backend(system: str, case_dir: Path) -> str:
    """DBOS's system database (the run's PostgreSQL journal, else SQLite beside the cell), or the run's Redis."""
    if system == DBOS_STEP:
        return cast(str, _peer(system).system_database_url(case_dir, os.environ.get(JOURNAL_URL_ENV)))
    url = os.environ.get(REDIS_URL_ENV)
    if not url:
        raise RuntimeError(f"{REDIS_URL_ENV} is not set: the Powertools peer needs the run's redis-server")
    return url


def run_peer(system: str, phase: str, case_dir: Path, job: PeerJob) -> tuple[str, dict[str, Any]]:
    """Run the cell's job once with the peer; `peer_record_<phase>.json` keeps its record before and after."""
    peer, backend = _peer(system), _backend(system, case_dir)
    write_json(Path(case_dir) / KEY_FILE, {"system": system, "job_id": job.job_id})
    found = peer.record(job.job_id, backend) if phase == "restart" else None
    try:
        return cast(tuple[str, dict[str, Any]], peer.run(phase, job, backend))
    finally:
        write_json(Path(case_dir) / record_file(phase), {"found": found, "left": peer.record(job.job_id, backend)})


def observe_record(case_dir: Path, env: dict[str, str], timeout: float) -> harness.WorkerRun:
    """The harness's step after a peer cell's last worker: `read_after_run` in a process of its own, so the
    harness never loads a peer's library or the settings it leaves in a process."""
    return harness.run_worker("experiments.peers", ["--case", str(case_dir)], env, timeout)


def read_after_run(case_dir: Path) -> None:
    """Read the peer's record for the case's job as the store holds it now, into `peer_record_after_run.json`.

    Run by the harness (in a process of its own) after the last worker exited: an observation of the peer's store,
    like the service's listing, independent of whether the last worker lived to save its own reading.
    """
    case_dir = Path(case_dir)
    key = json.loads((case_dir / KEY_FILE).read_text(encoding="utf-8"))
    system, job_id = key["system"], key["job_id"]
    reading = _peer(system).record(job_id, _backend(system, case_dir))
    write_json(case_dir / AFTER_RUN_FILE, {"read_by": "the harness, after the last worker exited",
                                           "read_at": time.time(), "record": reading})


@contextlib.contextmanager
def peer_services(systems: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The backends the run's peers need, for the whole run: a redis-server when Powertools runs, its address in
    the environment the workers inherit. Yields what the provenance says about them."""
    if POWERTOOLS_IDEMPOTENT not in set(systems):
        yield {}
        return
    from experiments.peers.provenance import redis_server_version
    from experiments.services.redis import RedisServer

    before = os.environ.get(REDIS_URL_ENV)
    with RedisServer() as server:
        os.environ[REDIS_URL_ENV] = server.url
        try:
            yield {"idempotency_store": {"real": True, "name": "redis-server on loopback, nothing persisted",
                                         "version": redis_server_version()}}
        finally:
            if before is None:
                os.environ.pop(REDIS_URL_ENV, None)
            else:
                os.environ[REDIS_URL_ENV] = before
