"""Claims in PostgreSQL: an epoch for fencing, a lease on the database clock, and a lock that dies with its owner.

A claim is a row (effect, epoch, lease expiry = now() + ttl) plus a session-level advisory lock keyed on the
effect and the epoch, held by the claimant's own connection. Another process takes the claim over when the
lease has expired (a paused or partitioned owner) or at once when that lock is no longer held (the owner's
process died and PostgreSQL ended its session). Taking over bumps the epoch, and the journal refuses or
demotes to LATE_RESULT every later write made under the old one.
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
from dataclasses import dataclass
from typing import Any

import psycopg

from .journal import PgJournal

POLL_SECONDS = 0.005
EPOCH_BITS = 16

_CLAIM = "SELECT epoch, lock_key, expires <= now() FROM interlock_claims WHERE effect_id = %s FOR UPDATE"


@dataclass
class PgClaim:
    """A held claim; release it, or let the owner's death (its session ending) release it."""

    effect_id: str
    epoch: int
    lock_key: int
    _claims: PgClaims | None

    def confirm(self) -> bool:
        """Whether this epoch still owns the effect and its lease has not run out: one round trip."""
        return self._claims is not None and self._claims._confirm(self)

    def release(self) -> None:
        """Give the effect back; a claim already taken over is left to its new owner."""
        if self._claims is not None:
            self._claims._release(self)
            self._claims = None

    def __enter__(self) -> PgClaim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class PgClaims:
    """Per-effect claims in the journal's database, each lasting at most `ttl` seconds unless its owner dies first."""

    def __init__(self, journal: PgJournal, *, ttl: float = 30.0):
        self.journal = journal
        self.ttl = ttl
        self.owner = f"{os.getpid()}@{socket.gethostname()}"
        self._conn = journal.connect()
        self._held: set[int] = set()

    def close(self) -> None:
        """End the claims session, which frees every claim this process holds."""
        self._conn.close()

    def acquire(self, effect_id: str, wait: float) -> PgClaim | None:
        """Take the claim, waiting up to `wait` seconds for its owner to release it, die, or let its lease run out."""
        deadline = time.monotonic() + wait
        while True:
            claim = self._take(effect_id)
            if claim is not None:
                self.journal.fence(effect_id, claim.epoch)
                return claim
            if time.monotonic() >= deadline:
                return None
            time.sleep(POLL_SECONDS)

    def owner_of(self, effect_id: str) -> dict[str, Any] | None:
        """The current claim row (epoch, owner, backend, expires), for reports; None if never claimed."""
        row = self._session().execute(
            "SELECT epoch, owner, backend, expires FROM interlock_claims WHERE effect_id = %s", (effect_id,)).fetchone()
        return None if row is None else {"epoch": row[0], "owner": row[1], "backend": row[2], "expires": row[3]}

    def _session(self) -> psycopg.Connection[Any]:
        if self._conn.closed or self._conn.broken:
            self._conn = self.journal.connect()
            self._held.clear()  # the old session's locks went with it
        return self._conn

    def _take(self, effect_id: str) -> PgClaim | None:
        conn = self._session()
        with conn.transaction(), conn.cursor() as cur:
            cur.execute("INSERT INTO interlock_claims (effect_id, epoch, lock_key, owner, backend, expires)"
                        " VALUES (%s, 0, 0, '', 0, '-infinity') ON CONFLICT DO NOTHING", (effect_id,))
            epoch, held_key, expired = cur.execute(_CLAIM, (effect_id,)).fetchone()
            if not expired and self._owner_alive(cur, held_key):
                return None
            epoch += 1
            key = lock_key(effect_id, epoch)
            if not cur.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
                return None  # a stale holder of this very key (65536 takeovers ago) still lives: wait for the lease
            try:
                cur.execute("UPDATE interlock_claims SET epoch = %s, lock_key = %s, owner = %s,"
                            " backend = pg_backend_pid(), expires = now() + make_interval(secs => %s)"
                            " WHERE effect_id = %s", (epoch, key, self.owner, self.ttl, effect_id))
            except BaseException:
                cur.execute("SELECT pg_advisory_unlock(%s)", (key,))
                raise
        self._held.add(key)
        return PgClaim(effect_id, epoch, key, self)

    def _owner_alive(self, cur: psycopg.Cursor[Any], key: int) -> bool:
        """Whether the session of the claim's owner still holds its lock (a dead process's session is gone)."""
        if key in self._held:
            return True  # this very session: advisory locks are re-entrant, so probing would succeed
        if not cur.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
            return True
        cur.execute("SELECT pg_advisory_unlock(%s)", (key,))
        return False

    def _confirm(self, claim: PgClaim) -> bool:
        row = self._session().execute("SELECT epoch = %s AND expires > now() FROM interlock_claims"
                                      " WHERE effect_id = %s", (claim.epoch, claim.effect_id)).fetchone()
        return bool(row and row[0])

    def _release(self, claim: PgClaim) -> None:
        self.journal.unfence(claim.effect_id, claim.epoch)
        self._held.discard(claim.lock_key)
        try:
            with self._conn.transaction():
                self._conn.execute("UPDATE interlock_claims SET expires = '-infinity'"
                                   " WHERE effect_id = %s AND epoch = %s", (claim.effect_id, claim.epoch))
                self._conn.execute("SELECT pg_advisory_unlock(%s)", (claim.lock_key,))
        except psycopg.OperationalError:
            pass  # the session is gone, and with it the lock: the claim is free already


def lock_key(effect_id: str, epoch: int) -> int:
    """The advisory lock key of one epoch of one effect's claim: 48 bits of the effect, 16 of the epoch."""
    effect_bits = int.from_bytes(hashlib.sha256(effect_id.encode()).digest()[:6], "big")
    unsigned = (effect_bits << EPOCH_BITS) | (epoch & ((1 << EPOCH_BITS) - 1))
    return unsigned - (1 << 64) if unsigned >= 1 << 63 else unsigned
