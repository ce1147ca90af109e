"""The one byte encoding every hash in Interlock is computed over."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_bytes(obj: Any) -> bytes:
    """Encode `obj` so that equal JSON values always give equal bytes (sorted keys, no spaces, ASCII)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str).encode()


def entry_hash(entry: dict[str, Any]) -> str:
    """Hash of a journal entry: sha256 over its canonical form without the `hash` field itself."""
    body = {k: v for k, v in entry.items() if k != "hash"}
    return hashlib.sha256(canonical_bytes(body)).hexdigest()


def digest(obj: Any) -> str:
    """sha256 hex of a JSON value's canonical form (payload binding, signatures)."""
    return hashlib.sha256(canonical_bytes(obj)).hexdigest()
