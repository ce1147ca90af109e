"""The append-only JSONL journal: one hash chain over every entry, O(1) appends, shared safely by processes."""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from .canonical import entry_hash, hash_holds
from .errors import JournalCorrupt
from .kinds import KINDS, PROPOSED, RESOLUTIONS, SENDS, LATE_RESULT, settles


@dataclass
class EffectRecord:
    """What the journal knows about one effect, kept in memory so a lookup never rescans the file."""

    effect_id: str
    offsets: list[int] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    last_hash: str | None = None
    payload_hash: str | None = None
    open_dispatch: bool = False
    resolution: dict[str, Any] | None = None

    def add(self, entry: dict[str, Any], position: int) -> None:
        """Fold one more of this effect's entries in; `position` is where a backend can read it back."""
        kind = entry["kind"]
        self.offsets.append(position)
        self.kinds.append(kind)
        self.last_hash = entry["hash"]
        if kind == PROPOSED:
            self.payload_hash = entry.get("payload_hash")
        elif kind in SENDS:
            self.open_dispatch = True
        elif settles(entry):
            self.open_dispatch = False
            self.resolution = entry


def seal(kind: str, effect_id: str, data: dict[str, Any], *, seq: int, prev: str | None,
         record: EffectRecord | None, late: bool = False) -> dict[str, Any]:
    """The next entry, linked and hashed; a resolution that comes late (the effect is already resolved, or the
    writer's claim was taken over) is kept as LATE_RESULT, never as a second resolution."""
    if kind not in KINDS:
        raise ValueError(f"unknown journal kind {kind!r}")
    if kind in RESOLUTIONS and (late or (record is not None and record.resolution is not None)):
        data = {"late_kind": kind, **data}
        kind = LATE_RESULT
    entry: dict[str, Any] = {"seq": seq, "ts": time.time(), "kind": kind, "effect_id": effect_id}
    entry.update(data)
    entry["prev"] = prev
    entry["effect_prev"] = record.last_hash if record else None
    entry["hash"] = entry_hash(json.loads(json.dumps(entry)))
    return entry


def encode(entry: dict[str, Any]) -> bytes:
    """One journal line, exactly as every backend stores it."""
    return (json.dumps(entry, separators=(",", ":"), ensure_ascii=True) + "\n").encode()


class Journal:
    """A JSONL journal file whose entries chain by `seq` and `prev` across all effects.

    Every process appends under an exclusive flock and first reads whatever other processes appended since
    its last look, so an append costs O(entries added by others), never O(journal size).
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.torn: list[str] = []
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self._mutex = threading.Lock()
        self._offset = 0
        self._line = 0
        self._seq = -1
        self._last: str | None = None
        self._effects: dict[str, EffectRecord] = {}
        try:
            self.refresh()
        except BaseException:
            os.close(self._fd)
            raise

    def close(self) -> None:
        """Release the file descriptor."""
        os.close(self._fd)

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def head(self) -> tuple[int, str | None]:
        """(seq, hash) of the last entry this process has seen."""
        return self._seq, self._last

    def __len__(self) -> int:
        return self._seq + 1

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with self._mutex:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                self._catch_up()
                yield
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def refresh(self) -> None:
        """Read entries other processes appended since this process last looked."""
        with self._locked():
            pass

    def append(self, kind: str, effect_id: str, data: dict[str, Any]) -> dict[str, Any]:
        """Durably append one entry (fsync'd before returning) and return it as stored.

        A resolution for an effect that something else already resolved is stored as LATE_RESULT instead:
        a stale sender's answer is kept, never allowed to overwrite the resolution.
        """
        with self._locked():
            entry = seal(kind, effect_id, data, seq=self._seq + 1, prev=self._last,
                         record=self._effects.get(effect_id))
            line = encode(entry)
            offset = os.lseek(self._fd, 0, os.SEEK_END)
            os.write(self._fd, line)
            os.fsync(self._fd)
            self._index(entry, offset)
            self._offset = offset + len(line)
            self._line += 1
            return entry

    def effect(self, effect_id: str) -> EffectRecord | None:
        """The folded state of one effect, or None if the journal never saw it."""
        return self._effects.get(effect_id)

    def open_dispatches(self) -> list[EffectRecord]:
        """Effects whose last send has no resolution: what recovery must settle."""
        self.refresh()
        return [r for r in self._effects.values() if r.open_dispatch]

    def entries(self, effect_id: str | None = None) -> list[dict[str, Any]]:
        """Every stored entry, or one effect's, read back from the file."""
        if effect_id is None:
            with open(self.path, "rb") as f:
                return [json.loads(line) for line in f if line.endswith(b"\n")]
        record = self._effects.get(effect_id)
        if record is None:
            return []
        out = []
        for offset in record.offsets:
            out.append(json.loads(_read_line(self._fd, offset)))
        return out

    def _catch_up(self) -> None:
        size = os.fstat(self._fd).st_size
        if size == self._offset:
            return
        if size < self._offset:
            raise JournalCorrupt(f"{self.path}: shrank from {self._offset} to {size} bytes (entries were removed)")
        chunk = os.pread(self._fd, size - self._offset, self._offset)
        end = chunk.rfind(b"\n") + 1
        if end < len(chunk):
            self._set_aside_torn(chunk[end:], self._offset + end)
        for raw in chunk[:end].split(b"\n")[:-1]:
            self._index(self._parse(raw), self._offset)
            self._line += 1
            self._offset += len(raw) + 1

    def _set_aside_torn(self, tail: bytes, at: int) -> None:
        with open(str(self.path) + ".torn", "ab") as side:
            side.write(tail + b"\n")
            side.flush()
            os.fsync(side.fileno())
        os.ftruncate(self._fd, at)
        os.fsync(self._fd)
        self.torn.append(tail.decode("utf-8", "replace"))

    def _parse(self, raw: bytes) -> dict[str, Any]:
        where = f"{self.path}:{self._line + 1}"
        try:
            entry = json.loads(raw)
        except ValueError as exc:
            raise JournalCorrupt(f"{where}: not a JSON line ({exc.msg})") from None
        if not isinstance(entry, dict):
            raise JournalCorrupt(f"{where}: entry is not a JSON object")
        for key, kind in (("seq", int), ("kind", str), ("effect_id", str), ("hash", str), ("ts", (int, float))):
            if not isinstance(entry.get(key), kind):
                raise JournalCorrupt(f"{where}: field {key!r} missing or of the wrong type")
        if entry["kind"] not in KINDS:
            raise JournalCorrupt(f"{where}: unknown kind {entry['kind']!r}")
        if entry["seq"] != self._seq + 1:
            raise JournalCorrupt(f"{where}: seq {entry['seq']} where {self._seq + 1} was expected")
        if entry.get("prev") != self._last:
            raise JournalCorrupt(f"{where}: prev does not link to the entry before it")
        record = self._effects.get(entry["effect_id"])
        if entry.get("effect_prev") != (record.last_hash if record else None):
            raise JournalCorrupt(f"{where}: effect_prev does not link to the effect's previous entry")
        if not hash_holds(entry):
            raise JournalCorrupt(f"{where}: hash does not match the entry's content")
        return entry

    def _index(self, entry: dict[str, Any], offset: int) -> None:
        eid = entry["effect_id"]
        record = self._effects.get(eid)
        if record is None:
            record = self._effects[eid] = EffectRecord(eid)
        record.add(entry, offset)
        self._seq = entry["seq"]
        self._last = entry["hash"]


def _read_line(fd: int, offset: int) -> bytes:
    buf = b""
    while not buf.endswith(b"\n"):
        more = os.pread(fd, 4096, offset + len(buf))
        if not more:
            break
        buf += more
        if b"\n" in more:
            buf = buf[: buf.index(b"\n") + 1]
            break
    return buf
