"""The statements every gated effect makes, run through the session's libpq connection directly.

Each is prepared once per session, its parameters are passed as text and its one row is read back as text. On
these statements (an effect's appends, its claim's take, which carries its first entries, and its confirm)
psycopg's cursor and adaptation cost the client about as much CPU as the round trip itself; errors still surface as
psycopg's, with their SQLSTATE.
"""

from __future__ import annotations

import functools
import re
import weakref
from typing import Any, Sequence

import psycopg
from psycopg import errors
from psycopg.pq import ConnStatus, ExecStatus

_prepared: weakref.WeakKeyDictionary[psycopg.Connection[Any], dict[str, bytes]] = weakref.WeakKeyDictionary()


def first_row(conn: psycopg.Connection[Any], query: str, params: Sequence[Any]) -> tuple[str | None, ...] | None:
    """The first row of `query` (written with %s placeholders, as psycopg takes it) with `params`, each column as
    text, or None when there is none; one autocommit round trip, plus one to prepare it on a new session."""
    with conn.lock:
        pgconn = conn.pgconn
        encoding = conn.info.encoding
        names = _prepared.setdefault(conn, {})
        name = names.get(query)
        if name is None:
            name = f"interlock_{len(names)}".encode()
            _expect(pgconn.prepare(name, _numbered(query)), ExecStatus.COMMAND_OK, pgconn, encoding)
            names[query] = name
        texts: list[Any] = [None if p is None else str(p).encode(encoding) for p in params]  # None is SQL NULL
        result = pgconn.exec_prepared(name, texts)
        _expect(result, ExecStatus.TUPLES_OK, pgconn, encoding)
        if result.ntuples == 0:
            return None
        values = (result.get_value(0, column) for column in range(result.nfields))
        return tuple(None if value is None else value.decode(encoding) for value in values)


def _expect(result: Any, status: ExecStatus, pgconn: Any, encoding: str) -> None:
    """Raise the error a result carries: OperationalError when the session is gone, as psycopg would."""
    if result.status == status:
        return
    if pgconn.status == ConnStatus.BAD:
        raise psycopg.OperationalError(result.get_error_message(encoding) or "the connection was lost")
    raise errors.error_from_result(result, encoding=encoding)


@functools.cache
def _numbered(query: str) -> bytes:
    """The query with its %s placeholders numbered $1, $2, ... as the server takes them."""
    count = iter(range(1, query.count("%s") + 1))
    return re.sub("%s", lambda _: f"${next(count)}", query).encode()
