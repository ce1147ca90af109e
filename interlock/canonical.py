"""The one byte encoding every hash in Interlock is computed over."""

from __future__ import annotations

import hashlib
import json
from typing import Any

try:  # an optional accelerator for checking stored hashes; the hash rule itself never depends on it
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised where orjson is not installed
    _orjson = None  # type: ignore[assignment]


# Built once: json.dumps with these options would build a new encoder for every entry it hashes.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str,
                              check_circular=False)


def loads(raw: bytes) -> Any:
    """Parse one stored JSON line, with orjson when it is installed (several times faster on a long journal);
    what orjson refuses (NaN, integers past 64 bits) goes to the standard parser, so the result never differs."""
    if _orjson is not None:
        try:
            return _orjson.loads(raw)
        except _orjson.JSONDecodeError:
            pass
    return json.loads(raw)


def canonical_bytes(obj: Any) -> bytes:
    """Encode `obj` so that equal JSON values always give equal bytes (sorted keys, no spaces, ASCII)."""
    return _CANONICAL.encode(obj).encode()


def entry_hash(entry: dict[str, Any]) -> str:
    """Hash of a journal entry: sha256 over its canonical form without the `hash` field itself."""
    body = dict(entry)
    body.pop("hash", None)
    return hashlib.sha256(canonical_bytes(body)).hexdigest()


def digest(obj: Any) -> str:
    """sha256 hex of a JSON value's canonical form (payload binding, signatures)."""
    return hashlib.sha256(canonical_bytes(obj)).hexdigest()


def hash_holds(entry: dict[str, Any]) -> bool:
    """Whether an entry's stored `hash` is the hash of its content under the canonical rule.

    With orjson installed the entry is first encoded by orjson (sorted keys, compact): when those bytes hash to
    the stored value they are, barring a sha256 collision, the very bytes the writer hashed, so the canonical
    encoding of this content is too. Anything else (non-ASCII text, exponent floats, a tampered entry) falls
    back to the canonical encoder, so the answer never differs from `entry_hash(entry) == entry["hash"]`.
    """
    body = dict(entry)
    stored = body.pop("hash", None)
    if _orjson is not None:
        try:
            if hashlib.sha256(_orjson.dumps(body, option=_orjson.OPT_SORT_KEYS)).hexdigest() == stored:
                return True
        except TypeError:
            pass
    return bool(hashlib.sha256(canonical_bytes(body)).hexdigest() == stored)
