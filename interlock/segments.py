"""The journal's files: the live segment `J`, and the segments rolled away from it, `J.<first byte>-<end byte>`.

Offsets are logical: one byte position across every segment, so the index, the witness and checkpoints never need
to know where a segment boundary falls. A segment is rolled by renaming the live file at a line boundary and
starting a new one; the chain simply runs on. Rolled segments that hold nothing recovery still needs can be moved
to an archive directory, where reads still find them.
"""

from __future__ import annotations

import bisect
import errno
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from .errors import ConfigurationError, JournalCorrupt

BLOCK = 1 << 20  # a reader holds about four blocks at once: 1 MiB keeps that small and the reads few
Reader = Callable[[int, int], bytes]


@dataclass(frozen=True)
class Segment:
    """One rolled segment: the logical bytes [base, end) of the journal."""

    base: int
    end: int
    path: Path


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class SegmentFiles:
    """The live segment's descriptor and every rolled segment, read as one sequence of bytes."""

    def __init__(self, path: Path, archive: Path | None = None):
        self.path = path
        self.archive = archive
        self._rolled: list[Segment] = []
        self._fds: dict[int, int] = {}
        self._open_live()

    def _open_live(self) -> None:
        """Open the live segment and learn its base, consistently with a roll by another process: a roll renames
        the live file before it starts the next one, so a listing taken after the open that differs from the one
        taken before it means the file just opened may follow segments the first listing missed."""
        while True:
            self._refresh()
            before = self._rolled
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
            self._refresh()
            if self._rolled == before:
                break
            os.close(fd)
        self.fd = fd
        self.base = self._rolled[-1].end if self._rolled else 0

    def close(self) -> None:
        """Release every descriptor."""
        os.close(self.fd)
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def _refresh(self) -> None:
        self._rolled = rolled_segments(self.path, self.archive)

    @property
    def rolled(self) -> list[Segment]:
        """The rolled segments, oldest first."""
        return list(self._rolled)

    def size(self) -> int:
        """The logical end of the journal: the live segment's base plus its length."""
        return self.base + os.fstat(self.fd).st_size

    def rolled_away(self) -> bool:
        """Whether another process rolled the live segment this process has open."""
        try:
            return os.stat(self.path).st_ino != os.fstat(self.fd).st_ino
        except FileNotFoundError:
            return True

    def follow(self) -> None:
        """Switch to the live segment another process started, if it rolled the one this process had open.
        Call under the journal's lock, so no roll is half done."""
        if self.rolled_away():
            os.close(self.fd)
            self._open_live()

    def roll(self) -> Path:
        """Rename the live segment (flushed, ending on a line) to its rolled name and start a new one."""
        end = self.size()
        os.fdatasync(self.fd)
        rolled = self.path.with_name(f"{self.path.name}.{self.base:016d}-{end:016d}")
        os.rename(self.path, rolled)
        _fsync_directory(self.path.parent)
        os.close(self.fd)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        _fsync_directory(self.path.parent)
        self._rolled.append(Segment(self.base, end, rolled))
        self.base = end
        return rolled

    def pread(self, size: int, offset: int) -> bytes:
        """Up to `size` bytes at logical `offset`, never past the end of the segment holding it."""
        if offset >= self.base:
            return os.pread(self.fd, size, offset - self.base)
        segment, fd = self._holding(offset)
        return os.pread(fd, min(size, segment.end - offset), offset - segment.base)

    def _holding(self, offset: int) -> tuple[Segment, int]:
        """The rolled segment holding `offset` and a descriptor on it; the segments are listed again when it is
        not where the last listing saw it (another process archived it meanwhile)."""
        for attempt in range(2):
            i = bisect.bisect_right([s.base for s in self._rolled], offset) - 1
            if i >= 0 and self._rolled[i].base <= offset < self._rolled[i].end:
                segment = self._rolled[i]
                fd = self._fds.get(segment.base)
                if fd is not None:
                    return segment, fd  # still readable wherever the file was moved
                try:
                    fd = self._fds[segment.base] = os.open(segment.path, os.O_RDONLY)
                    return segment, fd
                except FileNotFoundError:
                    pass
            if attempt == 0:
                self._drop_descriptors()
                self._refresh()
        if self.archive is None:  # archived, most likely, by a process that was given the archive: not damage, so
            # this process goes on with what it can read, and opening it with archive=DIR reads the rest
            raise ConfigurationError(f"{self.path}: no segment holds byte {offset}: a rolled segment is not beside "
                                     "the journal; one that was archived is read by a journal opened with "
                                     "archive=DIR")
        raise JournalCorrupt(f"{self.path}: no segment holds byte {offset} (a rolled segment is missing; archived "
                             f"segments are looked for in {self.archive})")

    def _drop_descriptors(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def archive_before(self, offset: int) -> list[Path]:
        """Move every rolled segment that ends at or before `offset` into the archive directory. Call under the
        journal's lock: the segments are listed afresh there, since another process may have archived some."""
        if self.archive is None:
            raise ConfigurationError(f"{self.path}: archiving needs an archive directory: open the journal with "
                                     "archive=DIR")
        self.archive.mkdir(parents=True, exist_ok=True)
        moved = []
        self._drop_descriptors()
        self._refresh()
        for segment in self._rolled:
            if segment.end <= offset and segment.path.parent != self.archive:
                target = self.archive / segment.path.name
                _move(segment.path, target)
                moved.append(target)
        _fsync_directory(self.archive)
        self._refresh()
        return moved


ENTRY_FIELDS = frozenset({"seq", "kind", "hash", "effect_id"})


def cut_short(tail: bytes) -> bool:
    """Whether `tail`, the bytes after a journal's last newline, is what an append cut short by a crash leaves: the
    start of an entry's line, a JSON object left unfinished or a whole entry whose newline was not written. Any
    other text there (a file that is not a journal, a line written by something else) is damage, not a torn write."""
    if not tail.startswith(b'{"') and not b'{"'.startswith(tail):
        return False
    try:
        whole = json.loads(tail)
    except ValueError:
        return True
    return isinstance(whole, dict) and ENTRY_FIELDS <= whole.keys()


def lines(read: Reader, start: int, end: int) -> Iterator[tuple[bytes | None, bytes]]:
    """The complete lines (without their newline) between logical `start` and `end`, read in blocks, then one
    `(None, tail)`: the bytes after the last newline, which only a torn append leaves."""
    carry = b""
    for batch, carry in line_batches(read, start, end):
        for piece in batch:
            yield piece, b""
    yield None, carry


def line_batches(read: Reader, start: int, end: int) -> Iterator[tuple[list[bytes], bytes]]:
    """`lines` a block at a time: each block's complete lines with b"", and last the lines of the final block with
    the bytes after the last newline (b"" when the range ends on a line)."""
    carry = b""
    position = start
    pieces: list[bytes] = []
    while position < end:
        block = read(min(BLOCK, end - position), position)
        if not block:
            break
        position += len(block)
        if pieces:
            yield pieces, b""
        pieces = (carry + block).split(b"\n")
        carry = pieces.pop()
    yield pieces, carry


def line_ending_at(read: Reader, end: int) -> tuple[int, bytes | None]:
    """(start, bytes) of the line whose newline is the byte before logical `end`; (end, None) when there is none."""
    if end <= 0 or read(1, end - 1) != b"\n":
        return end, None
    span = 1024
    while True:
        begin = max(0, end - 1 - span)
        chunk = b""
        while len(chunk) < end - 1 - begin:  # a read stops at a segment's end; lines never cross one
            more = read(end - 1 - begin - len(chunk), begin + len(chunk))
            if not more:
                break
            chunk += more
        cut = chunk.rfind(b"\n")
        if cut >= 0 or begin == 0:
            return begin + cut + 1, chunk[cut + 1:]
        span *= 4


def line_at(read: Reader, offset: int) -> bytes:
    """The line starting at logical `offset`, with its newline."""
    buf = b""
    while True:
        more = read(4096, offset + len(buf))
        if not more:
            return buf
        cut = more.find(b"\n")
        if cut >= 0:
            return buf + more[: cut + 1]
        buf += more


class JournalLines:
    """A journal's complete lines, without their newlines, streamed across its rolled segments in order (beside
    it or in `archive`) and then the live file. After the stream ends, `lines` counts them, `end` is the byte
    offset after the last of them, `last` is that line, and `torn` holds a last line with no newline (a torn
    append), which the stream leaves out. Iterating raises JournalCorrupt when a segment is missing."""

    def __init__(self, path: str | os.PathLike[str], archive: str | os.PathLike[str] | None = None):
        self.path, self.archive = Path(path), Path(archive) if archive is not None else None
        self.lines = self.end = 0
        self.last = self.torn = b""

    def __iter__(self) -> Iterator[bytes]:
        self.lines = self.end = 0
        self.last = self.torn = b""
        files, reached = [], 0
        for segment in rolled_segments(self.path, self.archive):
            if segment.base != reached:
                raise JournalCorrupt(f"{self.path}: no segment holds bytes {reached} to {segment.base} (archived "
                                     "ones are read from the archive directory, when one is given)")
            files.append(segment.path)
            reached = segment.end
        rest, read = b"", 0
        for file in [*files, self.path]:
            with open(file, "rb") as f:
                while block := f.read(BLOCK):
                    read += len(block)
                    lines = (rest + block).split(b"\n")
                    rest = lines.pop()
                    if lines:
                        self.lines += len(lines)
                        self.end, self.last = read - len(rest), lines[-1]
                    yield from lines
        self.torn = rest


def _move(source: Path, target: Path) -> None:
    """Move a segment into the archive so that no crash leaves part of it under its name: a rename, or on another
    filesystem a copy under a temporary name, flushed, renamed, and only then the source removed (a segment found
    in both places is read from beside the journal, `rolled_segments`)."""
    try:
        os.rename(source, target)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    partial = target.with_name(f"{target.name}.partial")
    shutil.copyfile(source, partial)
    with open(partial, "rb") as copy:
        os.fsync(copy.fileno())
    os.rename(partial, target)
    _fsync_directory(target.parent)
    os.unlink(source)


def rolled_segments(path: Path, archive: Path | None) -> list[Segment]:
    """The rolled segments of the journal at `path`, found beside it and in `archive`, oldest first; one found in
    both is the one beside the journal, which a move to the archive removes only once its copy is whole."""
    pattern = re.compile(re.escape(path.name) + r"\.(\d{16})-(\d{16})")
    found: dict[int, Segment] = {}
    for folder in (path.parent, archive):
        if folder is None or not folder.is_dir():
            continue
        for child in folder.iterdir():
            match = pattern.fullmatch(child.name)
            if match:
                found.setdefault(int(match[1]), Segment(int(match[1]), int(match[2]), child))
    return [found[base] for base in sorted(found)]
