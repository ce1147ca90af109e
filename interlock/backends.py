"""`open_journal`: pick a journal backend by its address.

Two backends meet the protocols of `interlock._protocols`: the JSONL file (`Journal` with `FileClaims`, one host) and PostgreSQL (`interlock.pg`,
claims fenced by an epoch and a lease on the database clock, shared by workers on many hosts).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ._protocols import ClaimsLike, JournalLike
from .addresses import is_postgres
from .claims import FileClaims
from .errors import ConfigurationError
from .journal import Journal


def open_journal(address: str | os.PathLike[str] | JournalLike, *,
                 claim_ttl: float = 30.0) -> tuple[JournalLike, ClaimsLike]:
    """The journal and claims for `address`: a postgresql:// URL, a path to a JSONL file, or a journal opened
    already with options of its own (`Journal(path, key=..., segment_bytes=...)`, `PgJournal(url)`), given the
    claims that go with it.

    Runners take one `--journal` argument and call this, so every scenario runs on either backend unchanged.
    `claim_ttl` bounds how long a paused (stopped, hung) sender keeps its claim: on the database clock for
    PostgreSQL, by renewal for file claims, whose dead owners the kernel frees at once.
    """
    if type(claim_ttl) not in (int, float) or not claim_ttl > 0:
        raise ConfigurationError(f"claim_ttl: {claim_ttl!r} is not a positive number of seconds")
    if isinstance(address, Journal):
        return address, FileClaims(f"{address.path}.claims", ttl=claim_ttl)
    if not isinstance(address, (str, os.PathLike)):
        return _opened_elsewhere(address, claim_ttl)
    if is_postgres(address):
        from .pg import PgClaims, PgJournal

        journal = PgJournal(str(address))
        return journal, PgClaims(journal, ttl=claim_ttl)
    _check_file_address(address)
    jsonl = Journal(address)
    return jsonl, FileClaims(f"{jsonl.path}.claims", ttl=claim_ttl)


def _opened_elsewhere(journal: object, claim_ttl: float) -> tuple[JournalLike, ClaimsLike]:
    """A PostgreSQL journal opened by the caller, with claims in its database; anything else is refused (without
    importing the PostgreSQL backend, whose driver is an extra: a caller holding a PgJournal has it loaded)."""
    pg = sys.modules.get("interlock.pg")
    if pg is None or not isinstance(journal, pg.PgJournal):
        raise ConfigurationError(f"journal address {journal!r}: expected a postgresql:// URL, a file path, a Journal "
                                 "or a PgJournal")
    return journal, pg.PgClaims(journal, ttl=claim_ttl)


def _check_file_address(address: str | os.PathLike[str]) -> None:
    """Refuse an address that cannot be a journal file: an empty one, a folder, a URL of another database, a file in
    a folder that does not exist."""
    text = os.fspath(address)
    if isinstance(text, bytes) or not text:
        raise ConfigurationError(f"journal address {address!r}: expected a postgresql:// URL or a file path")
    if "://" in text:
        raise ConfigurationError(f"journal address {text!r}: only postgresql:// URLs name a database; any other "
                                 "address is a file path")
    path = Path(text)
    if path.is_dir():
        raise ConfigurationError(f"journal address {text!r} is a folder: name the journal file in it")
    if not path.parent.is_dir():
        raise ConfigurationError(f"journal address {text!r}: folder {str(path.parent)!r} does not exist")
