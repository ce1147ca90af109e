"""The journal's on-disk index: where each effect's entries sit, which effects have a send open, and the
checkpoint the index is exact up to.

Memory then stays flat however long the journal grows: a process holds only the effects it touched since the
index last caught up, and finds any other effect here. The index is derived data, written in one SQLite
transaction with the checkpoint it covers, so the two can never disagree; delete it and the next open rebuilds it
from the journal, checking every entry on the way.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from typing import Iterable

SCHEMA = """
CREATE TABLE IF NOT EXISTS entry (effect_id TEXT NOT NULL, offset INTEGER NOT NULL,
                                  PRIMARY KEY (effect_id, offset)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS open_effect (effect_id TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS covered (one INTEGER PRIMARY KEY CHECK (one = 1), seq INTEGER NOT NULL,
                                    offset INTEGER NOT NULL, head TEXT, signature TEXT);
"""


@dataclass(frozen=True)
class Checkpoint:
    """The journal held entries up to `seq`, ending in `head`, its lines ending at byte `offset`."""

    seq: int
    offset: int
    head: str | None
    signature: dict[str, str] | None = None


class EffectIndex:
    """`<journal>.index`: a SQLite file shared by every process using the journal; written under its lock."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = str(path)
        self._db: sqlite3.Connection | None = None

    def _open(self, create: bool) -> sqlite3.Connection | None:
        """The connection; the file is made only by the first checkpoint, so a short journal never has one."""
        if self._db is None and (create or os.path.exists(self.path)):
            db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.executescript(SCHEMA)
            self._db = db
        return self._db

    def close(self) -> None:
        """Close the database connection."""
        if self._db is not None:
            self._db.close()

    def covered(self) -> Checkpoint | None:
        """The checkpoint the index is exact up to, or None when it covers nothing yet."""
        db = self._open(create=False)
        if db is None:
            return None
        rows = db.execute("SELECT seq, offset, head, signature FROM covered").fetchall()  # all: no open read
        if not rows:
            return None
        row = rows[0]
        return Checkpoint(row[0], row[1], row[2], json.loads(row[3]) if row[3] else None)

    def offsets(self, effect_id: str, below: int) -> list[int]:
        """Where the effect's entries start, among those before byte `below`."""
        db = self._open(create=False)
        if db is None:
            return []
        rows = db.execute("SELECT offset FROM entry WHERE effect_id = ? AND offset < ? ORDER BY offset",
                          (effect_id, below)).fetchall()
        return [row[0] for row in rows]

    def open_effects(self) -> list[str]:
        """Effects whose send was open at the covered checkpoint."""
        db = self._open(create=False)
        return [] if db is None else [row[0] for row in db.execute("SELECT effect_id FROM open_effect ORDER BY 1")]

    def advance(self, entries: Iterable[tuple[str, int]], opened: Iterable[str], settled: Iterable[str],
                checkpoint: Checkpoint) -> None:
        """Add entries (effect id, offset), record which effects are now open or settled, and move the covered
        checkpoint, all in one transaction."""
        db = self._open(create=True)
        assert db is not None
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany("INSERT OR IGNORE INTO entry VALUES (?, ?)", entries)
            db.executemany("INSERT OR IGNORE INTO open_effect VALUES (?)", ((e,) for e in opened))
            db.executemany("DELETE FROM open_effect WHERE effect_id = ?", ((e,) for e in settled))
            db.execute("INSERT OR REPLACE INTO covered VALUES (1, ?, ?, ?, ?)",
                       (checkpoint.seq, checkpoint.offset, checkpoint.head,
                        json.dumps(checkpoint.signature) if checkpoint.signature else None))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
