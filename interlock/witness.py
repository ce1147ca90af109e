"""The journal's witness of its own reach: where its last durable entry starts and ends, and that entry's hash.

A crash tears at most the append that was in progress, which the witness has not seen yet; so a journal that ends
before the end of the last entry its witness saw was cut back by something else (a restore, a copy, a cut at
an offset) and must not be opened as if nothing had happened. The witness is one fixed-size record rewritten in
place after each fsync of the journal, never before, so it never claims more than the disk holds.
"""

from __future__ import annotations

import fcntl
import os
import zlib
from contextlib import contextmanager
from dataclasses import dataclass

from typing import Callable, Iterator

from .errors import JournalCorrupt

RECORD = 256


@dataclass(frozen=True)
class Mark:
    """One entry's place in the journal: its seq, the byte range it fills, its hash and its predecessor's."""

    seq: int
    start: int
    end: int
    head: str
    prev: str | None


def witnessed(journal: str | os.PathLike[str]) -> Mark | None:
    """The mark beside `journal`, read without creating anything (a reader of a copied journal has none)."""
    try:
        witness = Witness(f"{journal}.witness", create=False)
    except FileNotFoundError:
        return None
    try:
        return witness.read()
    finally:
        witness.close()


def disagreement(mark: Mark, *, end: int, entries: int) -> str | None:
    """Why a journal whose complete lines end at byte `end`, after `entries` entries, cannot be the journal `mark`
    witnessed; None when it can (a torn append past the mark is allowed, but the witnessed entry itself must be
    whole: it was flushed before the witness named it).

    The library refuses to open such a journal and `python -m interlock.receipts` reports it, by this one rule."""
    if end <= mark.start:  # the witnessed entry was on disk before the witness named it: no crash tears it
        return (f"the journal ends after {entries} entries but its witness saw entry {mark.seq} written (it was "
                "cut back by more than a crash can tear: a restore, a copy or a cut)")
    if mark.start < end < mark.end:
        return f"its lines do not end where its witness saw entry {mark.seq} end (the journal was rewritten)"
    if entries <= mark.seq:  # as long as what was witnessed, but the witnessed entry is not among its lines
        return (f"it reaches past where its witness saw entry {mark.seq} end, but holds only {entries} entries "
                "(the journal was rewritten)")
    return None


def differs(mark: Mark, *, seq: int, start: int, head: str) -> bool:
    """Whether the entry `seq` found at byte `start` is not the one `mark` witnessed there."""
    return seq == mark.seq and (start != mark.start or head != mark.head)


def _check(text: str) -> str:
    return f"{zlib.crc32(text.encode()):08x}"


class Witness:
    """`<journal>.witness`: the latest durable mark, shared by every process appending to the journal."""

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True):
        self.path = str(path)
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT if create else os.O_RDONLY, 0o644)

    def close(self) -> None:
        """Release the file descriptor."""
        os.close(self._fd)

    def read(self) -> Mark | None:
        """The mark last written, or None for a journal that never made an entry durable."""
        fcntl.flock(self._fd, fcntl.LOCK_SH)
        try:
            return self._read()
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    @contextmanager
    def flushing(self) -> Iterator[tuple[Mark | None, Callable[[Mark], None]]]:
        """Hold the witness while one process flushes the journal; yields the mark recorded so far and the
        function that records the mark the flush covered. Waiting for it is waiting for the flush in progress."""
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            current = self._read()
            yield current, lambda mark: self._write(mark, current)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _write(self, mark: Mark, current: Mark | None) -> None:
        if current is not None and current.end >= mark.end:
            return
        text = f"{mark.seq} {mark.start} {mark.end} {mark.head} {mark.prev or '-'}"
        os.pwrite(self._fd, f"{text} {_check(text)}".encode().ljust(RECORD - 1) + b"\n", 0)

    def _read(self) -> Mark | None:
        raw = os.pread(self._fd, RECORD, 0)
        if not raw:
            return None
        fields = raw.decode("ascii", "replace").split()
        if len(fields) != 6 or fields[5] != _check(" ".join(fields[:5])):
            raise JournalCorrupt(f"{self.path}: not a witness record, or one that fails its own check")
        seq, start, end, head, prev = fields[:5]
        return Mark(int(seq), int(start), int(end), head, None if prev == "-" else prev)
