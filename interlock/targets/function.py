"""A target made of plain callables, for effects on services the library has no target for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .base import TIER_BLIND, TIER_DEDUPE, TIER_LOOKUP


@dataclass
class FunctionTarget:
    """Wraps `send(effect_id, payload)`; its return value is kept as the effect's evidence.

    The caller declares the tier, since only the caller knows whether its service dedupes on the effect id
    (tier 1) or can be asked whether it landed (`lookup`, tier 2).
    """

    name: str
    send: Callable[[str, dict[str, Any]], Any]
    tier: int = TIER_BLIND
    find: Callable[[str, dict[str, Any]], Any | None] | None = None

    def __post_init__(self) -> None:
        if self.tier not in (TIER_DEDUPE, TIER_LOOKUP, TIER_BLIND):
            raise ValueError(f"tier must be 1, 2 or 3, got {self.tier!r}")
        if self.tier == TIER_LOOKUP and self.find is None:
            raise ValueError("a tier-2 target needs a lookup function")

    @property
    def can_lookup(self) -> bool:
        """Whether recovery can ask the service before resending."""
        return self.find is not None

    def apply(self, effect_id: str, payload: dict[str, Any]) -> Any:
        """Call the wrapped function."""
        return self.send(effect_id, payload)

    def lookup(self, effect_id: str, payload: dict[str, Any]) -> Any | None:
        """Call the wrapped lookup."""
        if self.find is None:
            raise NotImplementedError(f"target {self.name!r} has no lookup")
        return self.find(effect_id, payload)
