"""Database failures on the shared journal reach the caller as the library's own errors saying what is known of
the send, with real worker processes, a real PostgreSQL stopped under them and the ledger write service: a
database down before anything was sent, down at the confirm before the request, down long enough that the
owner's renewals let its lease run out, and down when the service had answered but COMMITTED was not written.
"""

from __future__ import annotations

import time

import pytest

from interlock import Effect, Gate, JournalUnavailable, verify_journal
from interlock.effects import effect_id_for

from pg_worker import (LedgerTarget, finish, paused_at, pg_cluster, pg_url, start,  # noqa: F401  (fixtures)
                       statuses, wait_for_file)

pytest.importorskip("psycopg")
from interlock.pg import PgClaims, PgJournal  # noqa: E402


def stopped_for(pg_cluster, seconds: float) -> None:
    """Stop the server and start it again once `seconds` have passed (a lease running out: a wait on the clock)."""
    stopped = time.monotonic()
    pg_cluster.stop_server()
    while time.monotonic() - stopped < seconds:
        time.sleep(0.05)
    pg_cluster.start()


def released_while_down(pg_cluster, pause, owner) -> dict:
    """What the paused owner is told when it goes on while the server is stopped (started again afterwards)."""
    pg_cluster.stop_server()
    try:
        pause.unlink()
        [told] = finish(owner)
    finally:
        pg_cluster.start()
    return told


def test_a_database_down_before_the_submit_is_journal_unavailable_with_nothing_sent(pg_cluster, pg_url, ledger):
    journal = PgJournal(pg_url)
    gate = Gate(journal, LedgerTarget(ledger.endpoint, in_flight=0.2), claims=PgClaims(journal), claim_wait=1)
    pg_cluster.stop_server()
    try:
        with pytest.raises(JournalUnavailable) as down:
            gate.submit(Effect("k", {"key": "k"}))
    finally:
        pg_cluster.start()
    assert down.value.sent is False
    assert pg_url.rsplit("/", 1)[1] in str(down.value) and "password" not in str(down.value)
    assert ledger.applies(effect_id_for("k")) == 0


def test_an_owner_that_cannot_reach_the_database_to_confirm_does_not_send(pg_cluster, pg_url, ledger, tmp_path):
    pause, eid = tmp_path / "pause", effect_id_for("k")
    owner = start(pg_url, ledger.endpoint, ["k"], paused_at("before_send", pause), in_flight=0.2)
    wait_for_file(pause, owner)  # DISPATCHED is durable; the confirm and the request are next
    told = released_while_down(pg_cluster, pause, owner)
    assert (told["error"], told["sent"]) == ("JournalUnavailable", False)
    assert "not sent" in told["message"]
    assert ledger.applies(eid) == 0
    assert [r.effect_id for r in PgJournal(pg_url).open_dispatches()] == [eid]  # left open for recovery
    assert statuses(start(pg_url, ledger.endpoint, ["k"], wait=10, in_flight=0.2)) == ["REAPPLIED_AFTER_QUERY"]
    assert ledger.applies(eid) == 1


def test_an_owner_whose_renewals_failed_past_its_lease_does_not_send(pg_cluster, pg_url, ledger, tmp_path):
    pause, eid, ttl = tmp_path / "pause", effect_id_for("k"), 1.0
    owner = start(pg_url, ledger.endpoint, ["k"], paused_at("before_send", pause), ttl=ttl, in_flight=0.2)
    wait_for_file(pause, owner)
    stopped_for(pg_cluster, 1.5 * ttl)  # no renewal reaches the database: the lease runs out on its clock
    pause.unlink()
    assert statuses(owner) == ["IN_FLIGHT"]  # its confirm found the lease gone: it did not send
    assert ledger.applies(eid) == 0
    assert statuses(start(pg_url, ledger.endpoint, ["k"], ttl=ttl, wait=10, in_flight=0.2)) == \
        ["REAPPLIED_AFTER_QUERY"]
    assert ledger.applies(eid) == 1


def test_a_send_whose_committed_could_not_be_written_is_settled_by_recovery(pg_cluster, pg_url, ledger, tmp_path):
    pause, eid, ttl = tmp_path / "pause", effect_id_for("k"), 2.0
    owner = start(pg_url, ledger.endpoint, ["k"], paused_at("after_commit", pause), ttl=ttl, in_flight=0.2)
    wait_for_file(pause, owner)  # the service applied it; COMMITTED is next
    told = released_while_down(pg_cluster, pause, owner)
    assert (told["error"], told["sent"]) == ("JournalUnavailable", None)  # sent, its outcome left for recovery
    assert "COMMITTED" in told["message"]
    journal = PgJournal(pg_url)
    assert journal.effect(eid).kinds == ["PROPOSED", "AUTHORIZED", "DISPATCHED"]
    assert statuses(start(pg_url, ledger.endpoint, ["k"], ttl=ttl, wait=10, in_flight=0.2)) == ["COMMITTED_ON_QUERY"]
    assert ledger.applies(eid) == 1
    checked = verify_journal(journal.entries(), service={eid: ledger.applies(eid)})
    assert checked["valid"] and checked["held_twice"] == []
