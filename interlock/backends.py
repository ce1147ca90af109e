"""What the gate needs from a journal and from claims, and `open_journal` to pick a backend by its address.

Two backends meet it: the JSONL file (`Journal` with `FileClaims`, one host) and PostgreSQL (`interlock.pg`,
claims fenced by an epoch and a lease on the database clock, shared by workers on many hosts).
"""

from __future__ import annotations

import os
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from .claims import FileClaims
from .journal import EffectRecord, Journal

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


class ClaimLost(Exception):
    """This process's claim was taken over (its lease ran out or its session died): it must not write or send."""


class GuardFailed(Exception):
    """A check run inside the dispatch transaction failed, so DISPATCHED was not written."""

    def __init__(self, violations: list[str]):
        super().__init__("; ".join(violations))
        self.violations = violations


class ClaimLike(Protocol):
    """A held claim: its fencing epoch, and a way to give it back."""

    epoch: int

    def release(self) -> None:
        """Give the effect back to whoever waits for it."""
        ...

    def __enter__(self) -> ClaimLike: ...

    def __exit__(self, *exc: object) -> None: ...


class ClaimsLike(Protocol):
    """Hands out one claim per effect at a time."""

    def acquire(self, effect_id: str, wait: float) -> ClaimLike | None:
        """The claim, or None if a live owner keeps it for `wait` seconds."""
        ...


class JournalLike(Protocol):
    """A hash-chained journal: the entry format and the folded per-effect state the gate and recovery read."""

    @property
    def path(self) -> str | os.PathLike[str]:
        """Where the journal lives, for messages."""
        ...

    @property
    def head(self) -> tuple[int, str | None]:
        """(seq, hash) of the last entry."""
        ...

    def refresh(self) -> None:
        """See what other processes appended."""
        ...

    def append(self, kind: str, effect_id: str, data: dict[str, Any]) -> dict[str, Any]:
        """Durably append one entry and return it as stored."""
        ...

    def effect(self, effect_id: str) -> EffectRecord | None:
        """The folded state of one effect."""
        ...

    def open_dispatches(self) -> list[EffectRecord]:
        """Effects whose last send has no resolution."""
        ...

    def entries(self, effect_id: str | None = None) -> list[dict[str, Any]]:
        """Every entry, or one effect's, in order."""
        ...


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
    `claim_ttl` (seconds on the database clock) bounds how long a paused sender blocks PostgreSQL claims; file
    claims need none, since the kernel frees them when their owner dies.
    """
    if is_postgres(address):
        from .pg import PgClaims, PgJournal

        journal = PgJournal(str(address))
        return journal, PgClaims(journal, ttl=claim_ttl)
    jsonl = Journal(address)
    return jsonl, FileClaims(f"{jsonl.path}.claims")
