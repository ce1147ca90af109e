"""Effect identity, and the proposal an effect was journaled with."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from ._protocols import JournalLike
from .kinds import PROPOSED
from .leases import Lease
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


def proposal(journal: JournalLike, effect_id: str) -> dict[str, Any] | None:
    """The PROPOSED entry of an effect (payload, premises as decided, target), or None if it was never proposed."""
    return next((e for e in journal.entries(effect_id) if e["kind"] == PROPOSED), None)
