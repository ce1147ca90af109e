"""The hot statements run through libpq directly: prepared once per session and again on a new one, their text
parameters and NULLs passed as they are, their errors raised as psycopg's with their SQLSTATE."""

from __future__ import annotations

import pytest

from pg_worker import pg_cluster, pg_url  # noqa: F401  (fixtures)

psycopg = pytest.importorskip("psycopg")
from interlock.pg import PgClaims, PgJournal  # noqa: E402
from interlock.pg.wire import first_row  # noqa: E402


def test_a_statement_is_prepared_once_and_answers_text_and_null(pg_url):
    with psycopg.connect(pg_url, autocommit=True) as conn:
        query = "SELECT %s::text || '!', %s::bigint + 1, %s::text"
        assert first_row(conn, query, ("a\u2028b", 41, None)) == ("a\u2028b!", "42", None)
        assert first_row(conn, query, ("c", 0, "d")) == ("c!", "1", "d")
        [[prepared]] = conn.execute("SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'interlock_%'")
        assert prepared == 1
        assert first_row(conn, "SELECT 1 WHERE %s::int > 1", (0,)) is None


def test_an_error_keeps_its_sqlstate_and_a_lost_session_is_an_operational_error(pg_url):
    with psycopg.connect(pg_url, autocommit=True) as conn, psycopg.connect(pg_url, autocommit=True) as killer:
        with pytest.raises(psycopg.errors.DivisionByZero) as raised:
            first_row(conn, "SELECT 1 / %s::int", (0,))
        assert raised.value.sqlstate == "22012"
        killer.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        with pytest.raises(psycopg.OperationalError):
            first_row(conn, "SELECT 1 / %s::int", (1,))
        assert conn.broken


def test_appends_and_claims_go_on_after_their_sessions_are_terminated(pg_url):
    with PgJournal(pg_url) as journal, psycopg.connect(pg_url, autocommit=True) as killer:
        claims = PgClaims(journal, ttl=30.0)
        try:
            first = claims.acquire_with_first("e1", 1.0, "PROPOSED", {"agent": "a\u2028b"})
            assert first is not None and first.wrote_first
            killer.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                           " WHERE pid <> pg_backend_pid() AND datname = current_database()")
            journal.append("AUTHORIZED", "e1", {"epoch": first.epoch})
            assert first.confirm()
            first.release()
            again = claims.acquire("e1", 1.0)
            assert again is not None and again.epoch == first.epoch + 1
            record = journal.effect("e1")  # as the claim's own round trip read the entries
            entries = journal.entries("e1")
            assert record.kinds == [entry["kind"] for entry in entries] == ["PROPOSED", "AUTHORIZED"]
            assert record.last_hash == entries[-1]["hash"] and entries[0]["agent"] == "a\u2028b"
        finally:
            claims.close()
