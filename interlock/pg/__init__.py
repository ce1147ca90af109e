"""The PostgreSQL backend: a journal with the JSONL journal's entries and chain, and claims that are leases on the
server's clock, renewed while held, with one round trip per append, claim and confirm, and a release that does not
wait for its answer.

Open both with `interlock.backends.open_journal("postgresql://...")`. Needs psycopg 3 (`pip install .[postgres]`).
"""

from .claims import PgClaim, PgClaims
from .journal import PgJournal
from .rows import Row, RowLease, row_premise

__all__ = ["PgClaim", "PgClaims", "PgJournal", "Row", "RowLease", "row_premise"]
