"""The one byte encoding every hash in Interlock is computed over, and the journal line laid out so a reader can
check it over the line's own bytes.

An entry's hash is sha256 over the canonical form of the entry without its `hash` field. The JSONL journal writes
each line as exactly that canonical form with the hash appended as its last field, at a fixed distance from the
line's end: `<canonical body without its closing brace>,"hash":"<64 hex>"}`. Checking a stored line therefore
hashes the bytes before the hash field, closed by `}`, with no parse and no re-encoding; any line not laid out
that way (written by another tool, or edited) is checked by re-encoding its content canonically, so both readings
apply the one rule.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import msgspec


# Built once: json.dumps with these options would build a new encoder for every entry it hashes.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str,
                              check_circular=False)
_decode = msgspec.json.Decoder().decode
_sorted_compact = msgspec.json.Encoder(order="sorted").encode


def loads(raw: bytes | str) -> Any:
    """Parse one stored JSON line with msgspec (several times faster than the standard parser on a long journal);
    what msgspec refuses (NaN, a lone surrogate) goes to the standard parser, so the result never differs."""
    try:
        return _decode(raw)
    except msgspec.DecodeError:
        return json.loads(raw)


def canonical_bytes(obj: Any) -> bytes:
    """Encode `obj` so that equal JSON values always give equal bytes (sorted keys, no spaces, ASCII)."""
    return _CANONICAL.encode(obj).encode()


def entry_hash(entry: dict[str, Any]) -> str:
    """Hash of a journal entry: sha256 over its canonical form without the `hash` field itself."""
    body = dict(entry)
    body.pop("hash", None)
    return hashlib.sha256(canonical_bytes(body)).hexdigest()


HASH_FIELD = b',"hash":"'
HASH_SUFFIX = len(HASH_FIELD) + 64 + len(b'"}')  # the hash field and the closing brace, at the end of every line


def sealed_line(body: dict[str, Any]) -> tuple[str, bytes]:
    """(hash, line) of an entry `body` (every field but `hash`): the line is its canonical form with the hash as its
    last field and a newline, so the hash is computed once, over the very bytes written."""
    raw = canonical_bytes(body)
    digest = hashlib.sha256(raw).hexdigest()
    return digest, raw[:-1] + HASH_FIELD + digest.encode() + b'"}\n'


def line_hash(raw: bytes) -> bytes | None:
    """The hash a stored line (without its newline) carries at the fixed place, when it is the hash of the bytes
    before it closed by `}`; None when the line is not laid out that way or its bytes do not hash to it."""
    stored = raw[-66:-2]
    return stored if laid_out_holds(raw, stored.decode("latin-1")) else None


def line_holds(raw: bytes, entry: dict[str, Any]) -> bool:
    """Whether the stored line `raw`, parsed as `entry`, carries the hash of its content: over its bytes when it is
    laid out as the journal writes it, else by re-encoding `entry` canonically."""
    return laid_out_holds(raw, entry.get("hash")) or hash_holds(entry)


def laid_out_holds(raw: bytes, stored: Any) -> bool:
    """Whether `raw` ends in the hash field at its fixed place and its bytes before it, closed by `}`, hash to
    `stored`, the line's parsed `hash`. The field's bytes need no separate check: a line that parses as an object
    and ends so has them as its last member, and escaped text could not read back as 64 hex digits."""
    return (raw[-HASH_SUFFIX:-66] == HASH_FIELD and raw[-2:] == b'"}'
            and hashlib.sha256(raw[:-HASH_SUFFIX] + b"}").hexdigest() == stored)


def digest(obj: Any) -> str:
    """sha256 hex of a JSON value's canonical form (payload binding, signatures)."""
    return hashlib.sha256(canonical_bytes(obj)).hexdigest()


def hash_holds(entry: dict[str, Any]) -> bool:
    """Whether an entry's stored `hash` is the hash of its content under the canonical rule.

    The entry is first encoded by msgspec (sorted keys, compact): when those bytes hash to the stored value they
    are, barring a sha256 collision, the very bytes the writer hashed, so the canonical encoding of this content
    is too. Anything else (non-ASCII text, exponent floats, a tampered entry) falls back to the canonical
    encoder, so the answer never differs from `entry_hash(entry) == entry["hash"]`.
    """
    body = dict(entry)
    stored = body.pop("hash", None)
    try:
        if hashlib.sha256(_sorted_compact(body)).hexdigest() == stored:
            return True
    except (TypeError, msgspec.EncodeError):
        pass
    return bool(hashlib.sha256(canonical_bytes(body)).hexdigest() == stored)


def round_trip_problem(value: Any, where: str = "") -> str | None:
    """Where in `value` something would not survive a JSON round trip exactly (a tuple, an int key, a NaN,
    a str subclass), or None if it all would."""
    if value is None or type(value) in (str, bool, int):
        return None
    if type(value) is float:
        return None if value == value and value not in (float("inf"), float("-inf")) else f"{where} ({value!r})"
    if type(value) is list:
        for i, item in enumerate(value):
            found = round_trip_problem(item, f"{where}[{i}]")
            if found is not None:
                return found
        return None
    if type(value) is dict:
        for key, item in value.items():
            if type(key) is not str:
                return f"{where} (key {key!r} is a {type(key).__name__})"
            found = round_trip_problem(item, f"{where}[{json.dumps(key)}]")
            if found is not None:
                return found
        return None
    return f"{where} (a {type(value).__name__})"
