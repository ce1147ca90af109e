"""The running checks of effects a journal has not named for a while, moved out of memory into a private SQLite file
so that a whole-journal check holds a bounded number of effects however long the journal is.

Each effect is stored under its id with the position at which the journal first named it, so the receipts come
back in that order, and with its share of the journal's verdict, so the verdict is read without rebuilding every
effect. A later entry of a stored effect finds its state again: an in-memory filter of the ids stored says for
certain which ids were never stored, and only the others are looked up, so a new effect seldom costs a lookup.
"""

from __future__ import annotations

import pickle
import sqlite3
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..errors import SpillFailed
from ._check import EffectCheck

FILTER_BYTES = 1 << 21  # 16 Mi bits: about 1 in 1,000 new ids costs a lookup once 250,000 effects are stored


@contextmanager
def _scratch(where: str) -> Iterator[None]:
    try:
        yield
    except (OSError, sqlite3.Error) as exc:
        raise SpillFailed(f"{where}: cannot keep checks on disk ({exc})") from None


class Spilled:
    """Effect checks kept on disk; `put` stores (or replaces) them, `take` finds one again by id."""

    def __init__(self) -> None:
        with _scratch(tempfile.gettempdir()):
            self._folder = tempfile.TemporaryDirectory(prefix="interlock-receipts-")
        self._path = Path(self._folder.name) / "checks.sqlite"
        with _scratch(str(self._path)):
            self._db = sqlite3.connect(self._path, isolation_level=None)
            # a scratch file, rebuilt from the journal if lost: no rollback journal, no fsync; a page cache that
            # holds the index of a few hundred thousand ids, past which a new id costs a read
            self._db.executescript("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -8192; "
                                   "CREATE TABLE checks (ordinal INTEGER PRIMARY KEY, "
                                   "effect_id TEXT NOT NULL UNIQUE, state BLOB NOT NULL, standing BLOB)")
        self._stored = bytearray(FILTER_BYTES)

    def put(self, rows: Iterable[tuple[int, str, EffectCheck, Any]]) -> None:
        """Store each (first-named position, id, check, its share of the verdict or None) in one transaction."""
        stored, mask = self._stored, FILTER_BYTES - 1
        dumps, state = pickle.dumps, EffectCheck.state
        packed = []
        for ordinal, eid, check, standing in rows:
            h = hash(eid)
            stored[(h >> 3) & mask] |= 1 << (h & 7)
            stored[(h >> 28) & mask] |= 1 << ((h >> 25) & 7)
            packed.append((ordinal, eid, dumps(state(check), 5), None if standing is None else dumps(standing, 5)))
        db = self._db
        with _scratch(str(self._path)):
            db.execute("BEGIN")
            db.executemany("INSERT OR REPLACE INTO checks VALUES (?, ?, ?, ?)", packed)
            db.execute("COMMIT")

    def take(self, eid: str) -> tuple[int, EffectCheck] | None:
        """(first-named position, check) of a stored effect; None for an id never stored."""
        h, stored, mask = hash(eid), self._stored, FILTER_BYTES - 1
        if not (stored[(h >> 3) & mask] >> (h & 7)) & 1 or not (stored[(h >> 28) & mask] >> ((h >> 25) & 7)) & 1:
            return None
        with _scratch(str(self._path)):
            row = self._db.execute("SELECT ordinal, state FROM checks WHERE effect_id = ?", (eid,)).fetchone()
        return None if row is None else (row[0], EffectCheck.restored(pickle.loads(row[1])))

    def checks(self) -> Iterator[tuple[str, EffectCheck]]:
        """(id, check) of every stored effect, in the order the journal first named them."""
        loads, restored = pickle.loads, EffectCheck.restored
        with _scratch(str(self._path)):
            for eid, state in self._db.execute("SELECT effect_id, state FROM checks ORDER BY ordinal"):
                yield eid, restored(loads(state))

    def standings(self) -> Iterator[tuple[str, Any]]:
        """(id, share of the verdict) of every stored effect that has one, in first-named order."""
        with _scratch(str(self._path)):
            for eid, standing in self._db.execute("SELECT effect_id, standing FROM checks WHERE standing IS NOT NULL "
                                                  "ORDER BY ordinal"):
                yield eid, pickle.loads(standing)

    def close(self) -> None:
        """Close the file and remove it."""
        self._db.close()
        self._folder.cleanup()
