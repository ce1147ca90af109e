"""Claims: exactly one process dispatches or recovers an effect at a time, and a stopped one loses its turn.

On one host a claim is an flock on a per-effect lock file, held for the life of the send, plus an owner
record beside it (`<effect>.owner`: epoch, pid, host, when last renewed). The kernel drops the flock the instant
its owner dies, so recovery after a SIGKILL takes the claim in milliseconds. A process that is alive but stopped
(SIGSTOP, a debugger, a hung machine) keeps its flock, so liveness is bounded too: a background thread renews the
owner record of every held claim, and a waiter takes over a claim whose record was not renewed for `ttl` seconds,
flock or not. Each acquisition bumps the fencing epoch; `confirm()`, called right before every request, answers
False once the epoch was superseded (or is about to be), so a sender that wakes after losing its claim does not
send. What remains is a sender stopped between its confirm and its request for longer than `ttl`: only a
service that fences (a precondition, a dedupe, the epoch) refuses that request. The owner record says when its
holder is between a confirm and its next journal entry (`sending`), so recovery that took over from such a holder
which still holds its flock (`holder_alive`) does not conclude "not landed" where no fence covers it. Claims
shared across hosts need a store with its own clock: see `interlock.pg`.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from .canonical import loads

POLL_SECONDS = 0.002
DEFAULT_TTL = 30.0
RECORD_BYTES = 512  # an owner record's size on disk, padded


@dataclass
class Claim:
    """A held claim on one effect; release it, or let process death release it."""

    effect_id: str
    epoch: int
    _claims: FileClaims | None = field(repr=False)
    _fd: int = field(repr=False)
    _took_over_a_send: bool = field(default=False, repr=False)
    _owner_fd: int = field(default=-1, repr=False)  # the owner record, open for the claim's life
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
        if not self._took_over_a_send or self._fd >= 0 or self._claims is None:
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

    def acquire(self, effect_id: str, wait: float) -> Claim | None:
        """Take the claim, waiting up to `wait` seconds (monotonic) for its owner; None if it stays held.

        The claim is free when its flock is (the owner released it or died) and no live owner took it over, or
        when its owner stopped renewing it for `ttl` seconds.
        """
        fd = os.open(self._path(effect_id, "lock"), os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + wait
        try:
            while True:
                claim = self._try(effect_id, fd)
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
        """Who last held the claim (epoch, pid, host, since, renewed), for reports; None if never claimed."""
        with self._owner_file(effect_id) as owner_fd:
            return _read(owner_fd) or None

    def _try(self, effect_id: str, fd: int) -> Claim | None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            locked = True
        except BlockingIOError:
            locked = False
        owner_fd = os.open(self._path(effect_id, "owner"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(owner_fd, fcntl.LOCK_EX)
            record = _read(owner_fd)
            stale = time.time() - record.get("renewed", 0.0) > self.ttl
            free = not record or record.get("released") or stale or (locked and record.get("flock", False))
            if not free:  # a live owner that took the claim over without the flock still holds it
                if locked:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(owner_fd)
                return None
            now = time.time()
            epoch = int(record.get("epoch", 0)) + 1
            # The flock's holder is alive; it may be sending if it stopped so, or if the holder before this one
            # took the claim from it so (a mark carried from owner to owner while that flock stays held).
            took_over_a_send = not locked and bool(
                (record.get("sending") and not record.get("released")) or record.get("stopped_sender"))
            _write(owner_fd, {"epoch": epoch, "pid": os.getpid(), "host": socket.gethostname(), "since": now,
                              "renewed": now, "flock": locked, "stopped_sender": took_over_a_send})
            fcntl.flock(owner_fd, fcntl.LOCK_UN)
        except BaseException:
            os.close(owner_fd)
            raise
        claim = Claim(effect_id, epoch, self, fd if locked else _closed(fd), took_over_a_send, owner_fd)
        with self._lock:
            self._held[effect_id] = claim
            self._start_renewer()
        return claim

    def _take_lock(self, claim: Claim) -> bool:
        """Take the flock of a claim acquired without it, if whoever held it is gone."""
        fd = os.open(self._path(claim.effect_id, "lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        claim._fd = fd
        return True

    def _holds(self, claim: Claim) -> bool:
        with self._owned(claim) as owner_fd:
            record = _read(owner_fd)
            if not self._owns(record, claim):
                return False
            if record.get("sending"):
                _write(owner_fd, {**record, "sending": False})
            return True

    def _owns(self, record: dict[str, Any], claim: Claim) -> bool:
        """Whether the owner record is this claim's, given back by nobody and renewed within the ttl."""
        mine = record.get("epoch") == claim.epoch and record.get("pid") == os.getpid()
        return mine and not record.get("released") and time.time() - record.get("renewed", 0.0) <= self.ttl

    def _renew(self, claim: Claim, sending: bool | None = None) -> bool:
        """Extend the claim if this epoch still owns it and its record is not stale (setting its sending mark
        when given); False otherwise."""
        with self._owned(claim) as owner_fd:
            record = _read(owner_fd)
            if not self._owns(record, claim):
                return False
            _write(owner_fd, {**record, "renewed": time.time(),
                              "sending": record.get("sending", False) if sending is None else sending})
            return True

    def _release(self, claim: Claim) -> None:
        with self._lock:
            if self._held.get(claim.effect_id) is claim:
                del self._held[claim.effect_id]
        if claim._fd >= 0:  # the flock first: a waiter that then sees this record unreleased takes it with the flock
            fcntl.flock(claim._fd, fcntl.LOCK_UN)
            os.close(claim._fd)
            claim._fd = -1
        with self._owned(claim) as owner_fd:
            record = _read(owner_fd)
            if record.get("epoch") == claim.epoch and record.get("pid") == os.getpid():
                _write(owner_fd, {**record, "released": True})
            os.close(owner_fd)
            claim._owner_fd = -1

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

    def _path(self, effect_id: str, suffix: str) -> Path:
        return self.directory / f"{effect_id}.{suffix}"

    @contextmanager
    def _owned(self, claim: Claim) -> Iterator[int]:
        """A held claim's owner record under its flock, through the descriptor the claim keeps open (opening the
        file on each journal entry cost more than the rest of the check)."""
        with claim._owner_mutex:
            if claim._owner_fd < 0:  # released meanwhile (the renewer's copy of what is held): read it as anyone
                with self._owner_file(claim.effect_id) as owner_fd:
                    yield owner_fd
                return
            fcntl.flock(claim._owner_fd, fcntl.LOCK_EX)
            try:
                yield claim._owner_fd
            finally:
                if claim._owner_fd >= 0:
                    fcntl.flock(claim._owner_fd, fcntl.LOCK_UN)

    @contextmanager
    def _owner_file(self, effect_id: str) -> Iterator[int]:
        """The owner record, held under its own short flock while it is read and written."""
        owner_fd = os.open(self._path(effect_id, "owner"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(owner_fd, fcntl.LOCK_EX)
            yield owner_fd
        finally:
            os.close(owner_fd)


def _closed(fd: int) -> int:
    os.close(fd)
    return -1


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
