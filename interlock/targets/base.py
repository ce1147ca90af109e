"""What a gate needs from the service an effect lands on."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

TIER_DEDUPE = 1  # the service dedupes on the effect id: a resend cannot land twice
TIER_LOOKUP = 2  # no dedupe, but a lookup by effect id answers "did it land"
TIER_BLIND = 3  # neither: after a crash mid-send nobody can say, so recovery never resends


class Rejected(Exception):
    """The service answered that it did not apply the effect (a definite no, unlike a lost answer).

    `precondition` is True when the service's own compare-and-swap failed (GCS 412): the facts moved.
    """

    def __init__(self, detail: str, *, precondition: bool = False):
        super().__init__(detail)
        self.detail = detail
        self.precondition = precondition


@runtime_checkable
class Target(Protocol):
    """A service an effect lands on. `apply` raises Rejected for a definite no; any other error means unknown."""

    name: str
    tier: int
    can_lookup: bool

    def apply(self, effect_id: str, payload: dict[str, Any]) -> Any:
        """Send the effect; return JSON evidence of what the service did."""
        ...

    def lookup(self, effect_id: str, payload: dict[str, Any]) -> Any | None:
        """Evidence that the effect landed, found at the service by its id, or None when it did not."""
        ...
