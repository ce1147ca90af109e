"""A PostgreSQL journal's stored lines for `python -m interlock.receipts`, streamed in seq order.

A verifier only reads: it creates no table (as opening a `PgJournal` would), and reads in one read-only
transaction, whose single query sees one snapshot of the journal however long the stream takes. Nothing it prints
carries the address's password: the driver's messages can quote the address back.
"""

from __future__ import annotations

import re
from typing import Iterator
from urllib.parse import unquote

CONNECT_TIMEOUT_SECONDS = 10  # a host that never answers is reported, not waited on
BATCH = 2_000  # lines fetched per round trip from the server-side cursor


class DatabaseUnreadable(Exception):
    """One line saying why the journal's database cannot be read, without the address's password."""


def stored_lines(url: str) -> Iterator[bytes]:
    """Every line of the journal at `url` in seq order, as a JSONL journal stores it without its newline."""
    try:
        import psycopg
    except ImportError:
        raise DatabaseUnreadable("reading a PostgreSQL journal needs psycopg (pip install .[postgres])") from None
    try:
        with psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_SECONDS) as conn:
            conn.read_only = True
            with conn.cursor(name="interlock_receipts") as cur:
                cur.itersize = BATCH
                cur.execute("SELECT line FROM interlock_journal ORDER BY seq")
                for (line,) in cur:
                    yield line.removesuffix("\n").encode()
    except (psycopg.Error, ValueError) as exc:
        raise DatabaseUnreadable(_without_secrets(str(exc), url)) from None


def _without_secrets(message: str, url: str) -> str:
    """The driver's message on one line, with everything the address's password or query holds blanked out: the
    whole, decoded or not, and each piece between the marks an address is split at, which a driver that split the
    address otherwise (at the first "@", say) may quote back alone."""
    rest = url.partition("://")[2]
    password = rest.rpartition("@")[0].partition(":")[2]
    values = [pair.partition("=")[2] for pair in re.split("[&#]", rest.partition("?")[2])]
    secrets = {piece for raw in (password, *values) for piece in (raw, unquote(raw), *re.split(r"[@/?#:&=]", raw))}
    text = "; ".join(line.strip() for line in message.splitlines() if line.strip()) or "cannot read the journal"
    for secret in sorted((s for s in secrets if len(s) > 1), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text
