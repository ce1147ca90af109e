"""The fields of a journal entry that the checks read, decoded from a stored line without building the rest.

A whole-journal verification reads every line once. Decoding only these fields (msgspec skips the others after
checking they are well-formed JSON) and checking the line's hash over its own bytes is what makes that pass
fast; a line that is not laid out as the journal writes it is parsed whole and checked by the canonical rule,
so the answer is the same either way. A field the entry lacks reads as None, as `dict.get` would give it, except
where being absent means something of its own: `MISSING` marks an absent `checks`, `rechecked`, `result` or
`found`, apart from one set to null.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UnsetType

from ..canonical import hash_holds, laid_out_holds, loads
from ..kinds import KINDS

MISSING: Any = msgspec.UNSET


class Entry(msgspec.Struct, gc=False):
    """One journal entry as the checks see it; every field may hold any JSON value. The fields are declared in the
    order a stored line has them (sorted, the hash last), so each key the decoder meets is the next field it tries;
    an entry holds no cycle, so the collector need not track it."""

    checks: Any = MISSING
    code: Any = None
    effect_id: Any = None
    effect_prev: Any = None
    epoch: Any = None
    found: Any = MISSING
    kind: Any = None
    late_kind: Any = None
    prev: Any = None
    reason: Any = None
    rechecked: Any = MISSING
    resolves: Any = None
    result: Any = MISSING
    seq: Any = None
    ts: Any = None
    hash: Any = None


Kind = Literal[tuple(sorted(KINDS))]  # type: ignore[valid-type]  # the kinds, for the decoder to check


class Checks(msgspec.Struct, gc=False):
    """What a send's `checks` object says that a receipt reads; the rest of it (the lease as seen) is skipped."""

    lease_live: Any = None
    violations: Any = None


class Shaped(msgspec.Struct, gc=False, kw_only=True):
    """An `Entry` whose shape the decoder checked: a known kind, a number for its time, an object (or nothing) for
    its checks and rechecks. A stored line is decoded as one first, so the checks of an entry need not look again;
    one the decoder refuses is decoded as an `Entry` and its shape is checked field by field."""

    checks: Checks | UnsetType = MISSING
    code: Any = None
    effect_id: Any = None
    effect_prev: Any = None
    epoch: Any = None
    found: Any = MISSING
    kind: Kind  # type: ignore[valid-type]
    late_kind: Any = None
    prev: Any = None
    reason: Any = None
    rechecked: dict[str, Any] | UnsetType = MISSING
    resolves: Any = None
    result: Any = MISSING
    seq: Any = None
    ts: int | float
    hash: Any = None


Read = Entry | Shaped  # an entry as the checks take it
decode_shaped = msgspec.json.Decoder(Shaped).decode
_decode = msgspec.json.Decoder(Entry).decode
DECODE_ERRORS = (msgspec.DecodeError, UnicodeDecodeError)  # a line msgspec cannot read, or not as `Shaped`
_convert = msgspec.convert


def read_line(raw: bytes) -> tuple[Entry | None, bool]:
    """(entry, whether its hash holds) of one stored line without its newline; entry None when the line is not a
    JSON object."""
    try:
        entry = _decode(raw)
    except DECODE_ERRORS:  # the standard reading decides what this line is
        return read_slowly(raw)
    if laid_out_holds(raw, entry.hash):
        return entry, True
    return read_slowly(raw)


def read_slowly(raw: bytes) -> tuple[Entry | None, bool]:
    """`read_line` for a line not laid out as the journal writes it: parsed whole, its hash checked by the
    canonical rule."""
    try:
        whole = loads(raw)
    except ValueError:
        return None, False
    if type(whole) is not dict:
        return None, False
    return as_entry(whole), hash_holds(whole)


def as_entry(entry: dict[str, Any]) -> Entry:
    """The checked fields of an entry given as a dict."""
    return _convert(entry, Entry)
