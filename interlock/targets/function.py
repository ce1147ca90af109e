"""A target made of plain callables, for effects on services the library has no target for."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import ConfigurationError
from .base import TIER_BLIND, TIER_DEDUPE, TIER_LOOKUP, validate_fencing


@dataclass
class FunctionTarget:
    """Wraps `send(effect_id, payload)`; its return value is kept as the effect's evidence.

    The caller declares what only it knows about its service: the tier (does it dedupe on the effect id, tier
    1; can it be asked whether the effect landed, `find`, tier 2: evidence when it did, else None, False or an
    empty collection), what the service refuses on its own (`fences`: `DEDUPE`, `LEASE`, `EPOCH` or the names of
    premises each request preconditions on), and
    `in_flight`, the longest a request from a dead sender can still land where no fence covers it (see
    `interlock.targets.base`). With `takes_epoch=True`, `send(effect_id, payload, epoch=...)` receives the claim
    epoch; `shut(effect_id, payload, epoch=...)`, when given, makes the service refuse every request of the
    effect still in flight (it becomes the target's `close_out`).
    """

    name: str
    send: Callable[..., Any]
    tier: int = TIER_BLIND
    find: Callable[[str, dict[str, Any]], Any | None] | None = None
    fences: Collection[str] = ()
    in_flight: float | None = None
    takes_epoch: bool = False
    shut: Callable[..., None] | None = None

    def __post_init__(self) -> None:
        if self.tier not in (TIER_DEDUPE, TIER_LOOKUP, TIER_BLIND):
            raise ConfigurationError(f"tier must be 1, 2 or 3, got {self.tier!r}")
        if self.tier == TIER_LOOKUP and self.find is None:
            raise ConfigurationError("a tier-2 target needs a lookup function")
        if self.tier == TIER_BLIND and self.find is not None:
            raise ConfigurationError("a tier-3 target is one with no lookup, which recovery never sends again; a "
                                     "target whose lookup answers whether the effect landed is tier 2")
        validate_fencing(self.fences, self.in_flight)
        self.fences = frozenset(self.fences)

    @property
    def can_lookup(self) -> bool:
        """Whether recovery can ask the service before resending."""
        return self.find is not None

    def apply(self, effect_id: str, payload: dict[str, Any], **epoch: int) -> Any:
        """Call the wrapped function (with `epoch=` when the target takes it)."""
        return self.send(effect_id, payload, **epoch)

    def lookup(self, effect_id: str, payload: dict[str, Any]) -> Any | None:
        """Call the wrapped lookup: None, or any other false answer, means not found."""
        if self.find is None:
            raise NotImplementedError(f"target {self.name!r} has no lookup")
        return self.find(effect_id, payload)

    @property
    def close_out(self) -> Callable[..., None] | None:
        """The caller's way to make its service refuse an effect's requests still in flight, if it has one."""
        return self.shut
