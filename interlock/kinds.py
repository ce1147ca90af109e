"""Journal entry kinds, which of them settle an effect, and the one rule for whether a send is still open."""

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


def send_open_after(pending: bool, kind: Any) -> bool:
    """Whether a send is open after one more entry of `kind`: a send opens one, a resolution settles it, and
    anything else (a proposal, an authorization, a late result) leaves it as it was.

    Every reader of the journal (the file and database backends, receipts, the explorer) folds with this one
    step, so none of them can disagree about which effects recovery still owes."""
    if kind in SENDS:
        return True
    if kind in RESOLUTIONS:  # even a refusal that leaves the effect open to a later submit ends the send
        return False
    return pending


def settles(entry: dict[str, Any]) -> bool:
    """Whether an entry resolves its effect for good: a resolution, except a refusal made before anything was
    sent (`resolves: false`), after which a later submit of the same effect may try again."""
    return settling(entry.get("kind"), entry.get("resolves"))


def settling(kind: Any, resolves: Any) -> bool:
    """`settles` for an entry read as its `kind` and `resolves` fields alone."""
    return kind in RESOLUTIONS and resolves is not False


def open_send(entries: Iterable[dict[str, Any]]) -> bool:
    """Whether an effect's entries end with a send that no resolution settled."""
    pending = False
    for entry in entries:
        pending = send_open_after(pending, entry.get("kind"))
    return pending
