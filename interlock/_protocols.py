"""What the gate needs from a journal and from claims: the protocols both backends (JSONL, PostgreSQL) meet.

A leaf module: it imports nothing of the library but the folded effect record, so a backend can import it
without importing the gate.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .records import EffectRecord


class ClaimLike(Protocol):
    """A held claim: its fencing epoch, a last check that it is still held, and a way to give it back.

    The claims object that handed it out renews it while it is held; a holder that stops renewing (paused, hung)
    loses it after the claims' `ttl`, and `confirm()` then answers False.
    """

    effect_id: str
    epoch: int

    def confirm(self) -> bool:
        """Whether this epoch still owns the effect: one round trip, made right before every request."""
        ...

    def release(self) -> None:
        """Give the effect back to whoever waits for it."""
        ...

    def __enter__(self) -> ClaimLike: ...

    def __exit__(self, *exc: object) -> None: ...


class ClaimsLike(Protocol):
    """Hands out one claim per effect at a time."""

    ttl: float

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

    def refresh(self, *, check: bool = False) -> None:
        """See what other processes appended; with `check`, every entry read is checked before this returns."""
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

    def now(self) -> float:
        """The time now (epoch seconds) on the clock the entries' `ts` are stamped with."""
        ...
