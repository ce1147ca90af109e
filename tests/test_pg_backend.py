"""The PostgreSQL journal and claims in one process: the chain, the constraints, fencing, guarded dispatch."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from interlock import Effect, FunctionTarget, Gate, Journal, bundle, verify, verify_journal
from interlock.backends import open_journal
from interlock.errors import GuardFailed, JournalUnavailable

from pg_worker import pg_cluster, pg_url  # noqa: F401  (fixtures)

psycopg = pytest.importorskip("psycopg")
from interlock.pg import PgJournal, Row, RowLease, row_premise  # noqa: E402


def _run_effects(journal, claims, keys):
    applied = []
    target = FunctionTarget("list", lambda eid, payload: applied.append(eid) or {"n": len(applied)}, tier=1)
    gate = Gate(journal, target, claims=claims, claim_wait=1.0)
    return [gate.submit(Effect(key, {"key": key})).status for key in keys], applied


def test_pg_journal_writes_the_same_entries_and_chain_as_the_jsonl_journal(pg_url, tmp_path):
    keys = ["a", "b", "a", "c"]
    pg_statuses, _ = _run_effects(*open_journal(pg_url), keys)
    file_statuses, _ = _run_effects(*open_journal(str(tmp_path / "j.jsonl")), keys)
    assert pg_statuses == file_statuses == ["COMMITTED", "COMMITTED", "DUPLICATE_IGNORED", "COMMITTED"]
    pg_entries = PgJournal(pg_url).entries()
    file_entries = Journal(tmp_path / "j.jsonl").entries()
    assert [(e["kind"], e["effect_id"], sorted(e)) for e in pg_entries] == \
        [(e["kind"], e["effect_id"], sorted(e)) for e in file_entries]
    assert verify_journal(pg_entries)["valid"]


def test_an_exported_pg_journal_and_bundle_verify_with_the_receipts_cli(pg_url, tmp_path):
    journal, claims = open_journal(pg_url)
    _run_effects(journal, claims, ["a", "b"])
    exported = tmp_path / "export.jsonl"
    assert journal.export(exported) == len(journal) == 8
    cli = [sys.executable, "-m", "interlock.receipts"]
    whole = subprocess.run([*cli, str(exported)], capture_output=True, text=True)
    assert whole.returncode == 0, whole.stdout + whole.stderr
    assert json.loads(whole.stdout)["tamper_evident"] is True
    eid = journal.entries()[0]["effect_id"]
    (tmp_path / "bundle.json").write_text(json.dumps(bundle(journal, eid)))
    one = subprocess.run([*cli, str(tmp_path / "bundle.json")], capture_output=True, text=True)
    assert one.returncode == 0, one.stdout + one.stderr
    assert json.loads(one.stdout)["happened"] is True


def test_an_edited_row_shows_in_the_exported_chain(pg_url, tmp_path):
    journal, claims = open_journal(pg_url)
    _run_effects(journal, claims, ["a"])
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE interlock_journal SET line = replace(line, '\"key\":\"a\"', '\"key\":\"z\"')"
                     " WHERE seq = 0")
    assert not verify_journal(journal.entries())["tamper_evident"]


def _insert(conn, seq, effect_id, kind, prev, effect_prev, hash_):
    conn.execute("INSERT INTO interlock_journal (seq, effect_id, kind, prev, effect_prev, hash, line)"
                  " VALUES (%s, %s, %s, %s, %s, %s, '{}')", (seq, effect_id, kind, prev, effect_prev, hash_))


@pytest.mark.parametrize("fork, constraint", [
    ((2, "e2", "PROPOSED", "h0", None, "x"), "interlock_journal_prev_key"),  # a second successor of h0
    ((0, "e2", "PROPOSED", None, None, "x"), "interlock_journal_pkey"),  # a second entry at seq 0
    ((2, "e1", "AUTHORIZED", "h1", "h0", "x"), "interlock_journal_one_successor_per_effect_entry"),
    ((2, "e1", "PROPOSED", "h1", None, "x"), "interlock_journal_one_first_entry_per_effect"),
    ((2, "e3", "PROPOSED", None, None, "x"), "only_the_first_entry_has_no_prev"),
])
def test_the_database_refuses_a_forked_chain(pg_url, fork, constraint):
    PgJournal(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        _insert(conn, 0, "e1", "PROPOSED", None, None, "h0")
        _insert(conn, 1, "e1", "AUTHORIZED", "h0", "h0", "h1")
        with pytest.raises(psycopg.errors.IntegrityError) as refused:
            _insert(conn, *fork)
    assert refused.value.diag.constraint_name == constraint


def test_the_database_refuses_a_second_resolution_of_one_effect(pg_url):
    PgJournal(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        _insert(conn, 0, "e1", "PROPOSED", None, None, "h0")
        _insert(conn, 1, "e1", "COMMITTED", "h0", "h0", "h1")
        with pytest.raises(psycopg.errors.UniqueViolation) as refused:
            _insert(conn, 2, "e1", "COMMITTED", "h1", "h1", "h2")
    assert refused.value.diag.constraint_name == "interlock_journal_one_resolution_per_effect"


def test_a_resolution_after_the_resolution_is_kept_as_late_result(pg_url):
    journal = PgJournal(pg_url)
    journal.append("PROPOSED", "e1", {"payload_hash": "p"})
    journal.append("DISPATCHED", "e1", {"epoch": 1})
    journal.append("COMMITTED", "e1", {"via": "send", "result": 1, "epoch": 1})
    late = journal.append("COMMITTED", "e1", {"via": "send", "result": 2, "epoch": 1})
    assert (late["kind"], late["late_kind"]) == ("LATE_RESULT", "COMMITTED")
    assert journal.effect("e1").resolution["result"] == 1


@pytest.fixture
def rows(pg_url):
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE incidents (id text PRIMARY KEY, status text NOT NULL)")
        conn.execute("CREATE TABLE facts (id text PRIMARY KEY, version integer NOT NULL)")
        conn.execute("INSERT INTO incidents VALUES ('inc-1', 'open')")
        conn.execute("INSERT INTO facts VALUES ('slot', 1)")
    return pg_url


def test_a_sql_guard_that_fails_writes_no_dispatch(rows):
    journal = PgJournal(rows)
    journal.append("PROPOSED", "e1", {"payload_hash": "p"})
    with psycopg.connect(rows, autocommit=True) as conn:
        conn.execute("UPDATE incidents SET status = 'closed'")
    with pytest.raises(GuardFailed):
        journal.append_dispatch("e1", {"epoch": 1}, ["SELECT status = 'open' FROM incidents FOR SHARE"])
    assert journal.effect("e1").kinds == ["PROPOSED"]


def test_the_lease_row_stays_locked_until_the_dispatch_commits(rows):
    journal = PgJournal(rows)
    lease = RowLease(Row(journal, "incidents", "inc-1", "status"))
    journal.append("PROPOSED", "e1", {"payload_hash": "p"})
    blocked = []

    def close_the_incident_meanwhile() -> list[str]:
        live = lease.is_live()
        with psycopg.connect(rows, autocommit=True) as human:
            human.execute("SET lock_timeout = '200ms'")
            try:
                human.execute("UPDATE incidents SET status = 'closed'")
            except psycopg.errors.LockNotAvailable:
                blocked.append(True)
        return [] if live else ["lease not live"]

    journal.append_dispatch("e1", {"epoch": 1}, [close_the_incident_meanwhile])
    assert blocked == [True]
    assert journal.effect("e1").kinds == ["PROPOSED", "DISPATCHED"]


def test_the_gate_refuses_when_a_premise_row_moves_between_its_check_and_the_dispatch(rows):
    journal, claims = open_journal(rows)
    slot = Row(journal, "facts", "slot", "version")
    calls = []

    def live() -> bool:
        calls.append(1)
        if len(calls) == 2:  # the re-check inside the dispatch transaction: a person bumps the row just before
            with psycopg.connect(rows, autocommit=True) as human:
                human.execute("UPDATE facts SET version = 2")
        return True

    from interlock import CallableLease

    sent = []
    gate = Gate(journal, FunctionTarget("t", lambda eid, p: sent.append(eid), tier=1), claims=claims)
    outcome = gate.submit(Effect("k", {"k": 1}, [row_premise("slot_version", slot)], CallableLease(live)))
    assert outcome.status == "REFUSED:stale_premise" and sent == []
    refusal = journal.entries(outcome.effect_id)[-1]
    assert refusal["kind"] == "REFUSED" and refusal["checks"]["violations"] == ["slot_version: was 1, now 2"]
    assert "DISPATCHED" not in journal.effect(outcome.effect_id).kinds


def test_the_gate_dispatches_on_a_live_lease_row_and_refuses_once_it_closed(rows):
    journal, claims = open_journal(rows)
    lease = RowLease(Row(journal, "incidents", "inc-1", "status"))
    gate = Gate(journal, FunctionTarget("t", lambda eid, p: {"ok": eid}, tier=1), claims=claims)
    assert gate.submit(Effect("first", {}, [], lease)).status == "COMMITTED"
    with psycopg.connect(rows, autocommit=True) as conn:
        conn.execute("UPDATE incidents SET status = 'resolved'")
    assert gate.submit(Effect("second", {}, [], lease)).status == "REFUSED:lease"
    dispatched = [e for e in journal.entries() if e["kind"] == "DISPATCHED"]
    assert [d["lease"]["value"] for d in dispatched] == ["open"]
    assert verify(bundle(journal, dispatched[0]["effect_id"]))["authorized_when_fired"] is True


def test_entries_carry_the_servers_time_not_the_writers_clock(pg_url, monkeypatch):
    journal = PgJournal(pg_url)
    with psycopg.connect(pg_url, autocommit=True) as clock:
        before = float(clock.execute("SELECT extract(epoch FROM clock_timestamp())").fetchone()[0])
        real = time.time
        monkeypatch.setattr(time, "time", lambda: real() - 3600)  # this process's clock is an hour behind
        entries = [journal.append("PROPOSED", f"e{i}", {"payload_hash": "p"}) for i in range(3)]
        monkeypatch.undo()
        after = float(clock.execute("SELECT extract(epoch FROM clock_timestamp())").fetchone()[0])
    stamps = [e["ts"] for e in entries]
    assert before <= stamps[0] <= stamps[1] <= stamps[2] <= after
    assert verify_journal(journal.entries())["valid"]


def test_journal_sessions_pin_read_committed_under_a_repeatable_read_default(pg_url):
    with psycopg.connect(pg_url, autocommit=True) as admin:
        database = pg_url.rsplit("/", 1)[1]
        admin.execute(f"ALTER DATABASE \"{database}\" SET default_transaction_isolation = 'repeatable read'")
    journal = PgJournal(pg_url)
    assert journal.connect().execute("SHOW transaction_isolation").fetchone()[0] == "read committed"
    with psycopg.connect(pg_url, autocommit=True) as plain:
        assert plain.execute("SHOW transaction_isolation").fetchone()[0] == "repeatable read"


def test_a_stopped_database_surfaces_as_journal_unavailable_saying_what_was_sent(pg_cluster):
    url = pg_cluster.create_database("t_stopped")
    journal = PgJournal(url)
    journal.append("PROPOSED", "before", {"payload_hash": "p"})
    journal.append("PROPOSED", "after", {"payload_hash": "p"})
    journal.append("DISPATCHED", "after", {"epoch": 1})
    pg_cluster.stop_server()
    try:
        with pytest.raises(JournalUnavailable) as unsent:
            journal.append("DISPATCHED", "before", {"epoch": 1})
        with pytest.raises(JournalUnavailable) as unknown:
            journal.append("COMMITTED", "after", {"via": "send", "result": 1, "epoch": 1})
        with pytest.raises(JournalUnavailable):
            journal.effect("after")
    finally:
        pg_cluster.start()
    assert (unsent.value.sent, unknown.value.sent) == (False, None)
    assert "t_stopped" in str(unknown.value) and "COMMITTED" in str(unknown.value)
    assert [r.effect_id for r in journal.open_dispatches()] == ["after"]  # left open for recovery


def test_an_append_retried_with_its_token_is_stored_once(pg_url):
    from interlock.pg.journal import _FLUSHED, _append_all, _templates

    journal = PgJournal(pg_url)
    journal.append("PROPOSED", "e1", {"payload_hash": "p"})
    token, body, late_body = _templates("DISPATCHED", "e1", {"epoch": 1})
    params = ("e1", "DISPATCHED", 1, None, None, token, body, late_body)
    stored = []
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for _ in range(2):  # the second as a retry would send it, its first answer lost
            cur = psycopg.ClientCursor(conn).execute("BEGIN; " + _append_all(1) + _FLUSHED, params)
            cur.nextset()
            stored.append(cur.fetchone()[0])
    assert stored[0] == stored[1]
    assert journal.effect("e1").kinds == ["PROPOSED", "DISPATCHED"]
    assert verify_journal(journal.entries())["valid"]


def test_a_send_waits_for_the_disk_and_its_flush_covers_the_entries_before_it():
    from experiments.services.postgres import TempCluster

    def flushed_past(conn, lsn):
        return conn.execute("SELECT pg_current_wal_flush_lsn() >= %s::pg_lsn", (lsn,)).fetchone()[0]

    with TempCluster({"wal_writer_delay": "10s"}) as cluster:  # the WAL writer flushes nothing on its own here
        journal = PgJournal(cluster.create_database("t"))
        with psycopg.connect(journal.url, autocommit=True) as watcher:
            journal.append("PROPOSED", "e1", {"payload_hash": "p"})
            written = watcher.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
            assert not flushed_past(watcher, written)  # a PROPOSED is not waited for: its commit is not on disk yet
            journal.append("DISPATCHED", "e1", {"epoch": None})
            assert flushed_past(watcher, written)  # the send's flush took the PROPOSED with it


def _transactions(url, effect_id):
    with psycopg.connect(url, autocommit=True) as conn:
        return [row[0] for row in conn.execute(
            "SELECT xmin::text FROM interlock_journal WHERE effect_id = %s ORDER BY seq", (effect_id,))]


def test_entries_ahead_are_written_with_the_effects_next_append_in_its_transaction(pg_url):
    journal = PgJournal(pg_url)
    journal.append_ahead("PROPOSED", "e1", {"payload_hash": "p"})
    journal.append_ahead("AUTHORIZED", "e1", {"lease": None})
    journal.append("PROPOSED", "other", {"payload_hash": "q"})  # another effect's append takes none of them
    assert _transactions(pg_url, "e1") == []
    dispatched = journal.append("DISPATCHED", "e1", {"epoch": None})
    assert (dispatched["kind"], dispatched["seq"]) == ("DISPATCHED", 3)
    assert journal.effect("e1").kinds == ["PROPOSED", "AUTHORIZED", "DISPATCHED"]
    assert len(set(_transactions(pg_url, "e1"))) == 1  # one round trip, one transaction
    assert verify_journal(journal.entries())["valid"]


def test_a_read_of_the_effect_writes_its_entries_ahead_first(pg_url):
    journal = PgJournal(pg_url)
    journal.append_ahead("PROPOSED", "e1", {"payload_hash": "p"})
    assert journal.effect("e1").kinds == ["PROPOSED"]
    journal.append_ahead("AUTHORIZED", "e1", {"lease": None})
    assert [e["kind"] for e in journal.entries("e1")] == ["PROPOSED", "AUTHORIZED"]


def test_a_send_or_a_resolution_is_never_written_ahead(pg_url):
    journal = PgJournal(pg_url)
    for kind in ("DISPATCHED", "COMMITTED"):
        with pytest.raises(ValueError):
            journal.append_ahead(kind, "e1", {"epoch": None})


def test_a_gate_call_that_fails_after_its_proposal_leaves_the_proposal_in_the_journal(pg_url):
    journal, claims = open_journal(pg_url)

    def lease_that_breaks():
        raise RuntimeError("the lease service is down")

    from interlock import CallableLease

    gate = Gate(journal, FunctionTarget("t", lambda eid, payload: {}, tier=1), claims=claims, claim_wait=1.0)
    with pytest.raises(RuntimeError):
        gate.submit(Effect("k", {"key": "k"}, lease=CallableLease(lease_that_breaks)))
    eid = Effect("k", {"key": "k"}).effect_id
    assert [e["kind"] for e in PgJournal(pg_url).entries(eid)] == ["PROPOSED"]  # written as its claim was given back


def test_a_gated_effect_writes_its_proposal_first_and_its_authorization_with_its_dispatch(pg_url):
    journal, claims = open_journal(pg_url)
    statuses, _ = _run_effects(journal, claims, ["a"])
    eid = journal.entries()[0]["effect_id"]
    assert statuses == ["COMMITTED"] and journal.effect(eid).kinds == ["PROPOSED", "AUTHORIZED", "DISPATCHED",
                                                                       "COMMITTED"]
    proposed, authorized, dispatched, committed = _transactions(pg_url, eid)
    assert proposed != authorized == dispatched != committed


def test_a_send_under_a_claim_is_made_durable_by_the_confirm_before_its_request():
    from experiments.services.postgres import TempCluster
    from interlock.pg import PgClaims

    def flushed_past(conn, lsn):
        return conn.execute("SELECT pg_current_wal_flush_lsn() >= %s::pg_lsn", (lsn,)).fetchone()[0]

    with TempCluster({"wal_writer_delay": "10s"}) as cluster:  # the WAL writer flushes nothing on its own here
        claims = PgClaims(PgJournal(cluster.create_database("t")), ttl=30)
        claim = claims.acquire("e1", wait=1)
        with psycopg.connect(claims.journal.url, autocommit=True) as watcher:
            claims.journal.append("PROPOSED", "e1", {"payload_hash": "p"})
            claims.journal.append_dispatch("e1", {"epoch": claim.epoch}, [lambda: []])
            written = watcher.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
            assert not flushed_past(watcher, written)  # no request yet: the dispatch waited for nothing
            assert claim.confirm()
            assert flushed_past(watcher, written)  # the confirm's one flush took the dispatch with it
        claim.release()
        claims.close()


def test_a_confirm_refuses_the_request_when_the_database_no_longer_holds_the_send(pg_url):
    from interlock.pg import PgClaims

    claims = PgClaims(PgJournal(pg_url), ttl=30)
    claim = claims.acquire("e1", wait=1)
    claims.journal.append("PROPOSED", "e1", {"payload_hash": "p"})
    dispatched = claims.journal.append("DISPATCHED", "e1", {"epoch": claim.epoch})
    with psycopg.connect(pg_url, autocommit=True) as admin:  # as a crash before any flush would take it
        admin.execute("DELETE FROM interlock_journal WHERE hash = %s", (dispatched["hash"],))
    assert not claim.confirm()
    claim.release()
    claims.close()


def test_entries_appended_together_and_retried_with_their_tokens_are_stored_once(pg_url):
    from interlock.pg.journal import _append_all, _templates

    journal = PgJournal(pg_url)
    entries = [("PROPOSED", None, *_templates("PROPOSED", "e1", {"payload_hash": "p"})),
               ("DISPATCHED", 1, *_templates("DISPATCHED", "e1", {"epoch": 1}))]
    params = journal._params("e1", entries)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        stored = [conn.execute(_append_all(2), params).fetchone()[0] for _ in range(2)]  # the second a lost answer's retry
    assert stored[0] == stored[1] and json.loads(stored[0])["kind"] == "DISPATCHED"
    assert journal.effect("e1").kinds == ["PROPOSED", "DISPATCHED"]
    assert verify_journal(journal.entries())["valid"]


def test_entries_ahead_of_a_claim_taken_over_are_not_written_and_stop_the_next_append(pg_url):
    from interlock.errors import ClaimLost
    from interlock.pg import PgClaims

    owner, other = PgClaims(PgJournal(pg_url), ttl=60), PgClaims(PgJournal(pg_url), ttl=60)
    held = owner.acquire("e1", wait=0)
    owner.journal.append_ahead("PROPOSED", "e1", {"payload_hash": "p"})
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (owner.owner_of("e1")["backend"],))
    assert other.acquire("e1", wait=5).taken == "holder_gone"
    with pytest.raises(ClaimLost):
        owner.journal.append_dispatch("e1", {"epoch": held.epoch}, [lambda: []])
    assert other.journal.effect("e1") is None  # neither the proposal ahead nor the dispatch


def test_a_database_made_by_the_earlier_schema_is_upgraded_in_place(pg_url):
    PgJournal(pg_url).append("PROPOSED", "e1", {"payload_hash": "p"})
    with psycopg.connect(pg_url, autocommit=True) as admin:  # the one-entry append the earlier schema had
        admin.execute("CREATE FUNCTION interlock_append(text, text, bigint, bigint, text, text, text, text)"
                      " RETURNS text LANGUAGE sql AS 'SELECT NULL::text'")
    journal = PgJournal(pg_url)
    journal.append("DISPATCHED", "e1", {"epoch": None})
    with psycopg.connect(pg_url, autocommit=True) as admin:
        assert admin.execute("SELECT count(*) FROM pg_proc WHERE proname = 'interlock_append'").fetchone()[0] == 0
    assert journal.effect("e1").kinds == ["PROPOSED", "DISPATCHED"]
    assert verify_journal(journal.entries())["valid"]


def test_entries_ahead_of_a_dispatch_its_guard_refused_go_with_the_refusal(pg_url):
    journal = PgJournal(pg_url)
    journal.append_ahead("PROPOSED", "e1", {"payload_hash": "p"})
    journal.append_ahead("AUTHORIZED", "e1", {"lease": None})
    with pytest.raises(GuardFailed):
        journal.append_dispatch("e1", {"epoch": None}, [lambda: ["the premise moved"]])
    journal.append("REFUSED", "e1", {"code": "stale_premise", "resolves": False})
    assert journal.effect("e1").kinds == ["PROPOSED", "AUTHORIZED", "REFUSED"]
    assert verify_journal(journal.entries())["valid"]


def test_a_claims_table_made_before_stopped_holders_were_kept_gains_the_column_on_open(pg_url):
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE interlock_claims (effect_id text PRIMARY KEY, epoch bigint NOT NULL, holder text"
                     " NOT NULL, owner text NOT NULL, backend integer NOT NULL, expires timestamptz, in_request"
                     " boolean NOT NULL, taken text NOT NULL, since timestamptz NOT NULL)")
    journal, claims = open_journal(pg_url)
    with claims.acquire("e1", wait=1.0) as claim:
        assert claim.epoch == 1 and not claim.holder_alive()
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT stopped_epoch, sent_until FROM interlock_claims").fetchall() == [(None, None)]
    claims.close()
    journal.close()


def _made_by_an_earlier_release(pg_url: str, *statements: str) -> None:
    """The schema made on open, then changed back by `statements` to what a release before this one made."""
    import psycopg

    journal, claims = open_journal(pg_url)
    claims.close()
    journal.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def test_a_database_whose_acquire_returned_no_sent_until_gets_the_new_one_on_open(pg_url):
    _made_by_an_earlier_release(
        pg_url, "DROP FUNCTION interlock_acquire(text, text, text, float8, text, text, text)",
        "CREATE FUNCTION interlock_acquire(p_effect text, p_holder text, p_owner text, p_ttl float8,"
        " p_kind text, p_token text, p_body text, OUT r_epoch bigint, OUT r_taken text,"
        " OUT r_seqs bigint[], OUT r_lines text[], OUT r_first boolean) LANGUAGE sql AS"
        " $$ SELECT NULL::bigint, NULL::text, NULL::bigint[], NULL::text[], NULL::boolean $$")
    journal, claims = open_journal(pg_url)
    with claims.acquire("e1", wait=1.0) as claim:
        assert claim.epoch == 1 and claim.sent_until is None
    claims.close()
    journal.close()


def test_a_database_whose_resolution_index_cast_every_line_to_jsonb_gets_the_new_one_on_open(pg_url):
    _made_by_an_earlier_release(
        pg_url, "DROP INDEX interlock_journal_one_resolution_per_effect",
        "CREATE UNIQUE INDEX interlock_journal_one_resolution_per_effect ON interlock_journal (effect_id)"
        " WHERE kind IN ('COMMITTED', 'REFUSED', 'AMBIGUOUS')"
        " AND (line::jsonb ->> 'resolves') IS DISTINCT FROM 'false'")
    journal, claims = open_journal(pg_url)
    with claims.acquire("e1", wait=1.0) as claim:
        journal.append("DISPATCHED", "e1", {"epoch": claim.epoch})
        journal.append("COMMITTED", "e1", {"result": "a\x00b", "epoch": claim.epoch})
    assert journal.effect("e1").settled_by["kind"] == "COMMITTED"
    claims.close()
    journal.close()
