"""The gate: propose, authorize, check premises, journal the dispatch, send, record what happened."""

from __future__ import annotations

import os
from typing import Any, Callable

from . import hooks as points, outcomes
from .canonical import digest
from ._protocols import ClaimLike, ClaimsLike, JournalLike
from .errors import ClaimLost, GuardFailed
from .hooks import NO_HOOKS, Hooks
from .claims import FileClaims
from .effects import Effect, Outcome
from .journal import EffectRecord, Journal
from .kinds import AUTHORIZED, COMMITTED, DISPATCHED, PROPOSED, REFUSED
from .leases import check, passed
from .premises import NOT_SET, violations
from .recovery import recover_effect, refuse
from .targets.base import Rejected, Target


class Gate:
    """Puts one target behind a journal and per-effect claims.

    `submit` runs an effect's whole life and, when a crashed worker left its dispatch open, settles it through
    recovery instead of sending again, so a restarted job calls `submit` with the same effect and gets the truth.
    Once DISPATCHED is durable the gate takes a last look at lease and premises right before the send: a change
    during the journal's fsyncs is refused, and what remains is the time of one read and one request.
    A path gives the JSONL journal with file claims beside it; any other journal (`interlock.pg`) comes with its
    claims (see `interlock.backends.open_journal`).
    """

    def __init__(
        self,
        journal: JournalLike | str | os.PathLike[str],
        target: Target,
        *,
        claims: ClaimsLike | None = None,
        claim_wait: float = 10.0,
        hooks: Hooks = NO_HOOKS,
    ):
        self.journal = Journal(journal) if isinstance(journal, (str, os.PathLike)) else journal
        self.target = target
        if claims is None:
            if not isinstance(self.journal, Journal):
                raise TypeError("pass claims= with a journal that is not a JSONL file")
            claims = FileClaims(f"{self.journal.path}.claims")
        self.claims = claims
        self.claim_wait = claim_wait
        self.hooks = hooks

    def submit(self, effect: Effect) -> Outcome:
        """Send the effect at most once, only while its lease is live and its premises hold."""
        eid = effect.effect_id
        payload_hash = digest(effect.payload)
        claim = self.claims.acquire(eid, self.claim_wait)
        if claim is None:
            return Outcome(outcomes.IN_FLIGHT, eid)
        with claim:
            try:
                return self._submit_claimed(effect, payload_hash, claim)
            except ClaimLost:  # paused past the lease: the new owner settles the effect; this process stops
                return Outcome(outcomes.IN_FLIGHT, eid)

    def _submit_claimed(self, effect: Effect, payload_hash: str, claim: ClaimLike) -> Outcome:
        eid = effect.effect_id
        self.journal.refresh()
        record = self.journal.effect(eid)
        if record is None:
            self._propose(effect, payload_hash)
            self.hooks.reach(points.AFTER_PROPOSED)
        elif record.payload_hash != payload_hash:
            return Outcome(outcomes.refused("conflicting_payload"), eid)
        elif record.resolution is not None:
            return recorded_outcome(record)
        elif record.open_dispatch:
            return recover_effect(self.journal, self.target, effect, claim, self.hooks)
        return self._dispatch(effect, claim)

    def recover(self, effect: Effect) -> Outcome:
        """Settle one effect a crashed worker may have left open; report IN_FLIGHT if its sender is alive."""
        eid = effect.effect_id
        claim = self.claims.acquire(eid, self.claim_wait)
        if claim is None:
            return Outcome(outcomes.IN_FLIGHT, eid)
        with claim:
            self.journal.refresh()
            record = self.journal.effect(eid)
            if record is None:
                raise KeyError(f"effect {eid} is not in {self.journal.path}")
            if record.open_dispatch:
                try:
                    return recover_effect(self.journal, self.target, effect, claim, self.hooks)
                except ClaimLost:
                    return Outcome(outcomes.IN_FLIGHT, eid)
            if record.resolution is not None:
                return recorded_outcome(record)
        return self.submit(effect)

    def _propose(self, effect: Effect, payload_hash: str) -> None:
        self.journal.append(PROPOSED, effect.effect_id, {
            "agent": effect.agent,
            "target": self.target.name,
            "key": effect.key,
            "lease": effect.lease.describe() if effect.lease is not None else None,
            "premises": {p.name: p.recorded() for p in effect.premises},
            "expect": {p.name: p.expect for p in effect.premises if p.expect is not NOT_SET},
            "effect": effect.payload,
            "payload_hash": payload_hash,
        })

    def _dispatch(self, effect: Effect, claim: ClaimLike) -> Outcome:
        eid = effect.effect_id
        decided = proposal(self.journal, eid)["premises"]

        def recheck() -> dict[str, Any]:
            return check(effect.lease, lambda: violations(effect.premises, decided, eid))

        checks = recheck()
        if not checks["lease_live"]:
            return refuse(self.journal, eid, "lease", "lease not live", resolves=False, checks=checks)
        self.journal.append(AUTHORIZED, eid, {"lease": checks["lease"]})
        if checks["violations"]:
            return refuse(self.journal, eid, "stale_premise", checks["violations"], resolves=False, checks=checks)
        moved = self._journal_dispatch(eid, {
            "effect": effect.payload, "lease": checks["lease"], "premises": decided, "checks": checks,
            "epoch": claim.epoch,
        }, recheck)
        if moved is not None:
            code = "lease" if not moved["lease_live"] else "stale_premise"
            return refuse(self.journal, eid, code, moved.get("violations") or "lease not live", resolves=False,
                          checks=moved)
        self.hooks.reach(points.BEFORE_SEND)
        looked = recheck()  # the last look: only the read itself and the request now stand between check and send
        if not passed(looked):
            code = "lease" if not looked["lease_live"] else "stale_premise"
            return refuse(self.journal, eid, code, looked.get("violations") or "lease not live", resolves=True,
                          checks=looked, epoch=claim.epoch)
        self.hooks.reach(points.BEFORE_REQUEST)
        try:
            result = self.target.apply(eid, effect.payload)
        except Rejected as no:
            code = "stale_premise" if no.precondition else "target_error"
            return refuse(self.journal, eid, code, no.detail, resolves=True, epoch=claim.epoch)
        except Exception:  # the answer was lost: whether it landed is for recovery to find out
            return recover_effect(self.journal, self.target, effect, claim, self.hooks)
        self.hooks.reach(points.AFTER_COMMIT)
        self.journal.append(COMMITTED, eid, {"via": "send", "result": result, "epoch": claim.epoch})
        return Outcome(outcomes.COMMITTED, eid, result)

    def _journal_dispatch(self, eid: str, data: dict[str, Any],
                          recheck: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
        """Write DISPATCHED. A journal in a database re-runs the check inside the write's own transaction, so a
        lease or premise kept in that database cannot move between check and dispatch; returns that check when
        it failed (nothing written), else None."""
        append_dispatch = getattr(self.journal, "append_dispatch", None)
        if append_dispatch is None:
            self.journal.append(DISPATCHED, eid, data)
            return None
        seen: dict[str, Any] = {}

        def holds() -> list[str]:
            seen.update(recheck())
            return [] if passed(seen) else (seen.get("violations") or ["lease not live"])

        try:
            append_dispatch(eid, data, [holds])
        except GuardFailed:
            return seen
        return None


def proposal(journal: JournalLike, effect_id: str) -> dict[str, Any]:
    """The PROPOSED entry of an effect: the payload and the premises as decided."""
    return next(e for e in journal.entries(effect_id) if e["kind"] == PROPOSED)


def recorded_outcome(record: EffectRecord) -> Outcome:
    """The outcome a settled effect reports when it is submitted again."""
    entry = record.resolution or {}
    kind = entry.get("kind")
    if kind == COMMITTED:
        return Outcome(outcomes.DUPLICATE_IGNORED, record.effect_id, entry.get("result", entry.get("found")))
    if kind == REFUSED:
        return Outcome(outcomes.refused(entry.get("code", "unknown")), record.effect_id)
    return Outcome(outcomes.AMBIGUOUS, record.effect_id)
