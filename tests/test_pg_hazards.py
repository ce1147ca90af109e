"""The shared journal's hazards, with real worker processes, a real PostgreSQL and the ledger write service over HTTP
(no dedupe; slow writes land after their sender died; an apply count per effect as ground truth): a paused owner
woken after a takeover, a send slower than the lease, a terminated session, a database killed and restarted
mid-request, a request in flight when its sender is SIGKILLed, and one that outlives a wrongly declared bound.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from interlock import Gate, verify_journal
from interlock.backends import open_journal
from interlock.effects import effect_id_for

from pg_worker import (LedgerTarget, effect_for, paused_at, pg_cluster, pg_url,  # noqa: F401  (fixtures)
                       resolutions, start, statuses, terminate_sessions, wait_for_file, wait_for_put)

pytest.importorskip("psycopg")
from interlock.pg import PgClaims, PgJournal  # noqa: E402

TTL = 1.0


def receipts(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "interlock.receipts", *args], capture_output=True, text=True,
                          timeout=60)


def test_a_paused_owner_woken_after_a_takeover_never_sends(pg_url, ledger, tmp_path):
    pause, eid = tmp_path / "pause", effect_id_for("k")
    owner = start(pg_url, ledger.endpoint, ["k"], paused_at("before_send", pause), ttl=TTL, in_flight=0.2)
    wait_for_file(pause, owner)
    os.kill(owner.pid, signal.SIGSTOP)  # its DISPATCHED is durable; it stops renewing
    pause.unlink()
    recovered = statuses(start(pg_url, ledger.endpoint, ["k"], ttl=TTL, wait=10, in_flight=0.2))
    assert recovered == ["REAPPLIED_AFTER_QUERY"] and ledger.applies(eid) == 1
    os.kill(owner.pid, signal.SIGCONT)
    woken = statuses(owner)
    assert ledger.applies(eid) == 1  # its confirm saw the new epoch: no second send
    assert woken != ["COMMITTED"]
    journal = PgJournal(pg_url)
    assert [r["epoch"] for r in resolutions(journal, eid)] == [2]
    assert verify_journal(journal.entries())["valid"]


def test_a_send_slower_than_the_ttl_keeps_its_claim(pg_url, ledger):
    eid = effect_id_for("k")
    ledger.configure(delay=2.0)  # twice the lease
    owner = start(pg_url, ledger.endpoint, ["k"], ttl=TTL, in_flight=3.0)
    wait_for_put(ledger, eid, owner)
    other = start(pg_url, ledger.endpoint, ["k"], ttl=TTL, wait=5, in_flight=3.0)
    assert statuses(owner) == ["COMMITTED"]
    assert statuses(other) == ["DUPLICATE_IGNORED"]  # it waited for the renewing owner, then read its result
    assert ledger.applies(eid) == 1


def test_a_terminated_session_does_not_hand_over_a_claim_in_a_request(pg_url, ledger, tmp_path):
    pause, eid = tmp_path / "pause", effect_id_for("k")
    owner = start(pg_url, ledger.endpoint, ["k"], paused_at("before_request", pause), ttl=TTL, in_flight=0.2)
    wait_for_file(pause, owner)  # confirmed: the request is about to go
    waiting = PgClaims(PgJournal(pg_url), ttl=TTL)
    assert terminate_sessions(pg_url) >= 2
    assert waiting.acquire(eid, wait=2.5 * TTL) is None  # at once: in a request; then: renewed via a new session
    pause.unlink()
    assert statuses(owner) == ["COMMITTED"]
    assert ledger.applies(eid) == 1
    assert PgClaims(PgJournal(pg_url)).owner_of(eid)["epoch"] == 1


def test_a_holder_cut_off_outside_a_request_is_taken_over_at_once_and_never_sends(pg_url, ledger, tmp_path):
    pause, eid = tmp_path / "pause", effect_id_for("k")
    owner = start(pg_url, ledger.endpoint, ["k"], paused_at("before_send", pause), ttl=60, in_flight=0.2)
    wait_for_file(pause, owner)
    os.kill(owner.pid, signal.SIGSTOP)  # so it cannot renew through a new session before the takeover
    terminate_sessions(pg_url)
    started = time.monotonic()
    assert statuses(start(pg_url, ledger.endpoint, ["k"], ttl=60, wait=10, in_flight=0.2)) == \
        ["REAPPLIED_AFTER_QUERY"]
    assert time.monotonic() - started < 10  # not the 60 s lease: its holder had no request in flight
    os.kill(owner.pid, signal.SIGCONT)
    pause.unlink()
    assert statuses(owner) != ["COMMITTED"]
    assert ledger.applies(eid) == 1


def test_a_database_killed_and_restarted_mid_request_keeps_the_claim_and_the_record(pg_cluster, pg_url, ledger,
                                                                                    tmp_path):
    pause, eid, ttl = tmp_path / "pause", effect_id_for("k"), 30.0  # longer than the restart
    owner = start(pg_url, ledger.endpoint, ["k"], paused_at("before_request", pause), ttl=ttl, in_flight=0.2)
    wait_for_file(pause, owner)
    killed = time.monotonic()
    pg_cluster.kill()
    pg_cluster.start()
    assert time.monotonic() - killed < ttl / 2, "the restart took so long that the lease may rightly expire"
    assert PgClaims(PgJournal(pg_url), ttl=ttl).acquire(eid, wait=1.0) is None
    pause.unlink()
    assert statuses(owner) == ["COMMITTED"]  # its COMMITTED went through a new session
    assert ledger.applies(eid) == 1
    journal = PgJournal(pg_url)
    assert journal.effect(eid).kinds == ["PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED"]
    assert verify_journal(journal.entries())["valid"]


def test_a_request_in_flight_when_its_sender_is_killed_is_found_not_resent(pg_url, ledger):
    eid = effect_id_for("k")
    ledger.configure(delay=1.5)
    sender = start(pg_url, ledger.endpoint, ["k"], ttl=TTL, in_flight=2.5)
    wait_for_put(ledger, eid, sender)
    sender.kill()  # its write is still in the service, and lands after this
    sender.wait()
    recovered = statuses(start(pg_url, ledger.endpoint, ["k"], ttl=TTL, wait=10, in_flight=2.5))
    assert recovered == ["COMMITTED_ON_QUERY"]
    assert ledger.applies(eid) == 1
    checked = verify_journal(PgJournal(pg_url).entries())
    assert checked["valid"] and checked["effects"][eid]["happened_once"]


def test_a_double_apply_the_record_cannot_see_is_flagged_against_the_services_export(pg_url, ledger, tmp_path):
    eid, ttl = effect_id_for("k"), 0.5
    ledger.configure(delay=2.0)  # far longer than the in_flight bound the target declares: a wrong declaration
    sender = start(pg_url, ledger.endpoint, ["k"], ttl=ttl, in_flight=0.1)
    wait_for_put(ledger, eid, sender)
    sender.kill()
    sender.wait()
    journal, claims = open_journal(pg_url, claim_ttl=ttl)  # recovered here: no process start before its lookup
    gate = Gate(journal, LedgerTarget(ledger.endpoint, in_flight=0.1), claims=claims, claim_wait=10)
    assert gate.recover(effect_for("k")).status == "REAPPLIED_AFTER_QUERY"  # it looked before the first write landed
    claims.close()
    assert ledger.applies(eid) == 2
    exported = tmp_path / "journal.jsonl"
    journal.export(exported)
    export = tmp_path / "service.json"
    export.write_text(json.dumps({eid: ledger.applies(eid)}))
    alone = receipts(str(exported))  # one effect's journal: checked as its receipt, printed as any journal
    assert alone.returncode == 0 and json.loads(alone.stdout)["effects"][eid]["happened_once"]
    held = receipts(str(exported), "--service", str(export))
    assert held.returncode == 1 and json.loads(held.stdout)["held_twice"] == [eid]
    assert json.loads(held.stdout)["effects"][eid]["held_twice"] == ["service: holds 2 copies"]
