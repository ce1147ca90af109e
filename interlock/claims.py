"""Claims: exactly one process dispatches or recovers an effect at a time, and a stopped one loses its turn.

On one host a claim is one file per effect, `<effect>.lock`: an flock on it, held for the life of the send, and the
owner record it holds (epoch, pid, host, when last renewed), read and rewritten under a short byte-range lock of its
own (an open-file-description lock, which Linux keeps apart from the flock), so a claim creates one file, not two.
The kernel drops the flock the instant its owner dies, so recovery after a SIGKILL takes the claim in milliseconds.
A process that is alive but stopped (SIGSTOP, a debugger, a hung machine) keeps its flock, so liveness is bounded
too: a background thread renews the owner record of every held claim, and a waiter takes over a claim whose record
was not renewed for `ttl` seconds, flock or not. Each acquisition bumps the fencing epoch; `confirm()`, called right
before every request, answers False once the epoch was superseded (or is about to be), so a sender that wakes after
losing its claim does not send. What remains is a sender stopped between its confirm and its request for longer than
`ttl`: only a service that fences (a precondition, a dedupe, the epoch) refuses that request. The owner record says
when its holder is between a confirm and its next journal entry (`sending`), so recovery that took over from such a
holder which still holds its flock (`holder_alive`) does not conclude "not landed" where no fence covers it.

A file is left behind by every effect ever claimed until `retire_settled` deletes those of effects the journal
holds settled before its last checkpoint: a later submit of such an effect only reads its resolution, which the
checkpoint keeps from being cut away unnoticed, so it writes nothing under the new file's epoch. A process that
opened a file before it was deleted finds it unlinked once it holds its record lock, and opens the new one. Claims
shared across hosts need a store with its own clock: see `interlock.pg`.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import struct
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from .canonical import loads
from .forks import refuse_if_forked

if TYPE_CHECKING:
    from .journal import Journal

POLL_SECONDS = 0.002
DEFAULT_TTL = 30.0
RECORD_BYTES = 512  # an owner record's size on disk, padded
# struct flock for the record's lock: type, whence, start, length (byte 0 alone), pid (0, as OFD locks require)
_RECORD_LOCK = struct.pack("@hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0)
_RECORD_UNLOCK = struct.pack("@hhqqi4x", fcntl.F_UNLCK, os.SEEK_SET, 0, 1, 0)


@dataclass
class Claim:
    """A held claim on one effect; release it, or let process death release it."""

    effect_id: str
    epoch: int
    _claims: FileClaims | None = field(repr=False)
    _fd: int = field(repr=False)  # the claim's file, open for the claim's life: its record, and its flock if held
    _locked: bool = field(default=True, repr=False)  # whether this claim holds the flock
    _took_over_a_send: bool = field(default=False, repr=False)
    sent_until: float | None = None  # when an earlier holder's unanswered request may last have left
    _owner_mutex: threading.Lock = field(default_factory=threading.Lock, repr=False)  # the renewer is a thread

    def confirm(self) -> bool:
        """Whether this epoch still owns the effect, renewing it if so: the check made right before a request.

        It also marks the holder as sending until its next journal entry (`holds`), so a successor that takes
        the claim over from it, stopped, knows it may still send."""
        return self._claims is not None and self._claims._renew(self, sending=True)

    def holds(self) -> bool:
        """Whether this epoch still owns the effect: the fence of each of its journal entries, which also ends the
        sending mark of `confirm` (an entry follows every request). A read, and a write only to end the mark."""
        return self._claims is not None and self._claims._holds(self)

    def holder_alive(self) -> bool:
        """Whether the holder this claim was taken over from may still send: it was stopped (or hung) between
        its confirm and its next journal entry and still holds its lock, so no in-flight bound, which is about
        dead senders, covers it. Once that process is gone this claim takes the lock and answers False."""
        if not self._took_over_a_send or self._locked or self._claims is None:
            return False
        return not self._claims._take_lock(self)

    def release(self) -> None:
        """Give the effect back to whoever waits for it."""
        if self._claims is not None:
            self._claims._release(self)
            self._claims = None

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class FileClaims:
    """Per-effect claims in a directory beside the journal; a holder that stops renewing loses its claim after
    `ttl` seconds, a holder that dies loses it at once."""

    def __init__(self, directory: str | os.PathLike[str], *, ttl: float = DEFAULT_TTL):
        if not ttl > 0:
            raise ValueError(f"ttl must be a positive number of seconds, got {ttl!r}")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.ttl = float(ttl)
        self._held: dict[str, Claim] = {}
        self._lock = threading.Lock()
        self._renewer: threading.Thread | None = None
        self._wake = threading.Event()
        self._opened_by = os.getpid()

    def acquire(self, effect_id: str, wait: float) -> Claim | None:
        """Take the claim, waiting up to `wait` seconds (monotonic) for its owner; None if it stays held.

        The claim is free when its flock is (the owner released it or died) and no live owner took it over, or
        when its owner stopped renewing it for `ttl` seconds.
        """
        refuse_if_forked(self._opened_by, self.directory)
        fd = self._open(effect_id)
        deadline = time.monotonic() + wait
        try:
            while True:
                claim = self._try(effect_id, fd)
                if claim is None and os.fstat(fd).st_nlink == 0:  # retired since it was opened: take the new file
                    os.close(fd)
                    fd = self._open(effect_id)
                    continue
                if claim is not None:
                    fd = -1
                    return claim
                if time.monotonic() >= deadline:
                    return None
                time.sleep(POLL_SECONDS)
        finally:
            if fd >= 0:
                os.close(fd)

    def owner(self, effect_id: str) -> dict[str, Any] | None:
        """Who last held the claim (epoch, pid, host, since, renewed), for reports; None if never claimed, or
        retired since."""
        try:
            fd = os.open(self._file(effect_id), os.O_RDWR)
        except FileNotFoundError:
            return None
        try:
            with _record_locked(fd):
                return _read(fd) or None
        finally:
            os.close(fd)

    def _try(self, effect_id: str, fd: int) -> Claim | None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            locked = True
        except BlockingIOError:
            locked = False
        with _record_locked(fd):
            if os.fstat(fd).st_nlink == 0:  # retired after this process opened it: never taken (see `acquire`)
                if locked:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                return None
            record = _read(fd)
            stale = time.time() - record.get("renewed", 0.0) > self.ttl
            free = not record or record.get("released") or stale or (locked and record.get("flock", False))
            if not free:  # a live owner that took the claim over without the flock still holds it
                if locked:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                return None
            now = time.time()
            epoch = int(record.get("epoch", 0)) + 1
            # The flock's holder is alive; it may be sending if it stopped so, or if the holder before this one
            # took the claim from it so (a mark carried from owner to owner while that flock stays held).
            took_over_a_send = not locked and bool(
                (record.get("sending") and not record.get("released")) or record.get("stopped_sender"))
            sent_until = _sent_until(record, now, self.ttl)
            _write(fd, {"epoch": epoch, "pid": os.getpid(), "host": socket.gethostname(), "since": now,
                        "renewed": now, "flock": locked, "stopped_sender": took_over_a_send,
                        **({"sent_until": sent_until} if sent_until is not None else {})})
        claim = Claim(effect_id, epoch, self, fd, locked, took_over_a_send, sent_until)
        with self._lock:
            self._held[effect_id] = claim
            self._start_renewer()
        return claim

    def _take_lock(self, claim: Claim) -> bool:
        """Take the flock of a claim acquired without it, if whoever held it is gone."""
        with claim._owner_mutex:
            if claim._fd < 0:
                return False
            try:
                fcntl.flock(claim._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            claim._locked = True
            return True

    def _holds(self, claim: Claim) -> bool:
        with self._owned(claim) as fd:
            if fd is None:
                return False
            record = _read(fd)
            if not self._owns(record, claim):
                return False
            if record.get("sending"):
                _write(fd, {**record, "sending": False})
            return True

    def _owns(self, record: dict[str, Any], claim: Claim) -> bool:
        """Whether the owner record is this claim's, given back by nobody and renewed within the ttl."""
        mine = record.get("epoch") == claim.epoch and record.get("pid") == os.getpid()
        return mine and not record.get("released") and time.time() - record.get("renewed", 0.0) <= self.ttl

    def _renew(self, claim: Claim, sending: bool | None = None) -> bool:
        """Extend the claim if this epoch still owns it and its record is not stale (setting its sending mark
        when given); False otherwise."""
        with self._owned(claim) as fd:
            if fd is None:
                return False
            record = _read(fd)
            if not self._owns(record, claim):
                return False
            _write(fd, {**record, "renewed": time.time(),
                        "sending": record.get("sending", False) if sending is None else sending})
            return True

    def _release(self, claim: Claim) -> None:
        with self._lock:
            if self._held.get(claim.effect_id) is claim:
                del self._held[claim.effect_id]
        with claim._owner_mutex:
            fd, claim._fd = claim._fd, -1
            if fd < 0:
                return
            try:
                if claim._locked:  # the flock first: a waiter that then sees this record unreleased takes it with it
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    claim._locked = False
                with _record_locked(fd):
                    record = _read(fd)
                    if record.get("epoch") == claim.epoch and record.get("pid") == os.getpid():
                        # still sending: no entry followed its last request, which may land up to its bound after now
                        ended = {"sent_until": time.time()} if record.get("sending") else {}
                        _write(fd, {**record, "released": True, **ended})
            finally:
                os.close(fd)

    def retire_settled(self, journal: Journal) -> int:
        """Checkpoint the journal, then delete the claim file of every effect it holds settled before that
        checkpoint whose claim nobody holds; returns how many went. Call it beside `journal.archive_settled()`: the
        folder then keeps the claims of effects still open or settled since, not one file per effect ever sent."""
        covered = journal.checkpoint()["offset"]
        retired = 0
        for entry in os.scandir(self.directory):
            if not entry.name.endswith(".lock"):
                continue
            effect_id = entry.name.removesuffix(".lock")
            record = journal.effect(effect_id)
            if record is not None and record.settled_by is not None and record.offsets[-1] < covered:
                retired += self._retire(effect_id)
        return retired

    def _retire(self, effect_id: str) -> bool:
        """Delete one claim's file if it is free: nobody holds its flock and its last holder released it (a holder
        that took it over without the flock, or one that stopped, still counts on it). Under both locks, so a
        process that opened the file before finds it unlinked under the record lock, never a record to take."""
        try:
            fd = os.open(self._file(effect_id), os.O_RDWR)
        except FileNotFoundError:
            return False
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            with _record_locked(fd):
                record = _read(fd)
                if record and not record.get("released"):
                    return False
                try:
                    if os.stat(self._file(effect_id)).st_ino != os.fstat(fd).st_ino:
                        return False  # retired and claimed again since this process opened it
                    os.unlink(self._file(effect_id))
                except FileNotFoundError:
                    return False
                return True
        finally:
            os.close(fd)  # and with it the flock

    def _start_renewer(self) -> None:
        if self._renewer is None or not self._renewer.is_alive():
            self._renewer = threading.Thread(target=self._renew_held, name="interlock-claims-renewer", daemon=True)
            self._renewer.start()

    def _renew_held(self) -> None:
        """Renew every held claim a few times per ttl; stops when nothing is held."""
        while True:
            self._wake.wait(self.ttl / 4)
            with self._lock:
                held = list(self._held.values())
                if not held:
                    self._renewer = None
                    return
            for claim in held:
                self._renew(claim)

    def _file(self, effect_id: str) -> Path:
        return self.directory / f"{effect_id}.lock"

    def _open(self, effect_id: str) -> int:
        return os.open(self._file(effect_id), os.O_RDWR | os.O_CREAT, 0o644)

    @contextmanager
    def _owned(self, claim: Claim) -> Iterator[int | None]:
        """A claim's owner record under its record lock, through the descriptor the claim keeps open (opening the
        file on each journal entry cost more than the rest of the check); None once released (the renewer's copy
        of what is held), since a released claim owns nothing."""
        with claim._owner_mutex:
            if claim._fd < 0:
                yield None
                return
            with _record_locked(claim._fd):
                yield claim._fd


def _sent_until(record: dict[str, Any], now: float, ttl: float) -> float | None:
    """The last moment an unanswered request of a holder up to the one `record` names may have left: when a holder
    that released the claim mid-send let it go, or, for one that stopped holding it while sending, the end of its
    claim (`now`, or its last renewal and a ttl when that came first: its send, retries included, may have run to
    then); carried from owner to owner. None when no holder left a request unanswered."""
    times = [record["sent_until"]] if isinstance(record.get("sent_until"), (int, float)) else []
    if record.get("sending") and not record.get("released") and isinstance(record.get("renewed"), (int, float)):
        times.append(min(now, record["renewed"] + ttl))
    return max(times) if times else None


@contextmanager
def _record_locked(fd: int) -> Iterator[None]:
    """The owner record's short lock: an open-file-description lock on its first byte, which excludes every other
    open of the file (in this process too) and never meets the claim's flock."""
    fcntl.fcntl(fd, fcntl.F_OFD_SETLKW, _RECORD_LOCK)
    try:
        yield
    finally:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _RECORD_UNLOCK)


def _read(fd: int) -> dict[str, Any]:
    raw = os.pread(fd, 4096, 0)
    try:
        record = loads(raw) if raw else {}  # read under the journal's lock on every entry: msgspec, not json
    except ValueError:
        record = {}
    return record if isinstance(record, dict) else {}


def _write(fd: int, record: dict[str, Any]) -> None:
    """Overwrite the record in place, padded to a fixed size: truncating first would free and allocate the file's
    block on every renewal, several times the cost of the write. JSON reads back past the padding."""
    data = json.dumps(record).encode().ljust(RECORD_BYTES)
    os.pwrite(fd, data, 0)
    if os.fstat(fd).st_size > len(data):
        os.ftruncate(fd, len(data))
