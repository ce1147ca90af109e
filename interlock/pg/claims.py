"""Claims in PostgreSQL: a lease in a table, on the server's clock, renewed by its holder while it works.

A claim is a row (effect, epoch, holder token, expiry = server time + ttl). The holder's background renewer
extends the expiry every ttl/3 while the claim is held, sends included, so a slow send keeps its claim and a
paused or partitioned holder loses it after at most `ttl`. Right before every request the holder confirms, in
one round trip, that its epoch still owns the effect and the lease is live; the confirm extends the lease to a
full `ttl` and marks the claim as in a request. It commits synchronously, and its flush is also the one that makes
the holder's send (DISPATCHED, REDISPATCHED, which the journal commits without waiting under a claim) durable
before the request; it finds that send still in the journal, or refuses.

Losing the database session does not free a claim: the session is not the holder. The holder's session also
keeps an advisory lock for its epoch, and another process takes the claim over at once only when that lock is
gone (the holder's process died, or its session did) *and* the claim is not in a request, so the holder, if it
is alive after all, has no request in flight and will be refused by its next confirm or fenced journal write.
A claim in a request whose holder's session is gone waits for its lease to expire, since the holder may be alive
and its request on its way. Taking over bumps the epoch, and the journal refuses or demotes to LATE_RESULT every
later write made under the old one. A claim taken over inside a request from a holder whose session still holds
its lock (the process stopped or hung, past its lease) remembers it: `holder_alive` then tells recovery that a
request may still come from it, so recovery does not conclude "not landed" where no fence covers it.
"""

from __future__ import annotations

import os
import select
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

import psycopg

from ..errors import ClaimLost, JournalUnavailable
from ..forks import refuse_if_forked
from .journal import PgJournal, _first_line, reconnecting
from .wire import first_row

POLL_SECONDS = 0.005
RENEWALS_PER_TTL = 3
T = TypeVar("T")


@dataclass
class PgClaim:
    """A held claim on one effect; confirm it right before each request, release it when done."""

    effect_id: str
    epoch: int
    holder: str
    taken: str  # how: new, released (by its last holder), expired (its lease ran out), holder_gone
    _claims: PgClaims | None = field(repr=False)
    lost: bool = False
    wrote_first: bool = False  # the effect's first entry, given to `acquire_with_first`, went with the claim
    sent_until: float | None = None  # when an earlier holder's unanswered request may last have left

    def confirm(self) -> bool:
        """Whether this epoch still owns the effect with a live lease, now extended to a full ttl (one round trip).

        False when the claim was taken over, its lease ran out (its renewals failed), or the answer took so long
        that the lease it confirms no longer covers a request: the caller must not send. A database that cannot
        be reached raises JournalUnavailable(sent=False): nothing was sent, and the open send is recovery's.
        """
        if self._claims is None or self.lost or self._claims.closed:
            return False
        return self._claims._confirm(self)

    def holder_alive(self) -> bool:
        """Whether a holder this claim was taken over from inside a request may still send: its session still
        holds its epoch's lock (the process was stopped or hung, not killed), so no in-flight bound, which is
        about dead senders, covers it. One round trip; False once that session is gone."""
        if self._claims is None:
            return False
        return self._claims._holder_alive(self)

    def release(self) -> None:
        """Give the effect back; a claim already taken over is left to its new owner."""
        if self._claims is not None:
            self._claims._release(self)
            self._claims = None

    def release_after(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        """Append the effect's resolution (`kind`, `data`) and give the effect back, in one round trip and
        transaction; returns the entry as stored. The gate's COMMITTED goes this way, without a round trip of
        its own. Fenced and failing as the journal's append of it would; after a failure `release` still gives
        the claim back."""
        if self._claims is None:
            raise ClaimLost(f"the claim on {self.effect_id} was released")
        entry = self._claims._release_after(self, kind, data)
        self._claims = None
        return entry

    def __enter__(self) -> PgClaim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class PgClaims:
    """Per-effect leases in the journal's database, each lasting `ttl` seconds past its holder's last renewal."""

    def __init__(self, journal: PgJournal, *, ttl: float = 30.0):
        self.journal = journal
        self.ttl = ttl
        self._opened_by = os.getpid()
        self.owner = f"{self._opened_by}@{socket.gethostname()}"
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._held: dict[str, PgClaim] = {}
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self._unanswered = False  # a release was sent on the session and its answer not read yet
        self._run(lambda conn: None, "connect")
        journal.claims_session = self._on_session

    def _on_session(self, statement: Callable[[psycopg.Connection[Any]], T]) -> T:
        """Run `statement` on the claims session, as the journal's own write of a claimed effect's entries: the
        journal retries it and reports its failure."""
        with self._lock:
            return statement(self._session())

    @property
    def closed(self) -> bool:
        """Whether `close` was called: the claims no longer renew, and none of them covers a request."""
        return self._stop.is_set()

    def close(self) -> None:
        """Stop renewing and end the claims session: held claims not in a request are free at once."""
        self._stop.set()
        if self.journal.claims_session == self._on_session:
            self.journal.claims_session = None  # the journal's own session writes from now on
        if self._renewer is not None:
            self._renewer.join()
        with self._lock:
            if self._conn is not None:
                self._conn.close()

    def acquire(self, effect_id: str, wait: float) -> PgClaim | None:
        """Take the claim, waiting up to `wait` seconds for its holder to release it, expire, or be gone.

        Raises JournalUnavailable(sent=False) when the database cannot be reached.
        """
        return self._acquire(effect_id, wait, (None, None, None))

    def acquire_with_first(self, effect_id: str, wait: float, kind: str, data: dict[str, Any]) -> PgClaim | None:
        """`acquire`, writing the entry (`kind`, `data`) in the claim's own round trip and transaction, under the new
        claim, if the effect has no entries yet; the claim's `wrote_first` says whether it is stored. The gate's
        PROPOSED goes this way: written at once, as always, without a round trip of its own."""
        _, _, token, body, _ = self.journal.template(kind, effect_id, data)
        return self._acquire(effect_id, wait, (kind, token, body))

    def _acquire(self, effect_id: str, wait: float, first: tuple[str | None, str | None, str | None]) -> PgClaim | None:
        deadline = time.monotonic() + wait
        holder = uuid.uuid4().hex
        while True:
            row = self._run(lambda conn: first_row(conn, _ACQUIRE, (effect_id, holder, self.owner, self.ttl, *first)),
                            f"claim {effect_id}")
            assert row is not None, "interlock_acquire returns one row"
            epoch, taken, seqs, lines, wrote, sent_until = row
            if epoch is not None:
                claim = PgClaim(effect_id, int(epoch), holder, str(taken), self, wrote_first=wrote == "t",
                                sent_until=None if sent_until is None else float(sent_until))
                self.journal.fence(effect_id, claim.epoch, holder, None if seqs is None else _entries(seqs, lines))
                with self._lock:
                    self._held[effect_id] = claim
                self._start_renewer()
                return claim
            if time.monotonic() >= deadline:
                return None
            time.sleep(POLL_SECONDS)

    def owner_of(self, effect_id: str) -> dict[str, Any] | None:
        """The claim row (epoch, owner, expires: None once released, in_request, how it was taken), for reports."""
        row = self._run(lambda conn: conn.execute(
            "SELECT epoch, owner, backend, expires, expires IS NULL, in_request, taken, since"
            " FROM interlock_claims WHERE effect_id = %s", (effect_id,)).fetchone(), f"claim {effect_id}")
        if row is None:
            return None
        keys = ("epoch", "owner", "backend", "expires", "released", "in_request", "taken", "since")
        return dict(zip(keys, row))

    def _confirm(self, claim: PgClaim) -> bool:
        began = time.monotonic()
        send = self.journal.unflushed_send(claim.effect_id)
        row = self._run(lambda conn: first_row(conn, _CONFIRM, (self.ttl, claim.effect_id, claim.epoch, claim.holder,
                                                                send, claim.effect_id, send)),
                        f"confirm the claim on {claim.effect_id} before its request (not sent)")
        if row is None:
            claim.lost = True
            return False
        return time.monotonic() - began < self.ttl / RENEWALS_PER_TTL

    def _holder_alive(self, claim: PgClaim) -> bool:
        row = self._run(lambda conn: conn.execute(
            "SELECT stopped_epoch IS NOT NULL AND interlock_lock_held(effect_id, stopped_epoch)"
            " FROM interlock_claims WHERE effect_id = %s AND epoch = %s AND holder = %s",
            (claim.effect_id, claim.epoch, claim.holder)).fetchone(), f"claim {claim.effect_id}")
        return bool(row and row[0])

    def _release(self, claim: PgClaim) -> None:
        """Send the release and go on without its answer, which the session's next statement reads first.

        The server frees the claim as soon as it reads the release, whether or not this process is there for the
        answer, and nothing here depends on it: a release that fails leaves the claim to its lease, as one lost
        with its session does.
        """
        self.journal.unfence(claim.effect_id, claim.epoch)
        with self._lock:
            if self._held.get(claim.effect_id) is claim:
                del self._held[claim.effect_id]
        try:
            self._run(lambda conn: self._send(conn, _RELEASE, (claim.effect_id, str(claim.epoch), claim.holder)),
                      "release")
        except JournalUnavailable:
            pass  # the lease runs out on its own; the session, and its lock, are gone already

    def _release_after(self, claim: PgClaim, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        query, params = self.journal.closing(kind, claim.effect_id, data)
        with self._lock:
            row = self.journal.guarded(lambda: first_row(self._session(), query, params), kind, claim.effect_id)
            if self._held.get(claim.effect_id) is claim:
                del self._held[claim.effect_id]
        assert row is not None and row[0] is not None, "interlock_release_after returns the last entry's line"
        return self.journal.closed(claim.effect_id, claim.epoch, row[0])

    def _send(self, conn: psycopg.Connection[Any], query: bytes, params: tuple[str, ...]) -> None:
        """Send one statement on the claims session without reading its answer (caller holds _lock)."""
        pgconn = conn.pgconn
        pgconn.send_query_params(query, [p.encode() for p in params])
        while pgconn.flush():  # the socket took only part of it
            select.select([pgconn.socket], [pgconn.socket], [])
        self._unanswered = True

    def _start_renewer(self) -> None:
        if self._renewer is None:
            self._renewer = threading.Thread(target=self._renew_loop, name="interlock-pg-claims", daemon=True)
            self._renewer.start()

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.ttl / RENEWALS_PER_TTL):
            self._renew()

    def _renew(self) -> None:
        """Extend every held lease; a claim no longer ours (taken over, or expired while we could not renew) is lost."""
        with self._lock:
            held = list(self._held.values())
        if not held:
            return
        try:
            renewed = {row[0] for row in self._run(lambda conn: conn.execute(
                "UPDATE interlock_claims c SET expires = clock_timestamp() + make_interval(secs => %s)"
                " FROM unnest(%s::text[], %s::text[]) AS h(effect_id, holder)"
                " WHERE c.effect_id = h.effect_id AND c.holder = h.holder AND c.expires > clock_timestamp()"
                " RETURNING c.effect_id",
                (self.ttl, [c.effect_id for c in held], [c.holder for c in held])).fetchall(), "renew")}
        except JournalUnavailable:
            return  # try again next time; confirm refuses a request while the database is out of reach
        with self._lock:
            for claim in held:
                if claim.effect_id not in renewed and self._held.get(claim.effect_id) is claim:
                    claim.lost = True
                    del self._held[claim.effect_id]

    def _run(self, statement: Callable[[psycopg.Connection[Any]], T], what: str) -> T:
        """Run one statement on the claims session, on a new one while the database is briefly away."""
        with self._lock:
            try:
                return reconnecting(lambda: statement(self._session()))  # every claims statement is safe to repeat
            except psycopg.Error as exc:
                raise JournalUnavailable(f"{self.journal.path}: {what}: {_first_line(exc)}", sent=False) from None

    def _session(self) -> psycopg.Connection[Any]:
        """The claims session; a new one takes the advisory locks of every held claim again (caller holds _lock)."""
        refuse_if_forked(self._opened_by, self.journal.path)
        if self._unanswered and self._conn is not None and not self._conn.closed:
            self._unanswered = False
            _drain(self._conn)  # raises, leaving the session broken, if the database went away meanwhile
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        if self._stop.is_set():
            raise psycopg.OperationalError("the claims were closed")
        conn = self.journal.connect()
        if self._held:
            mine = ([c.effect_id for c in self._held.values()], [c.holder for c in self._held.values()])
            conn.execute(_RELOCK, mine)
            conn.execute(_REBIND, mine)
        self._conn = conn
        return conn


def _entries(seqs: str, lines: str | None) -> list[tuple[int, str]]:
    """(seq, line) of each entry the claim's round trip read, from `_ACQUIRE`'s text."""
    if not seqs or not lines:
        return []
    return [(int(seq), f"{line}\n") for seq, line in zip(seqs.split(","), lines[:-1].split("\n"), strict=True)]


def _drain(conn: psycopg.Connection[Any]) -> None:
    """Read and drop the answers of statements `PgClaims._send` sent, waiting for them if they are not in yet."""
    pgconn = conn.pgconn
    while True:
        while pgconn.is_busy():
            select.select([pgconn.socket], [], [])
            pgconn.consume_input()
        if pgconn.get_result() is None:
            return


# The confirm commits synchronously: its flush makes durable the in-request mark and every commit before it, the
# holder's send (written without waiting) included, which it also checks is still there: a database that lost the
# send in a crash, and came back before the confirm, refuses the request.
_CONFIRM = ("UPDATE interlock_claims SET expires = clock_timestamp() + make_interval(secs => %s), in_request = true"
            " WHERE effect_id = %s AND epoch = %s AND holder = %s AND expires > clock_timestamp()"
            " AND (%s::text IS NULL OR EXISTS (SELECT FROM interlock_journal WHERE effect_id = %s AND hash = %s))"
            " RETURNING true")
_RELEASE = b"SELECT interlock_release($1, $2, $3)"
# The effect's entries come back as text: their seqs joined by commas, their lines (each ending in a newline, none
# holding one inside) end to end.
_ACQUIRE = ("SELECT r_epoch, r_taken, array_to_string(r_seqs, ','), array_to_string(r_lines, ''), r_first,"
            " r_sent_until"
            " FROM interlock_acquire(%s, %s, %s, %s, %s, %s, %s)")
# Lock only the rows still ours (OFFSET 0 keeps the planner from testing the lock on other rows first).
_RELOCK = ("SELECT pg_try_advisory_lock(interlock_lock_key(effect_id, epoch)) FROM (SELECT c.effect_id, c.epoch"
           " FROM interlock_claims c JOIN unnest(%s::text[], %s::text[]) AS h(effect_id, holder)"
           " ON c.effect_id = h.effect_id AND c.holder = h.holder OFFSET 0) AS mine")
_REBIND = ("UPDATE interlock_claims c SET backend = pg_backend_pid() FROM unnest(%s::text[], %s::text[])"
           " AS h(effect_id, holder) WHERE c.effect_id = h.effect_id AND c.holder = h.holder")

