"""Effect identity, and the proposal an effect was journaled with."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from ._protocols import JournalLike
from .errors import ConfigurationError
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

    def __post_init__(self) -> None:
        if type(self.key) is not str or not self.key:
            raise ConfigurationError(f"an effect's key must be a non-empty str naming the request, got {self.key!r}")
        if not isinstance(self.payload, dict):
            raise ConfigurationError(f"effect {self.key}: payload must be a dict, got {type(self.payload).__name__}")
        if not isinstance(self.premises, list) or not all(isinstance(p, Premise) for p in self.premises):
            raise ConfigurationError(f"effect {self.key}: premises must be a list of Premise, got {self.premises!r}")
        if self.lease is not None and not isinstance(self.lease, Lease):
            raise ConfigurationError(f"effect {self.key}: lease must be a Lease (is_live and describe) or None, got "
                                     f"{self.lease!r}")

    @property
    def effect_id(self) -> str:
        """Derived from the key, so a restarted worker finds the same effect."""
        return effect_id_for(self.key)


def proposal(journal: JournalLike, effect_id: str) -> dict[str, Any] | None:
    """The PROPOSED entry of an effect (payload, premises as decided, target), or None if it was never proposed."""
    return next((e for e in journal.entries(effect_id) if e["kind"] == PROPOSED), None)
