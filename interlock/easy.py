"""A decorator API: turn a plain function into a gated effect in a few lines.

    app = Interlock("journal.jsonl")

    @app.effect(key=lambda rid, start, end: f"booking:{rid}",
                lease=lambda rid, start, end: request_is_live(rid),
                facts={"other_events_in_slot": lambda rid, start, end: events_between(start, end)},
                expect={"other_events_in_slot": []}, tier=1, lookup=find_booking)
    def book(rid, start, end, effect_id):
        return insert_event(id=effect_id, start=start, end=end)

    outcome = book("r1", "2026-10-13T10:00:00Z", "2026-10-13T10:30:00Z")
    app.recover()   # after a crash: settle every open dispatch of every registered action
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass
from typing import Any, Callable

from .claims import FileClaims
from .effects import Effect, Outcome
from .gate import Gate, proposal
from .hooks import NO_HOOKS, Hooks
from .journal import Journal
from .leases import CallableLease, Lease
from .premises import NOT_SET, Premise
from .targets.base import TIER_BLIND
from .targets.function import FunctionTarget


@dataclass
class _Action:
    gate: Gate
    build: Callable[..., Effect]


class Interlock:
    """One journal and one claim directory shared by every action registered on it."""

    def __init__(self, journal: str | os.PathLike[str], *, agent: str = "agent", claim_wait: float = 10.0,
                 hooks: Hooks = NO_HOOKS):
        self.journal = Journal(journal)
        self.claims = FileClaims(f"{self.journal.path}.claims")
        self.agent = agent
        self.claim_wait = claim_wait
        self.hooks = hooks
        self._actions: dict[str, _Action] = {}

    def effect(
        self,
        *,
        key: Callable[..., str],
        lease: Callable[..., bool | Lease] | None = None,
        facts: dict[str, Callable[..., Any]] | None = None,
        expect: dict[str, Any] | None = None,
        tier: int = TIER_BLIND,
        lookup: Callable[..., Any] | None = None,
    ) -> Callable[[Callable[..., Any]], Callable[..., Outcome]]:
        """Gate the decorated function. Every callable receives the action's own arguments.

        `facts` are read when the call is made (the decision) and re-read before every send; a fact named in
        `expect` must equal that value, the others must stay unchanged. `lookup(*args, effect_id=...)`
        returns evidence that the effect landed, or None. The function gets `effect_id=` if it accepts it.
        """
        facts = facts or {}
        expect = expect or {}
        unknown = set(expect) - set(facts)
        if unknown:
            raise ValueError(f"expect names facts that are not declared: {sorted(unknown)}")

        def decorate(fn: Callable[..., Any]) -> Callable[..., Outcome]:
            name = fn.__qualname__

            def send(effect_id: str, payload: dict[str, Any]) -> Any:
                return _call(fn, payload["args"], effect_id)

            def find(effect_id: str, payload: dict[str, Any]) -> Any:
                return _call(lookup, payload["args"], effect_id) if lookup else None

            target = FunctionTarget(name, send, tier=tier, find=find if lookup else None)

            def build(*args: Any) -> Effect:
                premises = [Premise(fact, (lambda read=read: read(*args)),
                                    expect=expect.get(fact, NOT_SET)) for fact, read in facts.items()]
                return Effect(key(*args), {"action": name, "args": list(args)}, premises, _lease(lease, args),
                              self.agent)

            gate = Gate(self.journal, target, claims=self.claims, claim_wait=self.claim_wait, hooks=self.hooks)
            self._actions[name] = _Action(gate, build)

            def gated(*args: Any) -> Outcome:
                return gate.submit(build(*args))

            gated.__wrapped__ = fn  # type: ignore[attr-defined]
            gated.__doc__ = fn.__doc__
            return gated

        return decorate

    def recover(self) -> list[Outcome]:
        """Settle every open dispatch of every registered action; an effect still being sent reports IN_FLIGHT."""
        settled = []
        for record in self.journal.open_dispatches():
            proposed = proposal(self.journal, record.effect_id)
            action = self._actions.get(proposed.get("target", ""))
            if action is None:
                continue
            settled.append(action.gate.recover(action.build(*proposed["effect"]["args"])))
        return settled


def _lease(lease: Callable[..., bool | Lease] | None, args: tuple[Any, ...]) -> Lease | None:
    if lease is None:
        return None
    first = lease(*args)
    if isinstance(first, Lease):
        return first
    return CallableLease(lambda: bool(lease(*args)))


def _call(fn: Callable[..., Any], args: list[Any], effect_id: str) -> Any:
    if "effect_id" in inspect.signature(fn).parameters:
        return fn(*args, effect_id=effect_id)
    return fn(*args)
