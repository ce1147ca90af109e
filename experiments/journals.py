"""Where a run's gated cells keep their journal: each cell's own JSONL file (the default), or one PostgreSQL database
shared by every gated cell of the run (`--journal postgresql://...`).

The runner checks the database once before anything is written and hands its address to the workers in the
environment (never on a command line, which a result file may quote). A worker on the database writes its effect's
entries into the case's journal file exactly as the JSONL journal holds them, so the cell is judged from the same
artifact either way.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qs, unquote, urlsplit

from interlock._protocols import ClaimsLike, JournalLike
from interlock.addresses import is_postgres, safe_address
from interlock.backends import open_journal
from interlock.journal import Journal, encode
from interlock.receipts import bundle

if TYPE_CHECKING:
    from interlock.pg import PgClaims, PgJournal

JOURNAL_URL_ENV = "INTERLOCK_JOURNAL_URL"
CONNECT_TIMEOUT_SECONDS = 10
CLAIM_TTL_SECONDS = 5.0  # renewed every third of it while held, so it bounds only a holder that stopped
# The explorer shortens it so a stopped or slow sender can outlast it within one schedule.
CLAIM_TTL_ENV = "INTERLOCK_CLAIM_TTL"
JSONL = {"backend": "jsonl", "where": "each gated cell's own journal.jsonl"}
PG_CLAIM = {"kind": "a PostgreSQL lease per effect: a fencing epoch and an expiry on the database clock, renewed "
                    "while its holder works; free at once when the holder's session is gone and it had no request "
                    "in flight (a worker SIGKILLed before its send), else only when the lease expires",
            "claim_ttl_seconds": CLAIM_TTL_SECONDS}


class JournalUnusable(Exception):
    """The --journal address cannot serve the run: one line, without the address's password."""


def add_journal_flag(parser: argparse.ArgumentParser) -> None:
    """The runners' --journal option."""
    parser.add_argument("--journal", metavar="URL", default=None,
                        help="postgresql://... database shared by every gated cell (default: each cell's own "
                             "journal.jsonl); the baselines keep their logs either way")


def check(url: str | None) -> dict[str, Any]:
    """Open the run's journal database once (creating its tables) and describe it for the result's provenance.

    Done while the command line is checked, so a bad address stops the run before anything is written.
    """
    if url is None:
        return dict(JSONL)
    if not is_postgres(url):
        raise JournalUnusable("--journal: expected a postgresql:// URL (leave it out for each cell's own "
                              "journal.jsonl)")
    where = safe_address(url)
    try:
        import psycopg
    except ImportError:
        raise JournalUnusable(f"--journal {where}: the PostgreSQL journal needs psycopg "
                              "(pip install .[postgres])") from None
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS) as conn:
            version = cast(tuple[Any, ...], conn.execute("SHOW server_version").fetchone())[0]  # SHOW: one row
        journal, claims = cast("tuple[PgJournal, PgClaims]", open_journal(url, claim_ttl=CLAIM_TTL_SECONDS))
        claims.close()
        journal.close()
    except (psycopg.Error, ValueError) as exc:
        raise JournalUnusable(f"--journal {where}: {_one_line(str(exc), url)}") from None
    return {"backend": "postgresql", "server_version": version,
            "where": "one database shared by every gated cell of the run; each cell's journal.jsonl holds its "
                     "effect's entries exported from it"}


def claim_settings(url: str | None, file_claims: dict[str, Any]) -> dict[str, Any]:
    """What the gated cells' claims are: `file_claims` on the JSONL journal, the database's on PostgreSQL."""
    if url is None:
        return file_claims
    return {**PG_CLAIM, "claim_wait_seconds": file_claims["claim_wait_seconds"]}


def worker_env(env: dict[str, str], url: str | None) -> dict[str, str]:
    """A worker's environment that names the run's journal database, or none (never one inherited by accident)."""
    out = {k: v for k, v in env.items() if k != JOURNAL_URL_ENV}
    if url is not None:
        out[JOURNAL_URL_ENV] = url
    return out


def open_for_case(journal_file: Path) -> tuple[JournalLike, ClaimsLike]:
    """The journal and claims a worker of this case uses: the run's database when the runner named one."""
    return open_journal(os.environ.get(JOURNAL_URL_ENV) or journal_file, claim_ttl=claim_ttl())


def claim_ttl() -> float:
    """The gated workers' claim TTL: the run's default, or the one the environment names."""
    return float(os.environ.get(CLAIM_TTL_ENV) or CLAIM_TTL_SECONDS)


def case_bundle(journal: JournalLike, effect_id: str, journal_file: Path) -> dict[str, Any]:
    """The effect's receipt bundle; from a database, its entries also go to the case's journal file, byte for byte
    as a JSONL journal stores them (written whole, then renamed, so a killed worker leaves the last full copy).
    An effect with no entry yet has an empty bundle and leaves the file as it is: a submit that answered IN_FLIGHT
    found the effect's claim held by another process, which may not have journaled anything so far."""
    try:
        receipt = bundle(journal, effect_id)
    except KeyError:  # `bundle` read the journal afresh and found no entry of the effect
        return {"effect_id": effect_id, "entries": []}
    if not isinstance(journal, Journal):
        tmp = journal_file.with_name(f"{journal_file.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as out:
            out.writelines(encode(entry) for entry in receipt["entries"])
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, journal_file)
    return receipt


def _one_line(message: str, url: str) -> str:
    """The driver's message on one line, with any password the address carries blanked out."""
    parts = urlsplit(url)
    userinfo = parts.netloc.rpartition("@")[0]
    password = userinfo.partition(":")[2]
    secrets = [password, unquote(password)] + parse_qs(parts.query).get("password", [])
    text = "; ".join(line.strip() for line in message.splitlines() if line.strip()) or "cannot connect"
    for secret in filter(None, secrets):
        text = text.replace(secret, "***")
    return text
