"""Scenario ledger, run by the explorer only: an agent posts one entry to an account on the ledger stand-in (tier
2: lookup by effect id, no dedupe unless a fence says so), decided while the account stood at version 0 and while
its authorization (the case's lease.json) was live. Each run has a ledger of its own, so each has its own write
delay and fence; the worker is experiments.explore.ledger_worker.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from collections.abc import Iterator
from typing import Any, ClassVar, cast

from interlock import effect_id_for

from experiments.atomic import write_json
from experiments.explore.ledger_worker import SYSTEMS
from experiments.runner import Case, Fault, Scenario


@dataclass(frozen=True)
class LedgerFault(Fault):
    """A run of the ledger: `fence` is how the ledger keeps a stray write out ("none", "epoch", "version",
    "dedupe"), and the gate declares it."""

    fence: str = "none"


class Ledger(Scenario):
    """A posting on a ledger that may land seconds after it arrived."""

    name = "ledger"
    worker = "experiments.explore.ledger_worker"
    roles = ()
    systems = SYSTEMS
    faults = ()
    fault_type = LedgerFault
    send_log = "log.jsonl"
    actions = ("balance_moved", "lease_revoked")
    amount: ClassVar[int] = 125

    @contextlib.contextmanager
    def open(self) -> Iterator[None]:
        """The runs' ledgers, each stopped when its run is released (or here, at the latest)."""
        self.root.mkdir(parents=True, exist_ok=True)
        self._ledgers: dict[str, tuple[Any, contextlib.ExitStack]] = {}
        try:
            yield
        finally:
            for run in list(self._ledgers):
                self._ledgers.pop(run)[1].close()

    def seed(self, case: Case) -> None:
        """A fresh ledger with the run's fence, an account at version 0, a live lease, the decided entry."""
        from experiments.services.ledger import ledger_service

        run = f"{case.fault.name}-{case.system}"
        stack = contextlib.ExitStack()
        fence = cast(LedgerFault, case.fault).fence  # the ledger's cases are made of LedgerFault
        ledger = stack.enter_context(ledger_service(self.root / f"ledger-{run}.jsonl",
                                                    fences=() if fence == "none" else (fence,)))
        self._ledgers[run] = (ledger, stack)
        key = f"ledger:{run}"
        effect_id = effect_id_for(key)
        resource = f"account-{run}"
        write_json(case.directory / "case.json", {"endpoint": ledger.endpoint, "resource": resource,
                                                  "amount": self.amount, "key": key, "effect_id": effect_id,
                                                  "decided_version": 0, "fence": fence})
        write_json(case.directory / "lease.json", {"status": "live"})
        case.ids.update(ledger_run=run, resource=resource, effect_id=effect_id)

    def worker_args(self, case: Case, phase: str) -> list[str]:
        """The ledger worker's command line."""
        return [case.system, phase, str(case.directory)]

    def perform(self, case: Case, action: str, when: str) -> dict[str, Any]:
        """Someone else writes the account (its version moves), or the authorization is revoked."""
        if action == "balance_moved":
            return {**self._ledger(case).human_write(case.ids["resource"], "human"), "when": when}
        write_json(case.directory / "lease.json", {"status": "revoked"})
        return {"lease": "revoked", "at": time.time(), "when": when}

    def agent_writes(self, case: Case) -> tuple[list[tuple[str, float]], int]:
        """Every applied write of the effect, from the ledger's own log, each timed when the ledger received it.

        Every write waits the same delay, so the ledger answers them in the order they arrived: the n-th answer
        (applied or refused) is the n-th arrival.
        """
        ledger = self._ledger(case)
        events = [e for e in ledger.log() if e["id"] == case.ids["effect_id"]]
        arrivals = iter(float(e["at"]) for e in events if e["event"] == "put")
        writes = []
        for event in events:
            if event["event"] in ("applied", "refused"):
                arrived = next(arrivals, float(event["at"]))
                if event["event"] == "applied":
                    writes.append((str(event["version"]), arrived))
        return writes, ledger.applies(case.ids["effect_id"])

    def slow_writes(self, case: Case, seconds: float) -> None:
        """The ledger lands every write `seconds` after it arrived."""
        self._ledger(case).configure(delay=seconds)

    def held_writes(self, case: Case) -> list[dict[str, Any]]:
        """Every write of the effect the ledger received, landed once it was applied or refused."""
        events = [e for e in self._ledger(case).log() if e["id"] == case.ids["effect_id"]]
        answered = sum(e["event"] in ("applied", "refused") for e in events)
        puts = [e for e in events if e["event"] == "put"]
        return [{"arrived": e["at"], "landed": n < answered} for n, e in enumerate(puts)]

    def release(self, case: Case) -> None:
        """Stop the run's ledger once nothing can reach it any more."""
        found = self._ledgers.pop(case.ids.get("ledger_run", ""), None)
        if found is not None:
            found[1].close()

    def _ledger(self, case: Case) -> Any:
        return self._ledgers[case.ids["ledger_run"]][0]
