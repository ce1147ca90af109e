"""Claims: exactly one process dispatches or recovers an effect at a time.

On one host a claim is an flock on a per-effect lock file, held for the life of the send. The kernel drops it
the instant the owner dies, so recovery after a SIGKILL waits milliseconds, not a TTL. Each acquisition bumps a
fencing epoch kept in the lock file; entries written under a claim carry it. Claims shared across hosts need a
store with its own clock: see `interlock.pg`.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

POLL_SECONDS = 0.002


@dataclass
class Claim:
    """A held claim on one effect; release it, or let process death release it."""

    effect_id: str
    epoch: int
    _fd: int

    def release(self) -> None:
        """Give the effect back to whoever waits for it."""
        if self._fd >= 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class FileClaims:
    """Per-effect flock claims in a directory beside the journal."""

    def __init__(self, directory: str | os.PathLike[str]):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def acquire(self, effect_id: str, wait: float) -> Claim | None:
        """Take the claim, waiting up to `wait` seconds (monotonic) for a live owner; None if it stays held."""
        fd = os.open(self.directory / f"{effect_id}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    return None
                time.sleep(POLL_SECONDS)
        epoch = _read_owner(fd).get("epoch", 0) + 1
        owner = {"epoch": epoch, "pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(owner).encode(), 0)
        return Claim(effect_id, epoch, fd)

    def owner(self, effect_id: str) -> dict | None:
        """Who last held the claim (pid, host, epoch), for reports; None if never claimed."""
        path = self.directory / f"{effect_id}.lock"
        if not path.exists():
            return None
        fd = os.open(path, os.O_RDONLY)
        try:
            return _read_owner(fd) or None
        finally:
            os.close(fd)


def _read_owner(fd: int) -> dict:
    raw = os.pread(fd, 4096, 0)
    try:
        owner = json.loads(raw) if raw else {}
    except ValueError:
        owner = {}
    return owner if isinstance(owner, dict) else {}
