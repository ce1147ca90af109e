"""The append-only JSONL journal: one hash chain over every entry, O(1) appends, shared safely by processes.

Beside the journal `J` live what the library keeps to trust it without rereading it: `J.witness` (the last durable
entry, rewritten after each flush), `J.index` (where each effect's entries are, exact up to a checkpoint),
`J.checkpoints` (every checkpoint written, signed when the journal has a key), `J.lock` (the append lock, on a
file that never rolls) and, for a segmented journal, the rolled segments `J.<first byte>-<end byte>`. Opening checks
the checkpoint and reads only what came after it; full verification of every entry stays with `interlock.receipts`.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, NamedTuple, TypeVar, cast

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import msgspec

from .canonical import HASH_FIELD, canonical_bytes, laid_out_holds, line_holds, loads, sealed_line
from .collector import collector_paused
from .errors import ClaimLost, ConfigurationError, JournalCorrupt, JournalError
from .forks import refuse_if_forked
from .index import Checkpoint, EffectIndex
from .kinds import KINDS, LATE_RESULT, RESOLUTIONS, SENDS, settles, settling
from .records import EffectRecord, Fields, as_fields, read_fields
from .segments import SegmentFiles, cut_short, line_at, line_batches, line_ending_at, lines
from .signing import checkpoint_statement, public_hex, sign, signature_holds
from .skim import raw_id, skim
from .witness import Mark, Witness, differs, disagreement


def plain(data: dict[str, Any]) -> dict[str, Any]:
    """`data` as it reads back from the journal (tuples as lists, keys as strings): the form every hash is over.
    Done before the append lock, so writers waiting on it do not wait on this too."""
    plain_data: dict[str, Any] = json.loads(json.dumps(data))
    return plain_data


def laid_out(kind: str, effect_id: str, data: dict[str, Any], *, seq: int, prev: str | None,
             record: EffectRecord | None, late: bool = False) -> tuple[dict[str, Any], bytes]:
    """The next entry, linked and hashed, and its journal line (the hash is computed once, over the bytes the line
    holds); `data` is already `plain`. A resolution that comes late (the effect is already resolved, or the
    writer's claim was taken over) is kept as LATE_RESULT, never as a second resolution."""
    entry = unsealed(kind, effect_id, data, seq=seq, ts=time.time(), prev=prev,
                     effect_prev=record.last_hash if record else None,
                     late=late or (record is not None and record.settled_by is not None))
    entry["hash"], line = sealed_line(entry)
    return entry, line


ENTRY_OWN = frozenset({"seq", "ts", "kind", "effect_id", "prev", "effect_prev", "hash"})  # laid out by the journal


def unsealed(kind: str, effect_id: str, data: dict[str, Any], *, seq: Any, ts: Any, prev: Any, effect_prev: Any,
             late: bool) -> dict[str, Any]:
    """Every field of an entry but its hash, laid out as every backend lays them out; a resolution that comes
    `late` is kept as LATE_RESULT, naming the kind it would have been."""
    if kind not in KINDS:
        raise ValueError(f"unknown journal kind {kind!r}")
    clash = ENTRY_OWN.intersection(data)
    if clash:
        raise ValueError(f"{kind} for {effect_id!r}: data may not set the entry's own fields {sorted(clash)}")
    if late and kind in RESOLUTIONS:
        data = {"late_kind": kind, **data}
        kind = LATE_RESULT
    entry: dict[str, Any] = {"seq": seq, "ts": ts, "kind": kind, "effect_id": effect_id}
    entry.update(data)
    entry["prev"] = prev
    entry["effect_prev"] = effect_prev
    return entry


def encode(entry: dict[str, Any]) -> bytes:
    """One sealed entry as a journal line, exactly as the JSONL journal stores it (see `interlock.canonical`)."""
    body = dict(entry)
    stored = str(body.pop("hash"))
    return canonical_bytes(body)[:-1] + HASH_FIELD + stored.encode() + b'"}\n'


CHECKPOINT_EVERY = 10_000
SKIM_BLOCK = 1 << 20  # other writers' lines are skimmed this many bytes at a time
LOCK_YIELDS = 100  # times a writer that finds the journal's lock taken yields its core before it sleeps on it


class Cursor(NamedTuple):
    """A place in the chain: the end of an entry, its seq and hash, the lines before it, and where that entry
    starts with its predecessor's hash (what the witness records of it)."""

    offset: int
    seq: int
    last: str | None
    line: int
    tip_start: int
    tip_prev: str | None


def _take(lock: int) -> None:
    """Take the journal's lock (an exclusive flock on `lock`). A writer that finds it taken yields its core and
    tries again, LOCK_YIELDS times, before it sleeps on it: the lock is held for a fraction of a millisecond, and
    a sleeper is woken when it is let go but must then wait for a core, while the lock lies free, which is what
    most limits many writers on few cores. A holder that keeps it longer (stopped, say) is waited for asleep."""
    for _ in range(LOCK_YIELDS):
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            os.sched_yield()
    fcntl.flock(lock, fcntl.LOCK_EX)


Method = TypeVar("Method", bound=Callable[..., Any])


def _stops_at_damage(method: Method) -> Method:
    """A read or write of the journal: once one found the journal damaged, every later one raises the same, so a
    process that saw damage never appends (or sends) on the rest; none is made by a process forked after the
    journal was opened."""

    @functools.wraps(method)
    def guarded(self: Journal, *args: Any, **kwargs: Any) -> Any:
        refuse_if_forked(self._opened_by, self.path)
        if self._lock < 0:
            raise JournalError(f"{self.path}: the journal was closed")
        if self._damage is not None:
            raise JournalCorrupt(self._damage)
        try:
            return method(self, *args, **kwargs)
        except JournalCorrupt as exc:
            self._damage = str(exc)
            raise

    return cast(Method, guarded)


class Journal:
    """A JSONL journal file whose entries chain by `seq` and `prev` across all effects.

    Every process appends under an exclusive flock, so an append costs O(entries added by others since its last
    look), never O(journal size), and each line is checked and folded once per reader that needs it, not once per
    writer. What other processes appended an append skims (`interlock.skim`): it learns where the chain ends and
    which effects those lines name, checks the hash and seq of the entry it chains to, and folds nothing. The lines
    are checked and folded, from where this process last folded, when it needs what they say: an effect they name
    is looked up or appended to (so a stale sender's late result is always seen before the effect's next entry),
    recovery lists open sends, a checkpoint is due, or the journal is opened. Every line is thus checked by the
    process that moves the index past it, by every open that reads past the last checkpoint, and, before it, each
    time its effect is read back through the index; a damaged line of another effect stops this process at its
    next fold, and never leads it to send, since a send rests only on its own effect's entries, which it wrote,
    folded or read back checked. A line this process cannot skim (damaged, laid out by another tool, naming an
    effect twice or by an id that needs an escape) is folded at once, and the append raises there. Every append is
    written whole or not at all.

    Durability: an append returns once its line is written, visible to every process and kept by the kernel
    whatever happens to the writer (SIGKILL included). A send (DISPATCHED, REDISPATCHED) is also on disk before
    its append returns, because the request follows it and recovery must find it after a power loss; every
    other entry becomes durable with the next flush of the file (the next send of any process, a checkpoint, a
    roll, `flush()`, `close()`), which covers every byte written before it. What a power loss can take is then
    only entries after the last send or flush: a PROPOSED or AUTHORIZED that is proposed again, and a resolution
    (COMMITTED, REFUSED, AMBIGUOUS) whose send is left open, which recovery settles by looking the effect up before
    it sends anything. (The disk may also write out the unflushed bytes out of order; a power loss that leaves more
    than a torn last line behind the last flush makes opening refuse the journal as damaged, never guess.) So a
    gated effect costs one fsync, the one before its request. That fsync runs after the lock is released, so sends
    from many threads and processes share one flush (group commit). Each line is laid out as `interlock.canonical`
    describes, so a reader checks its hash over the bytes it read.

    Every `checkpoint_every` entries it has seen, a process moves the index and writes a checkpoint (signed with
    `key` when one is given, and then checked against it on every open), so memory holds only the effects touched
    since then and the next open starts from there. With `segment_bytes` the file rolls to a new segment at that
    size; `archive_settled()` moves segments recovery no longer needs to `archive`, where reads still find them.
    """

    def __init__(self, path: str | os.PathLike[str], *, key: Ed25519PrivateKey | None = None,
                 checkpoint_every: int = CHECKPOINT_EVERY, segment_bytes: int | None = None,
                 archive: str | os.PathLike[str] | None = None):
        for option, value in (("checkpoint_every", checkpoint_every), ("segment_bytes", segment_bytes)):
            if value is not None and (type(value) is not int or value < 1):
                raise ConfigurationError(f"{option} must be a whole number of at least 1, got {value!r}")
        self.path = Path(os.path.realpath(path))  # the file, however reached: every side file is named from it, so
        # two processes reaching one journal by two paths (a symlink) share its lock, witness and claims
        self.torn: list[str] = []
        self._damage: str | None = None  # what the first JournalCorrupt said
        self._opened_by = os.getpid()
        self._key = key
        self._checkpoint_every = checkpoint_every
        self._segment_bytes = segment_bytes
        self._mutex = threading.Lock()
        self._syncing = threading.Lock()
        self._offset = 0
        self._line = 0
        self._seq = -1
        self._last: str | None = None
        self._tip_start = 0  # where the last entry this process has seen starts, and its predecessor's hash
        self._tip_prev: str | None = None
        self._durable = 0  # the end of what this process knows is on disk
        self._written = 0  # the end of the last line this process wrote
        self._tail: dict[str, EffectRecord] = {}  # effects with an entry at or after `_tail_start`, folded
        self._tail_start = 0  # the index holds every entry before this byte
        self._tail_seq = -1  # and up to this seq
        self._fold: Cursor | None = None  # where folding resumes, when the head moved on by skimming
        self._skimmed: dict[bytes, int] = {}  # effects named by the lines skimmed past `_fold`, to where
        self._ahead: dict[str, EffectRecord] = {}  # this process's effects with entries it wrote past `_fold`
        self._pending: dict[str, list[tuple[str, dict[str, Any]]]] = {}  # `append_ahead` entries, per effect
        self._lock = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        self._files = SegmentFiles(self.path, Path(archive) if archive is not None else None)
        kept = os.path.exists(f"{self.path}.witness")  # False: no process of this library ever opened it here,
        if kept:  # and its witness is made only once the journal checked out, so a refused open leaves none
            self._witness = Witness(f"{self.path}.witness")
        self._index = EffectIndex(f"{self.path}.index")
        try:
            witnessed = self._witness.read() if kept else None  # before the journal's lock: a flush holds the
            # witness, then takes it
            with self._mutex:
                _take(self._lock)
                try:
                    self._opens_the_chain()
                    covered = self._index.covered()
                    if covered is not None:
                        self._resume(covered)
                    checkpoint = last_checkpoint(self.checkpoints_path)
                    if key is None and checkpoint is not None and checkpoint.get("signature") is not None:
                        raise ConfigurationError(
                            f"{self.path}: its checkpoints are signed ({self.checkpoints_path}), so it is opened with "
                            "key=: a checkpoint written without the key would stop every process holding it from "
                            "opening the journal")
                    self._catch_up(witnessed, checkpoint, unwitnessed=not kept)
                finally:
                    fcntl.flock(self._lock, fcntl.LOCK_UN)
            if not kept:
                self._witness = Witness(f"{self.path}.witness")
        except BaseException:
            self.close()
            raise

    def _opens_the_chain(self) -> None:
        """With no rolled segment found before it, the live file must start the chain: one whose first entry
        comes later lost the segments before it from where they were looked for, which would otherwise read as a
        journal cut short."""
        if self._files.base or not self._files.size():
            return
        try:
            seq = read_fields(line_at(self._files.pread, 0).rstrip(b"\n")).seq
        except (msgspec.DecodeError, UnicodeDecodeError):
            return  # not an entry: the read from the start names the damage
        if type(seq) is int and seq > 0:
            raise JournalCorrupt(f"{self.path}:1: the first entry is seq {seq}, and no segment before it was found "
                                 f"beside the journal or in {self._files.archive or 'an archive directory'}: a "
                                 "journal whose rolled segments were archived is opened with archive=DIR")

    @property
    def checkpoints_path(self) -> Path:
        """`<journal>.checkpoints`: one JSON line per checkpoint, for `python -m interlock.receipts --checkpoint`."""
        return Path(f"{self.path}.checkpoints")

    def close(self) -> None:
        """Make what this process appended durable, then release the files; closing again does nothing (the
        descriptor numbers may belong to other files by then)."""
        if self._lock < 0:
            return
        if self._durable < self._written and hasattr(self, "_witness"):
            self._make_durable(self._tip)
        os.close(self._lock)
        self._lock = -1
        for side in ("_files", "_witness", "_index"):
            if hasattr(self, side):
                getattr(self, side).close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def now(self) -> float:
        """The time now on the clock the entries' `ts` are stamped with: this host's."""
        return time.time()

    @property
    def head(self) -> tuple[int, str | None]:
        """(seq, hash) of the last entry this process has seen."""
        return self._seq, self._last

    def __len__(self) -> int:
        return self._seq + 1

    @contextmanager
    def _locked(self, reached: int = 0) -> Iterator[None]:
        """The journal's lock, with every line to the file's end checked and folded (most of them before the lock
        is taken), and the file still reaching `reached` and the end this process had skimmed to."""
        with self._mutex:
            reached = max(reached, self._offset)
            try:
                self._rewind()
                self._read_ahead()
                _take(self._lock)
                try:
                    self._catch_up(None, None)
                    self._reached(reached)
                    yield
                finally:
                    fcntl.flock(self._lock, fcntl.LOCK_UN)
            finally:
                self._skimmed.clear()
                self._ahead.clear()

    @_stops_at_damage
    def refresh(self, *, check: bool = False) -> None:
        """Take in what other processes appended since this process last looked: skimmed without the journal's
        lock when every line to the file's end passes and the file was not rolled, else read and checked. With
        `check`, every line since this process last folded is checked and folded before this returns (the gate
        asks for it before deciding on an effect claimed before, whose entries may be among them)."""
        if check:
            self._fold_all()
            return
        with self._mutex:
            if self._skim_to(self._files.size()) and not self._files.rolled_away():
                if self._due():
                    self._jump()  # without the lock, when another process moved the index already
                if self._due():
                    _take(self._lock)
                    try:
                        self._keep_index_up()
                    finally:
                        fcntl.flock(self._lock, fcntl.LOCK_UN)
                return
        self._fold_all()

    def _fold_all(self) -> None:
        """Check and fold every line from where this process last folded to the file's end: without the journal's
        lock when the lines to the end all check out and the file was not rolled, else under it."""
        with self._mutex:
            reached = self._offset
            try:
                self._rewind()
                done = self._read_ahead() and not self._files.rolled_away()
                if done:
                    self._reached(reached)
            except BaseException:
                done = True
                raise
            finally:
                if done:
                    self._skimmed.clear()
                    self._ahead.clear()
            if done:
                return
        with self._locked(reached):
            pass

    @property
    def _tip(self) -> Mark:
        """The last entry this process has seen, as the witness records it."""
        return Mark(self._seq, self._tip_start, self._offset, str(self._last), self._tip_prev)

    @_stops_at_damage
    def append(self, kind: str, effect_id: str, data: dict[str, Any], *,
               holds: Callable[[], bool] | None = None) -> dict[str, Any]:
        """Append one entry (after any `append_ahead` entries of its effect, in the same turn) and return it as
        stored; a send is on disk before this returns, any other entry with the next flush (see the class's
        durability contract).

        A resolution for an effect that something else already resolved is stored as LATE_RESULT instead:
        a stale sender's answer is kept, never allowed to overwrite the resolution. `holds` (the writer's claim
        confirm) runs under the append lock: when it answers False the writer's claim was taken over, so a
        resolution is stored as LATE_RESULT and anything else raises ClaimLost, writing nothing.
        """
        items = [*self._pending.pop(effect_id, ()), (kind, plain(data))]
        named = raw_id(effect_id)
        with self._mutex:
            _take(self._lock)
            try:
                self._files.follow()
                end = self._files.size()
                if not self._skim_to(end) or self._offset != end or named in self._skimmed:
                    self._fold_locked()  # a torn line is set aside, a line of this effect (a stale sender's late
                    # result) folded before the effect's next entry
                record = self._record(effect_id)
                late = holds is not None and not holds()
                if late and any(k not in RESOLUTIONS for k, _ in items):
                    raise ClaimLost(f"{self.path}: the claim on {effect_id} was taken over; {kind} not appended")
                made = self._lay_out(effect_id, items, record, late)
                self._write_whole(b"".join(line for _, line, _ in made))
                for entry, line, start in made:
                    self._take_own(entry, self._record(effect_id), start, start + len(line))
                self._written = self._offset
                if self._segment_bytes is not None and self._offset - self._files.base >= self._segment_bytes:
                    self._files.roll()
                if self._due():
                    self._keep_index_up()
            finally:
                fcntl.flock(self._lock, fcntl.LOCK_UN)
            mark = self._tip
        if any(entry["kind"] in SENDS for entry, _, _ in made):
            self._make_durable(mark)
        return made[-1][0]

    def _write_whole(self, lines: bytes) -> None:
        """Write `lines` at the journal's end under the lock, all of them or none: a write the disk cut short (it
        filled up) is cut off again, so no partial line is left for the next append to follow."""
        written = os.write(self._files.fd, lines)
        if written != len(lines):
            os.ftruncate(self._files.fd, self._offset - self._files.base)
            raise JournalError(f"{self.path}: only {written} of the {len(lines)} bytes of an append were written "
                               "(is the disk full?); they were cut off again and nothing was appended")

    def append_ahead(self, kind: str, effect_id: str, data: dict[str, Any]) -> None:
        """Append an entry nothing waits on (the gate's AUTHORIZED) in the lock turn of its effect's next append,
        ahead of it, instead of in a turn of its own. Until then no reader sees it, and a process that dies first
        leaves it unwritten: no worse than dying before the append, since nothing was sent on it."""
        if kind not in KINDS or kind in SENDS or kind in RESOLUTIONS:
            raise ValueError(f"{kind} is waited on, or not a journal kind: append it")
        self._pending.setdefault(effect_id, []).append((kind, plain(data)))

    def _lay_out(self, effect_id: str, items: list[tuple[str, dict[str, Any]]], record: EffectRecord | None,
                 late: bool) -> list[tuple[dict[str, Any], bytes, int]]:
        """(entry, line, start) of each item, chained on from the head in order; nothing is taken in yet."""
        made = []
        seq, prev, start = self._seq, self._last, self._offset
        for kind, data in items:
            entry, line = laid_out(kind, effect_id, data, seq=seq + 1, prev=prev, record=record, late=late)
            made.append((entry, line, start))
            seq, prev, start = entry["seq"], entry["hash"], start + len(line)
            record = EffectRecord(effect_id, last_hash=entry["hash"], settled_by=record.settled_by if record else None)
        return made

    def _skim_to(self, end: int) -> bool:
        """Move the head past other processes' complete lines up to `end` without folding them (`interlock.skim`),
        noting the effects they name, and stop before a last line still being written; False when a block of them
        does not skim, or the file is shorter than the head: the head stops before it, and the caller folds."""
        if end < self._offset:
            return False
        while self._offset < end:
            start = self._offset
            block = self._files.pread(min(SKIM_BLOCK, end - start), start)
            cut = block.rfind(b"\n") + 1
            if not cut:  # the start of a line being written (torn, under the lock), or one longer than a block
                return len(block) < SKIM_BLOCK
            found = skim(block[:cut], self._seq, self._last)
            if found is None:
                return False
            if self._fold is None:
                self._fold = self._cursor()
            self._skimmed.update(dict.fromkeys(found.ids, start + cut))
            last = found.last
            self._seq, self._last, self._offset, self._line = last.seq, last.hash, start + cut, self._line + found.lines
            self._tip_start, self._tip_prev = start + found.last_start, last.prev
        return True

    def _cursor(self) -> Cursor:
        return Cursor(self._offset, self._seq, self._last, self._line, self._tip_start, self._tip_prev)

    def _rewind(self) -> None:
        """Move the head back to where folding resumes (past what the index covers, if it moved on meanwhile)."""
        self._jump()
        if self._fold is not None:
            (self._offset, self._seq, self._last, self._line, self._tip_start, self._tip_prev) = self._fold
            self._fold = None

    def _fold_locked(self) -> None:
        """Under the lock: check and fold every line from where this process last folded to the file's end."""
        reached = self._offset
        try:
            self._rewind()
            self._catch_up(None, None)
            self._reached(reached)
        finally:
            self._skimmed.clear()
            self._ahead.clear()

    def _reached(self, end: int) -> None:
        """After a fold: the journal still reaches the end this process had skimmed to."""
        if self._offset < end:
            raise JournalCorrupt(f"{self.path}: shrank from {end} to {self._offset} bytes (entries were removed)")

    def _keep_index_up(self) -> None:
        """Under the lock, once the index lags the head by a checkpoint's worth of entries: follow it where another
        process moved it, else fold and move it here (the first process to find it due does, the others follow)."""
        self._jump()
        if self._due():
            self._fold_locked()
            if self._due():  # unless the fold moved the index and checkpointed as it read
                self._checkpoint(self._key)

    def _due(self) -> bool:
        """Whether the index lags the head by a checkpoint's worth of entries."""
        return self._seq - self._tail_seq >= self._checkpoint_every

    def _jump(self) -> None:
        """When another process moved the index past where this process folds from, fold from there instead: what
        came before is in the index (which holds this process's own effects too, so only their records written
        past it are kept)."""
        if self._fold is None:
            return
        covered = self._index.covered()
        if covered is None or not self._fold.offset < covered.offset <= self._offset:
            return
        start, entry = self._entry_ending_at(covered.offset)
        if entry is None or entry.get("seq") != covered.seq or entry.get("hash") != covered.head:
            raise JournalCorrupt(f"{self.path}:{covered.seq + 1}: entry {covered.seq} no longer carries the "
                                 f"checkpointed head ({self._index.path}): the journal was rewritten")
        self._fold = Cursor(covered.offset, covered.seq, covered.head, covered.seq + 1, start, entry.get("prev"))
        self._tail, self._tail_start, self._tail_seq = {}, covered.offset, covered.seq
        self._skimmed = {eid: end for eid, end in self._skimmed.items() if end > covered.offset}
        self._ahead = {eid: own for eid, own in self._ahead.items() if own.offsets[-1] >= covered.offset}

    def _take_own(self, entry: dict[str, Any], record: EffectRecord | None, start: int, end: int) -> None:
        """Take in this process's own entry, just written at `start`, and move the head past it: folded with the
        rest when nothing before it waits to be folded, else kept with its effect's record until the next fold."""
        if (record.last_hash if record else None) != entry["effect_prev"]:
            raise JournalCorrupt(f"{self.path}:{self._line + 1}: effect_prev of the entry just written does not "
                                 "link to its effect's previous entry, which another writer appended meanwhile")
        if self._fold is None:
            record = record if record is not None else EffectRecord(entry["effect_id"])
            record.add(entry, start)
            self._take(record, entry["seq"], entry["hash"], entry["prev"], start, end)
            return
        own = self._ahead.get(entry["effect_id"])
        if own is None:
            own = record.copy() if record is not None else EffectRecord(entry["effect_id"])
            self._ahead[own.effect_id] = own
        own.add(entry, start)
        self._tip_start, self._tip_prev = start, entry["prev"]
        self._seq, self._last, self._offset = entry["seq"], entry["hash"], end
        self._line += 1

    def flush(self) -> None:
        """Make every entry this process has appended or seen durable now (a send already is)."""
        if self._durable < self._written:
            self._make_durable(self._tip)

    @_stops_at_damage
    def checkpoint(self, key: Ed25519PrivateKey | None = None) -> dict[str, Any]:
        """Bring the index up to the journal's end and record a checkpoint there (signed with `key`, else with
        the journal's own key if it has one); returns it as `<journal>.checkpoints` stores it."""
        with self._locked():
            return self._checkpoint(key or self._key)

    def _make_durable(self, mark: Mark) -> None:
        """Return once `mark` is on disk. One process at a time flushes, holding the witness; meanwhile the others
        keep writing, and the next flush covers every line they wrote, so one fsync serves many appends."""
        with self._syncing:
            if self._durable >= mark.end:
                return
            seen = self._witness.read()  # a shared wait: every writer blocked on one flush wakes together after it
            if seen is not None and seen.end >= mark.end:
                self._durable = seen.end
                return
            with self._witness.flushing() as (seen, record):
                if seen is not None and seen.end >= mark.end:
                    self._durable = seen.end
                    return
                tip = self._written_tip()
                assert tip.end >= mark.end
                os.fdatasync(self._files.fd)  # a segment rolled meanwhile was flushed by whoever rolled it
                record(tip)
                self._durable = tip.end

    def _written_tip(self) -> Mark:
        """The last line in the file, whoever wrote it: read without the journal's lock and not checked (whoever
        catches up checks it), so the flush every writer waits for is not held up behind the writers. A line is
        taken only when the byte after it is its newline, so a write still in progress is never mistaken for one;
        anything unclear falls back to this process's own last entry."""
        with self._mutex:  # the descriptor may be swapped by this process's own roll
            tip = self._tip
            end = self._files.size()
            start, entry = self._entry_ending_at(end) if end > tip.end else (end, None)
        if entry is None or type(entry.get("seq")) is not int or type(entry.get("hash")) is not str:
            return tip
        return Mark(entry["seq"], start, end, entry["hash"], entry.get("prev"))

    def _entry_ending_at(self, end: int) -> tuple[int, dict[str, Any] | None]:
        """(start, entry) of the line ending just before logical byte `end`; (end, None) if no entry ends there."""
        start, raw = line_ending_at(self._files.pread, end)
        if raw is None:
            return start, None
        try:
            entry = loads(raw)
        except ValueError:
            return start, None
        return start, entry if isinstance(entry, dict) else None

    @_stops_at_damage
    def archive_settled(self) -> list[Path]:
        """Checkpoint, then move every rolled segment that holds nothing recovery still needs (it ends before the
        checkpoint and before the first entry of every effect with a send open) to the archive directory."""
        if self._files.archive is None:
            raise ConfigurationError(f"{self.path}: archive_settled needs an archive directory: open the journal with "
                                     "archive=DIR")
        with self._locked():
            self._checkpoint(self._key)
            first_open = [r.offsets[0] for r in self._open_records()]
            return self._files.archive_before(min([self._offset, *first_open]))

    @_stops_at_damage
    def effect(self, effect_id: str) -> EffectRecord | None:
        """The folded state of one effect as of this process's last look (`refresh`, or its own appends), or None
        if the journal never saw it. Lines skimmed since the last fold that name it are folded first."""
        if raw_id(effect_id) in self._skimmed:
            self._fold_all()
        return self._record(effect_id)

    @_stops_at_damage
    def open_dispatches(self) -> list[EffectRecord]:
        """Effects whose last send has no resolution: what recovery must settle."""
        self._fold_all()
        return self._open_records()

    def _open_records(self) -> list[EffectRecord]:
        found = {eid: r for eid, r in self._tail.items() if r.open_dispatch}
        for eid in self._index.open_effects():
            if eid not in self._tail:
                record = self._stored(eid)
                if record is not None and record.open_dispatch:
                    found[eid] = record
        return [found[eid] for eid in sorted(found)]

    @_stops_at_damage
    def entries(self, effect_id: str | None = None) -> list[dict[str, Any]]:
        """Every stored entry, or one effect's, read back from the file."""
        if effect_id is None:
            self.refresh()
            return [loads(raw) for raw, _ in lines(self._files.pread, 0, self._offset) if raw is not None]
        record = self.effect(effect_id)
        if record is None:
            return []
        return [loads(line_at(self._files.pread, offset)) for offset in record.offsets]

    def _record(self, effect_id: str) -> EffectRecord | None:
        record = self._ahead.get(effect_id)
        if record is None:
            record = self._tail.get(effect_id)
        return record if record is not None else self._stored(effect_id)

    def _stored(self, effect_id: str) -> EffectRecord | None:
        """An effect's state folded from its entries before `_tail_start`, found through the index. Opening reads
        only past the checkpoint, so each of these lines is checked here, as it is read: the hash over its own
        bytes, the effect it names and its link to the effect's entry before it. A line edited since it was
        written would otherwise decide a send unchecked."""
        if not self._tail_start:
            return None
        offsets = self._index.offsets(effect_id, self._tail_start)
        if not offsets:
            return None
        record = EffectRecord(effect_id)
        for offset in offsets:
            raw = line_at(self._files.pread, offset)[:-1]
            try:
                entry = loads(raw)
            except ValueError:
                entry = None
            if (type(entry) is not dict or entry.get("effect_id") != effect_id or entry.get("kind") not in KINDS
                    or entry.get("effect_prev") != record.last_hash or not line_holds(raw, entry)):
                raise JournalCorrupt(f"{self.path}: the line at byte {offset}, listed for effect {effect_id!r} by "
                                     f"{self._index.path}, is not that effect's next entry as written (its hash, "
                                     "its effect or its link differs): the journal was edited")
            record.add(entry, offset)
        return record

    def _resume(self, covered: Checkpoint) -> None:
        """Start from the index's checkpoint: the journal must still reach it and carry its head there."""
        where = f"{self.path}:{covered.seq + 1}"
        self._files.follow()  # the live segment opened before the lock may have been rolled since
        size = self._files.size()
        if size < covered.offset:
            raise JournalCorrupt(f"{where}: the journal is {size} bytes, shorter than its checkpoint at byte "
                                 f"{covered.offset} (seq {covered.seq}) in {self._index.path}: entries were removed")
        if self._key is not None and not signature_holds(
                covered.signature, checkpoint_statement(covered.seq, covered.head), public_hex(self._key)):
            raise JournalCorrupt(f"{where}: the checkpoint in {self._index.path} is not signed by this journal's key"
                                 + (" (it carries no signature: written before the journal had a key, or stripped)"
                                    if covered.signature is None else ""))
        start, entry = self._entry_ending_at(covered.offset)
        if entry is None or entry.get("seq") != covered.seq or entry.get("hash") != covered.head:
            raise JournalCorrupt(f"{where}: entry {covered.seq} no longer carries the checkpointed head "
                                 f"({self._index.path}): the journal was rewritten")
        self._seq, self._last, self._line = covered.seq, covered.head, covered.seq + 1
        self._offset = self._tail_start = covered.offset
        self._tail_seq = covered.seq
        self._tip_start, self._tip_prev = start, entry.get("prev")

    def _catch_up(self, witnessed: Mark | None, checkpoint: dict[str, Any] | None, *,
                  unwitnessed: bool = False) -> None:
        """Read and check every complete line past what this process has seen. At open, also hold the journal to
        its witness and its last checkpoint: one cut back further than a crash can tear is refused, and so is a
        file that never had a witness (`unwitnessed`) whose only line has no newline. Nothing is changed on disk
        until every check passed."""
        self._files.follow()
        size = self._files.size()
        if size < self._offset:
            raise JournalCorrupt(f"{self.path}: shrank from {self._offset} to {size} bytes (entries were removed)")
        with collector_paused():
            self._read(size, witnessed, checkpoint, unwitnessed)

    def _read(self, size: int, witnessed: Mark | None, checkpoint: dict[str, Any] | None, unwitnessed: bool) -> None:
        scanned_from = self._offset
        tail = b""
        building = False  # a long read (a first open, a reader behind busy writers) moves the index as it goes,
        # so memory stays flat, in one transaction committed with the checkpoint once every check passed
        try:
            for batch, tail in line_batches(self._files.pread, self._offset, size):
                while batch:
                    batch = batch[self._take_lines(batch, witnessed):]
                    if self._due():
                        if not building:
                            self._index.begin()
                            building = True
                        self._move_index(Checkpoint(self._seq, self._offset, self._last))
            if witnessed is not None:
                self._hold(witnessed, scanned_from)
            if checkpoint is not None:
                self._reaches(checkpoint)
            if tail and not cut_short(tail):
                raise JournalCorrupt(f"{self.path}:{self._line + 1}: the last line has no newline and is not the start "
                                     "of an entry, so no crash tore it; the file is left as it was")
            if tail and unwitnessed and not self._line:
                raise JournalCorrupt(f"{self.path}:1: the only line has no newline and no witness was ever kept beside "
                                     "the file, so no append of this library tore it; the file is left as it was")
            if tail:
                self._set_aside_torn(tail, self._offset)
            if building:
                self._checkpoint(self._key)
        except BaseException:
            if building:
                self._index.rollback()
            raise

    def _read_ahead(self) -> bool:
        """Check and fold, before taking the journal's lock, every complete line other processes have appended: the
        lines before the file's current end are whole and never change, so the lock then covers only what arrives
        meanwhile, and many processes catch up at once instead of one after another. A line that does not check
        out here is left for the read under the lock, which decides (and refuses a damaged journal). True when it
        reached the end with nothing left over."""
        end = self._files.size()
        if end < self._offset:
            return False
        with collector_paused():
            for batch, tail in line_batches(self._files.pread, self._offset, end):
                try:
                    taken = self._take_lines(batch, None)
                except JournalCorrupt:
                    return False
                if taken < len(batch):
                    return False  # the index moves only under the lock: the rest is read there, memory stays flat
        return not tail

    def _hold(self, witnessed: Mark, scanned_from: int) -> None:
        if witnessed.end <= scanned_from:
            _, entry = self._entry_ending_at(witnessed.end)
            if entry is None or differs(witnessed, seq=int(entry.get("seq", -1)), start=witnessed.start,
                                        head=str(entry.get("hash"))) or entry.get("seq") != witnessed.seq:
                raise JournalCorrupt(f"{self.path}:{witnessed.seq + 1}: entry {witnessed.seq} is not the one its "
                                     f"witness {self._witness.path} saw written (the journal was rewritten)")
            return
        why = disagreement(witnessed, end=self._offset, entries=self._line)
        if why is not None:
            raise JournalCorrupt(f"{self.path}:{self._line + 1}: {why} ({self._witness.path})")

    def _reaches(self, checkpoint: dict[str, Any]) -> None:
        """The journal is not shorter than its last checkpoint, and carries the checkpoint's head where it says."""
        seq, offset = checkpoint.get("seq"), checkpoint.get("offset")
        if not isinstance(seq, int) or seq > self._seq:
            raise JournalCorrupt(f"{self.path}:{self._line + 1}: the journal ends at seq {self._seq}, before its last "
                                 f"checkpoint's seq {seq!r} ({self.checkpoints_path}): entries were removed")
        if isinstance(offset, int):
            _, entry = self._entry_ending_at(offset) if offset <= self._offset else (0, None)
            if entry is None or entry.get("seq") != seq or entry.get("hash") != checkpoint.get("head"):
                raise JournalCorrupt(f"{self.path}:{seq + 1}: entry {seq} does not carry the head of its last "
                                     f"checkpoint ({self.checkpoints_path}): the journal was rewritten")

    def _checkpoint(self, key: Ed25519PrivateKey | None) -> dict[str, Any]:
        """Under the lock: flush, move the index to the journal's end, append the checkpoint line."""
        os.fdatasync(self._files.fd)  # the index and the checkpoint never cover what the disk might not hold
        signature = sign(key, checkpoint_statement(self._seq, self._last)) if key is not None else None
        checkpoint = Checkpoint(self._seq, self._offset, self._last, signature)
        self._move_index(checkpoint)
        self._index.commit()  # a long read's transaction, if one is open, ends with its checkpoint
        line: dict[str, Any] = {"seq": checkpoint.seq, "head": checkpoint.head, "offset": checkpoint.offset}
        if signature is not None:
            line["signature"] = signature
        with open(self.checkpoints_path, "a") as f:
            f.write(json.dumps(line) + "\n")
            f.flush()
            os.fsync(f.fileno())
        return line

    def _move_index(self, checkpoint: Checkpoint) -> None:
        """Hand every entry read since the index's checkpoint to the index, which then covers `checkpoint`, and
        forget them here (committed now, or with the checkpoint that ends a long read).

        The index only moves forward: every entry before its checkpoint is in it, each effect's once, so a writer
        that reaches its count behind a checkpoint another process moved the index to (while catching up) only
        forgets what it read. Moved back, the next move would file again effects the index already holds in part,
        and the rows it holds would hide the rest."""
        covered = self._index.covered()
        floor = covered.offset if covered is not None else 0
        if covered is not None and floor >= checkpoint.offset:
            self._tail, self._tail_start, self._tail_seq = {}, self._offset, self._seq
            return
        rows: list[tuple[str, list[int]]] = []
        opened, settled = [], []
        for eid, record in self._tail.items():
            fresh = record.offsets[0] >= floor  # first named since the index's checkpoint, so not listed open there
            kept = record.offsets if fresh else [at for at in record.offsets if at >= floor]
            if kept:
                rows.append((eid, kept))
            if record.open_dispatch:
                opened.append(eid)
            elif not fresh:
                settled.append(eid)
        rows.sort()
        self._index.advance(rows, opened, settled, checkpoint)
        self._tail, self._tail_start, self._tail_seq = {}, self._offset, self._seq

    def _set_aside_torn(self, tail: bytes, at: int) -> None:
        with open(str(self.path) + ".torn", "ab") as side:
            side.write(tail + b"\n")
            side.flush()
            os.fsync(side.fileno())
        os.ftruncate(self._files.fd, at - self._files.base)
        os.fsync(self._files.fd)
        self.torn.append(tail.decode("utf-8", "replace"))

    def _where(self) -> str:
        return f"{self.path}:{self._line + 1}"

    def _take_lines(self, batch: list[bytes], witnessed: Mark | None) -> int:
        """Check and fold consecutive complete lines from this process's head on, stopping when a checkpoint is
        due; returns how many it took. This loop runs once per line for every line any process appends, so a line
        laid out as the journal writes it is checked here inline, over its own bytes; any other goes to `_parse`,
        which decides and names what is wrong. At open, each line is also held to the witness."""
        taken, stop, tail = 0, self._tail_seq + self._checkpoint_every, self._tail
        for raw in batch:
            if self._seq >= stop:
                break
            try:
                fields: Fields | None = read_fields(raw)
            except (msgspec.DecodeError, UnicodeDecodeError):
                fields = None
            if (fields is not None and fields.seq == self._seq + 1 and fields.prev == self._last
                    and fields.kind in KINDS and laid_out_holds(raw, fields.hash)):
                record = tail.get(fields.effect_id)
                if (record.last_hash if record is not None else None) != fields.effect_prev:
                    record = self._linked(fields.effect_id, fields.effect_prev)  # in the index, or a broken link
                resolution: dict[str, Any] | bytes | None = raw if settling(fields.kind, fields.resolves) else None
            else:
                fields, resolution, record = self._parse(raw)
            start = self._offset
            if witnessed is not None and differs(witnessed, seq=fields.seq, start=start, head=fields.hash):
                raise JournalCorrupt(f"{self.path}:{self._line + 1}: entry {fields.seq} is not the one its "
                                     f"witness {self._witness.path} saw written (the journal was rewritten)")
            if record is None:
                record = EffectRecord(fields.effect_id)  # `_take` files it in the tail
            record.fold(fields.kind, fields.hash, start, fields.payload_hash, resolution)
            self._take(record, fields.seq, fields.hash, fields.prev, start, start + len(raw) + 1)
            taken += 1
        return taken

    def _parse(self, raw: bytes) -> tuple[Fields, dict[str, Any] | bytes | None, EffectRecord | None]:
        """(fields, the whole entry if it settles its effect, the effect's record so far) of the next line, read
        whole and checked: the reading that decides, and names what is wrong."""
        try:
            entry = loads(raw)
        except ValueError as exc:
            raise JournalCorrupt(f"{self._where()}: not a JSON line ({getattr(exc, 'msg', exc)})") from None
        if type(entry) is not dict:
            raise JournalCorrupt(f"{self._where()}: entry is not a JSON object")
        get = entry.get
        for key, want in (("seq", int), ("kind", str), ("effect_id", str), ("hash", str), ("ts", (int, float))):
            if not isinstance(get(key), want) or type(get(key)) is bool:
                raise JournalCorrupt(f"{self._where()}: field {key!r} missing or of the wrong type")
        kind, seq = entry["kind"], entry["seq"]
        if kind not in KINDS:
            raise JournalCorrupt(f"{self._where()}: unknown kind {kind!r}")
        if seq != self._seq + 1:
            raise JournalCorrupt(f"{self._where()}: seq {seq} where {self._seq + 1} was expected")
        if get("prev") != self._last:
            raise JournalCorrupt(f"{self._where()}: prev does not link to the entry before it")
        record = self._linked(entry["effect_id"], get("effect_prev"))
        if not line_holds(raw, entry):
            raise JournalCorrupt(f"{self._where()}: hash does not match the entry's content")
        return as_fields(entry), entry if settles(entry) else None, record

    def _linked(self, effect_id: str, effect_prev: Any) -> EffectRecord | None:
        """The effect's record so far, which the entry's `effect_prev` must link to.

        An entry that claims to be its effect's first needs no look in the index: if the effect had earlier
        entries, the chain is forked, which `verify_journal` reports; the gate's own appends always look."""
        record = self._tail.get(effect_id)
        if record is None and effect_prev is not None:
            record = self._stored(effect_id)
        if effect_prev != (record.last_hash if record else None):
            raise JournalCorrupt(f"{self._where()}: effect_prev does not link to the effect's previous entry")
        return record

    def _take(self, record: EffectRecord, seq: int, hash: str, prev: str | None, start: int, end: int) -> None:
        """Move the head past a checked entry already folded into `record`."""
        self._tail[record.effect_id] = record
        self._tip_start, self._tip_prev = start, prev
        self._seq, self._last, self._offset = seq, hash, end
        self._line += 1


def write_checkpoint(journal: Journal, key: Ed25519PrivateKey) -> dict[str, Any]:
    """Sign the journal's current head into `<journal>.checkpoints`; checked against the public key, a later cut
    tail or rewrite then shows to anyone, not only to this library."""
    return journal.checkpoint(key)


def last_checkpoint(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The last checkpoint line of a checkpoints file, or None when there is none yet."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(0, size - 4096))
            lines = [line for line in f.read().split(b"\n")[:-1] if line.strip()]  # a torn last line is no checkpoint
    except FileNotFoundError:
        return None
    if not lines:
        return None
    try:
        checkpoint = json.loads(lines[-1])
    except ValueError:
        checkpoint = None
    if not isinstance(checkpoint, dict):
        raise JournalCorrupt(f"{path}: the last line is not a checkpoint object")
    return checkpoint
