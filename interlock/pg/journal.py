"""The journal in PostgreSQL: the same entries and hash chain as the JSONL file, with the database as the lock."""

from __future__ import annotations

import json
import os
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import psycopg
from psycopg import sql

from ..backends import safe_address
from ..errors import ClaimLost, GuardFailed
from ..journal import EffectRecord, encode, seal
from ..kinds import DISPATCHED, RESOLUTIONS, SENDS
from .schema import APPEND_LOCK, DDL, LOCK_SPACE, SCHEMA_LOCK

Guard = str | Callable[[], list[str]]
_guarding: ContextVar[psycopg.Cursor[Any] | None] = ContextVar("interlock_pg_guarding", default=None)


class PgJournal:
    """A journal in one PostgreSQL database, shared by any number of processes on any number of hosts.

    Every append runs in one transaction that takes the journal's append lock, reads the head and the effect's
    last entry, and inserts the sealed entry; unique constraints refuse a forked chain even from a writer that
    skips the lock. An append for an effect whose claim this process holds is fenced on the claim's epoch.
    """

    def __init__(self, url: str):
        self.url = url
        self._conn = self.connect()
        self._epochs: dict[str, int] = {}
        with self._conn.transaction():
            self._conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_SPACE, SCHEMA_LOCK))
            self._conn.execute(DDL)

    def connect(self) -> psycopg.Connection[Any]:
        """A new autocommit session on the journal's database."""
        return psycopg.connect(self.url, autocommit=True)

    @property
    def path(self) -> str:
        """The database address without its password, safe to print."""
        return safe_address(self.url)

    def close(self) -> None:
        """Close the journal's session."""
        self._conn.close()

    def __enter__(self) -> PgJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def head(self) -> tuple[int, str | None]:
        """(seq, hash) of the last entry in the database."""
        row = self._session().execute("SELECT seq, hash FROM interlock_journal ORDER BY seq DESC LIMIT 1").fetchone()
        return (row[0], row[1]) if row else (-1, None)

    def __len__(self) -> int:
        return self.head[0] + 1

    def refresh(self) -> None:
        """Nothing to catch up on: every read goes to the database."""

    def append(self, kind: str, effect_id: str, data: dict[str, Any]) -> dict[str, Any]:
        """Append one entry in its own transaction (durable at commit) and return it as stored.

        A resolution after the effect's resolution, or from a writer whose claim was taken over, is stored as
        LATE_RESULT; any other write from such a writer raises ClaimLost and writes nothing.
        """
        return self._append(kind, effect_id, data, ())

    def append_dispatch(self, effect_id: str, data: dict[str, Any], guards: Sequence[Guard]) -> dict[str, Any]:
        """Append DISPATCHED only if every guard holds, checked in the same transaction as the write.

        A guard is a SQL query returning one boolean (lock what it reads: `... FOR SHARE`), or a callable that
        returns violations; `Row` reads inside a callable lock their rows FOR SHARE, so a lease closed or a
        premise row bumped concurrently either lands before the check or waits for the dispatch to commit.
        Raises GuardFailed, writing nothing, when one fails.
        """
        return self._append(DISPATCHED, effect_id, data, guards)

    def effect(self, effect_id: str) -> EffectRecord | None:
        """The folded state of one effect, read from the database."""
        return _fold(self._session().cursor(), effect_id)

    def open_dispatches(self) -> list[EffectRecord]:
        """Effects whose last send has no resolution after it."""
        cur = self._session().cursor()
        ids = [row[0] for row in cur.execute(
            "SELECT DISTINCT s.effect_id FROM interlock_journal s WHERE s.kind = ANY(%s) AND NOT EXISTS ("
            " SELECT 1 FROM interlock_journal r WHERE r.effect_id = s.effect_id AND r.seq > s.seq"
            " AND r.kind = ANY(%s))", (sorted(SENDS), sorted(RESOLUTIONS))).fetchall()]
        records = [_fold(cur, eid) for eid in sorted(ids)]
        return [r for r in records if r is not None and r.open_dispatch]

    def entries(self, effect_id: str | None = None) -> list[dict[str, Any]]:
        """Every entry in seq order, or one effect's."""
        if effect_id is None:
            return [json.loads(line) for line in self.lines()]
        rows = self._session().execute(
            "SELECT line FROM interlock_journal WHERE effect_id = %s ORDER BY seq", (effect_id,)).fetchall()
        return [json.loads(row[0]) for row in rows]

    def lines(self) -> Iterator[str]:
        """The stored lines in seq order, exactly as a JSONL journal holds them."""
        conn = self._session()
        with conn.transaction(), conn.cursor(name="interlock_export") as cur:
            cur.execute("SELECT line FROM interlock_journal ORDER BY seq")
            for (line,) in cur:
                yield line

    def export(self, path: str | os.PathLike[str]) -> int:
        """Write the whole journal as a JSONL file that `python -m interlock.receipts` verifies; returns entries."""
        count = 0
        with open(Path(path), "w") as out:
            for line in self.lines():
                out.write(line)
                count += 1
            out.flush()
            os.fsync(out.fileno())
        return count

    def read(self, table: str, key_column: str, key: Any, column: str) -> Any:
        """One column of one row; inside a dispatch guard the row is locked FOR SHARE until the dispatch commits."""
        query = sql.SQL("SELECT {} FROM {} WHERE {} = %s").format(
            sql.Identifier(column), sql.Identifier(table), sql.Identifier(key_column))
        cur = _guarding.get()
        if cur is None:
            row = self._session().execute(query, (key,)).fetchone()
        else:
            row = cur.execute(query + sql.SQL(" FOR SHARE"), (key,)).fetchone()
        return None if row is None else row[0]

    def fence(self, effect_id: str, epoch: int) -> None:
        """From now on this process's writes for the effect hold only while `epoch` is the claim's epoch."""
        self._epochs[effect_id] = epoch

    def unfence(self, effect_id: str, epoch: int) -> None:
        """The claim of `epoch` was given back."""
        if self._epochs.get(effect_id) == epoch:
            del self._epochs[effect_id]

    def _session(self) -> psycopg.Connection[Any]:
        if self._conn.closed or self._conn.broken:
            self._conn = self.connect()
        return self._conn

    def _append(self, kind: str, effect_id: str, data: dict[str, Any], guards: Sequence[Guard]) -> dict[str, Any]:
        conn = self._session()
        with conn.pipeline(), conn.transaction():
            late = self._fenced_out(conn, kind, effect_id)
            if guards:
                _check(conn, guards)
            # The append lock is held from here to the commit: two round trips, the lock, head and effect sent as one.
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_SPACE, APPEND_LOCK))
            head_rows = conn.execute("SELECT seq, hash FROM interlock_journal ORDER BY seq DESC LIMIT 1")
            effect_rows = conn.execute(_EFFECT, (effect_id,))
            head = head_rows.fetchone()
            seq, prev = (head[0] + 1, head[1]) if head else (0, None)
            entry = seal(kind, effect_id, data, seq=seq, prev=prev, record=_record(effect_id, effect_rows.fetchall()),
                         late=late)
            conn.execute(
                "INSERT INTO interlock_journal (seq, effect_id, kind, prev, effect_prev, hash, epoch, line)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (seq, effect_id, entry["kind"], prev, entry["effect_prev"], entry["hash"], entry.get("epoch"),
                 encode(entry).decode()))
        return entry

    def _fenced_out(self, conn: psycopg.Connection[Any], kind: str, effect_id: str) -> bool:
        """Whether this write comes from a claim that was taken over (the row stays locked until commit)."""
        mine = self._epochs.get(effect_id)
        if mine is None:
            return False
        row = conn.execute("SELECT epoch FROM interlock_claims WHERE effect_id = %s FOR SHARE",
                           (effect_id,)).fetchone()
        current = row[0] if row else None
        if current == mine:
            return False
        if kind in RESOLUTIONS:
            return True
        raise ClaimLost(f"effect {effect_id}: claim epoch {mine} was taken over by epoch {current}; {kind} not written")


def _check(conn: psycopg.Connection[Any], guards: Sequence[Guard]) -> None:
    violations: list[str] = []
    with conn.cursor() as cur:
        token = _guarding.set(cur)
        try:
            for guard in guards:
                if isinstance(guard, str):
                    row = cur.execute(guard).fetchone()
                    if not (row and row[0] is True):
                        violations.append(f"guard does not hold: {guard}")
                else:
                    violations += guard()
        finally:
            _guarding.reset(token)
    if violations:
        raise GuardFailed(violations)


_EFFECT = "SELECT seq, line FROM interlock_journal WHERE effect_id = %s ORDER BY seq"


def _fold(cur: psycopg.Cursor[Any], effect_id: str) -> EffectRecord | None:
    return _record(effect_id, cur.execute(_EFFECT, (effect_id,)).fetchall())


def _record(effect_id: str, rows: list[tuple[int, str]]) -> EffectRecord | None:
    if not rows:
        return None
    record = EffectRecord(effect_id)
    for seq, line in rows:
        record.add(json.loads(line), seq)
    return record
