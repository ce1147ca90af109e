"""The gate: propose, authorize, check premises, journal the dispatch, send, record what happened."""

from __future__ import annotations

import os
from typing import Any, Callable

from . import hooks as points
from ._protocols import ClaimLike, ClaimsLike, JournalLike
from .canonical import digest, round_trip_problem
from .checks import Check, check
from .claims import FileClaims
from .effects import Effect, proposal
from .errors import ClaimLost, ConfigurationError, GuardFailed, UnjournalableArgument
from .hooks import NO_HOOKS, Hooks
from .journal import Journal
from .kinds import AUTHORIZED, COMMITTED, DISPATCHED, PROPOSED, REFUSED
from .outcomes import Outcome, RefusalCode, Status
from .premises import NOT_SET, violations
from .records import EffectRecord
from .recovery import Recovery, append_ahead, append_claimed, apply, as_evidence, last_look, refuse
from .targets.base import Rejected, Target, unanswered


class Gate:
    """Puts one target behind a journal and per-effect claims.

    `submit` runs an effect's whole life and, when a crashed worker left its dispatch open, settles it through
    recovery instead of sending again, so a restarted job calls `submit` with the same effect and gets the truth.
    Once DISPATCHED is journaled the gate takes a last look at lease and premises and confirms its claim right
    before the request: a change during the JSONL journal's fsync is refused, a sender whose claim was taken over
    while it was stopped does not send, and what remains is the time of one read, the confirm and one request
    (on PostgreSQL the confirm's flush is the one that makes DISPATCHED durable).
    A path gives the JSONL journal with file claims beside it; any other journal (`interlock.pg`) comes with its
    claims (see `interlock.backends.open_journal`). `claim_wait` is how long a call waits for another holder of
    the effect, and for a request to an unfenced target that may still land; 0 fails fast with IN_FLIGHT.
    `hooks` receives every point of `interlock.hooks`, for fault tests.
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
                raise ConfigurationError("pass claims= with a journal that is not a JSONL file")
            claims = FileClaims(f"{self.journal.path}.claims")
        self.claims = claims
        self.claim_wait = claim_wait
        self.hooks = hooks

    def submit(self, effect: Effect) -> Outcome:
        """Send the effect at most once, only while its lease is live and its premises hold."""
        eid = effect.effect_id
        proposed = {**_journalable(effect, self.target.name), "payload_hash": digest(effect.payload)}
        acquire_with_first = getattr(self.claims, "acquire_with_first", None)
        if acquire_with_first is None:
            claim = self.claims.acquire(eid, self.claim_wait)
        else:  # PROPOSED in the claim's own round trip, if the effect has no entries yet
            claim = acquire_with_first(eid, self.claim_wait, PROPOSED, proposed)
        if claim is None:
            return Outcome(Status.IN_FLIGHT, eid)
        with claim:
            try:
                return self._submit_claimed(effect, proposed, claim)
            except ClaimLost:  # stopped past the claim's lifetime: the new owner settles the effect; this one stops
                return Outcome(Status.IN_FLIGHT, eid)

    def recover(self, effect: Effect) -> Outcome:
        """Settle one effect a crashed worker may have left open; report IN_FLIGHT if its sender is alive."""
        eid = effect.effect_id
        claim = self.claims.acquire(eid, self.claim_wait)
        if claim is None:
            return Outcome(Status.IN_FLIGHT, eid)
        with claim:
            self.journal.refresh(check=True)
            record = self.journal.effect(eid)
            if record is None:
                raise ConfigurationError(f"effect {eid} is not in {self.journal.path}")
            conflict = _conflict(effect, record, proposal(self.journal, eid))
            if conflict is not None:
                return conflict
            if record.open_dispatch:
                try:
                    return self._recovery(effect, claim).settle(self.claim_wait)
                except ClaimLost:
                    return Outcome(Status.IN_FLIGHT, eid)
            if record.resolution is not None:
                return recorded_outcome(record)
        return self.submit(effect)

    def _recovery(self, effect: Effect, claim: ClaimLike, send_ended: float | None = None) -> Recovery:
        return Recovery(self.journal, self.target, effect, claim, self.hooks, send_ended)

    def _submit_claimed(self, effect: Effect, proposed: dict[str, Any], claim: ClaimLike) -> Outcome:
        eid = effect.effect_id
        # PROPOSED is written at once, never ahead: it keeps the facts the decision was taken on, so a job restarted
        # after a crash from here on is held to them, not to what it reads now
        if getattr(claim, "wrote_first", False):
            self.hooks.reach(points.AFTER_PROPOSED)
            return self._dispatch(effect, claim, proposed["premises"])
        # an effect claimed before may have entries: its decision rests on every line checked, not skimmed
        self.journal.refresh(check=claim.epoch > 1)
        record = self.journal.effect(eid)
        if record is not None and claim.epoch == 1:  # claimed before all the same: its claim file was retired since
            self.journal.refresh(check=True)
            record = self.journal.effect(eid)
        if record is None:
            append_claimed(self.journal, claim, PROPOSED, eid, proposed)
            self.hooks.reach(points.AFTER_PROPOSED)
            return self._dispatch(effect, claim, proposed["premises"])
        found = proposal(self.journal, eid)
        conflict = _conflict(effect, record, found)
        if conflict is not None:
            return conflict
        elif record.resolution is not None:
            return recorded_outcome(record)
        elif record.open_dispatch:
            return self._recovery(effect, claim).settle(self.claim_wait)
        return self._dispatch(effect, claim, found["premises"] if found else {})

    def _dispatch(self, effect: Effect, claim: ClaimLike, decided: dict[str, Any]) -> Outcome:
        """Authorize, journal the send and make it; `decided` is the premises as the effect's PROPOSED holds them."""
        eid = effect.effect_id

        def recheck() -> Check:
            return check(effect.lease, lambda: violations(effect.premises, decided, eid))

        checks = recheck()
        if not checks.lease_live:
            return refuse(self.journal, claim, eid, RefusalCode.LEASE, checks.reason(), checks, resolves=False)
        append_ahead(self.journal, claim, AUTHORIZED, eid, {"lease": checks.lease})
        if checks.violations:
            return refuse(self.journal, claim, eid, RefusalCode.STALE_PREMISE, checks.reason(), checks, resolves=False)
        moved = self._journal_dispatch(eid, claim, {
            "effect": effect.payload, "lease": checks.lease, "premises": decided, "checks": checks.journaled(),
            "epoch": claim.epoch,
        }, recheck)
        if moved is not None:
            return refuse(self.journal, claim, eid, _code(moved), moved.reason(), moved, resolves=False)
        self.hooks.reach(points.BEFORE_SEND)
        # the last look: only the read itself, the confirm and the request stand before the send
        looked = last_look(self.journal, claim, eid, recheck)
        if not looked.passed:
            return refuse(self.journal, claim, eid, _code(looked), looked.reason(), looked, resolves=True,
                          epoch=claim.epoch)
        if not claim.confirm():
            raise ClaimLost(f"the claim on {eid} was taken over before the send")
        self.hooks.reach(points.BEFORE_REQUEST)
        try:
            result = apply(self.target, eid, effect.payload, claim)
        except Exception as exc:
            # a request of the send may land up to the in-flight bound after it returned, however long it hung
            recovery = self._recovery(effect, claim, send_ended=self.journal.now())
            if unanswered(exc):  # the answer was lost: whether it landed is for recovery to find out
                return recovery.settle(self.claim_wait)
            if not isinstance(exc, Rejected):
                return recovery.send_failed(exc, looked, self.claim_wait)
            # a fence may have met this effect landed already (by a successor that took over)
            settled = recovery.look_up(looked) if self.target.can_lookup else None
            if settled is not None:
                return settled
            code = RefusalCode.STALE_PREMISE if exc.precondition else RefusalCode.TARGET_ERROR
            return refuse(self.journal, claim, eid, code, exc.detail, None, resolves=True, epoch=claim.epoch)
        self.hooks.reach(points.AFTER_COMMIT)
        evidence = as_evidence(result)  # reported as journaled: a later submit reads back the same value
        committed = {"via": "send", "result": evidence, "epoch": claim.epoch}
        release_after = getattr(claim, "release_after", None)
        if release_after is None:
            append_claimed(self.journal, claim, COMMITTED, eid, committed)
        else:  # COMMITTED in the release's own round trip
            release_after(COMMITTED, committed)
        return Outcome(Status.COMMITTED, eid, evidence)

    def _journal_dispatch(self, eid: str, claim: ClaimLike, data: dict[str, Any],
                          recheck: Callable[[], Check]) -> Check | None:
        """Write DISPATCHED. A journal in a database re-runs the check inside the write's own transaction, so a
        lease or premise kept in that database cannot move between check and dispatch; returns that check when
        it failed (nothing written), else None."""
        append_dispatch = getattr(self.journal, "append_dispatch", None)
        if append_dispatch is None:
            append_claimed(self.journal, claim, DISPATCHED, eid, data)
            return None
        seen: list[Check] = []

        def holds() -> list[str]:
            seen.append(recheck())
            return [] if seen[-1].passed else (list(seen[-1].violations) or ["lease not live"])

        try:
            append_dispatch(eid, data, [holds])
        except GuardFailed:
            return seen[-1]
        return None

def _code(looked: Check) -> RefusalCode:
    return RefusalCode.LEASE if not looked.lease_live else RefusalCode.STALE_PREMISE


def _conflict(effect: Effect, record: EffectRecord, proposed: dict[str, Any] | None) -> Outcome | None:
    """REFUSED_CONFLICTING_PAYLOAD when the effect is not the one its id was proposed as: another payload, other
    premise names or expected values, or a lease where none was journaled (or none where one was); else None."""
    if record.payload_hash != digest(effect.payload):
        reason = "the effect id was journaled with another payload (the same key, other arguments)"
    elif proposed is not None and set(proposed.get("premises", {})) != {p.name for p in effect.premises}:
        reason = (f"the effect id was journaled with the premises {sorted(proposed.get('premises', {}))}, not "
                  f"{sorted(p.name for p in effect.premises)}")
    elif proposed is not None and proposed.get("expect", {}) != _expected(effect):
        reason = (f"the effect id was journaled expecting {proposed.get('expect', {})!r} of its premises, not "
                  f"{_expected(effect)!r}")
    # an entry journaled before "leased" was recorded says nothing about the lease
    elif proposed is not None and proposed.get("leased", effect.lease is not None) != (effect.lease is not None):
        reason = ("the effect id was journaled with a lease and this effect has none" if proposed["leased"]
                  else "the effect id was journaled without a lease and this effect has one")
    else:
        return None
    return Outcome(Status.REFUSED_CONFLICTING_PAYLOAD, effect.effect_id, reason=reason)


def _expected(effect: Effect) -> dict[str, Any]:
    """The values the effect's premises must have, by name, for those that name one."""
    return {p.name: p.expect for p in effect.premises if p.expect is not NOT_SET}


def _journalable(effect: Effect, target: str) -> dict[str, Any]:
    """The PROPOSED entry's content, refused before anything is journaled if it would not come back unchanged."""
    data = {
        "agent": effect.agent,
        "target": target,
        "key": effect.key,
        "lease": effect.lease.describe() if effect.lease is not None else None,
        "leased": effect.lease is not None,
        "premises": {p.name: p.recorded() for p in effect.premises},
        "expect": _expected(effect),
        "effect": effect.payload,
    }
    for field in ("effect", "premises", "expect", "lease", "key"):
        where = round_trip_problem(data[field])
        if where is not None:
            raise UnjournalableArgument(f"effect {effect.effect_id}: {field}{where} would not come back from the "
                                        "journal unchanged (use JSON types: str, int, float, bool, None, list, "
                                        "dict with str keys)")
    return data


def recorded_outcome(record: EffectRecord) -> Outcome:
    """The outcome a settled effect reports when it is submitted again."""
    entry = record.resolution or {}
    kind = entry.get("kind")
    if kind == COMMITTED:
        return Outcome(Status.DUPLICATE_IGNORED, record.effect_id, entry.get("result", entry.get("found")))
    if kind == REFUSED:
        return Outcome(Status.refusal(entry.get("code", RefusalCode.TARGET_ERROR.value)), record.effect_id,
                       error=entry.get("error"), reason=entry.get("reason"))
    return Outcome(Status.AMBIGUOUS, record.effect_id, error=entry.get("error"))
