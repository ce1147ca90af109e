"""`open_journal`: pick a journal backend by its address.

Two backends meet the protocols of `interlock._protocols`: the JSONL file (`Journal` with `FileClaims`, one host) and PostgreSQL (`interlock.pg`,
claims fenced by an epoch and a lease on the database clock, shared by workers on many hosts).
"""

from __future__ import annotations

import os

from ._protocols import ClaimsLike, JournalLike
from .addresses import is_postgres
from .claims import FileClaims
from .journal import Journal


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
