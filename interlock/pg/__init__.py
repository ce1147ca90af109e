"""The PostgreSQL backend: a journal with the JSONL journal's entries and chain, and fenced claims with leases.

Open both with `interlock.backends.open_journal("postgresql://...")`. Needs psycopg 3 (`pip install .[postgres]`).
"""

from .claims import PgClaim, PgClaims, lock_key
from .journal import PgJournal
from .rows import Row, RowLease, row_premise

__all__ = ["PgClaim", "PgClaims", "PgJournal", "Row", "RowLease", "lock_key", "row_premise"]
