"""A whole journal checked in one streamed pass: the chain across all effects, an optional signed checkpoint, and
each effect's running check, whose receipts are made afterwards one at a time, as often as a reader asks.

Given a bound (`kept`), memory stays flat however many effects the journal settles: the running checks of at most
that many effects, those brought into memory last, are held; the others wait on disk (`_spill.Spilled`) until a
later entry names them, and the receipts are read back from there in the order the journal first named them."""

from __future__ import annotations

from hashlib import sha256
from itertools import islice
from typing import Any, Iterable, Iterator, Mapping

from ..canonical import HASH_FIELD, HASH_SUFFIX, hash_holds
from ..signing import checkpoint_statement, signature_holds
from ._check import COVERS, EffectCheck, Receipts, receipt
from ._entry import DECODE_ERRORS, Entry, Read, as_entry, decode_shaped, read_line, read_slowly
from ._spill import Spilled


def read(item: Any) -> tuple[Entry | None, bool]:
    """(entry, whether its hash holds) of an item given as an entry (dict) or a stored line (bytes)."""
    if type(item) is bytes:
        return read_line(item)
    if type(item) is dict:
        return as_entry(item), hash_holds(item)
    return None, False


_NOBODY: Any = object()  # equal to no effect id
_EMPTY = sha256()


class JournalCheck:
    """`scan` a journal's entries once, then read `summary` and iterate `receipts`, and `close` it (or use it as a
    context manager); never the entries or every receipt at once are kept, only each effect's running check, and
    in memory only `kept` of them when a bound is given (about 1 KB each): past it, the half longest in memory go
    to disk, for some 15 microseconds of CPU per effect stored and read back."""

    def __init__(self, *, public_key: str | None = None, checkpoint: dict[str, Any] | None = None,
                 service: Mapping[str, int] | None = None, kept: int | None = None):
        self.public_key, self.checkpoint, self.service, self.kept = public_key, checkpoint, service, kept
        self.chain: list[str] = []  # journal-wide problems: links, hashes, the checkpoint
        self.entries = 0
        self.effects = 0  # how many effects the journal names
        self.signed: bool | None = None
        self._checks: dict[str, EffectCheck] = {}  # the effects in memory, in the order they came into it
        self._ordinals: dict[str, int] = {}  # where the journal first named each effect in memory
        self._spilled: Spilled | None = None  # the others, once there are too many to hold
        # the effects the service says it holds that the journal has not named yet
        self._unnamed = {eid for eid, copies in (service or {}).items() if copies > 0}

    def __enter__(self) -> JournalCheck:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def scan(self, entries: Iterable[Any]) -> None:
        """Check every entry in order: its place in the journal-wide chain, then its effect's running check. Written
        flat, with the stored line read in place: this loop runs once per entry."""
        problems = self.chain
        previous: str | None = None
        wanted = self.checkpoint.get("seq") if self.checkpoint is not None else None
        at_checkpoint: Any = None
        i = -1
        found = self._checks.get
        fresh = _EMPTY.copy
        entry: Read | None
        named: Any = _NOBODY  # the effect of the last entry that named one, whose check is `check`: entries cluster
        for i, item in enumerate(entries):
            if type(item) is bytes:
                try:
                    entry = decode_shaped(item)
                except DECODE_ERRORS:
                    entry, holds = read_line(item)
                else:
                    # canonical.laid_out_holds written out: the hash field at its place, over the bytes before it
                    holds = item[-HASH_SUFFIX:-66] == HASH_FIELD and item[-2:] == b'"}'
                    if holds:
                        digest = fresh()  # a copy of an empty digest: cheaper than a new one
                        digest.update(item[:-HASH_SUFFIX] + b"}")
                        holds = digest.hexdigest() == entry.hash
                    if not holds:
                        entry, holds = read_slowly(item)
            else:
                entry, holds = read(item)
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
            if eid != named:
                if type(eid) is not str:
                    continue
                check = found(eid) or self._named(eid)  # `_named` may set checks aside, never the one it returns
                named = eid
            check.feed_own(entry, holds)
        self.entries = i + 1
        if self.checkpoint is not None:
            self.signed, unheld = _checkpoint(i + 1, at_checkpoint, self.checkpoint, self.public_key)
            problems += unheld

    def receipts(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """(effect id, receipt) of every effect, in the order the journal first names them."""
        service = self.service
        for eid, check in self._in_order():
            yield eid, receipt(check, None, [], service)

    def by_id(self) -> Receipts:
        """Every effect's receipt by id, each made when it is read; for a check that holds every effect in memory
        (no `kept`), since one bounded reads its receipts back from disk in order (`receipts`)."""
        if self.kept is not None:
            raise ValueError("a check with a bound on the effects it keeps gives its receipts in order: `receipts`")
        return Receipts(self._checks, self.service)

    def summary(self) -> dict[str, Any]:
        """The journal's verdict without the per-effect receipts: valid, tamper evident, signed, every problem."""
        problems = list(self.chain)
        valid, held_twice = True, []
        for eid, standing in self._standings():
            if standing is not None:
                named, effect_valid, held = standing
                problems += named
                valid = valid and effect_valid
                if held:
                    held_twice.append(eid)
        problems += self.unnamed()
        return {
            "valid": not problems and valid,
            "tamper_evident": not self.chain,
            "signed": self.signed,
            "entries": self.entries,
            "held_twice": sorted(held_twice),
            "problems": problems,
            "covers": COVERS,
        }

    def unnamed(self) -> list[str]:
        """A problem for each effect the service's export holds that the journal does not name."""
        return [f"service: holds {_copies(copies)} of effect {eid}, which the journal does not name"
                for eid, copies in sorted((self.service or {}).items()) if eid in self._unnamed]

    def close(self) -> None:
        """Remove what was moved to disk; the receipts cannot be read after."""
        if self._spilled is not None:
            self._spilled.close()
            self._spilled = None
            self._checks.clear()

    def _named(self, eid: str) -> EffectCheck:
        """The running check of an effect not in memory: found again on disk, else a new one."""
        checks, kept = self._checks, self.kept
        if kept is None:  # all in memory, in the order the journal names them
            checks[eid] = check = EffectCheck(eid)
            self.effects += 1
            self._unnamed.discard(eid)
            return check
        if len(checks) >= kept:
            self._spill(len(checks) - kept // 2)
        back = self._spilled.take(eid) if self._spilled is not None else None
        if back is None:
            ordinal, check = self.effects, EffectCheck(eid)
            self.effects += 1
            self._unnamed.discard(eid)
        else:
            ordinal, check = back
        checks[eid] = check
        self._ordinals[eid] = ordinal
        return check

    def _spill(self, count: int) -> None:
        """Move the `count` effects longest in memory to disk, each with its share of the journal's verdict as it
        stands (a later entry of the effect brings it back, and it is stored again)."""
        if self._spilled is None:
            self._spilled = Spilled()
        checks, ordinals = self._checks, self._ordinals
        rows = []
        for eid in list(islice(checks, count)):
            check = checks.pop(eid)
            rows.append((ordinals.pop(eid), eid, check, self._standing(eid, check)))
        self._spilled.put(rows)

    def _in_order(self) -> Iterable[tuple[str, EffectCheck]]:
        """(id, running check) of every effect in first-named order."""
        spilled = self._on_disk()
        return self._checks.items() if spilled is None else spilled.checks()

    def _standings(self) -> Iterable[tuple[str, Any]]:
        """(id, share of the verdict or None) of every effect in memory, or of every effect on disk that has one,
        in first-named order."""
        spilled = self._on_disk()
        if spilled is not None:
            return spilled.standings()
        return ((eid, self._standing(eid, check)) for eid, check in self._checks.items())

    def _standing(self, eid: str, check: EffectCheck) -> tuple[list[str], bool, bool] | None:
        """What the effect adds to the journal's verdict as its check stands."""
        if self.service is None and check.clean():
            return None
        return _standing(eid, receipt(check, None, [], self.service))

    def _on_disk(self) -> Spilled | None:
        """The store on disk, once any effect went there, with the effects still in memory moved to it too."""
        if self._spilled is not None and self._checks:
            self._spill(len(self._checks))
        return self._spilled


def _standing(eid: str, outcome: dict[str, Any]) -> tuple[list[str], bool, bool] | None:
    """What one effect's receipt adds to the journal's verdict: its problems beyond single entries, whether it is
    valid, whether it is held twice; None when it adds nothing (valid, so without problems, and held once)."""
    if outcome["valid"] and not outcome["held_twice"]:
        return None
    return ([f"effect {eid}: {p}" for p in outcome["problems"] if not p.startswith("entries[")], outcome["valid"],
            bool(outcome["held_twice"]))


def _copies(count: int) -> str:
    return f"{count} cop{'y' if count == 1 else 'ies'}"


def _links(i: int, entry: Read, previous: str | None, holds: bool) -> list[str]:
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
    if public_key is not None and not signed:  # with no key, the checkpoint holds the journal to its head alone
        problems.append("checkpoint: signature missing or does not verify against the given public key")
    if not isinstance(seq, int) or seq < -1:
        problems.append(f"checkpoint.seq: {seq!r} is not a journal position")
    elif seq >= count:
        problems.append(f"checkpoint: the journal ends at seq {count - 1}, before the checkpoint's seq {seq} "
                        "(tail cut)")
    elif (found if seq >= 0 else None) != head:
        problems.append(f"checkpoint: entry {seq} differs from the signed head (rewritten)")
    return signed, problems
