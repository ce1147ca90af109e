"""Real worker processes on a real PostgreSQL: SIGKILL, SIGSTOP past the lease, a database restart, racing senders.

Ground truth is the file ledger the workers apply effects to (tests/pg_worker.py): it never deduplicates.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from interlock import verify_journal
from interlock.effects import effect_id_for

from pg_worker import FileLedger, outcomes, pg_cluster, pg_url, worker_command  # noqa: F401  (fixtures)

pytest.importorskip("psycopg")
from interlock.pg import PgClaims, PgJournal  # noqa: E402


def _start(journal: str, ledger: Path, keys: list[str], env: dict[str, str] | None = None, **options):
    return subprocess.Popen(worker_command(journal, ledger, keys, **options), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})


def _paused_at(point: str, pause: Path) -> dict[str, str]:
    return {"INTERLOCK_PAUSE_AT": point, "INTERLOCK_PAUSE_FILE": str(pause)}


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, f"worker never reached {path.name}"
        time.sleep(0.01)


def _finish(proc: subprocess.Popen, timeout: float = 120) -> list[dict]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return outcomes(out)


def _resolutions(journal: PgJournal, eid: str) -> list[dict]:
    return [e for e in journal.entries(eid) if e["kind"] in ("COMMITTED", "REFUSED", "AMBIGUOUS")]


def test_a_sigkilled_senders_claim_is_taken_over_at_once_and_recovery_settles_it(pg_url, tmp_path):
    ledger, pause = tmp_path / "ledger.jsonl", tmp_path / "pause"
    sender = _start(pg_url, ledger, ["k"], _paused_at("before_send", pause), ttl=120)
    _wait_for(pause, sender)
    eid = effect_id_for("k")
    journal = PgJournal(pg_url)
    waiting = PgClaims(journal, ttl=120)
    assert waiting.acquire(eid, wait=0.2) is None  # the live sender holds it
    sender.kill()
    sender.wait()
    killed = time.monotonic()
    claim = waiting.acquire(eid, wait=10)
    assert claim is not None and claim.epoch == 2
    assert time.monotonic() - killed < 2, "takeover waited for the lease instead of the dead session"
    claim.release()
    settled = _finish(_start(pg_url, ledger, ["k"]))
    assert [o["status"] for o in settled] == ["REAPPLIED_AFTER_QUERY"]  # tier 2: not found, still valid
    assert FileLedger(ledger).counts() == {eid: 1}
    assert verify_journal(journal.entries())["valid"]


def test_a_paused_sender_whose_lease_expired_has_its_late_result_recorded_not_applied(pg_url, tmp_path):
    ledger, pause = tmp_path / "ledger.jsonl", tmp_path / "pause"
    eid = effect_id_for("k")
    zombie = _start(pg_url, ledger, ["k"], _paused_at("after_commit", pause), ttl=1.0)
    _wait_for(pause, zombie)
    os.kill(zombie.pid, signal.SIGSTOP)
    pause.unlink()
    time.sleep(1.5)  # past the zombie's lease on the database clock
    recovered = _finish(_start(pg_url, ledger, ["k"], wait=10))
    assert [o["status"] for o in recovered] == ["COMMITTED_ON_QUERY"]
    os.kill(zombie.pid, signal.SIGCONT)
    _finish(zombie)
    journal = PgJournal(pg_url)
    record = journal.effect(eid)
    assert record.kinds == ["PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED", "LATE_RESULT"]
    resolution, late = _resolutions(journal, eid), journal.entries(eid)[-1]
    assert [(r["via"], r["epoch"]) for r in resolution] == [("recovery-query", 2)]
    assert (late["late_kind"], late["epoch"]) == ("COMMITTED", 1)
    assert FileLedger(ledger).counts() == {eid: 1}


def test_a_paused_sender_woken_after_a_takeover_never_sends(pg_url, tmp_path):
    ledger, pause = tmp_path / "ledger.jsonl", tmp_path / "pause"
    eid = effect_id_for("k")
    zombie = _start(pg_url, ledger, ["k"], _paused_at("after_proposed", pause), ttl=1.0)
    _wait_for(pause, zombie)
    os.kill(zombie.pid, signal.SIGSTOP)
    pause.unlink()
    time.sleep(1.5)
    assert [o["status"] for o in _finish(_start(pg_url, ledger, ["k"], wait=10))] == ["COMMITTED"]
    os.kill(zombie.pid, signal.SIGCONT)
    assert [o["status"] for o in _finish(zombie)] == ["IN_FLIGHT"]  # its DISPATCHED was fenced out
    assert FileLedger(ledger).counts() == {eid: 1}
    assert PgJournal(pg_url).effect(eid).kinds.count("DISPATCHED") == 1


def test_a_database_restart_mid_dispatch_is_settled_by_recovery(pg_cluster, pg_url, tmp_path):
    ledger, pause = tmp_path / "ledger.jsonl", tmp_path / "pause"
    eid = effect_id_for("k")
    sender = _start(pg_url, ledger, ["k"], _paused_at("before_request", pause))  # after the claim confirm
    _wait_for(pause, sender)
    pg_cluster.restart()
    pause.unlink()
    sender.communicate(timeout=60)
    assert sender.returncode != 0  # it sent, then could not journal the answer: the connection died
    assert FileLedger(ledger).counts() == {eid: 1}
    journal = PgJournal(pg_url)
    assert [r.effect_id for r in journal.open_dispatches()] == [eid]
    assert [o["status"] for o in _finish(_start(pg_url, ledger, ["k"], wait=10))] == ["COMMITTED_ON_QUERY"]
    assert FileLedger(ledger).counts() == {eid: 1}
    assert journal.open_dispatches() == []
    assert verify_journal(journal.entries())["valid"]


@pytest.mark.parametrize("workers", [2, 16])
def test_racing_workers_apply_every_effect_exactly_once(pg_url, tmp_path, workers):
    ledger = tmp_path / "ledger.jsonl"
    keys = [f"request-{i}" for i in range(24)]
    procs = [_start(pg_url, ledger, keys, shuffle=seed, wait=60) for seed in range(workers)]
    reports = [_finish(proc, timeout=300) for proc in procs]
    counts = FileLedger(ledger).counts()
    assert counts == {effect_id_for(k): 1 for k in keys}  # zero duplicates, zero lost
    statuses = [o["status"] for report in reports for o in report]
    assert statuses.count("COMMITTED") == len(keys)
    assert set(statuses) <= {"COMMITTED", "DUPLICATE_IGNORED"}
    journal = PgJournal(pg_url)
    checked = verify_journal(journal.entries())
    assert checked["valid"] and all(v["happened_once"] for v in checked["effects"].values())
