"""`python -m interlock.receipts postgresql://...`: the journal stored in a database, verified as its export is,
streamed, read without writing, and a database it cannot read said in one line without the address's password."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from interlock import Effect, FunctionTarget, Gate
from interlock.addresses import safe_address
from interlock.backends import open_journal

from pg_worker import pg_cluster, pg_url  # noqa: F401  (fixtures)

psycopg = pytest.importorskip("psycopg")
from interlock.pg import PgJournal  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "receipts-secret"  # the throwaway cluster trusts every local login, so the server never asks for it


def receipts(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "interlock.receipts", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def with_password(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.replace("@", f":{PASSWORD}@", 1)))


def gated(url: str, keys: list[str]) -> None:
    journal, claims = open_journal(url)
    gate = Gate(journal, FunctionTarget("svc", lambda eid, payload: {"stored": payload["key"]}, tier=1),
                claims=claims, claim_wait=1.0)
    for key in keys:
        gate.submit(Effect(key, {"key": key}))
    claims.close()
    journal.close()


@pytest.mark.parametrize("keys", [["a", "b", "c"], ["a"]], ids=["three effects", "one effect"])
def test_the_cli_verifies_a_journal_in_postgresql_as_it_verifies_its_export(pg_url, tmp_path, keys):
    gated(pg_url, keys)
    exported = tmp_path / "journal.jsonl"
    with PgJournal(pg_url) as journal:
        journal.export(exported)
    from_file, from_database = receipts(str(exported)), receipts(with_password(pg_url))
    assert from_database.returncode == from_file.returncode == 0, from_database.stderr
    printed = json.loads(from_database.stdout)
    assert printed == {k: v for k, v in json.loads(from_file.stdout).items() if k != "torn_tail"}
    assert printed["valid"] and printed["entries"] == 4 * len(keys) and len(printed["effects"]) == len(keys)


def test_an_edited_row_makes_the_journal_in_postgresql_invalid(pg_url):
    gated(pg_url, ["a", "b"])
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE interlock_journal SET line = replace(line, '\"stored\":\"b\"', '\"stored\":\"z\"')")
    done = receipts(pg_url)
    printed = json.loads(done.stdout)
    assert done.returncode == 1 and not printed["valid"] and not printed["tamper_evident"]


def test_the_journal_in_postgresql_is_streamed_a_batch_at_a_time(pg_url, monkeypatch):
    from interlock.receipts import _pg

    gated(pg_url, [f"k{n}" for n in range(5)])
    monkeypatch.setattr(_pg, "BATCH", 3)
    with PgJournal(pg_url) as journal:
        stored = [line.removesuffix("\n").encode() for line in journal.lines()]
    stream = _pg.stored_lines(pg_url)
    first = next(stream)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        (query,), = conn.execute("SELECT query FROM pg_stat_activity WHERE query LIKE '%interlock_receipts%'"
                                 " AND pid <> pg_backend_pid()").fetchall()
    assert query.startswith("FETCH FORWARD 3 FROM")  # the stream holds a batch, never the journal whole
    assert [first, *stream] == stored


def test_a_database_without_a_journal_is_one_line_and_left_as_it_was(pg_url):
    done = receipts(with_password(pg_url))
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"{safe_address(pg_url)}: ")
    assert "interlock_journal" in done.stderr and PASSWORD not in done.stderr
    with psycopg.connect(pg_url) as conn:  # the verifier only reads: no table was made
        assert conn.execute("SELECT to_regclass('interlock_journal')").fetchone() == (None,)


@pytest.mark.parametrize("url", [f"postgresql://u:{PASSWORD}@127.0.0.1:1/interlock",
                                 f"postgresql://u:{PASSWORD}@127.0.0.1:notaport/interlock",
                                 f"postgresql://u@127.0.0.1:1/interlock?password={PASSWORD}"])
def test_an_unreachable_database_is_one_line_naming_it_without_its_password(url):
    done = receipts(url)
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and PASSWORD not in done.stderr
    assert done.stderr.startswith(f"postgresql://u@127.0.0.1:{urlsplit(url).netloc.rpartition(':')[2]}/interlock: ")


@pytest.mark.parametrize("url", ["postgresql://u:pa/ss@127.0.0.1:1/interlock", "postgresql://u:pa#ss@127.0.0.1:1/db",
                                 "postgresql://u:pa?ss@127.0.0.1:1/db", "postgresql://u:pa@ss@127.0.0.1:1/db",
                                 "postgresql://u@127.0.0.1:1/db?password=pa%41%zz",
                                 "postgresql://u@127.0.0.1:1/db?sslpassword=pa%zzss"])
def test_no_piece_of_a_password_is_printed_however_the_address_splits_it(url):
    done = receipts(url)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "pa" not in done.stderr.replace("password", "").replace("parse", "") and "ss@" not in done.stderr


def test_a_public_key_on_a_journal_in_postgresql_asks_for_its_checkpoints(pg_url):
    done = receipts(pg_url, "--public-key", "ab" * 32)
    assert done.returncode == 2 and done.stderr.strip().endswith("give --checkpoint")
