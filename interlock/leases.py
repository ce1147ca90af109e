"""Leases: the authority an effect needs to still be live when it is sent (an open incident, a live request)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, runtime_checkable

from .errors import ConfigurationError


@runtime_checkable
class Lease(Protocol):
    """Anything that can say whether the authority still holds and describe it for the journal."""

    def is_live(self) -> bool:
        """True while the effect may still be sent."""
        ...

    def describe(self) -> Any:
        """A JSON value journaled with every check, so the record shows what authority was relied on."""
        ...


@dataclass(frozen=True)
class CallableLease:
    """A lease made of two functions, for callers whose authority lives in their own store."""

    live: Callable[[], bool]
    """Whether the authority is live now."""
    description: Callable[[], Any] = lambda: None
    """What the authority is (a JSON value), journaled with each check beside whether it was live."""

    def is_live(self) -> bool:
        """Ask the caller's function, which must answer True or False (a truthy status is not taken as live)."""
        live = self.live()
        if type(live) is not bool:
            raise ConfigurationError(f"CallableLease: live() returned {live!r}; it must return True or False")
        return live

    def describe(self) -> Any:
        """Ask the caller's description function."""
        return self.description()

