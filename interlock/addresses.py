"""Journal addresses: which name a PostgreSQL database rather than a JSONL file, and how to print one safely.

A leaf module, so the PostgreSQL backend and `open_journal`, which picks it, both read addresses without importing
each other.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(address: str | os.PathLike[str]) -> bool:
    """Whether a journal address names a PostgreSQL database rather than a JSONL file."""
    return isinstance(address, str) and address.startswith(POSTGRES_SCHEMES)


def safe_address(url: str) -> str:
    """A database address without its password or query (which may carry one), safe to print or store."""
    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return urlunsplit((parts.scheme, f"{user}@{host}" if at and user else host, parts.path, "", ""))
