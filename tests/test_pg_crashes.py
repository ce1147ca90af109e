"""Real worker processes on a real PostgreSQL and a file ledger: SIGKILL, SIGSTOP past the lease, a database
restart, racing senders, a REPEATABLE READ default. The ledger (tests/pg_worker.py) never deduplicates: a second
send of an effect shows as a second line.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from interlock import verify_journal
from interlock.effects import effect_id_for

from pg_worker import (FileLedger, finish, paused_at, pg_cluster, pg_url, resolutions,  # noqa: F401  (fixtures)
                       start, wait_for_file)

psycopg = pytest.importorskip("psycopg")
from interlock.pg import PgClaims, PgJournal  # noqa: E402

TTL = 1.0


def test_a_sigkilled_senders_claim_is_taken_over_at_once_and_recovery_settles_it(pg_url, tmp_path):
    ledger, pause = tmp_path / "ledger.jsonl", tmp_path / "pause"
    sender = start(pg_url, ledger, ["k"], paused_at("before_send", pause), ttl=120)
    wait_for_file(pause, sender)
    eid = effect_id_for("k")
    journal = PgJournal(pg_url)
    waiting = PgClaims(journal, ttl=120)
    assert waiting.acquire(eid, wait=0.2) is None  # the live sender holds it
    sender.kill()
    sender.wait()
    killed = time.monotonic()
    claim = waiting.acquire(eid, wait=10)
    assert (claim.epoch, claim.taken) == (2, "holder_gone")
    assert time.monotonic() - killed < 2, "takeover waited for the lease instead of the dead holder"
    claim.release()
    settled = finish(start(pg_url, ledger, ["k"]))
    assert [o["status"] for o in settled] == ["REAPPLIED_AFTER_QUERY"]  # tier 2: not found, still valid
    assert FileLedger(ledger).counts() == {eid: 1}
    assert verify_journal(journal.entries())["valid"]


def test_a_paused_sender_whose_lease_expired_has_its_late_result_recorded_not_applied(pg_url, tmp_path):
    ledger, pause = tmp_path / "ledger.jsonl", tmp_path / "pause"
    eid = effect_id_for("k")
    zombie = start(pg_url, ledger, ["k"], paused_at("after_commit", pause), ttl=TTL)
    wait_for_file(pause, zombie)
    os.kill(zombie.pid, signal.SIGSTOP)
    pause.unlink()
    recovered = finish(start(pg_url, ledger, ["k"], ttl=TTL, wait=10))  # waits for the lease on the db clock
    assert [o["status"] for o in recovered] == ["COMMITTED_ON_QUERY"]
    os.kill(zombie.pid, signal.SIGCONT)
    finish(zombie)
    journal = PgJournal(pg_url)
    record = journal.effect(eid)
    assert record.kinds == ["PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED", "LATE_RESULT"]
    resolution, late = resolutions(journal, eid), journal.entries(eid)[-1]
    assert [(r["via"], r["epoch"]) for r in resolution] == [("recovery-query", 2)]
    assert (late["late_kind"], late["epoch"]) == ("COMMITTED", 1)
    assert FileLedger(ledger).counts() == {eid: 1}


def test_a_database_restart_mid_dispatch_is_invisible_to_the_sender(pg_cluster, pg_url, tmp_path):
    ledger, pause = tmp_path / "ledger.jsonl", tmp_path / "pause"
    eid = effect_id_for("k")
    sender = start(pg_url, ledger, ["k"], paused_at("before_send", pause))
    wait_for_file(pause, sender)
    pg_cluster.restart()
    pause.unlink()
    assert [o["status"] for o in finish(sender)] == ["COMMITTED"]  # its sessions came back within the window
    assert FileLedger(ledger).counts() == {eid: 1}
    journal = PgJournal(pg_url)
    assert journal.open_dispatches() == []
    assert verify_journal(journal.entries())["valid"]


@pytest.mark.parametrize("workers, isolation", [(2, None), (16, None), (8, "repeatable read")])
def test_racing_workers_apply_every_effect_exactly_once(pg_url, tmp_path, workers, isolation):
    if isolation is not None:  # the database's default; the journal pins READ COMMITTED for its own sessions
        with psycopg.connect(pg_url, autocommit=True) as admin:
            database = pg_url.rsplit("/", 1)[1]
            admin.execute(f"ALTER DATABASE \"{database}\" SET default_transaction_isolation = '{isolation}'")
    ledger = tmp_path / "ledger.jsonl"
    keys = [f"request-{i}" for i in range(24)]
    procs = [start(pg_url, ledger, keys, shuffle=seed, wait=60) for seed in range(workers)]
    reports = [finish(proc, timeout=300) for proc in procs]
    counts = FileLedger(ledger).counts()
    assert counts == {effect_id_for(k): 1 for k in keys}  # zero duplicates, zero lost
    statuses = [o["status"] for report in reports for o in report]
    assert statuses.count("COMMITTED") == len(keys)
    assert set(statuses) <= {"COMMITTED", "DUPLICATE_IGNORED"}
    journal = PgJournal(pg_url)
    checked = verify_journal(journal.entries())
    assert checked["valid"] and all(v["happened_once"] for v in checked["effects"].values())
