"""One effect's entries checked and folded in a single pass: its chain, each entry's shape, the order of sends and
resolutions, the claim epochs they were written under, and what the entries establish. A whole journal feeds every
effect's check as it streams by.

Held twice: what the entries say of a second copy at the service. There are never more landings than sends
(DISPATCHED and REDISPATCHED): a landing whose evidence differs from every one before it is another copy only while
fewer distinct landings are on record than sends were made by then (a late answer beside a resend's); otherwise it
is a landing already counted, described again (a recovery's lookup found it, then the stopped sender journaled its
send's own answer as LATE_RESULT). A send made while an earlier one was open or after one failed, and a lookup that
answered with a list of two or more copies (a lookup that answers with a list names every copy the service holds)
each count too; so does the service's own export, when the caller passes it."""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Iterator, Mapping

from ..kinds import AMBIGUOUS, COMMITTED, DISPATCHED, KINDS, LATE_RESULT, PROPOSED, REDISPATCHED, REFUSED
from ._entry import MISSING, Checks, Read, Shaped

COVERS = ("tamper_evident: every entry's hash recomputes and links to its predecessor. Unsigned, that rules "
          "out edits, reorders and deletions inside the chain, not a wholesale rewrite, a well-formed entry "
          "appended by whoever can write the file, or a cut tail; a valid signature over the head (signed: true) "
          "rules those out for whoever trusts the public key. Without a trusted key a signature proves nothing and "
          "is not checked (signed: null), so one made with another key shows only against the trusted one.")


class EffectCheck:
    """The running check of one effect; `feed` each entry in order, then make its `receipt`.

    A whole journal keeps one per effect, so the state is a few scalars: problem lists stay empty tuples until
    something is wrong, and the checks of the sends that count are folded as they come."""

    __slots__ = ("effect_id", "count", "previous", "last_seq", "chain", "shape", "order", "first", "open",
                 "resolved", "counted", "authorized", "held", "span", "span_authorized", "span_held", "sends",
                 "landings", "ambiguous", "twice", "refused_reason", "after_target_error", "evidence", "rechecked",
                 "epoch")

    def __init__(self, effect_id: str | None):
        self.effect_id = effect_id
        self.count = 0
        self.previous: str | None = None
        self.last_seq = -1
        self.chain: tuple[str, ...] = ()  # link and hash problems: what tamper evidence rests on
        self.shape: tuple[str, ...] = ()
        self.order: tuple[str, ...] = ()
        self.first: bool | None = None  # whether the first entry is anything but PROPOSED
        # whether a send is open (kinds.send_open_after, which every reader folds with) and the effect resolved
        self.open = self.resolved = False
        # the checks of the sends that may have fired (counted) and of those since the last resolution (span)
        self.counted = self.span = False
        self.authorized = self.held = self.span_authorized = self.span_held = True
        self.sends = 0  # DISPATCHED and REDISPATCHED so far: no more landings than these
        self.landings: tuple[Any, ...] = ()  # the evidence of each distinct landing
        self.ambiguous = False
        self.twice: tuple[str, ...] = ()  # what says the service may hold the effect more than once
        self.epoch = -1  # the highest claim epoch an entry of the effect was written under
        self.refused_reason: Any = None
        self.after_target_error = False
        self.evidence: Any = None
        self.rechecked: Any = None

    def state(self) -> tuple[Any, ...]:
        """Every field in slot order: what a check moved out of memory is stored as."""
        return _fields(self)

    @classmethod
    def restored(cls, state: tuple[Any, ...]) -> EffectCheck:
        """The check a `state` was taken from, to feed on or to make the receipt of."""
        check = cls.__new__(cls)
        # in slot order
        (check.effect_id, check.count, check.previous, check.last_seq, check.chain, check.shape, check.order,
         check.first, check.open, check.resolved, check.counted, check.authorized, check.held, check.span,
         check.span_authorized, check.span_held, check.sends, check.landings, check.ambiguous, check.twice,
         check.refused_reason, check.after_target_error, check.evidence, check.rechecked, check.epoch) = state
        return check

    def feed(self, entry: Read | None, holds: bool) -> None:
        """Check one more entry (None for a line that is not an object); `holds` says whether its stored hash
        recomputes."""
        if entry is None:
            self.chain += (f"entries[{self.count}]: not an object",)
            self.count += 1
            return
        if entry.effect_id != self.effect_id:
            self.chain += (f"entries[{self.count}]: effect_id {entry.effect_id!r} is not the bundle's "
                           f"{self.effect_id!r}",)
        self.feed_own(entry, holds)

    def feed_own(self, entry: Read, holds: bool) -> None:
        """`feed` an entry that names this effect, as every entry a whole journal finds this check by does.
        Written for the case with nothing wrong, with few attribute writes and the rest left to the entry's kind:
        a whole journal calls it once per entry."""
        i = self.count
        self.count = i + 1
        seq = entry.seq
        if holds and entry.effect_prev == self.previous and type(seq) is int and seq > self.last_seq:
            self.last_seq = seq
        else:
            self._unlinked(i, entry, holds)
        self.previous = entry.hash
        kind = entry.kind
        if self.first is None:
            self.first = kind != PROPOSED
        if type(entry) is Shaped:  # the decoder checked its shape: a known kind, an object or nothing rechecked
            if entry.rechecked is not MISSING:
                self.rechecked = entry.rechecked
            fold = _FOLDS.get(kind)
        else:
            fold = self._fold_of_unshaped(i, entry)
        if fold is not None:
            fold(self, i, entry)

    def _fold_of_unshaped(self, i: int, entry: Read) -> Any:
        """Check the shape of an entry the decoder did not shape, take what it rechecked, and return its fold."""
        self._shape(i, entry)
        kind, rechecked = entry.kind, entry.rechecked
        if rechecked is not MISSING and type(rechecked) is dict:
            self.rechecked = rechecked
        return _FOLDS.get(kind) if type(kind) is str else None  # an unhashable kind is named by _shape

    def _shape(self, i: int, entry: Read) -> None:
        """Say what is first wrong with the shape of entry `i`, if anything."""
        kind, ts = entry.kind, entry.ts
        if type(kind) is not str or kind not in KINDS:
            self.shape += (f"entries[{i}].kind: unknown kind {kind!r}",)
        elif type(ts) not in (int, float):
            self.shape += (f"entries[{i}].ts: missing or not a number",)
        elif entry.checks is not MISSING and type(entry.checks) is not dict:
            self.shape += (f"entries[{i}].checks: expected an object",)
        elif entry.rechecked is not MISSING and type(entry.rechecked) is not dict:
            self.shape += (f"entries[{i}].rechecked: expected an object",)

    def _unlinked(self, i: int, entry: Read, holds: bool) -> None:
        """Say what is wrong with entry `i`'s place in the effect's chain, taking its seq when it follows."""
        if not holds:
            self.chain += (f"entries[{i}]: hash does not match the entry's content",)
        if entry.effect_prev != self.previous:
            self.chain += (f"entries[{i}]: effect_prev does not link to the entry before it",)
        seq = entry.seq
        if type(seq) is not int or seq <= self.last_seq:
            self.chain += (f"entries[{i}]: seq {seq!r} does not follow {self.last_seq}",)
        else:
            self.last_seq = seq

    # One fold per kind that changes the effect's standing, each written flat for the case with nothing wrong.

    def _dispatched(self, i: int, entry: Read) -> None:
        epoch = entry.epoch
        if type(epoch) is int and epoch > self.epoch:
            self.epoch = epoch
        if self.open:
            self.twice += (f"entries[{i}]: a second DISPATCHED while the first send was open",)
        elif self.after_target_error:
            self.twice += (f"entries[{i}]: a DISPATCHED after a send that failed and may have landed",)
        self.sends += 1
        self.open = self.span = True
        checks = entry.checks
        if type(checks) is Checks:
            self.span_authorized = checks.lease_live is True
            self.span_held = checks.violations == []
        elif type(checks) is dict:  # an entry the decoder did not shape
            self.span_authorized = checks.get("lease_live") is True
            self.span_held = checks.get("violations") == []
        else:
            self.span_authorized = self.span_held = False

    def _redispatched(self, i: int, entry: Read) -> None:
        epoch = entry.epoch
        if type(epoch) is int and epoch > self.epoch:
            self.epoch = epoch
        self.sends += 1
        self.open = self.span = True
        checks = entry.rechecked if type(entry.rechecked) is dict else {}
        self.span_authorized = self.span_authorized and checks.get("lease_live") is True
        self.span_held = self.span_held and checks.get("violations") == []

    def _committed(self, i: int, entry: Read) -> None:
        self._resolution(i, entry, COMMITTED)
        evidence = entry.result
        looked = evidence is MISSING  # what a lookup found, not what a send answered
        if looked:
            evidence = _found(entry)
        self.evidence = evidence
        if self.landings or (looked and isinstance(evidence, list)):
            self._landed(i, evidence, looked)
        else:
            self.landings = (evidence,)
        self._count_span()
        self.open = self.ambiguous = False

    def _refused(self, i: int, entry: Read) -> None:
        self._resolution(i, entry, REFUSED)
        self.refused_reason = entry.reason
        self.after_target_error = entry.code == "target_error"
        self.span, self.span_authorized, self.span_held = False, True, True
        self.open = False

    def _ambiguous(self, i: int, entry: Read) -> None:
        self._resolution(i, entry, AMBIGUOUS)
        self._count_span()
        self.open, self.ambiguous = False, True

    def _late_result(self, i: int, entry: Read) -> None:
        epoch = entry.epoch
        if type(epoch) is int and epoch > self.epoch:
            self.epoch = epoch
        if entry.late_kind == COMMITTED:
            if not self.sends:
                self.order += (f"entries[{i}]: a late answer that the effect landed, with no send on record",)
            late = entry.result
            looked = late is MISSING
            if looked:
                late = _found(entry)
            self._landed(i, late, looked)
            self.evidence = self.evidence if self.evidence is not None else late

    def _resolution(self, i: int, entry: Read, kind: str) -> None:
        """The order a resolution keeps. The journal never holds a second resolution or a result with no send
        open: it stores a late answer as LATE_RESULT and the gate resolves only what it sent, so each is forged; nor
        an answer journaled under a claim epoch after a later one took the effect over."""
        settling = entry.resolves is not False  # a refusal before any send leaves the effect open
        if settling and self.resolved:
            self.order += (f"entries[{i}]: {kind} after the effect was already resolved",)
        elif kind != REFUSED and not self.open:
            self.order += (f"entries[{i}]: {kind} with no send open",)
        if settling:
            self.resolved = True
        epoch = entry.epoch
        if type(epoch) is int:
            if epoch < self.epoch:  # the journal keeps a superseded answer as LATE_RESULT
                self.order += (f"entries[{i}]: {kind} journaled by claim epoch {epoch} after epoch {self.epoch} "
                               "took the effect over",)
            else:
                self.epoch = epoch

    def _count_span(self) -> None:
        """The sends since the last resolution may have fired: their checks count."""
        if self.span:
            self.counted = True
            self.authorized = self.authorized and self.span_authorized
            self.held = self.held and self.span_held
        self.span, self.span_authorized, self.span_held = False, True, True

    def _landed(self, i: int, evidence: Any, looked: bool) -> None:
        """One more answer saying the effect landed: the same landing again is one effect, another is a copy while
        the sends made outnumber the landings counted, else one of those described again; a lookup (`looked`) that
        found a list of two or more found as many copies, where a send's answer that is a list is just its answer."""
        if looked and isinstance(evidence, list) and len(evidence) > 1:
            self.twice += (f"entries[{i}]: the lookup found {len(evidence)} copies",)
        if evidence in self.landings or (self.landings and 0 < self.sends <= len(self.landings)):
            return  # with no send on record (a problem of its own) every unlike answer still counts
        if self.landings:
            self.twice += (f"entries[{i}]: a second landing, its evidence unlike the first's",)
        self.landings += (evidence,)

    def against_service(self, copies: int) -> list[str]:
        """Hold the record to the number of copies the service's own export says it holds; returns the
        disagreements (a copy held twice shows in `held_twice`)."""
        happened = self.happened()
        if happened is True and copies == 0:
            return ["service: holds no copy of an effect the record says landed"]
        if happened is False and copies > 0:
            return [f"service: holds {copies} cop{'y' if copies == 1 else 'ies'} of an effect the record says never "
                    "landed"]
        return []

    def problems(self) -> list[str]:
        """Every problem found, chain first."""
        if self.first:
            return [*self.chain, *self.shape, "entries[0]: the first entry is not PROPOSED", *self.order]
        return [*self.chain, *self.shape, *self.order]

    def clean(self) -> bool:
        """Whether the receipt is valid with nothing held twice before a service's export is held to it: true of
        most effects of a long journal, which then add nothing to its verdict."""
        return not (self.twice or self.chain or self.shape or self.first or self.order)

    def happened(self) -> Any:
        """True once a landing is on record, "unknown" while a send is open or ambiguous, else False."""
        return True if self.landings else ("unknown" if self.open or self.ambiguous else False)


_fields = attrgetter(*EffectCheck.__slots__)
_FOLDS = {DISPATCHED: EffectCheck._dispatched, REDISPATCHED: EffectCheck._redispatched,
          COMMITTED: EffectCheck._committed, REFUSED: EffectCheck._refused, AMBIGUOUS: EffectCheck._ambiguous,
          LATE_RESULT: EffectCheck._late_result}


def receipt(check: EffectCheck, signed: bool | None, extra: list[str],
            service: Mapping[str, int] | None) -> dict[str, Any]:
    """One effect's receipt from its finished check: valid, what it establishes, whether or not the entries verify,
    and every problem; with the copies the service says it holds when its export is given. As in the published
    receipts, `happened_once` says nothing shows a second copy (`held_twice` is empty), whether or not the effect
    happened at all: `happened` says that."""
    copies = None if service is None else service.get(check.effect_id or "", 0)
    problems = check.problems()
    if extra:
        problems += extra
    twice = [*check.twice]
    if copies is not None:
        problems += check.against_service(copies)
        if copies > 1:
            twice.append(f"service: holds {copies} copies")
    happened = check.happened()
    fired = check.counted or check.span
    return {
        "effect_id": check.effect_id,
        "format": "chained",
        "valid": not problems,
        "tamper_evident": not check.chain,
        "signed": signed,
        "happened": happened,
        "happened_once": not twice,
        "held_twice": twice,
        "authorized_when_fired": (check.authorized and check.span_authorized) if fired else None,
        "assumptions_held": (check.held and check.span_held) if fired else None,
        "refused": check.refused_reason if happened is not True else None,
        "evidence": check.evidence,
        "rechecked_at_recovery": check.rechecked,
        "service_copies": copies,
        "problems": problems,
        "covers": COVERS,
    }


class Receipts(Mapping[str, dict[str, Any]]):
    """Every effect's receipt by id, in the order the journal first names them, each made from its finished check
    when it is read: a whole journal's verdict needs none of them, and a reader often wants a few."""

    def __init__(self, checks: dict[str, EffectCheck], service: Mapping[str, int] | None):
        self._checks, self._service = checks, service

    def __getitem__(self, effect_id: str) -> dict[str, Any]:
        return receipt(self._checks[effect_id], None, [], self._service)

    def __iter__(self) -> Iterator[str]:
        return iter(self._checks)

    def __len__(self) -> int:
        return len(self._checks)

    def __repr__(self) -> str:
        return f"Receipts({len(self)} effects)"


def _found(entry: Read) -> Any:
    """What a result entry with no result says landed: what a lookup found, if it says."""
    return entry.found if entry.found is not MISSING else None
