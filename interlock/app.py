"""`Interlock`: the one way in. Open a journal, decorate the functions that act on the world, recover after a crash.

    from interlock import Interlock, current_effect

    with Interlock("journal.jsonl") as app:          # or Interlock("postgresql://...")

        @app.effect(name="book", key=lambda rid, start, end: f"booking:{rid}",
                    lease=lambda rid, start, end: request_is_live(rid),
                    facts={"other_events_in_slot": lambda rid, start, end: events_between(start, end)},
                    expect={"other_events_in_slot": []}, tier=1, lookup=find_booking)
        def book(rid: str, start: str, end: str) -> dict:
            return insert_event(id=current_effect(), start=start, end=end)

        seen = events_between(start, end)             # what the agent looked at when it decided
        outcome = book("r1", start, end, observed={"other_events_in_slot": seen})
        app.recover()                                 # after a crash: settle every open effect

A decorated function is called like the function it wraps and returns an `Outcome` instead of its value (the
value, as the journal holds it, is the outcome's `evidence`). Every callable given to `effect` (key, lease, facts,
expect, lookup) receives the call's own arguments.

**Premises are the values the agent saw.** The caller passes them as `observed={fact: value}` (a keyword the
decorator reserves) and they are journaled as the decision, then compared with each fact's reader before every
send and at recovery. A fact with no observed value is an error, unless the effect was declared with
`read_at_call=True`: then it is read when the call is made. That read protects against a change between the call
and the send, not against one between the agent's decision and the call: the call may already be too late.
`expect` pins a fact to a value (or to a callable's value, evaluated at decision time), whatever was observed.

Typed code that wants the checker to see `observed` passes it as `book.decided_on({...})(rid, start, end)`, the
same call with the wrapped function's own parameter types.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import os
from collections.abc import Awaitable, Callable, Collection, Coroutine, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, ParamSpec, overload

from ._protocols import ClaimsLike, JournalLike
from .backends import open_journal
from .claims import DEFAULT_TTL
from .effects import Effect, proposal
from .errors import ConfigurationError, DuplicateAction
from .gate import Gate
from .hooks import NO_HOOKS, Hooks
from .kinds import AMBIGUOUS
from .leases import Lease
from .outcomes import Outcome, Status
from .premises import NOT_SET, Premise
from .targets.base import DEDUPE, EPOCH, LEASE, TIER_BLIND, TIER_LOOKUP, validate_fencing
from .targets.function import FunctionTarget

P = ParamSpec("P")
OBSERVED = "observed"

_current: contextvars.ContextVar[str] = contextvars.ContextVar("interlock_current_effect")
_bridge: contextvars.ContextVar[_Bridge] = contextvars.ContextVar("interlock_bridge")
_epoch: contextvars.ContextVar[int] = contextvars.ContextVar("interlock_current_epoch")


def current_effect() -> str:
    """The id of the effect being sent or looked up, for the decorated function and its lookup.

    A service that dedupes (tier 1) or answers lookups (tier 2) needs the effect id stored with the write; this
    is how the function gets it without a parameter of its own.
    """
    try:
        return _current.get()
    except LookupError:
        raise ConfigurationError("current_effect() is set only inside a gated send or lookup") from None


def current_epoch() -> int:
    """The claim epoch of the send under way, for a decorated function whose service fences on it (`fences=[EPOCH]`).

    Sent with the request, it lets the service refuse a request whose epoch is below the highest it has seen for the
    effect: a sender that was paused while its claim was taken over can no longer land its request after the
    successor's. Recovery counts on that fence only because the function is handed the epoch here.
    """
    try:
        return _epoch.get()
    except LookupError:
        raise ConfigurationError("current_epoch() is set only inside a gated send whose action fences on EPOCH") \
            from None


@dataclass(frozen=True)
class Unsettled:
    """An open effect recovery could not settle now, and why."""

    effect_id: str
    action: str | None
    reason: str
    outcome: Outcome | None = None


@dataclass(frozen=True)
class Recovered:
    """What `recover()` did: the outcome of every effect it settled (landed or not), every effect it closed as
    ambiguous (the service could not say whether it landed: a person must look), and every open effect it could
    not settle."""

    settled: list[Outcome] = field(default_factory=list)
    unsettled: list[Unsettled] = field(default_factory=list)
    ambiguous: list[Outcome] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Whether every open effect was settled: none is left open, none closed as ambiguous."""
        return not self.unsettled and not self.ambiguous


class _Bridge:
    """Runs a caller's callable from the gate's thread, awaiting it when it is async.

    An async action runs the gate in a worker thread, and the caller's coroutines on the caller's own event loop;
    a sync action (or recovery called without a loop) awaits them in a fresh loop.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop | None):
        self.loop = loop

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        return self.wait(result) if inspect.isawaitable(result) else result

    def wait(self, awaitable: Awaitable[Any]) -> Any:
        coroutine = awaitable if inspect.iscoroutine(awaitable) else _awaiting(awaitable)
        if self.loop is None:
            if _running_loop() is not None:  # asyncio.run would refuse, leaving the coroutine never awaited
                coroutine.close()
                raise ConfigurationError("a sync action was called inside a running event loop with an async key, "
                                         "fact, lease or function: declare the action `async def` and await it")
            return asyncio.run(coroutine)
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def _awaiting(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


class _Spec:
    """One registered action: how to build its effect from a call, and the gate that sends it."""

    def __init__(self, app: Interlock, name: str, fn: Callable[..., Any], *, key: Callable[..., str],
                 lease: Callable[..., Any] | None, facts: Mapping[str, Callable[..., Any]],
                 expect: Mapping[str, Any], read_at_call: bool, tier: int, lookup: Callable[..., Any] | None,
                 fences: Collection[str], in_flight: float | None):
        self.app, self.name, self.fn = app, name, fn
        self.key, self.lease, self.facts, self.expect = key, lease, dict(facts), dict(expect)
        self.read_at_call = read_at_call
        self.lookup = lookup
        self.signature = inspect.signature(fn)
        target = FunctionTarget(name, self._send, tier=tier, find=self._find if lookup else None, fences=fences,
                                in_flight=in_flight, takes_epoch=EPOCH in fences)
        self.gate = Gate(app.journal, target, claims=app.claims, claim_wait=app.claim_wait, hooks=app.hooks)

    def submit(self, bridge: _Bridge, args: tuple[Any, ...], kwargs: dict[str, Any],
               observed: Mapping[str, Any] | None) -> Outcome:
        # a call the function itself would refuse fails here, before anything; one it takes is journaled in one
        # spelling, so book("r1"), book(rid="r1") and book("r1", note=None) are the same effect
        args, kwargs = _one_spelling(self.signature.bind(*args, **kwargs))
        _bridge.set(bridge)  # this call's context only: concurrent async calls each keep their own
        decided = self._decided(bridge, args, kwargs, observed)
        expect = {fact: bridge.call(value, *args, **kwargs) if callable(value) else value
                  for fact, value in self.expect.items()}
        return self.gate.submit(self._effect(args, kwargs, decided, expect))

    def recover(self, bridge: _Bridge, effect_id: str, entry: dict[str, Any]) -> Outcome:
        _bridge.set(bridge)
        payload = entry["effect"]
        args, kwargs = tuple(payload.get("args", [])), dict(payload.get("kwargs", {}))
        effect = self._effect(args, kwargs, entry.get("premises", {}), entry.get("expect", {}))
        if effect.effect_id != effect_id:
            raise ConfigurationError(f"the key of {self.name!r} gives effect {effect.effect_id} for the journaled "
                                     f"arguments of {effect_id}: it must depend on the arguments alone")
        return self.gate.recover(effect)

    def _decided(self, bridge: _Bridge, args: tuple[Any, ...], kwargs: dict[str, Any],
                 observed: Mapping[str, Any] | None) -> dict[str, Any]:
        if observed is not None and not isinstance(observed, Mapping):
            raise ConfigurationError(f"{self.name}: observed must be a mapping {{fact: value}}, got {observed!r}")
        observed = dict(observed or {})
        unknown = sorted(set(observed) - set(self.facts))
        if unknown:
            raise ConfigurationError(f"{self.name}: observed names facts that are not declared: {unknown}")
        for fact, read in self.facts.items():
            if fact not in observed:
                if not self.read_at_call:
                    raise ConfigurationError(
                        f"{self.name}: fact {fact!r} has no observed value; pass observed={{{fact!r}: ...}} with "
                        "the value the decision was made on, or declare the effect with read_at_call=True")
                observed[fact] = bridge.call(read, *args, **kwargs)
        return observed

    def _effect(self, args: tuple[Any, ...], kwargs: dict[str, Any], decided: Mapping[str, Any],
                expect: Mapping[str, Any]) -> Effect:
        premises = [Premise(fact, functools.partial(self._read, read, args, kwargs), decided=decided.get(fact),
                            expect=expect.get(fact, NOT_SET)) for fact, read in self.facts.items()]
        payload: dict[str, Any] = {"action": self.name, "args": list(args)}
        if kwargs:
            payload["kwargs"] = kwargs
        key = self.key(*args, **kwargs)
        if type(key) is not str or not key:
            raise ConfigurationError(f"{self.name}: key= returned {key!r}; it must return a non-empty str that names "
                                     "the request")
        return Effect(key, payload, premises, self._lease(args, kwargs), self.app.agent)

    def _read(self, read: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return _bridge.get().call(read, *args, **kwargs)

    def _lease(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Lease | None:
        lease = self.lease
        if lease is None:
            return None

        return _AnsweredLease(self.name, lambda: _bridge.get().call(lease, *args, **kwargs))

    def _send(self, effect_id: str, payload: dict[str, Any], epoch: int | None = None) -> Any:
        return self._in_effect(effect_id, self.fn, payload, epoch)

    def _find(self, effect_id: str, payload: dict[str, Any]) -> Any:
        assert self.lookup is not None
        return self._in_effect(effect_id, self.lookup, payload)

    def _in_effect(self, effect_id: str, fn: Callable[..., Any], payload: dict[str, Any],
                   epoch: int | None = None) -> Any:
        args, kwargs = payload.get("args", []), payload.get("kwargs", {})
        bridge = _bridge.get()
        if inspect.iscoroutinefunction(fn):
            return bridge.wait(_with_effect(effect_id, epoch, fn, args, kwargs))
        with _in_send(effect_id, epoch):
            return bridge.call(fn, *args, **kwargs)


@contextlib.contextmanager
def _in_send(effect_id: str, epoch: int | None) -> Iterator[None]:
    """`current_effect()` and, when the action fences on it, `current_epoch()` for the call inside."""
    token = _current.set(effect_id)
    held = _epoch.set(epoch) if epoch is not None else None
    try:
        yield
    finally:
        if held is not None:
            _epoch.reset(held)
        _current.reset(token)


async def _with_effect(effect_id: str, epoch: int | None, fn: Callable[..., Awaitable[Any]], args: list[Any],
                       kwargs: dict[str, Any]) -> Any:
    with _in_send(effect_id, epoch):
        return await fn(*args, **kwargs)


def _one_spelling(bound: inspect.BoundArguments) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A call's arguments as one spelling of it: an argument passed by name where it could go by position goes by
    position, and one passed with its parameter's default value is left out, as if not passed."""
    for name, parameter in bound.signature.parameters.items():
        if (name in bound.arguments and parameter.default is not parameter.empty
                and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
                and _same(bound.arguments[name], parameter.default)):
            del bound.arguments[name]  # a later positional argument then goes by name
    return bound.args, bound.kwargs


def _same(value: Any, default: Any) -> bool:
    if value is default:
        return True
    try:
        return type(value) is type(default) and bool(value == default) is True
    except Exception:  # a value whose equality does not answer one bool (an array): not the default
        return False


_UNASKED: Any = object()


class _AnsweredLease:
    """The lease an action's `lease=` function answers. A check asks whether it is live, then for its description:
    the function is called once for both, so what is journaled is the answer the gate went by. The proposal asks
    for the description first, so an answer the gate cannot use is refused before anything is journaled."""

    def __init__(self, action: str, answer: Callable[[], Any]):
        self._action, self._answer = action, answer
        self._held: Any = _UNASKED  # the answer `is_live` read, for the `describe` that follows it

    def is_live(self) -> bool:
        self._held = found = self._ask()
        return found.is_live() if isinstance(found, Lease) else found

    def describe(self) -> Any:
        found, self._held = self._held, _UNASKED
        if found is _UNASKED:
            found = self._ask()
        return found.describe() if isinstance(found, Lease) else None

    def _ask(self) -> Any:
        """The function's answer, which must be True, False or a Lease."""
        found = self._answer()
        if type(found) is not bool and not isinstance(found, Lease):  # a status such as "cancelled" is truthy
            raise ConfigurationError(f"{self._action}: lease= returned {found!r}; it must return True or False, or "
                                     "a Lease")
        return found


class Action(Generic[P]):
    """A gated function: called like the function it wraps, it returns the effect's `Outcome`."""

    def __init__(self, spec: _Spec):
        self._spec = spec
        functools.update_wrapper(self, spec.fn)

    @property
    def name(self) -> str:
        """The action's stable name, journaled with every effect: what recovery finds it by."""
        return self._spec.name

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Outcome:
        observed = kwargs.pop(OBSERVED, None)
        return self._spec.submit(_Bridge(None), args, kwargs, observed)  # type: ignore[arg-type]

    def decided_on(self, observed: Mapping[str, Any]) -> Callable[P, Outcome]:
        """The same call, with the values the decision was made on, in a form a type checker follows."""

        def call(*args: P.args, **kwargs: P.kwargs) -> Outcome:
            return self._spec.submit(_Bridge(None), args, kwargs, observed)

        return call


class AsyncAction(Generic[P]):
    """A gated `async def`: awaited like the coroutine function it wraps, it gives the effect's `Outcome`.

    The journal's writes and fsyncs run in a worker thread, so the event loop keeps serving while they happen;
    the wrapped coroutine, its facts and its lookup run on the caller's loop.
    """

    def __init__(self, spec: _Spec):
        self._spec = spec
        functools.update_wrapper(self, spec.fn)

    @property
    def name(self) -> str:
        """The action's stable name, journaled with every effect: what recovery finds it by."""
        return self._spec.name

    async def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Outcome:
        observed = kwargs.pop(OBSERVED, None)
        return await self._submit(args, kwargs, observed)  # type: ignore[arg-type]

    def decided_on(self, observed: Mapping[str, Any]) -> Callable[P, Coroutine[Any, Any, Outcome]]:
        """The same call, with the values the decision was made on, in a form a type checker follows."""

        async def call(*args: P.args, **kwargs: P.kwargs) -> Outcome:
            return await self._submit(args, kwargs, observed)

        return call

    async def _submit(self, args: tuple[Any, ...], kwargs: dict[str, Any],
                      observed: Mapping[str, Any] | None) -> Outcome:
        bridge = _Bridge(asyncio.get_running_loop())
        return await asyncio.to_thread(self._spec.submit, bridge, args, kwargs, observed)


class Interlock:
    """One journal and its claims, shared by every action registered on it.

    `address` is a path (a JSONL journal with file claims beside it), a `postgresql://` URL (the PostgreSQL
    journal and claims), or a journal opened with options of its own (`Journal(path, key=..., segment_bytes=...)`,
    `PgJournal(url)`), which the app then closes with its claims. A path with no journal at it starts an empty
    one, so a restarted worker must name the very journal its predecessor wrote: at another path `recover()` finds
    nothing open and a call sends afresh. `agent` names who decides, journaled with each decision. `claim_wait` is
    how long a call waits for another process holding the same effect, and for a request to an unfenced service that may still
    land; 0 fails fast with IN_FLIGHT. `claim_ttl` bounds how long a stopped holder keeps a claim. `hooks` receives
    the gate's fault points (`interlock.hooks`), for tests.
    """

    def __init__(self, address: str | os.PathLike[str] | JournalLike, *, agent: str = "agent", claim_wait: float = 10.0,
                 claim_ttl: float = DEFAULT_TTL, hooks: Hooks = NO_HOOKS):
        if type(claim_wait) not in (int, float) or not claim_wait >= 0:
            raise ConfigurationError(f"claim_wait: {claim_wait!r} is not a number of seconds")
        journal, claims = open_journal(address, claim_ttl=claim_ttl)
        self.journal: JournalLike = journal
        self.claims: ClaimsLike = claims
        self.agent = agent
        self.claim_wait = claim_wait
        self.hooks = hooks
        self._specs: dict[str, _Spec] = {}

    def close(self) -> None:
        """Close the journal and the claims' connections."""
        for resource in (self.claims, self.journal):
            close = getattr(resource, "close", None)
            if close is not None:
                close()

    def __enter__(self) -> Interlock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def effect(
        self,
        *,
        key: Callable[..., str],
        name: str | None = None,
        lease: Callable[..., Any] | None = None,
        facts: Mapping[str, Callable[..., Any]] | None = None,
        expect: Mapping[str, Any] | None = None,
        read_at_call: bool = False,
        tier: int | None = None,
        lookup: Callable[..., Any] | None = None,
        fences: Collection[str] = (),
        in_flight: float | None = None,
    ) -> _Decorator:
        """Gate the decorated function (sync or `async def`).

        `key` names the request, so a retried call is the same effect; `name` (default: the function's
        qualified name) is the stable action name recovery finds its effects by: two actions with one name are
        an error. `lease` returns whether the authority is live, True or False (or a `Lease`). `facts` read each premise now;
        `expect` pins some of them. `tier`: 1 when the service dedupes on the effect id, 2 when `lookup` can find
        the effect (the default with a lookup), 3 otherwise. `fences` names what the service refuses on its own
        (`DEDUPE`, `LEASE`, `EPOCH`: the function sends `current_epoch()` with the request, or facts each request
        preconditions on), and `in_flight=SECONDS` the longest a request
        from a dead sender can still land where no fence covers what moved: recovery does not conclude "not
        landed" before then (see `interlock.targets.base`). The function and `lookup` get the effect id from
        `current_effect()`; `lookup` returns evidence that the effect landed, else None (any false answer means
        not found).

        The effect id comes from the key alone, whichever action it is for: keys must be unique across the actions
        of one journal (`f"book:{rid}"`, `f"cancel:{rid}"`), since the same key for another action, for other
        arguments, or declared with other facts or without the lease it was decided under, is refused as a
        conflicting payload. An effect is decided once, on the facts first observed for
        it: a refusal before any send (the lease not live, a fact moved) leaves it open, and a later call is checked
        again against those first facts, never against newly observed ones, so a crashed job that restarts cannot
        decide again on what it reads after the outage. To act on new facts, call under a new key.
        """
        facts = _readers(key, lease, facts, lookup)
        expect = dict(expect or {})
        unknown = sorted(set(expect) - set(facts))
        if unknown:
            raise ConfigurationError(f"expect names facts that are not declared: {unknown}")
        validate_fencing(fences, in_flight)
        unfenced = sorted(set(fences) - {DEDUPE, LEASE, EPOCH} - set(facts))
        if unfenced:
            raise ConfigurationError(f"fences names {unfenced}, which is neither {DEDUPE!r}, {LEASE!r}, {EPOCH!r} "
                                     "nor a declared fact")
        level = tier if tier is not None else (TIER_LOOKUP if lookup is not None else TIER_BLIND)

        def decorate(fn: Callable[P, Any]) -> Any:
            action = name or fn.__qualname__
            if action in self._specs:
                raise DuplicateAction(f"an action named {action!r} is registered already; give each one its own name=")
            if OBSERVED in inspect.signature(fn).parameters:
                raise ConfigurationError(f"{action}: the parameter name {OBSERVED!r} is reserved for the decision's "
                                         "premises")
            spec = _Spec(self, action, fn, key=key, lease=lease, facts=facts, expect=expect,
                         read_at_call=read_at_call, tier=level, lookup=lookup, fences=fences, in_flight=in_flight)
            self._specs[action] = spec
            return AsyncAction(spec) if inspect.iscoroutinefunction(fn) else Action(spec)

        return _Decorator(decorate)

    def recover(self) -> Recovered:
        """Settle every open effect it can; report the others (another holder, a request still in flight, an
        action not registered here, a failure) each with its reason. Async actions run in a fresh event loop;
        inside a running loop, await `arecover()` instead."""
        return self._recover(_Bridge(None))

    async def arecover(self) -> Recovered:
        """`recover()` for code running in an event loop: async actions run on this loop."""
        return await asyncio.to_thread(self._recover, _Bridge(asyncio.get_running_loop()))

    def _recover(self, bridge: _Bridge) -> Recovered:
        recovered = Recovered()
        for record in self.journal.open_dispatches():
            eid = record.effect_id
            entry = proposal(self.journal, eid)
            action = entry["effect"].get("action") if entry and isinstance(entry.get("effect"), dict) else None
            spec = self._specs.get(action) if isinstance(action, str) else None
            if spec is None:
                recovered.unsettled.append(Unsettled(eid, action,
                                                     f"no action named {action!r} is registered on this app"))
                continue
            try:
                outcome = spec.recover(bridge, eid, entry or {})
            except Exception as exc:  # one effect that cannot be rebuilt must not stop the others
                recovered.unsettled.append(Unsettled(eid, action, f"{type(exc).__name__}: {exc}"))
                continue
            self.journal.refresh()
            now = self.journal.effect(eid)
            if now is not None and now.open_dispatch:
                recovered.unsettled.append(Unsettled(eid, action, _why_open(outcome), outcome))
            elif now is not None and (now.resolution or {}).get("kind") == AMBIGUOUS:  # whoever closed it so
                recovered.ambiguous.append(outcome)
            else:
                recovered.settled.append(outcome)
        return recovered


def _readers(key: Any, lease: Any, facts: Any, lookup: Any) -> dict[str, Callable[..., Any]]:
    """`facts` as a dict, once `key`, `lease`, `lookup` and every fact's reader are found to be functions."""
    if not callable(key):
        raise ConfigurationError(f"key must be a function of the call's arguments that names the request, got {key!r}")
    for name, given in (("lease", lease), ("lookup", lookup)):
        if given is not None and not callable(given):
            raise ConfigurationError(f"{name} must be a function of the call's arguments, got {given!r}")
    if facts is not None and not isinstance(facts, Mapping):
        raise ConfigurationError(f"facts must be a mapping {{fact: function that reads it}}, got {facts!r}")
    readers = dict(facts or {})
    for fact, read in readers.items():
        if not callable(read):
            raise ConfigurationError(f"fact {fact!r} must be a function of the call's arguments that reads it, got "
                                     f"{read!r}")
    return readers


def _why_open(outcome: Outcome) -> str:
    if outcome.status == Status.IN_FLIGHT and outcome.decide_at is not None:
        return f"a request may still land until {outcome.decide_at:.3f} (epoch seconds)"
    if outcome.status == Status.IN_FLIGHT:
        return ("its claim is held: by another process, or, for a holder that died or stopped inside a request, "
                "until the claim's lifetime (claim_ttl) runs out")
    if outcome.error is not None:
        return f"the service did not answer: {outcome.error['type']}: {outcome.error['message']}"
    because = f": {outcome.reason}" if outcome.reason else ""
    return f"left open ({outcome.status.value}{because})"


class _Decorator:
    """What `Interlock.effect(...)` returns: applied to a function, the gated action."""

    def __init__(self, decorate: Callable[[Callable[..., Any]], Any]):
        self._decorate = decorate

    @overload
    def __call__(self, fn: Callable[P, Coroutine[Any, Any, Any]]) -> AsyncAction[P]: ...

    @overload
    def __call__(self, fn: Callable[P, Any]) -> Action[P]: ...

    def __call__(self, fn: Callable[P, Any]) -> Action[P] | AsyncAction[P]:
        return self._decorate(fn)  # type: ignore[no-any-return]
