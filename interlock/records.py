"""What the journal knows about one effect, folded from its entries, and the fields of a stored line that fold reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from .canonical import loads
from .kinds import PROPOSED, send_open_after, settles


class Fields(msgspec.Struct):
    """The fields of a stored journal line that the journal checks and folds, typed as a valid entry has them;
    msgspec decodes only these and skips the rest after checking it is JSON, so following a busy journal costs
    little per line. A line that does not decode so is read whole, and the whole reading decides."""

    seq: int
    kind: str
    effect_id: str
    hash: str
    ts: float
    prev: str | None = None
    effect_prev: str | None = None
    payload_hash: Any = None
    resolves: Any = None


read_fields = msgspec.json.Decoder(Fields).decode
"""The checked fields of one stored line; raises msgspec.DecodeError (or UnicodeDecodeError) when it has no such."""


def as_fields(entry: dict[str, Any]) -> Fields:
    """The checked fields of an entry already read whole and checked."""
    return msgspec.convert(entry, Fields)


@dataclass(slots=True)
class EffectRecord:
    """What the journal knows about one effect, kept in memory so a lookup never rescans the file."""

    effect_id: str
    offsets: list[int] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    last_hash: str | None = None
    payload_hash: str | None = None
    open_dispatch: bool = False
    settled_by: dict[str, Any] | bytes | None = None  # the resolution, or its stored line until first read

    @property
    def resolution(self) -> dict[str, Any] | None:
        """The entry that settled the effect, or None. A follower of a busy journal settles many effects it never
        asks about, so a resolution read from a line is parsed only when asked for."""
        settled = self.settled_by
        if isinstance(settled, bytes):
            settled = self.settled_by = loads(settled)
        return settled

    def copy(self) -> EffectRecord:
        """A record to fold more entries into without changing this one."""
        return EffectRecord(self.effect_id, list(self.offsets), list(self.kinds), self.last_hash, self.payload_hash,
                            self.open_dispatch, self.settled_by)

    def add(self, entry: dict[str, Any], position: int) -> None:
        """Fold one more of this effect's entries in; `position` is where a backend can read it back."""
        kind = entry["kind"]
        self.fold(kind, entry["hash"], position, entry.get("payload_hash"), entry if settles(entry) else None)

    def fold(self, kind: str, hash: str, position: int, payload_hash: Any,
             resolution: dict[str, Any] | bytes | None) -> None:
        """`add` for an entry read as its fields: `resolution` is the whole entry, or its stored line, when it
        settles the effect."""
        self.offsets.append(position)
        self.kinds.append(kind)
        self.last_hash = hash
        self.open_dispatch = send_open_after(self.open_dispatch, kind)
        if kind == PROPOSED:
            self.payload_hash = payload_hash
        elif resolution is not None:
            self.settled_by = resolution
