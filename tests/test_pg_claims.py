"""PostgreSQL claims as leases: renewed while held, confirmed before a request, kept across a lost session while a
request may be in flight, fenced once taken over. Held in this process; tests/test_pg_crashes.py pauses and
kills real holders."""

from __future__ import annotations

import time

import pytest

from interlock import verify_journal
from interlock.errors import ClaimLost, GuardFailed

from pg_worker import pg_cluster, pg_url  # noqa: F401  (fixtures)

psycopg = pytest.importorskip("psycopg")
from interlock.pg import PgClaims, PgJournal  # noqa: E402


def _claims(url: str, ttl: float) -> PgClaims:
    return PgClaims(PgJournal(url), ttl=ttl)


def _terminate(url: str, backend: int) -> None:
    with psycopg.connect(url, autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", (backend,)).fetchone()[0]


def _dispatched(claims: PgClaims, claim) -> None:
    claims.journal.append("PROPOSED", claim.effect_id, {"payload_hash": "p"})
    claims.journal.append("DISPATCHED", claim.effect_id, {"epoch": claim.epoch})


def test_a_live_holder_keeps_its_claim_past_the_ttl_by_renewing_it(pg_url):
    owner, other = _claims(pg_url, 0.6), _claims(pg_url, 0.6)
    held = owner.acquire("e1", wait=0)
    first_expiry = owner.owner_of("e1")["expires"]
    assert other.acquire("e1", wait=1.5) is None  # 2.5 ttl later, still held
    assert owner.owner_of("e1")["expires"] > first_expiry
    assert held.confirm() and not held.lost


def test_owner_of_reads_a_released_claim(pg_url):
    claims = _claims(pg_url, 30)
    claims.acquire("e1", wait=0).release()
    row = claims.owner_of("e1")
    assert (row["epoch"], row["released"], row["expires"], row["in_request"]) == (1, True, None, False)
    again = claims.acquire("e1", wait=0)
    assert (again.epoch, again.taken) == (2, "released")


def test_a_holders_claim_is_free_at_once_when_its_session_ends_outside_a_request(pg_url):
    owner, other = _claims(pg_url, 60), _claims(pg_url, 60)
    assert owner.acquire("e1", wait=0).epoch == 1
    owner.close()
    started = time.monotonic()
    taken = other.acquire("e1", wait=5)
    assert (taken.epoch, taken.taken) == (2, "holder_gone") and time.monotonic() - started < 1


def test_a_claim_in_a_request_outlives_its_holders_session_until_the_lease_expires(pg_url):
    owner, other = _claims(pg_url, 1.0), _claims(pg_url, 1.0)
    held = owner.acquire("e1", wait=0)
    _dispatched(owner, held)
    assert held.confirm()  # the request starts
    owner.close()  # the session goes and nothing renews: a dead holder, or one cut off mid-request
    started = time.monotonic()
    assert other.acquire("e1", wait=0.3) is None
    taken = other.acquire("e1", wait=5)
    assert (taken.epoch, taken.taken) == (2, "expired") and 0.5 < time.monotonic() - started < 3


def test_a_terminated_session_mid_request_does_not_hand_the_claim_over(pg_url):
    owner, other = _claims(pg_url, 0.9), _claims(pg_url, 0.9)
    held = owner.acquire("e1", wait=0)
    _dispatched(owner, held)
    assert held.confirm()
    _terminate(pg_url, owner.owner_of("e1")["backend"])
    assert other.acquire("e1", wait=2.0) is None  # the holder renews through a new session
    assert held.confirm() and owner.owner_of("e1")["epoch"] == 1


def test_a_holder_cut_off_outside_a_request_loses_the_claim_and_is_fenced(pg_url):
    owner, other = _claims(pg_url, 60), _claims(pg_url, 60)
    held = owner.acquire("e1", wait=0)
    owner.journal.append("PROPOSED", "e1", {"payload_hash": "p"})
    _terminate(pg_url, owner.owner_of("e1")["backend"])
    taken = other.acquire("e1", wait=5)
    assert (taken.epoch, taken.taken) == (2, "holder_gone")
    assert not held.confirm()  # its next confirm, through a new session, sees the new epoch
    with pytest.raises(ClaimLost):
        owner.journal.append_dispatch("e1", {"epoch": held.epoch}, [lambda: []])
    with pytest.raises(ClaimLost):
        owner.journal.append("DISPATCHED", "e1", {"epoch": held.epoch})
    other.journal.append("DISPATCHED", "e1", {"epoch": taken.epoch})
    late = owner.journal.append("COMMITTED", "e1", {"via": "send", "result": "stale", "epoch": held.epoch})
    assert (late["kind"], late["late_kind"], late["epoch"]) == ("LATE_RESULT", "COMMITTED", 1)
    other.journal.append("COMMITTED", "e1", {"via": "send", "result": "fresh", "epoch": taken.epoch})
    record = other.journal.effect("e1")
    assert record.kinds == ["PROPOSED", "DISPATCHED", "LATE_RESULT", "COMMITTED"]
    assert record.resolution["result"] == "fresh"


def test_confirm_refuses_an_expired_lease(pg_url):
    claims = _claims(pg_url, 30)
    held = claims.acquire("e1", wait=0)
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute("UPDATE interlock_claims SET expires = clock_timestamp() - interval '1 s' WHERE effect_id = 'e1'")
    assert not held.confirm()
    claims.close()


def test_confirm_refuses_on_a_closed_claims_session(pg_url):
    claims = _claims(pg_url, 30)
    held = claims.acquire("e1", wait=0)
    claims.close()
    assert not held.confirm()


def test_a_released_claim_that_was_taken_over_stays_with_its_new_owner(pg_url):
    first, second = _claims(pg_url, 60), _claims(pg_url, 60)
    stale = first.acquire("e1", wait=0)
    _terminate(pg_url, first.owner_of("e1")["backend"])
    current = second.acquire("e1", wait=5)
    stale.release()
    assert first.acquire("e1", wait=0) is None
    assert second.owner_of("e1")["epoch"] == current.epoch == 2
    current.release()
    assert first.acquire("e1", wait=1).epoch == 3  # free once the server has read the release


def test_a_claimed_effects_entries_are_written_on_the_claims_session(pg_url):
    claims = _claims(pg_url, ttl=30)
    journal = claims.journal
    claim = claims.acquire_with_first("e1", 1, "PROPOSED", {"payload_hash": "p"})
    journal.append_ahead("AUTHORIZED", "e1", {"lease": None})
    journal.append_dispatch("e1", {"epoch": claim.epoch}, [lambda: []])
    with psycopg.connect(pg_url, autocommit=True) as conn:
        last = dict(conn.execute("SELECT pid, query FROM pg_stat_activity WHERE pid = ANY(%s)",
                                 ([journal._conn.info.backend_pid, claims._conn.info.backend_pid],)).fetchall())
    assert "interlock_append_all" in last[claims._conn.info.backend_pid]
    assert "interlock_append_all" not in last[journal._conn.info.backend_pid]
    assert journal.effect("e1").kinds == ["PROPOSED", "AUTHORIZED", "DISPATCHED"]
    assert claim.confirm()  # its flush makes the DISPATCHED durable, on the session that wrote it
    claims.close()
    journal.append("COMMITTED", "e1", {"epoch": claim.epoch})  # the claims closed: the journal's session writes it
    assert journal.effect("e1").kinds[-1] == "COMMITTED"
    assert verify_journal(journal.entries())["valid"]


def test_a_failed_guard_under_a_live_claim_writes_nothing(pg_url):
    claims = _claims(pg_url, 60)
    held = claims.acquire("e1", wait=0)
    claims.journal.append("PROPOSED", "e1", {"payload_hash": "p"})
    with pytest.raises(GuardFailed):
        claims.journal.append_dispatch("e1", {"epoch": held.epoch}, [lambda: ["moved"]])
    assert claims.journal.effect("e1").kinds == ["PROPOSED"]


def test_a_claim_brings_its_effects_entries_and_an_append_makes_the_next_read_go_to_the_database(pg_cluster,
                                                                                                  pg_url):
    from interlock.errors import JournalUnavailable

    claims = _claims(pg_url, ttl=30)
    claims.journal.append("PROPOSED", "e1", {"payload_hash": "p"})
    claim = claims.acquire("e1", wait=1)
    pg_cluster.stop_server()
    try:
        assert claims.journal.effect("e1").kinds == ["PROPOSED"]  # read by the claim's own round trip
        with pytest.raises(JournalUnavailable):
            claims.journal.effect("e1")  # only the first read: every later one asks the database
    finally:
        pg_cluster.start()
    claims.journal.append("AUTHORIZED", "e1", {"lease": None})
    assert claims.journal.effect("e1").kinds == ["PROPOSED", "AUTHORIZED"]
    claim.release()
    claims.close()


def test_an_append_before_any_read_sets_aside_the_entries_the_claim_brought(pg_url):
    claims = _claims(pg_url, ttl=30)
    claims.journal.append("PROPOSED", "e1", {"payload_hash": "p"})
    claim = claims.acquire("e1", wait=1)  # brings PROPOSED with it
    claims.journal.append("AUTHORIZED", "e1", {"lease": None})
    assert claims.journal.effect("e1").kinds == ["PROPOSED", "AUTHORIZED"]
    claim.release()
    claims.close()



def test_a_claim_on_a_new_effect_writes_its_first_entry_in_the_same_transaction(pg_url):
    claims = _claims(pg_url, ttl=30)
    with claims.acquire_with_first("e1", 1, "PROPOSED", {"payload_hash": "p"}) as claim:
        assert claim.wrote_first
        with psycopg.connect(pg_url, autocommit=True) as conn:
            written, claimed = conn.execute(
                "SELECT j.xmin::text, c.xmin::text FROM interlock_journal j"
                " JOIN interlock_claims c USING (effect_id) WHERE effect_id = 'e1'").fetchone()
        assert written == claimed  # one round trip, one transaction
        assert claims.journal.effect("e1").kinds == ["PROPOSED"]
        claims.journal.append("DISPATCHED", "e1", {"epoch": claim.epoch})  # fenced on the new claim, and links to it
    assert verify_journal(claims.journal.entries())["valid"]
    claims.close()


def test_a_claim_on_an_effect_with_entries_writes_no_first_entry(pg_url):
    claims = _claims(pg_url, ttl=30)
    claims.journal.append("PROPOSED", "e1", {"payload_hash": "p"})
    with claims.acquire_with_first("e1", 1, "PROPOSED", {"payload_hash": "q"}) as claim:
        assert not claim.wrote_first
        assert [e["payload_hash"] for e in claims.journal.entries("e1")] == ["p"]
    claims.close()


def test_a_claim_a_live_holder_keeps_writes_no_first_entry(pg_url):
    holder, other = _claims(pg_url, ttl=30), _claims(pg_url, ttl=30)
    with holder.acquire("e1", 1):
        assert other.acquire_with_first("e1", 0, "PROPOSED", {"payload_hash": "p"}) is None
        assert holder.journal.entries("e1") == []
    holder.close()
    other.close()


def test_release_after_writes_the_resolution_and_frees_the_claim_in_one_transaction(pg_url):
    claims = _claims(pg_url, ttl=30)
    claim = claims.acquire("e1", wait=0)
    _dispatched(claims, claim)
    assert claim.confirm()
    entry = claim.release_after("COMMITTED", {"via": "send", "result": 1, "epoch": claim.epoch})
    assert entry["kind"] == "COMMITTED" and claims.journal.effect("e1").resolution["hash"] == entry["hash"]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        written, released = conn.execute(
            "SELECT j.xmin::text, c.xmin::text FROM interlock_journal j JOIN interlock_claims c USING (effect_id)"
            " WHERE effect_id = 'e1' AND kind = 'COMMITTED'").fetchone()
    assert written == released  # one round trip, one transaction
    assert claims.owner_of("e1")["released"]
    taken = _claims(pg_url, ttl=30).acquire("e1", wait=0)
    assert (taken.epoch, taken.taken) == (2, "released")
    claim.release()  # given back already: nothing more to do
    assert claims.owner_of("e1")["epoch"] == 2
    assert verify_journal(claims.journal.entries())["valid"]


def test_release_after_a_takeover_keeps_the_result_as_late_and_leaves_the_claim_to_its_new_owner(pg_url):
    first, second = _claims(pg_url, 60), _claims(pg_url, 60)
    stale = first.acquire("e1", wait=0)
    _dispatched(first, stale)
    _terminate(pg_url, first.owner_of("e1")["backend"])  # outside a request: the claim is free at once
    current = second.acquire("e1", wait=5)
    entry = stale.release_after("COMMITTED", {"via": "send", "result": 1, "epoch": stale.epoch})
    assert entry["kind"] == "LATE_RESULT"
    held = second.owner_of("e1")
    assert (held["epoch"], held["released"]) == (current.epoch, False)
    assert current.confirm()


def test_release_after_writes_the_entries_still_ahead_first(pg_url):
    claims = _claims(pg_url, ttl=30)
    claim = claims.acquire("e1", wait=0)
    claims.journal.append("PROPOSED", "e1", {"payload_hash": "p"})
    claims.journal.append_ahead("AUTHORIZED", "e1", {"lease": None})
    claim.release_after("REFUSED", {"code": "lease", "reason": "closed", "resolves": False, "epoch": claim.epoch})
    assert claims.journal.effect("e1").kinds == ["PROPOSED", "AUTHORIZED", "REFUSED"]
    assert claims.owner_of("e1")["released"]


_RELEASED_UNANSWERED = """
import os, signal, sys
from interlock.pg import PgClaims, PgJournal
claims = PgClaims(PgJournal(sys.argv[1]), ttl=60)
claim = claims.acquire("e1", wait=1)
claims.journal.append("PROPOSED", "e1", {"payload_hash": "p"})
claims.journal.append("DISPATCHED", "e1", {"epoch": claim.epoch})
assert claim.confirm()  # in a request: a holder that vanishes now keeps the claim until its lease expires
claims.journal.append("COMMITTED", "e1", {"via": "send", "result": 1, "epoch": claim.epoch})
claim.release()
os.kill(os.getpid(), signal.SIGKILL)  # before anything reads the release's answer
"""


def test_a_release_that_was_never_answered_still_frees_the_claim(pg_url):
    import subprocess
    import sys

    from pathlib import Path

    holder = subprocess.run([sys.executable, "-c", _RELEASED_UNANSWERED, pg_url], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[1])
    assert holder.returncode == -9, holder.stderr
    started = time.monotonic()
    taken = _claims(pg_url, 60).acquire("e1", wait=5)
    assert (taken.epoch, taken.taken) == (2, "released") and time.monotonic() - started < 1


def test_the_next_statement_after_a_release_reads_its_answer_first(pg_url):
    claims = _claims(pg_url, 60)
    for epoch in (1, 2, 3):  # each acquire follows a release whose answer nobody waited for
        claim = claims.acquire("e1", wait=0)
        assert (claim.epoch, claim.confirm()) == (epoch, True)
        claim.release()
    assert claims.owner_of("e1")["released"]
