"""Leases: the authority an effect needs to still be live when it is sent (an open incident, a live request)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, runtime_checkable


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
    description: Callable[[], Any] = lambda: None

    def is_live(self) -> bool:
        """Ask the caller's function."""
        return bool(self.live())

    def describe(self) -> Any:
        """Ask the caller's description function."""
        return self.description()


def check(lease: Lease | None, premises_check: Callable[[], list[str]]) -> dict[str, Any]:
    """The journaled check: the lease first; premises are read only while the lease is live."""
    if lease is None:
        return {"lease_live": True, "lease": None, "violations": premises_check()}
    live = lease.is_live()
    described = lease.describe()
    if not live:
        return {"lease_live": False, "lease": described}
    return {"lease_live": True, "lease": described, "violations": premises_check()}


def passed(checks: dict[str, Any]) -> bool:
    """Whether a journaled check allows a send."""
    return bool(checks.get("lease_live")) and not checks.get("violations")
