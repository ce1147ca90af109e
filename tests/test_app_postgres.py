"""`Interlock("postgresql://...")`: the same decorator API on the PostgreSQL journal and its claims."""

from __future__ import annotations

from pg_worker import pg_cluster, pg_url  # noqa: F401  (fixtures)

from interlock import Interlock, current_effect, effect_id_for


def test_the_app_opens_the_postgresql_journal_for_a_database_url(pg_url):
    sent: list[str] = []
    with Interlock(pg_url, claim_wait=2.0) as app:

        @app.effect(name="note", key=lambda text: f"note:{text}", tier=1)
        def note(text: str) -> dict:
            sent.append(current_effect())
            return {"noted": text}

        assert note("hello").status == "COMMITTED"
        assert note("hello").status == "DUPLICATE_IGNORED"
        assert type(app.journal).__name__ == "PgJournal"
        assert [e["kind"] for e in app.journal.entries(effect_id_for("note:hello"))] == [
            "PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED"]
    assert sent == [effect_id_for("note:hello")]


def test_a_refusal_before_the_send_lets_a_later_call_try_again_on_postgresql(pg_url):
    live = {"on": False}
    with Interlock(pg_url, claim_wait=2.0) as app:
        note = app.effect(name="note", key=lambda text: f"note:{text}", tier=1,
                          lease=lambda text: live["on"])(lambda text: {"noted": text})
        assert note("hello").status == "REFUSED:lease"
        live["on"] = True
        assert note("hello").status == "COMMITTED"
        assert note("hello").status == "DUPLICATE_IGNORED"


def test_the_app_takes_a_postgresql_journal_opened_by_the_caller_and_adds_its_claims(pg_url):
    from interlock.pg import PgClaims, PgJournal

    with Interlock(PgJournal(pg_url), claim_wait=2.0, claim_ttl=5.0) as app:
        note = app.effect(name="note", key=lambda text: f"note:{text}", tier=1)(lambda text: {"noted": text})
        assert note("hello").status == "COMMITTED"
        assert isinstance(app.claims, PgClaims) and app.claims.ttl == 5.0
