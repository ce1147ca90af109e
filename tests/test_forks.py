"""A journal or a claims store opened before a fork is refused in the child, which would otherwise write under
the parent's lock (or on the parent's database session) and interleave its writes with the parent's; the parent's
journal stays whole."""

from __future__ import annotations

import os

import pytest

from interlock import ConfigurationError, FileClaims, Journal, verify_journal
from pg_worker import pg_cluster, pg_url  # noqa: F401  (fixtures)


def _in_child(action) -> int:
    """Run `action` in a forked child; its exit status: 0 when it raised ConfigurationError, 1 when it did not."""
    pid = os.fork()
    if pid == 0:
        try:
            action()
        except ConfigurationError:
            os._exit(0)
        except BaseException:
            os._exit(2)
        os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_a_journal_opened_before_a_fork_refuses_the_child_and_the_parent_goes_on(tmp_path):
    journal = Journal(tmp_path / "journal.jsonl")
    journal.append("PROPOSED", "e1", {"payload_hash": "p"})
    assert _in_child(lambda: journal.append("PROPOSED", "e2", {"payload_hash": "p"})) == 0
    assert _in_child(lambda: journal.effect("e1")) == 0
    journal.append("PROPOSED", "e3", {"payload_hash": "p"})
    journal.close()
    with open(tmp_path / "journal.jsonl", "rb") as f:
        result = verify_journal(line[:-1] for line in f)
    assert result["valid"] and result["entries"] == 2


def test_a_claims_folder_opened_before_a_fork_refuses_the_child(tmp_path):
    claims = FileClaims(tmp_path / "claims")
    assert _in_child(lambda: claims.acquire("e1", 0.0)) == 0
    claim = claims.acquire("e1", 0.0)
    assert claim is not None
    claim.release()


def test_a_postgresql_journal_and_claims_opened_before_a_fork_refuse_the_child_and_the_parent_goes_on(pg_url):
    pytest.importorskip("psycopg")
    from interlock.pg import PgClaims, PgJournal

    journal = PgJournal(pg_url)
    claims = PgClaims(journal, ttl=30)
    journal.append("PROPOSED", "e1", {"payload_hash": "p"})
    assert _in_child(lambda: journal.append("PROPOSED", "e2", {"payload_hash": "p"})) == 0
    assert _in_child(lambda: journal.effect("e1")) == 0
    assert _in_child(lambda: claims.acquire("e1", 0.0)) == 0
    claim = claims.acquire("e1", 0.0)  # the parent's sessions were not touched by the children
    assert claim is not None
    claim.release()
    journal.append("PROPOSED", "e3", {"payload_hash": "p"})
    assert [e["effect_id"] for e in journal.entries()] == ["e1", "e3"]
    claims.close()
    journal.close()
