"""Recovery: settle a dispatch whose sender died, without ever sending an effect twice or against moved facts."""

from __future__ import annotations

from typing import Any

from . import hooks as points, outcomes
from ._protocols import ClaimLike, JournalLike
from .hooks import NO_HOOKS, Hooks
from .effects import Effect, Outcome
from .kinds import AMBIGUOUS, COMMITTED, PROPOSED, REDISPATCHED, REFUSED
from .leases import check, passed
from .premises import violations
from .targets.base import TIER_BLIND, TIER_DEDUPE, Rejected, Target


def recover_effect(journal: JournalLike, target: Target, effect: Effect, claim: ClaimLike,
                   hooks: Hooks = NO_HOOKS) -> Outcome:
    """Re-check lease and premises, look the effect up, and resend only where that cannot duplicate it.

    Tier 1 resends when the re-check passes (the service dedupes); otherwise, and always on tier 2, the
    lookup decides: found means it landed; not found and still valid means tier 2 resends with the
    service's own precondition. Without a lookup a failed re-check cannot say whether the first send landed,
    and tier 3 never resends: both record AMBIGUOUS. Every resend is preceded by a last look at lease and
    premises, after REDISPATCHED is durable, so only that read and the request itself stand between the check and
    the send. The caller holds the claim.
    """
    rechecked = _recheck(journal, effect)
    valid = passed(rechecked)
    if target.tier == TIER_DEDUPE and valid:
        return _resend(journal, target, effect, claim, hooks, rechecked, "retry", outcomes.COMMITTED_BY_RETRY)
    if not valid:
        return _settle_unsent(journal, target, effect, claim, rechecked)
    if target.can_lookup:
        settled = _look_up(journal, target, effect, claim, rechecked)
        if settled is not None:
            return settled
    if target.tier == TIER_BLIND:
        return _ambiguous(journal, effect.effect_id, "no dedupe and no lookup: whether the send landed is unknown",
                          rechecked, claim)
    return _resend(journal, target, effect, claim, hooks, rechecked, "recovery-reapply", outcomes.REAPPLIED_AFTER_QUERY)


def _recheck(journal: JournalLike, effect: Effect) -> dict[str, Any]:
    decided = next(e for e in journal.entries(effect.effect_id) if e["kind"] == PROPOSED)["premises"]
    return check(effect.lease, lambda: violations(effect.premises, decided, effect.effect_id))


def _look_up(journal: JournalLike, target: Target, effect: Effect, claim: ClaimLike,
             rechecked: dict[str, Any]) -> Outcome | None:
    """COMMITTED_ON_QUERY when the service holds the effect, None when it does not."""
    eid = effect.effect_id
    try:
        found = target.lookup(eid, effect.payload)
    except Exception:  # the service did not answer: the dispatch stays open for the next recovery
        return Outcome(outcomes.AMBIGUOUS, eid, rechecked=rechecked)
    if found is None:
        return None
    journal.append(COMMITTED, eid, {"via": "recovery-query", "found": found, "rechecked": rechecked,
                                    "epoch": claim.epoch})
    return Outcome(outcomes.COMMITTED_ON_QUERY, eid, found, rechecked)


def _settle_unsent(journal: JournalLike, target: Target, effect: Effect, claim: ClaimLike,
                   rechecked: dict[str, Any]) -> Outcome:
    """The facts or the lease moved, so nothing may be sent: only a lookup can still say an earlier send landed."""
    if not target.can_lookup:  # the send may have landed before the facts moved, and nothing can ask
        return _ambiguous(journal, effect.effect_id, "the re-check failed and there is no lookup: whether the "
                          "send landed is unknown", rechecked, claim)
    settled = _look_up(journal, target, effect, claim, rechecked)
    if settled is not None:
        return settled
    code = "lease_at_recovery" if not rechecked["lease_live"] else "stale_premise_at_recovery"
    return _refuse_at_recovery(journal, effect.effect_id, code, rechecked, claim)


def _resend(journal: JournalLike, target: Target, effect: Effect, claim: ClaimLike, hooks: Hooks,
            rechecked: dict[str, Any],
            via: str, status: str) -> Outcome:
    eid = effect.effect_id
    journal.append(REDISPATCHED, eid, {"via": via, "rechecked": rechecked, "epoch": claim.epoch})
    hooks.reach(points.RECOVERY_BEFORE_RESEND)
    looked = _recheck(journal, effect)  # the last look: only the read and the request stand between it and the send
    if not passed(looked):
        return _settle_unsent(journal, target, effect, claim, looked)
    try:
        result = target.apply(eid, effect.payload)
    except Rejected as no:
        code = "stale_premise_at_recovery" if no.precondition else "target_error"
        return _refuse_at_recovery(journal, eid, code, rechecked, claim, detail=no.detail)
    except Exception:  # lost again: leave the dispatch open for the next recovery
        return Outcome(outcomes.AMBIGUOUS, eid, rechecked=rechecked)
    hooks.reach(points.RECOVERY_AFTER_RESEND)
    journal.append(COMMITTED, eid, {"via": via, "result": result, "rechecked": rechecked, "epoch": claim.epoch})
    return Outcome(status, eid, result, rechecked)


def _ambiguous(journal: JournalLike, eid: str, reason: str, rechecked: dict[str, Any], claim: ClaimLike) -> Outcome:
    journal.append(AMBIGUOUS, eid, {"reason": reason, "rechecked": rechecked, "epoch": claim.epoch})
    return Outcome(outcomes.AMBIGUOUS, eid, rechecked=rechecked)


def refuse(journal: JournalLike, eid: str, code: str, reason: Any, **data: Any) -> Outcome:
    """Journal a refusal with its machine-readable code and return the matching outcome."""
    journal.append(REFUSED, eid, {"code": code, "reason": reason, **data})
    return Outcome(outcomes.refused(code), eid, rechecked=data.get("rechecked", data.get("checks")))


def _refuse_at_recovery(journal: JournalLike, eid: str, code: str, rechecked: dict[str, Any], claim: ClaimLike,
                        detail: str | None = None) -> Outcome:
    reason = detail or code.replace("_at_", " at ")
    return refuse(journal, eid, code, reason, resolves=True, rechecked=rechecked, epoch=claim.epoch)
