"""A whole journal checked in one streamed pass: the chain across all effects, an optional signed checkpoint, and
each effect's running check, whose receipts are made afterwards one at a time, as often as a reader asks."""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping

from ..canonical import hash_holds
from ..signing import checkpoint_statement, signature_holds
from ._check import COVERS, EffectCheck, receipt
from ._entry import Entry, as_entry, read_line


def read(item: Any) -> tuple[Entry | None, bool]:
    """(entry, whether its hash holds) of an item given as an entry (dict) or a stored line (bytes)."""
    if type(item) is bytes:
        return read_line(item)
    if type(item) is dict:
        return as_entry(item), hash_holds(item)
    return None, False


class JournalCheck:
    """`scan` a journal's entries once, then read `summary` and iterate `receipts`; only each effect's running
    check is kept, never the entries or every receipt at once."""

    def __init__(self, *, public_key: str | None = None, checkpoint: dict[str, Any] | None = None,
                 service: Mapping[str, int] | None = None):
        self.public_key, self.checkpoint, self.service = public_key, checkpoint, service
        self.checks: dict[str, EffectCheck] = {}
        self.chain: list[str] = []  # journal-wide problems: links, hashes, the checkpoint
        self.entries = 0
        self.signed: bool | None = None

    def scan(self, entries: Iterable[Any]) -> None:
        """Check every entry in order: its place in the journal-wide chain, then its effect's running check."""
        problems, checks = self.chain, self.checks
        previous: str | None = None
        wanted = self.checkpoint.get("seq") if self.checkpoint is not None else None
        at_checkpoint: Any = None
        i = -1
        found = checks.get  # bound once: this loop runs once per entry
        for i, item in enumerate(entries):
            entry, holds = read_line(item) if type(item) is bytes else read(item)
            if entry is None:
                problems.append(f"entries[{i}]: not an object")
                previous = None
                continue
            if entry.seq != i or entry.prev != previous or not holds:
                problems += _links(i, entry, previous, holds)
            previous = entry.hash
            if i == wanted:
                at_checkpoint = previous
            eid = entry.effect_id
            check = found(eid) if type(eid) is str else None
            if check is None:
                if type(eid) is not str:
                    continue
                check = checks[eid] = EffectCheck(eid)
            check.feed(entry, holds)
        self.entries = i + 1
        if self.checkpoint is not None:
            self.signed, unheld = _checkpoint(i + 1, at_checkpoint, self.checkpoint, self.public_key)
            problems += unheld

    def receipts(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """(effect id, receipt) of every effect, in the order the journal first names them."""
        for eid, check in self.checks.items():
            yield eid, receipt(check, None, [], self.service)

    def summary(self, receipts: Iterable[tuple[str, dict[str, Any]]] | None = None) -> dict[str, Any]:
        """The journal's verdict without the per-effect receipts: valid, tamper evident, signed, every problem;
        from `receipts` when the caller already made them."""
        problems = list(self.chain)
        valid, held_twice = True, []
        for eid, outcome in self.receipts() if receipts is None else receipts:
            problems += [f"effect {eid}: {p}" for p in outcome["problems"] if not p.startswith("entries[")]
            valid = valid and outcome["valid"]
            if outcome["held_twice"]:
                held_twice.append(eid)
        problems += [f"service: holds {_copies(copies)} of effect {eid}, which the journal does not name"
                     for eid, copies in sorted((self.service or {}).items()) if copies > 0 and eid not in self.checks]
        return {
            "valid": not problems and valid,
            "tamper_evident": not self.chain,
            "signed": self.signed,
            "entries": self.entries,
            "held_twice": sorted(held_twice),
            "problems": problems,
            "covers": COVERS,
        }


def _copies(count: int) -> str:
    return f"{count} cop{'y' if count == 1 else 'ies'}"


def _links(i: int, entry: Entry, previous: str | None, holds: bool) -> list[str]:
    """What is wrong with entry `i`'s place in the journal-wide chain."""
    problems = []
    if entry.seq != i:
        problems.append(f"entries[{i}]: seq {entry.seq!r} where {i} was expected")
    if entry.prev != previous:
        problems.append(f"entries[{i}]: prev does not link to the entry before it")
    if not holds:
        problems.append(f"entries[{i}]: hash does not match the entry's content")
    return problems


def _checkpoint(count: int, found: Any, checkpoint: dict[str, Any], public_key: str | None) -> tuple[bool, list[str]]:
    """Hold a journal of `count` entries, whose entry at the checkpoint's seq hashes to `found`, to `checkpoint`."""
    problems = []
    seq, head = checkpoint.get("seq"), checkpoint.get("head")
    signed = public_key is not None and signature_holds(checkpoint.get("signature"),
                                                        checkpoint_statement(seq if isinstance(seq, int) else -1, head),
                                                        public_key)
    if not signed:
        problems.append("checkpoint: signature missing or does not verify against the given public key")
    if not isinstance(seq, int) or seq < -1:
        problems.append(f"checkpoint.seq: {seq!r} is not a journal position")
    elif seq >= count:
        problems.append(f"checkpoint: the journal ends at seq {count - 1}, before the checkpoint's seq {seq} "
                        "(tail cut)")
    elif (found if seq >= 0 else None) != head:
        problems.append(f"checkpoint: entry {seq} differs from the signed head (rewritten)")
    return signed, problems
