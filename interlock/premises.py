"""Premises: the facts an effect was decided on, re-read before every send."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .errors import ConfigurationError


class _NotSet:
    def __repr__(self) -> str:
        return "NOT_SET"


NOT_SET: Any = _NotSet()
"""A premise's `expect` when none was given: the premise then passes while it is unchanged since the decision."""


@dataclass(frozen=True)
class Premise:
    """One fact: its value when decided, how to read it now, and optionally the value it must have.

    A premise passes when it equals `expect` (if given) or else is unchanged since the decision. `own_write`
    lets a target say that a change was made by this very effect (the generation moved because our write
    landed), which is not a change of the facts the effect was decided on: `own_write(now, was, effect_id)`. `annotate` adds context to the
    current value in a violation, such as who deployed the generation now live.
    """

    name: str
    read: Callable[[], Any]
    decided: Any = NOT_SET
    expect: Any = NOT_SET
    own_write: Callable[[Any, Any, str], bool] | None = None
    annotate: Callable[[Any], str] | None = None

    def __post_init__(self) -> None:
        if type(self.name) is not str or not self.name:
            raise ConfigurationError(f"a premise's name must be a non-empty str, got {self.name!r}")
        if not callable(self.read):
            raise ConfigurationError(f"premise {self.name}: read must be a function that reads the fact now, got "
                                     f"{self.read!r}")

    def recorded(self) -> Any:
        """The value to record with the proposal: the decided value, or what the fact reads now."""
        return self.read() if self.decided is NOT_SET else self.decided


def violations(premises: list[Premise], recorded: dict[str, Any], effect_id: str) -> list[str]:
    """Re-read every premise and describe each that no longer holds, readable by a person."""
    found = []
    for premise in premises:
        was = recorded.get(premise.name)
        now = premise.read()
        shown = _show(now) + (premise.annotate(now) if premise.annotate else "")
        if premise.expect is not NOT_SET:
            if not _same(was, premise.expect):
                found.append(f"{premise.name}: must be {_show(premise.expect)}, was {_show(was)} when decided")
            elif not _same(now, premise.expect) and not _own(premise, now, was, effect_id):
                found.append(f"{premise.name}: must be {_show(premise.expect)}, now {shown}")
        elif not _same(now, was) and not _own(premise, now, was, effect_id):
            found.append(f"{premise.name}: was {_show(was)}, now {shown}")
    return found


def _same(a: Any, b: Any) -> bool:
    """Whether two readings of a fact are the same fact as the journal holds it: `True` is not `1` (nor `False`
    `0`), and a tuple is the list it reads back as from the journal."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    return bool(a == b)


def _own(premise: Premise, now: Any, was: Any, effect_id: str) -> bool:
    return premise.own_write is not None and premise.own_write(now, was, effect_id)


def _show(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)
