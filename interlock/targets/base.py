"""What a gate needs from the service an effect lands on, and how a stray request is kept from landing late.

A request can outlive the process that sent it (a slow service, a lost answer, a sender killed mid-request).
Every target says how such a stray request is kept from landing after recovery decided:

- `fenced = True`: the service itself refuses it, by a precondition on the decided state (GCS
  `ifGenerationMatch`) or a dedupe on the effect id (a client-chosen Calendar event id). Recovery can decide
  at once.
- `in_flight = SECONDS`: the longest a request from a dead sender can still land. Recovery does not judge an
  unfenced effect "not landed", and does not resend it, before its last send's DISPATCHED time plus that bound.
- neither: unfenced, with `DEFAULT_IN_FLIGHT` as the bound. A tier-1 target (dedupe on the effect id) is fenced.

A target that fences on the claim epoch sets `takes_epoch = True`: `apply(effect_id, payload, epoch=...)`
receives the epoch, so the service can refuse a sender whose claim was taken over (a paused sender that woke).
"""

from __future__ import annotations

import http.client
import urllib.error
from typing import Any, Protocol, runtime_checkable

from ..errors import ConfigurationError

TIER_DEDUPE = 1  # the service dedupes on the effect id: a resend cannot land twice
TIER_LOOKUP = 2  # no dedupe, but a lookup by effect id answers "did it land"
TIER_BLIND = 3  # neither: after a crash mid-send nobody can say, so recovery never resends
DEFAULT_IN_FLIGHT = 30.0  # seconds a request to an unfenced target that declares nothing may still land


class Rejected(Exception):
    """The service answered that it did not apply the effect (a definite no, unlike a lost answer).

    `precondition` is True when the service's own compare-and-swap failed (GCS 412): the facts moved.
    """

    def __init__(self, detail: str, *, precondition: bool = False):
        super().__init__(detail)
        self.detail = detail
        self.precondition = precondition


class Unanswered(Exception):
    """The service's answer was lost or says nothing about whether it applied the effect (a 5xx, a timeout).

    Raise it from a target for such answers; connection resets and timeouts of the standard library count as
    unanswered already. Recovery settles an unanswered send by lookup; any other exception from a send is the
    caller's own error: journaled with its type and message, and never retried blindly.
    """


@runtime_checkable
class Target(Protocol):
    """A service an effect lands on. `apply` raises Rejected for a definite no, Unanswered for a lost answer.

    Optional attributes, read with their defaults when absent: `fenced` (False), `in_flight` (None: the
    default bound), `takes_epoch` (False). See the module docstring.
    """

    @property
    def name(self) -> str:
        """The target's name, journaled with every effect."""
        ...

    @property
    def tier(self) -> int:
        """1: the service dedupes on the effect id; 2: a lookup answers "did it land"; 3: neither."""
        ...

    @property
    def can_lookup(self) -> bool:
        """Whether `lookup` can ask the service."""
        ...

    def apply(self, effect_id: str, payload: dict[str, Any]) -> Any:
        """Send the effect; return JSON evidence of what the service did."""
        ...

    def lookup(self, effect_id: str, payload: dict[str, Any]) -> Any | None:
        """Evidence that the effect landed, found at the service by its id, or None when it did not."""
        ...


def in_flight_bound(target: Any) -> float | None:
    """How long after a send recovery must wait before judging it: None for a fenced target, else seconds.

    A tier-1 target dedupes on the effect id, which fences a stray request by itself.
    """
    if getattr(target, "fenced", False) or getattr(target, "tier", None) == TIER_DEDUPE:
        return None
    bound = getattr(target, "in_flight", None)
    return DEFAULT_IN_FLIGHT if bound is None else float(bound)


def validate_fencing(fenced: bool, in_flight: float | None) -> None:
    """A target is fenced or bounded, not both, and a bound is a number of seconds not below zero."""
    if fenced and in_flight is not None:
        raise ConfigurationError("a target is fenced or has an in_flight bound, not both")
    if in_flight is not None and (isinstance(in_flight, bool) or not isinstance(in_flight, (int, float))
                                  or in_flight < 0):
        raise ConfigurationError(f"in_flight must be a number of seconds >= 0, got {in_flight!r}")


def unanswered(exc: BaseException) -> bool:
    """Whether an exception from a send is a lost answer (recovery may settle it by lookup), not the caller's bug."""
    if isinstance(exc, Unanswered):
        return True
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code >= 500
    return isinstance(exc, (ConnectionError, TimeoutError, urllib.error.URLError, http.client.HTTPException))
