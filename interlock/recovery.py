"""Recovery: settle a dispatch whose sender died, without ever sending an effect twice or against moved facts.

The order of questions, for an effect whose last send has no answer in the journal:

1. Do lease and premises still hold? On a tier-1 target a resend then cannot land twice: it goes at once.
2. Otherwise the lookup decides: found means it landed. Not found means "not landed" only once no request of the
   earlier send can still land: at once when the target's fences cover what moved (a precondition on the premise
   that changed; a dedupe on the effect id, when recovery is about to resend), after the target's `close_out`
   made the service refuse them, or else after the last send's DISPATCHED time (or, when later, the time the
   gate's own send returned, or an earlier holder of the claim let it go while its request had no answer, or lost
   it while sending: died, or taken over) plus the target's `in_flight` bound (recovery waits that out when it
   fits in the caller's wait, else reports IN_FLIGHT with `decide_at`).
   Then the lookup is made once more: an effect that landed late is recorded as committed, never as refused.
3. Still valid and not found: tier 2 resends. A refused resend (a precondition, or a service still busy with the
   earlier send) is followed by one more lookup, and, once none of the earlier send's requests can still land (as
   in 2), by another: found, it landed; not found, it is refused. A resend whose answer was lost is followed by one
   more lookup: found, it landed; not found, it stays open for the next recovery.

Without a lookup a failed re-check, or a refused resend (a dedupe may have refused it for the first send, landed),
cannot say whether the first send landed, and tier 3 never resends: all record AMBIGUOUS. A send that raised the
caller's own error (not a lost answer) is never made again: the lookup decides once none of its requests can still
land, as in 2, else it is AMBIGUOUS. Every resend is preceded by a last look at lease and premises and a claim
confirm, after REDISPATCHED is durable; a look that raises journals nothing, so the send stays open for the next
recovery. The caller holds the claim, and every entry it appends is fenced by it (`append_claimed`).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Callable

from . import hooks as points
from ._protocols import ClaimLike, JournalLike
from .canonical import round_trip_problem
from .checks import Check, check
from .effects import Effect, proposal
from .errors import ClaimLost
from .hooks import Hooks
from .journal import Journal
from .kinds import AMBIGUOUS, COMMITTED, LATE_RESULT, REDISPATCHED, REFUSED, SENDS
from .outcomes import Outcome, RefusalCode, Status
from .premises import violations
from .targets.base import (DEDUPE, TIER_BLIND, TIER_DEDUPE, Rejected, Target, covers, in_flight_bound, not_found,
                           unanswered)

POLL_SECONDS = 0.005  # how often recovery looks whether a stopped holder is gone (no event marks it)


def describe_error(exc: BaseException) -> dict[str, str]:
    """The type and message of an exception, as journaled with the send that raised it."""
    return {"type": type(exc).__qualname__, "message": str(exc)}


def last_look(journal: JournalLike, claim: ClaimLike, eid: str, recheck: Callable[[], Check]) -> Check:
    """The check right before an effect's first send, after the send is journaled. When reading a fact or the lease
    raises, nothing is sent: the send is closed as not made by a refusal that leaves the effect open to a later
    decision (`check_failed`), and the reader's error goes to the caller. If even that refusal cannot be written, the
    send stays open for recovery, which looks the effect up before it sends anything. A resend looks without it: an
    earlier send may have landed, so nothing but a lookup or a resend may close it."""
    try:
        return recheck()
    except Exception as exc:
        try:
            refuse(journal, claim, eid, RefusalCode.CHECK_FAILED, f"the last look before the send raised: {exc!r}",
                   None, resolves=False, epoch=claim.epoch, error=describe_error(exc))
        except Exception:
            pass  # the reader's error is what the caller must see; the open send is recovery's to settle
        raise


def as_evidence(value: Any) -> Any:
    """A service's answer as the journal can hold it: itself when it comes back from JSON unchanged, else what
    Python shows of it (`{"python_repr": ...}`), so an answer JSON cannot hold (a datetime, bytes, a set, a NaN)
    never keeps a landed effect from being recorded."""
    return value if round_trip_problem(value) is None else {"python_repr": repr(value)}


def append_claimed(journal: JournalLike, claim: ClaimLike, kind: str, effect_id: str,
                   data: dict[str, Any]) -> dict[str, Any]:
    """Append an entry of a claimed effect, fenced by the claim: a holder whose claim was taken over (it was
    stopped past the claim's lifetime) appends nothing but a late resolution (kept as LATE_RESULT), and raises
    ClaimLost for anything else, so its record can never reopen a send its successor settled."""
    if isinstance(journal, Journal):
        return journal.append(kind, effect_id, data, holds=getattr(claim, "holds", claim.confirm))
    return journal.append(kind, effect_id, data)  # a database journal fences appends on the claim epoch itself


def append_ahead(journal: JournalLike, claim: ClaimLike, kind: str, effect_id: str, data: dict[str, Any]) -> None:
    """`append_claimed` for an entry nothing waits on (AUTHORIZED): the journal writes it with the effect's next
    append, in that append's lock turn or round trip instead of one of its own (`Journal.append_ahead`,
    `PgJournal.append_ahead`)."""
    ahead = getattr(journal, "append_ahead", None)
    if ahead is None:
        append_claimed(journal, claim, kind, effect_id, data)
    else:
        ahead(kind, effect_id, data)


def append_settled(journal: JournalLike, claim: ClaimLike, kind: str, effect_id: str,
                   data: dict[str, Any]) -> dict[str, Any]:
    """`append_claimed` for a resolution off the plain path (a refusal, a recovery's answer, a failed send), made
    durable at once: no later flush of its own covers it, and a journal cut back behind it must show to its witness.
    The plain path's COMMITTED rides on the next flush, so a gated effect still costs one."""
    entry = append_claimed(journal, claim, kind, effect_id, data)
    if isinstance(journal, Journal):
        journal.flush()
    return entry


def apply(target: Target, effect_id: str, payload: dict[str, Any], claim: ClaimLike) -> Any:
    """Send through the target, handing it the claim epoch when it fences on one."""
    if getattr(target, "takes_epoch", False):
        return target.apply(effect_id, payload, epoch=claim.epoch)  # type: ignore[call-arg]
    return target.apply(effect_id, payload)


class Recovery:
    """The settling of one effect by the process holding its claim; the gate uses it after a lost answer too.

    `settle` raises ClaimLost when the claim was taken over before a resend (nothing was sent). `send_ended` is
    when the caller's own send returned or raised (the journal's `now()`): its in-flight bound counts from then,
    not from the DISPATCHED before a request that hung.
    """

    def __init__(self, journal: JournalLike, target: Target, effect: Effect, claim: ClaimLike, hooks: Hooks,
                 send_ended: float | None = None):
        self.journal = journal
        self.target = target
        self.effect = effect
        self.claim = claim
        self.hooks = hooks
        self.eid = effect.effect_id
        self._deadline = time.monotonic()
        self._send_ended = send_ended
        self._last_send: float | None = None  # when the send recovery settles was made (a stray may follow)

    def settle(self, wait: float) -> Outcome:
        """Settle the open dispatch, or report IN_FLIGHT while a request may still land and `wait` does not
        cover it."""
        self._deadline = time.monotonic() + wait
        self._note_last_send()
        rechecked = self.recheck()
        if self.target.tier == TIER_DEDUPE and rechecked.passed:
            return self._resend(rechecked, "retry", Status.COMMITTED_BY_RETRY)
        if not rechecked.passed:
            return self._settle_unsent(rechecked)
        if not self.target.can_lookup:
            return self._ambiguous("no dedupe and no lookup: whether the send landed is unknown", rechecked)
        settled = self.look_up(rechecked)
        if settled is not None:
            return settled
        if self.target.tier == TIER_BLIND:
            return self._ambiguous("the lookup did not find the effect, and a tier-3 target is never sent again",
                                   rechecked)
        if not covers(self.target, {DEDUPE}):  # a resend could land beside a stray: none may be left in flight
            settled = self._look_once_none_can_land(rechecked)
            if settled is not None:
                return settled
        return self._resend(rechecked, "recovery-reapply", Status.REAPPLIED_AFTER_QUERY)

    def recheck(self) -> Check:
        """Lease and premises now, against the premises as decided."""
        found = proposal(self.journal, self.eid)
        decided = found["premises"] if found else {}
        return check(self.effect.lease, lambda: violations(self.effect.premises, decided, self.eid))

    def send_failed(self, exc: BaseException, checks: Check | None, wait: float | None = None) -> Outcome:
        """The send raised the caller's own error, so it is never made again; what the service holds decides.

        Found by the lookup, it landed (COMMITTED). Not found, it did not land once none of its requests can still
        land (the target's `close_out`, or its in-flight bound waited out within `wait`, else what is left of
        `settle`'s): then it is refused as `send_failed`. Without a lookup, or while a request may still land, it
        is journaled AMBIGUOUS with the exception."""
        error = describe_error(exc)
        if wait is not None:
            self._deadline = time.monotonic() + wait
        if self.target.can_lookup:
            settled = self.look_up(checks, error=error)
            if settled is not None:
                return settled
            self._note_last_send()
            if self._shut_out() is None:
                settled = self.look_up(checks, error=error)
                if settled is not None:
                    return settled
                refused = refuse(self.journal, self.claim, self.eid, RefusalCode.SEND_FAILED,
                                 f"the send raised {error['type']}: {error['message']}; the service does not hold "
                                 "the effect and none of its requests can still land", checks, resolves=True,
                                 key="rechecked", error=error, epoch=self.claim.epoch)
                return replace(refused, error=error)
        append_settled(self.journal, self.claim, AMBIGUOUS, self.eid, {
            "reason": f"the send raised {error['type']}: {error['message']}", "error": error,
            "epoch": self.claim.epoch})
        return Outcome(Status.AMBIGUOUS, self.eid, rechecked=checks, error=error)

    def _note_last_send(self) -> None:
        """When the effect's last send was journaled, or later returned or raised in this process, or when a
        request of it may last have left an earlier holder of the claim (`sent_until`): a request of it may land up
        to the in-flight bound after."""
        times = [e["ts"] for e in self.journal.entries(self.eid) if e["kind"] in SENDS][-1:]
        for later in (self._send_ended, getattr(self.claim, "sent_until", None)):
            if later is not None:
                times.append(later)
        self._last_send = max(times) if times else None

    def _look_once_none_can_land(self, rechecked: Check) -> Outcome | None:
        """Shut the earlier send's requests out, then look once more: what `_shut_out` reports, else the lookup's
        answer (None when the effect is not at the service)."""
        early = self._shut_out()
        return early if early is not None else self.look_up(rechecked)

    def _shut_out(self) -> Outcome | None:
        """Make sure no request of the earlier send can still land: the target's `close_out` makes the service
        refuse them, or else the in-flight bound after the last send is waited out. None once none can; IN_FLIGHT
        (with `decide_at`) when the wait does not cover the bound; AMBIGUOUS, left open, when the close-out failed
        twice (it is safe to repeat, so one whose answer was lost is made once more)."""
        close_out = getattr(self.target, "close_out", None)
        if close_out is not None:
            try:
                close_out(self.eid, self.effect.payload, epoch=self.claim.epoch)
            except Exception:  # safe to repeat: a close-out whose answer was lost is made once more
                try:
                    close_out(self.eid, self.effect.payload, epoch=self.claim.epoch)
                except Exception as exc:  # the dispatch stays open for the next recovery
                    return Outcome(Status.AMBIGUOUS, self.eid, error=describe_error(exc))
            return None
        if self._last_send is None:
            return None
        since = self._last_send
        holder_alive = getattr(self.claim, "holder_alive", None)
        if holder_alive is not None and holder_alive():  # stopped, not dead: it may send at any time
            while holder_alive():
                if time.monotonic() >= self._deadline:
                    return Outcome(Status.IN_FLIGHT, self.eid)
                time.sleep(POLL_SECONDS)
            since = self.journal.now()  # gone now: a request it sent before going may land up to the bound after
        decide_at = since + in_flight_bound(self.target)  # on the clock of the journal's `ts`, as `since` is
        remaining = decide_at - self.journal.now()
        if remaining <= 0:
            return None
        if remaining > self._deadline - time.monotonic():
            return Outcome(Status.IN_FLIGHT, self.eid, decide_at=decide_at)
        time.sleep(remaining)  # the target's own bound, not another process: no event marks a request's landing
        if not self.claim.confirm():
            raise ClaimLost(f"the claim on {self.eid} was taken over while recovery waited")
        return None

    def look_up(self, rechecked: Check | None, *, error: dict[str, str] | None = None) -> Outcome | None:
        """COMMITTED_ON_QUERY when the service holds the effect, None when it does not, AMBIGUOUS (left open)
        when the service did not answer: the one more lookup that follows every negative answer."""
        try:
            found = self.target.lookup(self.eid, self.effect.payload)
        except Exception as exc:  # the service did not answer: the dispatch stays open for the next recovery
            return Outcome(Status.AMBIGUOUS, self.eid, rechecked=rechecked, error=error or describe_error(exc))
        if not_found(found):
            return None
        evidence = as_evidence(found)  # reported as journaled, as every submit reports it
        data: dict[str, Any] = {"via": "recovery-query", "found": evidence,
                                "rechecked": rechecked.journaled() if rechecked else None, "epoch": self.claim.epoch}
        if error is not None:
            data["error"] = error
        append_settled(self.journal, self.claim, COMMITTED, self.eid, data)
        return Outcome(Status.COMMITTED_ON_QUERY, self.eid, evidence, rechecked, error=error)

    def _settle_unsent(self, rechecked: Check) -> Outcome:
        """The facts or the lease moved, so nothing may be sent: the lookup says whether a send landed, once no
        request of it can still land."""
        if not self.target.can_lookup:  # the send may have landed before the facts moved, and nothing can ask
            return self._ambiguous("the re-check failed and there is no lookup: whether the send landed is unknown",
                                   rechecked)
        settled = self.look_up(rechecked)
        if settled is not None:
            return settled
        if not covers(self.target, rechecked.moved()):  # the service would still take a stray request
            settled = self._look_once_none_can_land(rechecked)
            if settled is not None:
                return settled
        code = RefusalCode.LEASE_AT_RECOVERY if not rechecked.lease_live else RefusalCode.STALE_PREMISE_AT_RECOVERY
        return self._refuse(code, rechecked)

    def _resend(self, rechecked: Check, via: str, status: Status) -> Outcome:
        append_claimed(self.journal, self.claim, REDISPATCHED, self.eid,
                       {"via": via, "rechecked": rechecked.journaled(), "epoch": self.claim.epoch})
        self.hooks.reach(points.RECOVERY_BEFORE_RESEND)
        # the last look: only the read, the confirm and the request stand before the send. A read that raises
        # journals nothing: the earlier send may have landed, so it stays open for the next recovery's lookup
        looked = self.recheck()
        if not looked.passed:
            return self._settle_unsent(looked)
        if not self.claim.confirm():
            raise ClaimLost(f"the claim on {self.eid} was taken over before the resend")
        try:
            result = apply(self.target, self.eid, self.effect.payload, self.claim)
        except Exception as exc:
            if unanswered(exc):  # lost again: a look finds it if it landed, else the next recovery settles it
                return self._look_after_lost(rechecked, exc)
            if not isinstance(exc, Rejected):
                return self.send_failed(exc, rechecked)
            if not self.target.can_lookup:  # a fence (a dedupe) may have refused it for the earlier send, landed
                return self._ambiguous(f"the resend was rejected ({exc.detail}) and there is no lookup: whether "
                                       "the earlier send landed is unknown", rechecked)
            settled = self.look_up(rechecked)  # a precondition may have met our own earlier send, landed late
            if settled is None:  # or the earlier send is still on its way ("in progress"): not landed once none can
                settled = self._look_once_none_can_land(rechecked)
            if settled is not None:
                return settled
            code = RefusalCode.STALE_PREMISE_AT_RECOVERY if exc.precondition else RefusalCode.TARGET_ERROR
            return self._refuse(code, rechecked, detail=exc.detail)
        self.hooks.reach(points.RECOVERY_AFTER_RESEND)
        evidence = as_evidence(result)
        append_settled(self.journal, self.claim, COMMITTED, self.eid,
                       {"via": via, "result": evidence, "rechecked": rechecked.journaled(), "epoch": self.claim.epoch})
        return Outcome(status, self.eid, evidence, rechecked)

    def _look_after_lost(self, rechecked: Check, exc: BaseException) -> Outcome:
        """The resend's answer was lost: COMMITTED_ON_QUERY when the service already holds the effect, else
        AMBIGUOUS, left open (a request of the resend may still land, so "not found" settles nothing)."""
        settled = self.look_up(rechecked) if self.target.can_lookup else None
        return settled if settled is not None else Outcome(Status.AMBIGUOUS, self.eid, rechecked=rechecked, error=describe_error(exc))

    def _ambiguous(self, reason: str, rechecked: Check) -> Outcome:
        append_settled(self.journal, self.claim, AMBIGUOUS, self.eid,
                       {"reason": reason, "rechecked": rechecked.journaled(), "epoch": self.claim.epoch})
        return Outcome(Status.AMBIGUOUS, self.eid, rechecked=rechecked)

    def _refuse(self, code: RefusalCode, rechecked: Check, detail: str | None = None) -> Outcome:
        reason = detail or code.value.replace("_at_", " at ")
        return refuse(self.journal, self.claim, self.eid, code, reason, rechecked, resolves=True, key="rechecked",
                      epoch=self.claim.epoch)


def refuse(journal: JournalLike, claim: ClaimLike, eid: str, code: RefusalCode, reason: Any, looked: Check | None, *,
           resolves: bool, key: str = "checks", **data: Any) -> Outcome:
    """Journal a refusal with its code and the check behind it (under `key`), and return the matching outcome.

    `resolves` is False for a refusal before anything was sent: a later submit of the effect may try again.
    Raises ClaimLost when the journal kept the refusal as LATE_RESULT: the claim was taken over, so a successor
    settles the effect (a fence that refused this request may have met the successor's), and "not landed" would
    be a guess.
    """
    entry: dict[str, Any] = {"code": code.value, "reason": reason, "resolves": resolves}
    if looked is not None:
        entry[key] = looked.journaled()
    if append_settled(journal, claim, REFUSED, eid, {**entry, **data}).get("kind") == LATE_RESULT:
        raise ClaimLost(f"the claim on {eid} was taken over: its refusal is a late result, its successor settles it")
    return Outcome(Status.refusal(code), eid, rechecked=looked, reason=reason)
