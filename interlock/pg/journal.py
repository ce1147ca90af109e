"""The journal in PostgreSQL: the same entries and hash chain as the JSONL file, with the database as the lock."""

from __future__ import annotations

import functools
import json
import os
import time
import uuid
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, TypeVar

import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus

from ..addresses import safe_address
from ..canonical import canonical_bytes, loads
from ..errors import ClaimLost, GuardFailed, JournalUnavailable
from ..forks import refuse_if_forked
from ..journal import plain, unsealed
from ..records import EffectRecord
from ..kinds import DISPATCHED, RESOLUTIONS, SENDS
from .schema import CLAIM_LOST, DDL, LOCK_SPACE, SCHEMA_LOCK
from .wire import first_row

Guard = str | Callable[[], list[str]]
RECONNECT_SECONDS = 3.0  # how long a call waits for the database to come back (a restart takes about a second)
RECONNECT_POLL_SECONDS = 0.05
T = TypeVar("T")
_guarding: ContextVar[_Guarding | None] = ContextVar("interlock_pg_guarding", default=None)


class PgJournal:
    """A journal in one PostgreSQL database, shared by any number of processes on any number of hosts.

    An append is one round trip: `interlock_append_all` checks the writer's claim, takes the journal-wide lock, reads
    the head and the effect's last entry, stamps the entry with the server's clock, hashes it and inserts it; its
    transaction commits without waiting for the disk, which frees the lock at once. An entry nothing waits on
    (the gate's AUTHORIZED) can go `append_ahead`: it is written in the round trip of the effect's next append,
    in that append's transaction, so a gated effect's AUTHORIZED and DISPATCHED cost one round trip. PROPOSED
    never goes ahead: it holds the facts the effect was decided on, which a restarted job is held to. The gate
    writes it in the claim's own round trip instead (`PgClaims.acquire_with_first`), committed with the claim, and
    its COMMITTED in the release's (`PgClaim.release_after`), committed with the claim given back. Every other
    write of an effect this process holds the claim on goes on the claims session too, unless guards that read the
    database hold its transaction here: a worker's gated effects keep to one session, whose backend stays warm.

    Durability is the JSONL journal's: a send (DISPATCHED, REDISPATCHED) is on disk before its request. Under a
    claim this process holds, the send commits without waiting and the claim's confirm, which every request
    follows, commits synchronously: its one flush covers the send and the in-request mark, and it refuses the
    request if the send is no longer there (a database crash took it before the confirm). Any other send waits
    before `append` returns, through a second transaction in its round trip; sends from many sessions share
    their flushes either way. Any other entry is durable with the next flush of the
    database (any send's, any synchronous commit's, the WAL writer's within a fraction of a second), which
    covers every commit before it. What a database crash can take is then only entries after the last flush: a
    PROPOSED or AUTHORIZED proposed again, and a resolution whose send is left open, which recovery settles by
    looking the effect up before it sends anything. Only a claim on a new effect commits without waiting: every
    other takeover waits for its flush, so a new holder never decides on an earlier holder's entry that a crash
    could take back; only a reader without the claim (an export, a report) can see one. Unique constraints
    refuse a forked chain even from a writer that skips the function. An append for an effect whose claim this
    process holds is fenced on the claim's epoch.

    Every session pins READ COMMITTED, whatever the database's default, since each statement of an append must
    see the entry committed just before it. Database failures surface as JournalUnavailable (saying what is
    known of the effect's send) or ClaimLost, never as driver errors; a database away for a moment (a restart,
    a terminated session) is waited for, and an append retried then is recognised by its token, never doubled.
    """

    def __init__(self, url: str):
        self.url = url
        self._opened_by = os.getpid()
        self._epochs: dict[str, tuple[int, str]] = {}
        self._found: dict[str, list[tuple[int, str]]] = {}
        self._sending: set[str] = set()
        self._ahead: dict[str, list[tuple[Any, ...]]] = {}  # entries as `template` lays them out
        self._unflushed: dict[str, str] = {}
        self.claims_session: Callable[[Callable[[psycopg.Connection[Any]], Any]], Any] | None = None  # PgClaims'
        self._conn = self._guarded(self.connect, "connect", False)
        self._guarded(self._create_schema, "create the journal's tables", False)

    def _create_schema(self) -> None:
        with self._conn.transaction():
            self._conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_SPACE, SCHEMA_LOCK))
            self._conn.execute(DDL)

    def connect(self) -> psycopg.Connection[Any]:
        """A new autocommit session on the journal's database, at READ COMMITTED whatever the database's default."""
        conn = psycopg.connect(self.url, autocommit=True)
        conn.execute("SET default_transaction_isolation = 'read committed'")
        return conn

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

    def now(self) -> float:
        """The time now on the clock the entries' `ts` are stamped with: the database server's (one round trip),
        so a host whose clock runs ahead never reads an in-flight bound as passed early."""
        def read() -> float:
            row = first_row(self._session(), _NOW, ())
            assert row is not None and row[0] is not None, "the server's clock answers one row"
            return float(row[0])

        return self._guarded(read, "read the server's clock", None)

    @property
    def head(self) -> tuple[int, str | None]:
        """(seq, hash) of the last entry in the database."""
        row = self._read(lambda conn: conn.execute(
            "SELECT seq, hash FROM interlock_journal ORDER BY seq DESC LIMIT 1").fetchone(), "head", None)
        return (row[0], row[1]) if row else (-1, None)

    def __len__(self) -> int:
        return self.head[0] + 1

    def refresh(self, *, check: bool = False) -> None:
        """Nothing to catch up on: every read goes to the database, whose constraints checked each entry."""

    def append(self, kind: str, effect_id: str, data: dict[str, Any]) -> dict[str, Any]:
        """Append one entry in its own transaction and return it as stored (a send durable, see the class).

        A resolution after the effect's resolution, or from a writer whose claim was taken over, is stored as
        LATE_RESULT; any other write from such a writer raises ClaimLost and writes nothing. JournalUnavailable
        means the entry may or may not be stored: a send whose COMMITTED could not be written stays open for
        recovery to settle.
        """
        return self._append(kind, effect_id, data, ())

    def append_ahead(self, kind: str, effect_id: str, data: dict[str, Any]) -> None:
        """Append an entry nothing waits on (an AUTHORIZED) in the round trip of the effect's next append, in the
        same transaction ahead of it, instead of in a round trip of its own.

        Fenced and recognised by its token like any append; its failure (ClaimLost, JournalUnavailable) surfaces
        at that next append, which it stops. A read of the effect, or giving its claim back, writes it first.
        Until then no other reader sees it, and a process that dies first leaves it unwritten: no worse than a
        crash before the append, since nothing was sent on it.
        """
        if kind in SENDS or kind in RESOLUTIONS:
            raise ValueError(f"{kind} is waited on: append it")
        self._found.pop(effect_id, None)
        self._ahead.setdefault(effect_id, []).append(self.template(kind, effect_id, data))

    def append_dispatch(self, effect_id: str, data: dict[str, Any], guards: Sequence[Guard]) -> dict[str, Any]:
        """Append DISPATCHED only if every guard holds, checked in the same transaction as the write.

        A guard is a SQL query returning one boolean (lock what it reads: `... FOR SHARE`), or a callable that
        returns violations; `Row` reads inside a callable lock their rows FOR SHARE, so a lease closed or a
        premise row bumped concurrently either lands before the check or waits for the dispatch to commit.
        Raises GuardFailed, writing nothing, when one fails.
        """
        return self._append(DISPATCHED, effect_id, data, guards)

    def effect(self, effect_id: str) -> EffectRecord | None:
        """The folded state of one effect, read from the database (the first read after a claim on it is the one
        the claim's round trip made)."""
        found = self._found.pop(effect_id, None)
        if found is not None:
            record = _record(effect_id, found)
        else:
            self._write_ahead(effect_id)
            record = self._read(lambda conn: _fold(conn.cursor(), effect_id), f"effect {effect_id}", effect_id)
        if record is not None and record.open_dispatch:
            self._sending.add(effect_id)
        return record

    def open_dispatches(self) -> list[EffectRecord]:
        """Effects whose last send has no resolution after it."""
        def read(conn: psycopg.Connection[Any]) -> list[EffectRecord]:
            cur = conn.cursor()
            ids = [row[0] for row in cur.execute(
                "SELECT DISTINCT effect_id FROM interlock_journal"
                " WHERE kind = ANY(%s) AND interlock_open_send(effect_id)", (sorted(SENDS),)).fetchall()]
            records = [_fold(cur, eid) for eid in sorted(ids)]
            return [r for r in records if r is not None and r.open_dispatch]

        return self._read(read, "open dispatches", None)

    def entries(self, effect_id: str | None = None) -> list[dict[str, Any]]:
        """Every entry in seq order, or one effect's."""
        if effect_id is None:
            return [json.loads(line) for line in self.lines()]
        self._write_ahead(effect_id)
        rows = self._read(lambda conn: conn.execute(
            "SELECT line FROM interlock_journal WHERE effect_id = %s ORDER BY seq", (effect_id,)).fetchall(),
            f"effect {effect_id}", effect_id)
        return [json.loads(row[0]) for row in rows]

    def lines(self) -> Iterator[str]:
        """The stored lines in seq order, exactly as a JSONL journal holds them (one snapshot, streamed)."""
        try:
            conn = self._session()
            with conn.transaction(), conn.cursor(name="interlock_export") as cur:
                cur.execute("SELECT line FROM interlock_journal ORDER BY seq")
                yield from (line for (line,) in cur)
        except psycopg.Error as exc:
            raise JournalUnavailable(f"{self.path}: export: {_first_line(exc)}", sent=None) from None

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
        guarding = _guarding.get()
        if guarding is None:
            row = self._read(lambda conn: conn.execute(query, (key,)).fetchone(), f"{table}.{column}", None)
        else:
            row = guarding.cursor().execute(query + sql.SQL(" FOR SHARE"), (key,)).fetchone()
        return None if row is None else row[0]

    def fence(self, effect_id: str, epoch: int, holder: str, found: list[tuple[int, str]] | None) -> None:
        """From now on this process's writes for the effect hold only while this acquisition holds the claim;
        `found` is the effect's entries (seq, line) as the claim's own round trip read them, right after taking
        it: the next `effect()` answers from them, unless an append comes first. None when that round trip read
        nothing (it wrote the effect's first entry): the next `effect()` reads the database."""
        self._epochs[effect_id] = (epoch, holder)
        if found is None:
            self._found.pop(effect_id, None)
        else:
            self._found[effect_id] = found

    def unfence(self, effect_id: str, epoch: int) -> None:
        """The claim of `epoch` is being given back: entries still ahead are written first, while it is held (one
        that cannot be, the claim lost or the database away, is left unwritten, as a crash would leave it)."""
        if self._epochs.get(effect_id, (None,))[0] == epoch:
            try:
                self._write_ahead(effect_id)
            except (ClaimLost, JournalUnavailable):
                pass
            del self._epochs[effect_id]
            self._found.pop(effect_id, None)
            self._unflushed.pop(effect_id, None)

    def closing(self, kind: str, effect_id: str, data: dict[str, Any]) -> tuple[str, tuple[Any, ...]]:
        """The statement and arguments that write the effect's entries still ahead and (`kind`, `data`), fenced on
        this process's claim, and give the claim back, in one transaction (`interlock_release_after`): the
        claim's closing round trip, made on the claims session, which holds the epoch's lock."""
        entries = [*self._ahead.get(effect_id, []), self.template(kind, effect_id, data)]
        return _append_all(len(entries), "interlock_release_after"), self._params(effect_id, entries)

    def closed(self, effect_id: str, epoch: int, line: str) -> dict[str, Any]:
        """Take in the last entry a claim's closing round trip stored (`closing`): the claim of `epoch` is given
        back with everything ahead written. Returns the entry as stored."""
        self._ahead.pop(effect_id, None)
        entry = self._stored(effect_id, line, flushed=True)
        if self._epochs.get(effect_id, (None,))[0] == epoch:
            del self._epochs[effect_id]
            self._found.pop(effect_id, None)
            self._unflushed.pop(effect_id, None)
        return entry

    def guarded(self, call: Callable[[], T], kind: str, effect_id: str) -> T:
        """`call`, a write of a `kind` entry of the effect made on another session of this journal, retried and
        its failure reported as this journal's own appends are."""
        return self._guarded(call, f"{kind} for effect {effect_id} may not be written", self._sent(kind, effect_id))

    def unflushed_send(self, effect_id: str) -> str | None:
        """The hash of the effect's last send if it was written under this process's claim, which commits it
        without waiting for the disk: the claim's confirm, made right before the request, flushes it."""
        return self._unflushed.get(effect_id)

    def _session(self) -> psycopg.Connection[Any]:
        refuse_if_forked(self._opened_by, self.path)  # a forked child would talk on the parent's session
        if self._conn.closed or self._conn.broken:
            self._conn = self.connect()
        return self._conn

    def _read(self, query: Callable[[psycopg.Connection[Any]], T], what: str, effect_id: str | None) -> T:
        return self._guarded(lambda: query(self._session()), what, None if effect_id in self._sending else False)

    def _guarded(self, call: Callable[[], T], what: str, sent: bool | None) -> T:
        """Run `call`, again on a new session while the database is briefly away (a restart, a terminated
        session), then turn a driver error into JournalUnavailable that says what is known of the send."""
        try:
            return reconnecting(call)
        except psycopg.Error as exc:
            if exc.sqlstate == CLAIM_LOST:
                raise ClaimLost(_first_line(exc)) from None
            raise JournalUnavailable(f"{self.path}: {what}: {_first_line(exc)}", sent=sent) from None

    def template(self, kind: str, effect_id: str, data: dict[str, Any]) -> tuple[Any, ...]:
        """(kind, epoch, token, body, late body): one entry laid out as `interlock_append_all` takes it."""
        return (kind, data.get("epoch"), *_templates(kind, effect_id, plain(data)))

    def _params(self, effect_id: str, entries: Sequence[tuple[Any, ...]]) -> tuple[Any, ...]:
        """The arguments of `interlock_append_all`, fenced on this process's claim of the effect."""
        fence, holder = self._epochs.get(effect_id, (None, None))
        kinds, epochs, tokens, bodies, lates = zip(*entries)
        return (effect_id, *kinds, *epochs, fence, holder, *tokens, *bodies, *lates)

    def _write_ahead(self, effect_id: str) -> None:
        """Write the effect's entries still ahead, in one round trip, if any."""
        ahead = self._ahead.pop(effect_id, None)
        if ahead:
            params = self._params(effect_id, ahead)
            self._guarded(lambda: self._session().execute(_append_all(len(ahead)), params),
                          f"{ahead[-1][0]} for effect {effect_id} may not be written", self._sent(ahead[-1][0], effect_id))

    def _append(self, kind: str, effect_id: str, data: dict[str, Any], guards: Sequence[Guard]) -> dict[str, Any]:
        entries = [*self._ahead.get(effect_id, []), self.template(kind, effect_id, data)]
        params = self._params(effect_id, entries)
        append_all = _append_all(len(entries))
        waits = kind in SENDS and effect_id not in self._epochs  # a claimed effect's send: the confirm flushes it

        def attempt() -> Any:
            conn = self._session()
            try:
                begun = bool(guards) and _check(conn, guards)  # their row locks are held to this append's commit
                if not waits and not begun:  # one prepared statement, committed without waiting for the disk
                    if effect_id in self._epochs and self.claims_session is not None:
                        return self.claims_session(lambda claims: first_row(claims, append_all, params))
                    return first_row(conn, append_all, params)
                cur = psycopg.ClientCursor(conn)  # one simple query: the server runs it through without waiting on us
                if waits:
                    cur.execute(("" if begun else "BEGIN; ") + append_all + _FLUSHED, params)
                    if not begun:
                        cur.nextset()
                else:
                    cur.execute(append_all + "; COMMIT", params)
                return cur.fetchone()
            except BaseException:
                if not conn.broken and conn.info.transaction_status != TransactionStatus.IDLE:
                    conn.execute("ROLLBACK")
                raise

        self._found.pop(effect_id, None)
        row = self._guarded(attempt, f"{kind} for effect {effect_id} may not be written", self._sent(kind, effect_id))
        self._ahead.pop(effect_id, None)  # written; a guard that failed leaves them for the effect's next append
        return self._stored(effect_id, row[0], flushed=waits)

    def _stored(self, effect_id: str, line: str, *, flushed: bool) -> dict[str, Any]:
        """The entry an append stored, noted: a send opens the effect (and awaits the confirm's flush unless
        `flushed`), a resolution settles it."""
        entry: dict[str, Any] = loads(line)
        if entry["kind"] in SENDS:
            self._sending.add(effect_id)
            if not flushed:
                self._unflushed[effect_id] = entry["hash"]
        elif entry["kind"] in RESOLUTIONS:
            self._sending.discard(effect_id)
        return entry

    def _sent(self, kind: str, effect_id: str) -> bool | None:
        """What a failed write leaves known of the effect's send: none (False) unless one may be out (None)."""
        return None if kind in RESOLUTIONS or effect_id in self._sending else False


# An append commits without waiting for the disk, which frees the journal-wide lock at once. A send's append
# outside a claim is followed, in the same round trip, by a transaction that writes one WAL record and commits
# synchronously: its flush covers the append committed just before it, so concurrent sends share flushes while
# none holds the lock across one, or across a round trip. Under a claim the confirm's flush does it (PgClaims).
@functools.cache
def _append_all(entries: int, function: str = "interlock_append_all") -> str:
    """`interlock_append_all` (or a function taking its arguments) of this many entries, each array built from one
    parameter per entry: psycopg binds plain values at a fraction of the cost of lists."""
    column = "ARRAY[" + ", ".join(["%s"] * entries) + "]"
    return (f"SELECT {function}(%s, {column}::text[], {column}::bigint[], %s, %s, {column}::text[],"
            f" {column}::text[], {column}::text[])")


_FLUSHED = "; COMMIT; SELECT pg_logical_emit_message(true, 'interlock', 'flush')"
_PLACED = ("seq", "ts", "prev", "effect_prev")  # and the hash, which the database appends to the line


def _templates(kind: str, effect_id: str, data: dict[str, Any]) -> tuple[str, str, str | None]:
    """(token, body, late body): the entry's canonical body (what its hash covers, and its stored line but for
    the hash) with a placeholder, `"<token><field>"`, for each field only the database decides; for a resolution
    also its LATE_RESULT form. Laid out as `interlock.journal.laid_out` lays out every backend's entries; `data` is already `plain`."""
    while True:
        token = f"@interlock-{uuid.uuid4().hex}-"
        body = _body(kind, effect_id, data, token, late=False)
        late = _body(kind, effect_id, data, token, late=True) if kind in RESOLUTIONS else None
        if all(text.count(token) == len(_PLACED) for text in (body, late) if text is not None):
            return token, body, late  # the token appears nowhere in the entry's own data


def _body(kind: str, effect_id: str, data: dict[str, Any], token: str, *, late: bool) -> str:
    entry = unsealed(kind, effect_id, data, seq=None, ts=None, prev=None, effect_prev=None, late=late)
    entry.update({name: f"{token}{name}" for name in _PLACED})
    return canonical_bytes(entry).decode()


class _Guarding:
    """The dispatch transaction while its guards run, begun by the first guard that reads the database."""

    def __init__(self, conn: psycopg.Connection[Any]):
        self.conn = conn
        self._cur: psycopg.Cursor[Any] | None = None

    @property
    def begun(self) -> bool:
        """Whether a guard read the database, so the transaction (and its row locks) is open."""
        return self._cur is not None

    def cursor(self) -> psycopg.Cursor[Any]:
        """The transaction's cursor, opening the transaction first."""
        if self._cur is None:
            self.conn.execute("BEGIN")
            self._cur = self.conn.cursor()
        return self._cur


def _check(conn: psycopg.Connection[Any], guards: Sequence[Guard]) -> bool:
    """Run the guards; raises GuardFailed, else says whether they began the transaction."""
    violations: list[str] = []
    guarding = _Guarding(conn)
    token = _guarding.set(guarding)
    try:
        for guard in guards:
            if isinstance(guard, str):
                row = guarding.cursor().execute(guard).fetchone()
                if not (row and row[0] is True):
                    violations.append(f"guard does not hold: {guard}")
            else:
                violations += guard()
    finally:
        _guarding.reset(token)
    if violations:
        raise GuardFailed(violations)
    return guarding.begun


_EFFECT = "SELECT seq, line FROM interlock_journal WHERE effect_id = %s ORDER BY seq"
_NOW = "SELECT extract(epoch FROM clock_timestamp())"


def _fold(cur: psycopg.Cursor[Any], effect_id: str) -> EffectRecord | None:
    return _record(effect_id, cur.execute(_EFFECT, (effect_id,)).fetchall())


def _record(effect_id: str, rows: list[tuple[int, str]]) -> EffectRecord | None:
    if not rows:
        return None
    record = EffectRecord(effect_id)
    for seq, line in rows:
        record.add(loads(line), seq)
    return record


def reconnecting(call: Callable[[], T], seconds: float = RECONNECT_SECONDS) -> T:
    """`call()`, tried again for up to `seconds` while the database refuses or drops the connection.

    Only for calls that are safe to repeat: reads, and writes that recognise their own retry.
    """
    deadline = time.monotonic() + seconds
    while True:
        try:
            return call()
        except psycopg.OperationalError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(RECONNECT_POLL_SECONDS)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
