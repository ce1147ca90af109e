"""One effect's entries checked and folded in a single pass: its chain, each entry's shape, the order of sends and
resolutions, the claim epochs they were written under, and what the entries establish. A whole journal feeds every
effect's check as it streams by.

Held twice: what the entries say of a second copy at the service. A second landing whose evidence differs from
the first (a late answer beside a resend's), a send made while an earlier one was open or after one failed, and a
lookup that answered with a list of two or more copies (a lookup that answers with a list names every copy the
service holds) each count; so does the service's own export, when the caller passes it."""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Mapping

from ..kinds import (AMBIGUOUS, COMMITTED, DISPATCHED, KINDS, LATE_RESULT, PROPOSED, REDISPATCHED, REFUSED,
                     RESOLUTIONS, send_open_after)
from ._entry import MISSING, Entry

COVERS = ("tamper_evident: every entry's hash recomputes and links to its predecessor. Unsigned, that rules "
          "out edits, reorders and deletions inside the chain, not a wholesale rewrite, a well-formed entry "
          "appended by whoever can write the file, or a cut tail; a valid signature over the head (signed: true) "
          "rules those out for whoever trusts the public key. Without a trusted key a signature proves nothing and "
          "is not checked (signed: null), so one made with another key shows only against the trusted one.")
FOLDED = frozenset({DISPATCHED, REDISPATCHED, COMMITTED, REFUSED, AMBIGUOUS, LATE_RESULT})


class EffectCheck:
    """The running check of one effect; `feed` each entry in order, then read `problems` and `established`.

    A whole journal keeps one per effect, so the state is a few scalars: problem lists stay empty tuples until
    something is wrong, and the checks of the sends that count are folded as they come."""

    __slots__ = ("effect_id", "count", "previous", "last_seq", "chain", "shape", "order", "first",
                 "order_open", "order_resolved", "counted", "authorized", "held", "span", "span_authorized",
                 "span_held", "landings", "open_dispatch", "ambiguous", "twice", "refused_reason",
                 "after_target_error", "evidence", "rechecked", "epoch")

    def __init__(self, effect_id: str | None):
        self.effect_id = effect_id
        self.count = 0
        self.previous: str | None = None
        self.last_seq = -1
        self.chain: tuple[str, ...] = ()  # link and hash problems: what tamper evidence rests on
        self.shape: tuple[str, ...] = ()
        self.order: tuple[str, ...] = ()
        self.first: str | None = None
        self.order_open = self.order_resolved = False
        # the checks of the sends that may have fired (counted) and of those since the last resolution (span)
        self.counted = self.span = False
        self.authorized = self.held = self.span_authorized = self.span_held = True
        self.landings: tuple[Any, ...] = ()  # the evidence of each distinct landing
        self.open_dispatch = self.ambiguous = False
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
        (check.effect_id, check.count, check.previous, check.last_seq, check.chain, check.shape, check.order,
         check.first, check.order_open, check.order_resolved, check.counted, check.authorized, check.held,
         check.span, check.span_authorized, check.span_held, check.landings, check.open_dispatch, check.ambiguous,
         check.twice, check.refused_reason, check.after_target_error, check.evidence, check.rechecked,
         check.epoch) = state  # in slot order, as `state` lists them
        return check

    def feed(self, entry: Entry | None, holds: bool) -> None:
        """Check one more entry (None for a line that is not an object); `holds` says whether its stored hash
        recomputes. Written flat, as one function with few attribute writes: a whole journal calls it once per
        entry."""
        i = self.count
        self.count = i + 1
        if entry is None:
            self.chain += (f"entries[{i}]: not an object",)
            return
        kind = entry.kind
        if entry.effect_id != self.effect_id:
            self.chain += (f"entries[{i}]: effect_id {entry.effect_id!r} is not the bundle's {self.effect_id!r}",)
        if not holds:
            self.chain += (f"entries[{i}]: hash does not match the entry's content",)
        if entry.effect_prev != self.previous:
            self.chain += (f"entries[{i}]: effect_prev does not link to the entry before it",)
        seq = entry.seq
        if type(seq) is not int or seq <= self.last_seq:
            self.chain += (f"entries[{i}]: seq {seq!r} does not follow {self.last_seq}",)
        else:
            self.last_seq = seq
        self.previous = entry.hash
        if self.first is None:
            self.first = kind if kind is not None else ""
        if kind not in KINDS:
            self.shape += (f"entries[{i}].kind: unknown kind {kind!r}",)
        elif type(entry.ts) not in (int, float):
            self.shape += (f"entries[{i}].ts: missing or not a number",)
        elif entry.checks is not MISSING and type(entry.checks) is not dict:
            self.shape += (f"entries[{i}].checks: expected an object",)
        elif entry.rechecked is not MISSING and type(entry.rechecked) is not dict:
            self.shape += (f"entries[{i}].rechecked: expected an object",)
        # The journal never holds a second resolution or a result with no send open: it stores a late answer as
        # LATE_RESULT and the gate resolves only what it sent, so each is forged.
        if kind in RESOLUTIONS:
            settling = entry.resolves is not False  # a refusal before any send leaves the effect open
            if settling and self.order_resolved:
                self.order += (f"entries[{i}]: {kind} after the effect was already resolved",)
            elif kind != REFUSED and not self.order_open:
                self.order += (f"entries[{i}]: {kind} with no send open",)
            self.order_resolved = self.order_resolved or settling
        self.order_open = send_open_after(self.order_open, kind)
        if kind in FOLDED:
            self._fold(i, entry, kind)
        elif type(entry.rechecked) is dict:
            self.rechecked = entry.rechecked

    def _fold(self, i: int, entry: Entry, kind: Any) -> None:
        rechecked = entry.rechecked
        if type(rechecked) is dict:
            self.rechecked = rechecked
        epoch = entry.epoch
        if type(epoch) is int:
            if kind in RESOLUTIONS and epoch < self.epoch:  # the journal keeps a superseded answer as LATE_RESULT
                self.order += (f"entries[{i}]: {kind} journaled by claim epoch {epoch} after epoch {self.epoch} "
                               "took the effect over",)
            self.epoch = max(self.epoch, epoch)
        if kind == DISPATCHED:
            if self.open_dispatch:
                self.twice += (f"entries[{i}]: a second DISPATCHED while the first send was open",)
            elif self.after_target_error:
                self.twice += (f"entries[{i}]: a DISPATCHED after a send that failed and may have landed",)
            self.open_dispatch = True
            checks = entry.checks if type(entry.checks) is dict else {}
            self.span = True
            self.span_authorized = checks.get("lease_live") is True
            self.span_held = checks.get("violations") == []
        elif kind == REDISPATCHED:
            self.open_dispatch = True
            checks = rechecked if type(rechecked) is dict else {}
            self.span = True
            self.span_authorized = self.span_authorized and checks.get("lease_live") is True
            self.span_held = self.span_held and checks.get("violations") == []
        elif kind == COMMITTED:
            self.evidence = _evidence(entry)
            self._landed(i, self.evidence)
            self._count_span()
            self.open_dispatch = self.ambiguous = False
        elif kind == REFUSED:
            self.refused_reason = entry.reason
            self.after_target_error = entry.code == "target_error"
            self._drop_span()
            self.open_dispatch = False
        elif kind == AMBIGUOUS:
            self._count_span()
            self.open_dispatch, self.ambiguous = False, True
        elif kind == LATE_RESULT and entry.late_kind == COMMITTED:
            late = _evidence(entry)
            self._landed(i, late)
            self.evidence = self.evidence if self.evidence is not None else late

    def _count_span(self) -> None:
        """The sends since the last resolution may have fired: their checks count."""
        if self.span:
            self.counted = True
            self.authorized = self.authorized and self.span_authorized
            self.held = self.held and self.span_held
        self._drop_span()

    def _drop_span(self) -> None:
        self.span, self.span_authorized, self.span_held = False, True, True

    def _landed(self, i: int, evidence: Any) -> None:
        """One more answer saying the effect landed: the same landing again is one effect, another is a copy."""
        if isinstance(evidence, list) and len(evidence) > 1:
            self.twice += (f"entries[{i}]: the lookup found {len(evidence)} copies",)
        if evidence in self.landings:
            return
        if self.landings:
            self.twice += (f"entries[{i}]: a second landing, its evidence unlike the first's",)
        self.landings += (evidence,)

    def against_service(self, copies: int) -> list[str]:
        """Hold the record to the number of copies the service's own export says it holds; returns the
        disagreements (a copy held twice shows in `established`)."""
        happened = self.happened()
        if happened is True and copies == 0:
            return ["service: holds no copy of an effect the record says landed"]
        if happened is False and copies > 0:
            return [f"service: holds {copies} cop{'y' if copies == 1 else 'ies'} of an effect the record says never "
                    "landed"]
        return []

    def problems(self) -> list[str]:
        """Every problem found, chain first."""
        first = ("entries[0]: the first entry is not PROPOSED",) if self.first not in (None, PROPOSED) else ()
        return [*self.chain, *self.shape, *first, *self.order]

    def clean(self) -> bool:
        """Whether the receipt is valid with nothing held twice before a service's export is held to it: true of
        most effects of a long journal, which then add nothing to its verdict."""
        return not self.twice and not self.problems()

    def happened(self) -> Any:
        """True once a landing is on record, "unknown" while a send is open or ambiguous, else False."""
        return True if self.landings else ("unknown" if self.open_dispatch or self.ambiguous else False)

    def established(self, copies: int | None = None) -> dict[str, Any]:
        """What the entries establish about the effect, whether or not they verify, and with the copies the
        service says it holds when its export is given."""
        happened = self.happened()
        fired = self.counted or self.span
        twice = [*self.twice]
        if copies is not None and copies > 1:
            twice.append(f"service: holds {copies} copies")
        return {
            "happened": happened,
            "happened_once": not twice,
            "held_twice": twice,
            "authorized_when_fired": (self.authorized and self.span_authorized) if fired else None,
            "assumptions_held": (self.held and self.span_held) if fired else None,
            "refused": self.refused_reason if happened is not True else None,
            "evidence": self.evidence,
            "rechecked_at_recovery": self.rechecked,
        }


_fields = attrgetter(*EffectCheck.__slots__)


def receipt(check: EffectCheck, signed: bool | None, extra: list[str],
            service: Mapping[str, int] | None) -> dict[str, Any]:
    """One effect's receipt from its finished check: valid, what it establishes, every problem."""
    copies = None if service is None else service.get(check.effect_id or "", 0)
    problems = check.problems() + extra + (check.against_service(copies) if copies is not None else [])
    return {
        "effect_id": check.effect_id,
        "format": "chained",
        "valid": not problems,
        "tamper_evident": not check.chain,
        "signed": signed,
        **check.established(copies),
        "service_copies": copies,
        "problems": problems,
        "covers": COVERS,
    }


def _evidence(entry: Entry) -> Any:
    """What a result entry says landed: its result, else what a lookup found."""
    if entry.result is not MISSING:
        return entry.result
    return entry.found if entry.found is not MISSING else None
