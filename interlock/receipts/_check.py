"""One effect's entries checked and folded in a single pass: its chain, each entry's shape, the order of sends and
resolutions, the claim epochs they were written under, and what the entries establish. A whole journal feeds every
effect's check as it streams by.

Held twice: what the entries say of a second copy at the service. A second landing whose evidence differs from
the first (a late answer beside a resend's), a send made while an earlier one was open or after one failed, and a
lookup that answered with a list of two or more copies (a lookup that answers with a list names every copy the
service holds) each count; so does the service's own export, when the caller passes it."""

from __future__ import annotations

from typing import Any

from ..kinds import (AMBIGUOUS, COMMITTED, DISPATCHED, KINDS, LATE_RESULT, PROPOSED, REDISPATCHED, REFUSED,
                     RESOLUTIONS, send_open_after, settles)

FOLDED = frozenset({DISPATCHED, REDISPATCHED, COMMITTED, REFUSED, AMBIGUOUS, LATE_RESULT})


class EffectCheck:
    """The running check of one effect; `feed` each entry in order, then read `result`."""

    __slots__ = ("effect_id", "count", "previous", "last_seq", "chain", "shape", "order", "first",
                 "order_open", "order_resolved", "counted", "span", "landings", "open_dispatch", "ambiguous",
                 "twice", "refused_reason", "after_target_error", "evidence", "rechecked", "epoch")

    def __init__(self, effect_id: str | None):
        self.effect_id = effect_id
        self.count = 0
        self.previous: str | None = None
        self.last_seq = -1
        self.chain: list[str] = []  # link and hash problems: what tamper evidence rests on
        self.shape: list[str] = []
        self.order: list[str] = []
        self.first: str | None = None
        self.order_open = self.order_resolved = False
        self.counted: list[dict[str, Any]] = []  # the checks of sends that may have fired
        self.span: list[dict[str, Any]] = []  # the checks of sends since the last resolution
        self.landings: list[Any] = []  # the evidence of each distinct landing
        self.open_dispatch = self.ambiguous = False
        self.twice: list[str] = []  # what says the service may hold the effect more than once
        self.epoch = -1  # the highest claim epoch an entry of the effect was written under
        self.refused_reason: Any = None
        self.after_target_error = False
        self.evidence: Any = None
        self.rechecked: Any = None

    def feed(self, entry: Any, holds: bool) -> None:
        """Check one more entry; `holds` says whether its stored hash recomputes. Written flat, as one function
        with few attribute writes: a whole journal calls it once per entry."""
        i = self.count
        self.count = i + 1
        if type(entry) is not dict:
            self.chain.append(f"entries[{i}]: not an object")
            return
        get = entry.get
        kind = get("kind")
        if get("effect_id") != self.effect_id:
            self.chain.append(f"entries[{i}]: effect_id {get('effect_id')!r} is not the bundle's {self.effect_id!r}")
        if not holds:
            self.chain.append(f"entries[{i}]: hash does not match the entry's content")
        if get("effect_prev") != self.previous:
            self.chain.append(f"entries[{i}]: effect_prev does not link to the entry before it")
        seq = get("seq")
        if type(seq) is not int or seq <= self.last_seq:
            self.chain.append(f"entries[{i}]: seq {seq!r} does not follow {self.last_seq}")
        else:
            self.last_seq = seq
        self.previous = get("hash")
        if self.first is None:
            self.first = kind if kind is not None else ""
        if kind not in KINDS:
            self.shape.append(f"entries[{i}].kind: unknown kind {kind!r}")
        elif type(get("ts")) not in (int, float):
            self.shape.append(f"entries[{i}].ts: missing or not a number")
        elif "checks" in entry or "rechecked" in entry:
            for key in ("checks", "rechecked"):
                if key in entry and type(entry[key]) is not dict:
                    self.shape.append(f"entries[{i}].{key}: expected an object")
                    break
        # The journal never holds a second resolution or a result with no send open: it stores a late answer as
        # LATE_RESULT and the gate resolves only what it sent, so each is forged.
        if kind in RESOLUTIONS:
            settling = settles(entry)  # a refusal before any send leaves the effect open to a later submit
            if settling and self.order_resolved:
                self.order.append(f"entries[{i}]: {kind} after the effect was already resolved")
            elif kind != REFUSED and not self.order_open:
                self.order.append(f"entries[{i}]: {kind} with no send open")
            self.order_resolved = self.order_resolved or settling
        self.order_open = send_open_after(self.order_open, kind)
        if kind in FOLDED:
            self._fold(i, entry, kind)
        else:
            rechecked = get("rechecked")
            if type(rechecked) is dict:
                self.rechecked = rechecked

    def _fold(self, i: int, entry: dict[str, Any], kind: Any) -> None:
        rechecked = entry.get("rechecked")
        if isinstance(rechecked, dict):
            self.rechecked = rechecked
        epoch = entry.get("epoch")
        if type(epoch) is int:
            if kind in RESOLUTIONS and epoch < self.epoch:  # the journal keeps a superseded answer as LATE_RESULT
                self.order.append(f"entries[{i}]: {kind} journaled by claim epoch {epoch} after epoch {self.epoch} "
                                  "took the effect over")
            self.epoch = max(self.epoch, epoch)
        if kind == DISPATCHED:
            if self.open_dispatch:
                self.twice.append(f"entries[{i}]: a second DISPATCHED while the first send was open")
            elif self.after_target_error:
                self.twice.append(f"entries[{i}]: a DISPATCHED after a send that failed and may have landed")
            self.open_dispatch = True
            self.span = [entry.get("checks") or {}]
        elif kind == REDISPATCHED:
            self.open_dispatch = True
            self.span.append(rechecked or {})
        elif kind == COMMITTED:
            self.evidence = entry.get("result", entry.get("found"))
            self._landed(i, self.evidence)
            self.counted += self.span
            self.span, self.open_dispatch, self.ambiguous = [], False, False
        elif kind == REFUSED:
            self.refused_reason = entry.get("reason")
            self.after_target_error = entry.get("code") == "target_error"
            self.span, self.open_dispatch = [], False
        elif kind == AMBIGUOUS:
            self.counted += self.span
            self.span, self.open_dispatch, self.ambiguous = [], False, True
        elif kind == LATE_RESULT and entry.get("late_kind") == COMMITTED:
            late = entry.get("result", entry.get("found"))
            self._landed(i, late)
            self.evidence = self.evidence if self.evidence is not None else late

    def _landed(self, i: int, evidence: Any) -> None:
        """One more answer saying the effect landed: the same landing again is one effect, another is a copy."""
        if isinstance(evidence, list) and len(evidence) > 1:
            self.twice.append(f"entries[{i}]: the lookup found {len(evidence)} copies")
        if evidence in self.landings:
            return
        if self.landings:
            self.twice.append(f"entries[{i}]: a second landing, its evidence unlike the first's")
        self.landings.append(evidence)

    def against_service(self, copies: int) -> list[str]:
        """Hold the record to the number of copies the service's own export says it holds; returns the
        disagreements (a copy held twice goes to `twice`)."""
        if copies > 1:
            self.twice.append(f"service: holds {copies} copies")
        happened = self.established()["happened"]
        if happened is True and copies == 0:
            return ["service: holds no copy of an effect the record says landed"]
        if happened is False and copies > 0:
            return [f"service: holds {copies} cop{'y' if copies == 1 else 'ies'} of an effect the record says never "
                    "landed"]
        return []

    def problems(self) -> list[str]:
        """Every problem found, chain first."""
        first = ["entries[0]: the first entry is not PROPOSED"] if self.first not in (None, PROPOSED) else []
        return self.chain + self.shape + first + self.order

    def established(self) -> dict[str, Any]:
        """What the entries establish about the effect, whether or not they verify."""
        counted = self.counted + self.span
        happened: Any = True if self.landings else ("unknown" if self.open_dispatch or self.ambiguous else False)
        return {
            "happened": happened,
            "happened_once": not self.twice,
            "held_twice": list(self.twice),
            "authorized_when_fired": all(c.get("lease_live") is True for c in counted) if counted else None,
            "assumptions_held": all(c.get("violations") == [] for c in counted) if counted else None,
            "refused": self.refused_reason if happened is not True else None,
            "evidence": self.evidence,
            "rechecked_at_recovery": self.rechecked,
        }

