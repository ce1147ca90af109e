"""`open_journal`: pick a journal backend by its address.

Two backends meet the protocols of `interlock._protocols`: the JSONL file (`Journal` with `FileClaims`, one host) and PostgreSQL (`interlock.pg`,
claims fenced by an epoch and a lease on the database clock, shared by workers on many hosts).
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

from ._protocols import ClaimsLike, JournalLike
from .claims import FileClaims
from .journal import Journal

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(address: str | os.PathLike[str]) -> bool:
    """Whether a journal address names a PostgreSQL database rather than a JSONL file."""
    return isinstance(address, str) and address.startswith(POSTGRES_SCHEMES)


def safe_address(url: str) -> str:
    """A database address without its password or query (which may carry one), safe to print or store."""
    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return urlunsplit((parts.scheme, f"{user}@{host}" if at and user else host, parts.path, "", ""))


def open_journal(address: str | os.PathLike[str], *, claim_ttl: float = 30.0) -> tuple[JournalLike, ClaimsLike]:
    """The journal and claims for `address`: a postgresql:// URL, or a path to a JSONL file.

    Runners take one `--journal` argument and call this, so every scenario runs on either backend unchanged.
    `claim_ttl` bounds how long a paused (stopped, hung) sender keeps its claim: on the database clock for
    PostgreSQL, by renewal for file claims, whose dead owners the kernel frees at once.
    """
    if is_postgres(address):
        from .pg import PgClaims, PgJournal

        journal = PgJournal(str(address))
        return journal, PgClaims(journal, ttl=claim_ttl)
    jsonl = Journal(address)
    return jsonl, FileClaims(f"{jsonl.path}.claims", ttl=claim_ttl)
