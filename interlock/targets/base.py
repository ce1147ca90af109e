"""What a gate needs from the service an effect lands on, and how a stray request is kept from landing late.

A request can outlive the process that sent it (a slow service, a lost answer, a sender killed mid-request).
Recovery must not conclude "not landed" while such a stray request can still land, so every target says what its
service refuses on its own, in `fences` (each a name recovery compares with what it found moved):

- `DEDUPE` ("effect_id"): the service refuses a second apply of the effect id (a client-chosen Calendar event
  id, a precondition that the first apply itself invalidates). A resend can never land twice; a late *first*
  apply is not stopped by it. Tier 1 implies it.
- a premise's name (GCS "generation"): every request carries a precondition on that premise's decided value, so
  once the premise moved a stray request is refused.
- `LEASE`: the service itself refuses a request once the effect's authority ended.
- `EPOCH`: the service refuses a request whose claim epoch is below one it has seen for the effect id; with
  `takes_epoch = True`, `apply(effect_id, payload, epoch=...)` receives the epoch, so a sender that woke after its
  claim was taken over is refused once its successor reached the service.

A target may also offer `close_out(effect_id, payload, *, epoch)`: make the service refuse every request of the
effect still in flight, from now on (raise the epoch at the service, take the event id for good). After it, the
lookup that follows is final. It may be called again after it raised (its answer may have been lost).

Recovery concludes "not landed" at once when the fences cover everything that moved, or after `close_out`;
otherwise not before the last send's DISPATCHED time plus `in_flight` (seconds; `DEFAULT_IN_FLIGHT` when the
target declares none), the longest a request from a dead sender can still land.
"""

from __future__ import annotations

import http.client
import math
import urllib.error
from collections.abc import Collection, Iterable
from typing import Any, Protocol, runtime_checkable

from ..errors import ConfigurationError

TIER_DEDUPE = 1
"""The service dedupes on the effect id: a resend cannot land twice."""
TIER_LOOKUP = 2
"""No dedupe, but a lookup by effect id answers "did it land"."""
TIER_BLIND = 3
"""Neither: after a crash mid-send nobody can say, so recovery never resends."""
DEFAULT_IN_FLIGHT = 30.0
"""Seconds a request that no fence covers may still land, when the target declares nothing."""
DEDUPE = "effect_id"
"""A fence: the service refuses a second apply of the effect id (a late first apply is not stopped by it)."""
LEASE = "lease"
"""A fence: the service itself refuses a request once the effect's authority ended."""
EPOCH = "epoch"
"""A fence: the service refuses a request whose claim epoch is below one it has seen for the effect id."""


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

    Optional attributes, read with their defaults when absent: `fences` (empty: the service refuses nothing on
    its own), `in_flight` (None: `DEFAULT_IN_FLIGHT`), `takes_epoch` (False), and the method `close_out`. See
    the module docstring.
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
        """Evidence that the effect landed, found at the service by its id; None (or any false answer) when it did
        not (`not_found`)."""
        ...


def fences_of(target: Any) -> frozenset[str]:
    """What the target's service refuses on its own; a tier-1 target dedupes on the effect id by definition."""
    declared = frozenset(getattr(target, "fences", ()) or ())
    return declared | {DEDUPE} if getattr(target, "tier", None) == TIER_DEDUPE else declared


def covers(target: Any, moved: Iterable[str]) -> bool:
    """Whether the service refuses a stray request of an effect whose `moved` facts no longer hold."""
    fences = fences_of(target)
    return all(name in fences for name in moved)


def in_flight_bound(target: Any) -> float:
    """How long after a send a stray request of it may still land, where no fence covers it."""
    bound = getattr(target, "in_flight", None)
    return DEFAULT_IN_FLIGHT if bound is None else float(bound)


def validate_fencing(fences: Any, in_flight: float | None) -> None:
    """`fences` is a collection of names (not one string), a bound is a finite number of seconds not below zero."""
    if (isinstance(fences, (str, bytes)) or not isinstance(fences, Collection)
            or not all(isinstance(name, str) for name in fences)):
        raise ConfigurationError(f"fences must be a collection of names such as {DEDUPE!r}, got {fences!r}")
    if in_flight is not None and (isinstance(in_flight, bool) or not isinstance(in_flight, (int, float))
                                  or not 0 <= in_flight < math.inf):
        raise ConfigurationError(f"in_flight must be a finite number of seconds >= 0, got {in_flight!r}")


def not_found(answer: Any) -> bool:
    """Whether a lookup's answer says the effect is not at the service: any false answer (None, False, 0, an empty
    string or collection, an HTTP client's response to a failed request). An answer whose truth cannot be told (an
    array of several values) is a ConfigurationError: the lookup must say found or not found."""
    try:
        return not answer
    except Exception as exc:
        raise ConfigurationError(f"a lookup answered a {type(answer).__name__}, which is neither true nor false "
                                 f"({exc}); answer with evidence that the effect landed, or None") from None


# The lost answers of the common HTTP clients, named by the module and class of an exception or an ancestor: a
# request that timed out or lost its connection may have landed. Named, not imported: none of them is a dependency.
CLIENT_LOST_ANSWERS = frozenset({
    "requests.exceptions.ConnectionError", "requests.exceptions.Timeout", "requests.exceptions.ChunkedEncodingError",
    "urllib3.exceptions.ProtocolError", "urllib3.exceptions.TimeoutError", "httpx._exceptions.TransportError",
    "aiohttp.client_exceptions.ClientConnectionError", "aiohttp.client_exceptions.ServerTimeoutError",
})
# Their errors for an answer the client got, which is lost when the service failed (a 5xx) after it may have acted
CLIENT_STATUS_ERRORS = frozenset({"requests.exceptions.HTTPError", "httpx._exceptions.HTTPStatusError"})


def unanswered(exc: BaseException) -> bool:
    """Whether an exception from a send is a lost answer (recovery may settle it by lookup), not the caller's bug:
    `Unanswered`; the standard library's connection errors, timeouts and 5xx answers; and those of requests,
    urllib3, httpx and aiohttp."""
    if isinstance(exc, Unanswered):
        return True
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code >= 500
    if isinstance(exc, (ConnectionError, TimeoutError, urllib.error.URLError, http.client.HTTPException)):
        return True
    names = {f"{cls.__module__}.{cls.__qualname__}" for cls in type(exc).__mro__}
    if names & CLIENT_STATUS_ERRORS:
        status = getattr(getattr(exc, "response", None), "status_code", None)
        return isinstance(status, int) and status >= 500
    return bool(names & CLIENT_LOST_ANSWERS)
