"""Leases and premises that are rows in the journal's database, so the dispatch checks them atomically."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..premises import NOT_SET, Premise
from .journal import PgJournal


@dataclass(frozen=True)
class Row:
    """One column of one row; read inside a dispatch guard, it stays locked FOR SHARE until the dispatch commits."""

    journal: PgJournal
    table: str
    key: Any
    column: str
    key_column: str = "id"

    def read(self) -> Any:
        """The column's current value (None when the row is gone)."""
        return self.journal.read(self.table, self.key_column, self.key, self.column)

    def describe(self) -> dict[str, Any]:
        """Which row this is and what it holds now, for the journal."""
        return {"table": self.table, "key": self.key, "column": self.column, "value": self.read()}


@dataclass(frozen=True)
class RowLease:
    """Authority kept as a row: live while `row` holds `live` (an incident's status = 'open')."""

    row: Row
    live: Any = "open"

    def is_live(self) -> bool:
        """Whether the row still holds the live value."""
        return bool(self.row.read() == self.live)

    def describe(self) -> dict[str, Any]:
        """The row and its current value."""
        return self.row.describe()


def row_premise(name: str, row: Row, *, expect: Any = NOT_SET) -> Premise:
    """A premise on a row's column (a version counter): it must be unchanged since the decision, or equal `expect`."""
    return Premise(name, row.read, expect=expect)
