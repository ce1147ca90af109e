"""Journal addresses: which name a PostgreSQL database rather than a JSONL file, and how to print one safely.

A leaf module, so the PostgreSQL backend and `open_journal`, which picks it, both read addresses without importing
each other.
"""

from __future__ import annotations

import os
import re

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(address: str | os.PathLike[str]) -> bool:
    """Whether a journal address names a PostgreSQL database rather than a JSONL file."""
    return isinstance(address, str) and address.startswith(POSTGRES_SCHEMES)


def safe_address(url: str) -> str:
    """A database address without its password or query (which may carry one), safe to print or store.

    Whatever a password holds, it comes before the last "@": of that part only the user name is kept. Where a "?"
    or "#" comes before that "@" (a password holding one, or a query holding an "@": the two cannot be told
    apart), no part of the address is shown."""
    scheme, sep, rest = url.partition("://")
    userinfo, at, place = rest.rpartition("@")
    if not sep or any(mark in userinfo for mark in "?#"):
        return f"{scheme}://(address not shown)" if sep else "(address not shown)"
    user = userinfo.partition(":")[0]
    place = re.split("[?#]", place, maxsplit=1)[0]
    return f"{scheme.lower()}://{user}@{place}" if at and user and "/" not in user else f"{scheme.lower()}://{place}"
