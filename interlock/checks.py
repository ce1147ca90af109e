"""The check the gate journals before every send: is the lease live, and which premises no longer hold."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .errors import ConfigurationError
from .leases import Lease


@dataclass(frozen=True)
class Check:
    """One look at lease and premises. Premises are read only while the lease is live (`violations` is then
    empty and not journaled), so a revoked authority never costs a read of the facts."""

    lease_live: bool
    lease: Any = None
    violations: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """Whether this look allows a send."""
        return self.lease_live and not self.violations

    def journaled(self) -> dict[str, Any]:
        """The dict stored in the journal (`checks`, `rechecked`): the published entries' shape."""
        if not self.lease_live:
            return {"lease_live": False, "lease": self.lease}
        return {"lease_live": True, "lease": self.lease, "violations": list(self.violations)}

    def moved(self) -> frozenset[str]:
        """What no longer holds, in the names a target's fences use: "lease" when the lease ended (the premises
        were then not read), else the name of each premise that moved (a violation starts with its name)."""
        if not self.lease_live:
            return frozenset({"lease"})
        return frozenset(v.partition(": ")[0] for v in self.violations)

    def reason(self) -> str | list[str]:
        """What a refusal on this check journals as its reason: the violations, or that the lease ended."""
        return list(self.violations) if self.lease_live else "lease not live"


def check(lease: Lease | None, premises_check: Callable[[], list[str]]) -> Check:
    """Look at the lease first; read the premises only while it is live. A lease answering anything but True or
    False is a ConfigurationError: a truthy status ("cancelled", 1) never passes for live, None never for ended."""
    if lease is None:
        return Check(True, None, tuple(premises_check()))
    live = lease.is_live()
    if type(live) is not bool:
        raise ConfigurationError(f"{type(lease).__name__}.is_live() returned {live!r}; it must return True or False")
    described = lease.describe()
    if not live:
        return Check(False, described)
    return Check(True, described, tuple(premises_check()))
