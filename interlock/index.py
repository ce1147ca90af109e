"""The journal's on-disk index: where each effect's entries sit, which effects have a send open, and the
checkpoint the index is exact up to.

Memory then stays flat however long the journal grows: a process holds only the effects it touched since the
index last caught up, and finds any other effect here. The index is derived data, written in one SQLite
transaction with the checkpoint it covers, so the two can never disagree; delete it and the next open rebuilds it
from the journal, checking every entry on the way.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import sqlite3
import tempfile
from array import array
from dataclasses import dataclass
from typing import Iterable

DRAFT = ".new"  # the suffix of a file being made, before it is linked into place
BUILD_CACHE_KIB = 65_536  # a long read's transaction keeps its pages in memory instead of rewriting them
SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (effect_id TEXT NOT NULL, first INTEGER NOT NULL, offsets BLOB NOT NULL,
                                    PRIMARY KEY (effect_id, first)) WITHOUT ROWID;
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
        if self._db is None:
            if not os.path.exists(self.path):
                if not create:
                    return None
                self._create()
            db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA synchronous=FULL")
            self._db = db
        return self._db

    def _create(self) -> None:
        """Make the file whole (in WAL mode, with its tables) under another name, then link it into place: SQLite
        refuses at once, without waiting, two connections that switch one new file to WAL together. Once the file
        is there, remove every draft beside it: a maker killed before it removed its own leaves one behind. A live
        maker whose draft goes that way finds the file made when it looks again."""
        while not os.path.exists(self.path):
            try:
                self._link_draft()
            except (FileNotFoundError, sqlite3.OperationalError):
                if not os.path.exists(self.path):
                    raise
        for draft in glob.glob(f"{glob.escape(self.path)}.*{DRAFT}*"):  # with any -wal or -shm beside it
            with contextlib.suppress(FileNotFoundError):
                os.unlink(draft)

    def _link_draft(self) -> None:
        """One draft of the file, linked into place unless another maker's got there first."""
        handle, draft = tempfile.mkstemp(prefix=f"{os.path.basename(self.path)}.", suffix=DRAFT,
                                         dir=os.path.dirname(self.path) or ".")
        os.close(handle)  # an empty file, which SQLite takes for a new database
        try:
            db = sqlite3.connect(draft, isolation_level=None)
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.executescript(SCHEMA)
            finally:
                db.close()
            try:
                os.link(draft, self.path)
            except FileExistsError:
                pass  # another process or thread made it first; theirs is as good
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(draft)

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
        found = array("q")
        for (packed,) in db.execute("SELECT offsets FROM entries WHERE effect_id = ? AND first < ? ORDER BY first",
                                    (effect_id, below)):
            found.frombytes(packed)
        return [offset for offset in found if offset < below]

    def open_effects(self) -> list[str]:
        """Effects whose send was open at the covered checkpoint."""
        db = self._open(create=False)
        return [] if db is None else [row[0] for row in db.execute("SELECT effect_id FROM open_effect ORDER BY 1")]

    def begin(self) -> None:
        """Start one transaction that the next advances join, for a long read; `commit` or `rollback` ends it.
        Until then other processes see the index as it was, and this one sees what it added."""
        db = self._open(create=True)
        assert db is not None
        db.execute(f"PRAGMA cache_size = -{BUILD_CACHE_KIB}")
        db.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        """End the transaction `begin` started, keeping what it added."""
        self._end("COMMIT")

    def rollback(self) -> None:
        """End the transaction `begin` started, dropping what it added."""
        self._end("ROLLBACK")

    def _end(self, how: str) -> None:
        assert self._db is not None
        if self._db.in_transaction:
            self._db.execute(how)
        self._db.execute("PRAGMA cache_size = -2000")

    def advance(self, entries: Iterable[tuple[str, list[int]]], opened: Iterable[str], settled: Iterable[str],
                checkpoint: Checkpoint) -> None:
        """Add entries (an effect id and where its entries since the last advance start), record which effects are now open or settled, and move the covered
        checkpoint, all in one transaction (the one `begin` started, if one is open: it ends with `commit`)."""
        db = self._open(create=True)
        assert db is not None
        if db.in_transaction:
            self._write(db, entries, opened, settled, checkpoint)
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            self._write(db, entries, opened, settled, checkpoint)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    @staticmethod
    def _write(db: sqlite3.Connection, entries: Iterable[tuple[str, list[int]]], opened: Iterable[str],
               settled: Iterable[str], checkpoint: Checkpoint) -> None:
        db.executemany("INSERT OR IGNORE INTO entries VALUES (?, ?, ?)",
                       ((eid, offsets[0], array("q", offsets).tobytes()) for eid, offsets in entries))
        db.executemany("INSERT OR IGNORE INTO open_effect VALUES (?)", ((e,) for e in opened))
        db.executemany("DELETE FROM open_effect WHERE effect_id = ?", ((e,) for e in settled))
        db.execute("INSERT OR REPLACE INTO covered VALUES (1, ?, ?, ?, ?)",
                   (checkpoint.seq, checkpoint.offset, checkpoint.head,
                    json.dumps(checkpoint.signature) if checkpoint.signature else None))
