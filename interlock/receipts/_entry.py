"""The fields of a journal entry that the checks read, decoded from a stored line without building the rest.

A whole-journal verification reads every line once. Decoding only these fields (msgspec skips the others after
checking they are well-formed JSON) and checking the line's hash over its own bytes is what makes that pass
fast; a line that is not laid out as the journal writes it is parsed whole and checked by the canonical rule,
so the answer is the same either way. A field the entry lacks reads as None, as `dict.get` would give it, except
where being absent means something of its own: `MISSING` marks an absent `checks`, `rechecked`, `result` or
`found`, apart from one set to null.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from ..canonical import HASH_FIELD, HASH_SUFFIX, hash_holds, loads

MISSING: Any = msgspec.UNSET


class Entry(msgspec.Struct):
    """One journal entry as the checks see it; every field may hold any JSON value."""

    kind: Any = None
    seq: Any = None
    prev: Any = None
    hash: Any = None
    effect_id: Any = None
    effect_prev: Any = None
    ts: Any = None
    epoch: Any = None
    resolves: Any = None
    reason: Any = None
    code: Any = None
    late_kind: Any = None
    checks: Any = MISSING
    rechecked: Any = MISSING
    result: Any = MISSING
    found: Any = MISSING


_decode = msgspec.json.Decoder(Entry).decode
_convert = msgspec.convert
_sha256 = hashlib.sha256
_CLOSE = b'"}'


def read_line(raw: bytes) -> tuple[Entry | None, bool]:
    """(entry, whether its hash holds) of one stored line without its newline; entry None when the line is not a
    JSON object."""
    try:
        entry = _decode(raw)
    except (msgspec.DecodeError, UnicodeDecodeError):  # the standard reading decides what this line is
        return _read_slowly(raw)
    stored = entry.hash
    if (raw[-HASH_SUFFIX:-66] == HASH_FIELD and raw[-2:] == _CLOSE
            and _sha256(raw[:-HASH_SUFFIX] + b"}").hexdigest() == stored):
        return entry, True
    return _read_slowly(raw)


def _read_slowly(raw: bytes) -> tuple[Entry | None, bool]:
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
