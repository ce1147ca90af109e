"""What the gate reports for one effect: a status from one closed set, and the evidence behind it.

A status is a `str` enum, so `outcome.status == "COMMITTED"` and `json.dumps(outcome.status)` keep working for
code that stores or compares the strings. Refusals read `REFUSED:<code>`, one member per `RefusalCode`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from .checks import Check
from .errors import EffectRefused, EffectUnsettled

REFUSED_PREFIX = "REFUSED:"


class RefusalCode(str, enum.Enum):
    """Why the gate refused an effect: the machine-readable code journaled with every refusal."""

    LEASE = "lease"  # the authority was not live at dispatch
    STALE_PREMISE = "stale_premise"  # a fact the effect was decided on moved before the send
    CONFLICTING_PAYLOAD = "conflicting_payload"  # the same effect id was submitted with another payload
    TARGET_ERROR = "target_error"  # the service answered a definite no that is not a precondition
    LEASE_AT_RECOVERY = "lease_at_recovery"  # recovery found the authority ended and the effect not landed
    STALE_PREMISE_AT_RECOVERY = "stale_premise_at_recovery"  # recovery found the facts moved and it not landed
    SEND_FAILED = "send_failed"  # the caller's send raised, and the effect was found not landed once none could
    CHECK_FAILED = "check_failed"  # reading a fact or the lease raised at the last look: nothing was sent

    def __str__(self) -> str:
        return self.value


class Status(str, enum.Enum):
    """Every status the gate reports. `landed` says what the status claims about the service."""

    COMMITTED = "COMMITTED"  # sent and answered
    COMMITTED_BY_RETRY = "COMMITTED_BY_RETRY"  # recovery resent to a service that dedupes on the effect id
    COMMITTED_ON_QUERY = "COMMITTED_ON_QUERY"  # recovery found the effect at the service by its id
    REAPPLIED_AFTER_QUERY = "REAPPLIED_AFTER_QUERY"  # recovery looked, found nothing, and sent again
    DUPLICATE_IGNORED = "DUPLICATE_IGNORED"  # submitted again after it committed: not sent again
    AMBIGUOUS = "AMBIGUOUS"  # whether it landed cannot be known from here
    IN_FLIGHT = "IN_FLIGHT"  # another process holds it, or a request may still land: ask again later
    REFUSED_LEASE = REFUSED_PREFIX + RefusalCode.LEASE.value
    REFUSED_STALE_PREMISE = REFUSED_PREFIX + RefusalCode.STALE_PREMISE.value
    REFUSED_CONFLICTING_PAYLOAD = REFUSED_PREFIX + RefusalCode.CONFLICTING_PAYLOAD.value
    REFUSED_TARGET_ERROR = REFUSED_PREFIX + RefusalCode.TARGET_ERROR.value
    REFUSED_LEASE_AT_RECOVERY = REFUSED_PREFIX + RefusalCode.LEASE_AT_RECOVERY.value
    REFUSED_STALE_PREMISE_AT_RECOVERY = REFUSED_PREFIX + RefusalCode.STALE_PREMISE_AT_RECOVERY.value
    REFUSED_SEND_FAILED = REFUSED_PREFIX + RefusalCode.SEND_FAILED.value
    REFUSED_CHECK_FAILED = REFUSED_PREFIX + RefusalCode.CHECK_FAILED.value

    def __str__(self) -> str:
        return self.value

    @classmethod
    def refusal(cls, code: RefusalCode | str) -> Status:
        """The status of a refusal with this code."""
        return cls(REFUSED_PREFIX + RefusalCode(code).value)

    @property
    def refused(self) -> bool:
        """Whether the gate refused the effect (nothing landed)."""
        return self.value.startswith(REFUSED_PREFIX)

    @property
    def code(self) -> RefusalCode | None:
        """The refusal code, for a refusal."""
        return RefusalCode(self.value[len(REFUSED_PREFIX):]) if self.refused else None

    @property
    def landed(self) -> bool | None:
        """What the status claims: landed (True), not landed (False), or cannot say (None)."""
        if self.refused:
            return False
        if self in (Status.AMBIGUOUS, Status.IN_FLIGHT):
            return None
        return True


@dataclass(frozen=True)
class Outcome:
    """What the gate reports for one effect.

    `evidence` is what the service answered (or what a lookup found) as the journal holds it, so the call that sent
    and a later call that reads it back from the journal (DUPLICATE_IGNORED, a recovery) report the same value: one
    JSON cannot hold (a datetime, bytes) stands as `{"python_repr": ...}` on both, and on a recovery's resend or
    lookup. `rechecked` the last check of lease and premises; `error` the type and message
    of an exception raised by the send, journaled with it; `decide_at` (epoch seconds), for IN_FLIGHT, when a
    request that may still land can no longer land, so recovery can decide; `reason`, for a refusal, why, as
    journaled with it, so a later call that reads it back reports the same value: a list of the facts that moved
    (each a line of text) for a premise the gate found moved, else one text (the lease not live, the service's
    answer, the error the send raised, the code of a refusal at recovery).
    """

    status: Status
    effect_id: str
    evidence: Any = None
    rechecked: Check | None = None
    error: dict[str, str] | None = None
    decide_at: float | None = None
    reason: Any = None

    @property
    def landed(self) -> bool | None:
        """What the status claims about the service: landed, not landed, or cannot say."""
        return self.status.landed

    @property
    def refused(self) -> bool:
        """Whether the gate refused the effect."""
        return self.status.refused

    @property
    def code(self) -> RefusalCode | None:
        """The refusal code, for a refusal."""
        return self.status.code

    def raise_for_status(self) -> Outcome:
        """Return the outcome if the effect landed; raise EffectRefused or EffectUnsettled otherwise.

        For callers that treat anything but a landed effect as an error, the way `httpx` raises for an error
        status: `book(...).raise_for_status().evidence`.
        """
        if self.status.refused:
            why = f" ({self.reason})" if self.reason is not None else ""
            raise EffectRefused(f"effect {self.effect_id} refused: {self.status.value}{why}", self)
        if self.status.landed is None:
            when = f"; decidable after {self.decide_at:.3f}" if self.decide_at is not None else ""
            failed = f" ({self.error['type']}: {self.error['message']})" if self.error else ""
            raise EffectUnsettled(f"effect {self.effect_id} is {self.status.value}{when}{failed}", self)
        return self

