"""Journal entry kinds and which of them settle an effect."""

from __future__ import annotations

from typing import Any, Iterable

PROPOSED = "PROPOSED"
AUTHORIZED = "AUTHORIZED"
DISPATCHED = "DISPATCHED"
REDISPATCHED = "REDISPATCHED"
COMMITTED = "COMMITTED"
REFUSED = "REFUSED"
AMBIGUOUS = "AMBIGUOUS"
LATE_RESULT = "LATE_RESULT"

KINDS = frozenset({PROPOSED, AUTHORIZED, DISPATCHED, REDISPATCHED, COMMITTED, REFUSED, AMBIGUOUS, LATE_RESULT})
SENDS = frozenset({DISPATCHED, REDISPATCHED})
RESOLUTIONS = frozenset({COMMITTED, REFUSED, AMBIGUOUS})
# Kinds the published run documented; a legacy bundle may carry them although this gate never writes them.
LEGACY_KINDS = frozenset({"ESCALATED", "DECIDED", "CONFIRMED"})


def settles(entry: dict[str, Any]) -> bool:
    """Whether an entry resolves its effect for good: a resolution, except a refusal made before anything was
    sent (`resolves: false`), after which a later submit of the same effect may try again."""
    return entry.get("kind") in RESOLUTIONS and entry.get("resolves") is not False


def open_send(entries: Iterable[dict[str, Any]]) -> bool:
    """Whether an effect's entries end with a send that no resolution settled."""
    pending = False
    for entry in entries:
        kind = entry.get("kind")
        if kind in SENDS:
            pending = True
        elif kind in RESOLUTIONS:
            pending = False
    return pending
