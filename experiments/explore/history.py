"""The stored history of an exploration: one JSON row per (schedule, system), gzipped JSON lines.

The runner appends rows as runs finish; the file takes its final name only when every run is in, so a partial
run never replaces a complete history. The checker reads nothing else.
"""

from __future__ import annotations

import gzip
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any


class HistoryWriter:
    """Rows of one exploration, written beside their final name and renamed into it by `complete()`."""

    def __init__(self, path: Path):
        self.path = path
        self.partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        path.parent.mkdir(parents=True, exist_ok=True)
        self._out = gzip.open(self.partial, "wt", encoding="utf-8")
        self._lock = threading.Lock()
        self.rows = 0

    def add(self, row: dict[str, Any]) -> None:
        """Append one row (safe across the explorer's threads)."""
        line = json.dumps(row, sort_keys=True, separators=(",", ":")) + "\n"
        with self._lock:
            self._out.write(line)
            self.rows += 1

    def complete(self) -> None:
        """Every run is in: flush, fsync, and give the history its name."""
        self._out.close()
        with open(self.partial, "rb") as done:
            os.fsync(done.fileno())
        os.replace(self.partial, self.path)

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if not self._out.closed:  # not completed: the partial rows are dropped, the old history stays
            self._out.close()
            self.partial.unlink(missing_ok=True)


class HistoryUnreadable(ValueError):
    """A history file that is not gzipped JSON lines of row objects; the message names the file and the line."""


def read_history(path: Path) -> Iterator[dict[str, Any]]:
    """Every row of a stored history, in the order the runs finished."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as rows:
            for number, line in enumerate(rows, 1):
                try:
                    row = json.loads(line)
                except ValueError as exc:
                    raise HistoryUnreadable(f"{path}: line {number}: not JSON ({exc})") from None
                except RecursionError:
                    raise HistoryUnreadable(f"{path}: line {number}: nested too deep to read") from None
                if not isinstance(row, dict) or "truth" not in row or "ran" not in row:
                    raise HistoryUnreadable(f"{path}: line {number}: not a history row (no truth or ran)")
                yield row
    except (OSError, EOFError) as exc:
        raise HistoryUnreadable(f"{path}: cannot read the history: {exc}") from None
