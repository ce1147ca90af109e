"""The one byte encoding every hash in Interlock is computed over."""

from __future__ import annotations

import hashlib
import json
from typing import Any


# Built once: json.dumps with these options would build a new encoder for every entry it hashes.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str,
                              check_circular=False)


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
