"""Effect identity and the outcome a caller gets back."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from .leases import Lease
from .outcomes import landed
from .premises import Premise


def effect_id_for(key: str) -> str:
    """The effect id for a request key: the same key gives the same id in every process."""
    return hashlib.sha256(json.dumps(key).encode()).hexdigest()[:12]


@dataclass
class Effect:
    """One side effect as the agent decided it: its request key, payload, premises and lease."""

    key: str
    payload: dict[str, Any]
    premises: list[Premise] = field(default_factory=list)
    lease: Lease | None = None
    agent: str = "agent"

    @property
    def effect_id(self) -> str:
        """Derived from the key, so a restarted worker finds the same effect."""
        return effect_id_for(self.key)


@dataclass(frozen=True)
class Outcome:
    """What the gate reports for one effect: the status string and the evidence behind it."""

    status: str
    effect_id: str
    evidence: Any = None
    rechecked: dict[str, Any] | None = None

    @property
    def landed(self) -> bool | None:
        """What the status claims: landed, not landed, or cannot say."""
        return landed(self.status)
