"""A bug planted in a system's send function: the caller's own code raises KeyError right before its request, or
right after the service applied it. The explorer arms it through the worker's environment; nothing else does.

The baselines call `bug(point)` in their send code; the gate's target is wrapped by `target()`, so the exception
comes out of the function the gate calls, as a bug in a user's send function would.
"""

from __future__ import annotations

import os
from typing import Any

RAISES_ENV = "EXPLORE_SEND_RAISES"
BEFORE_REQUEST, AFTER_APPLY = "before_request", "after_apply"
POINTS = (BEFORE_REQUEST, AFTER_APPLY)


class SendBug(KeyError):
    """What the planted bug raises: a plain programming error, not a lost answer."""


def bug(point: str) -> None:
    """Raise SendBug here when the environment plants the bug at `point`."""
    if os.environ.get(RAISES_ENV) == point:
        raise SendBug(f"planted at {point}")


class _Planted:
    """A target whose apply raises at the planted point; everything else is the wrapped target's."""

    def __init__(self, inner: Any):
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def apply(self, effect_id: str, payload: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        bug(BEFORE_REQUEST)
        result = self._inner.apply(effect_id, payload, *args, **kwargs)
        bug(AFTER_APPLY)
        return result


def target(inner: Any) -> Any:
    """The gate's target as the worker uses it: wrapped only when the environment plants a bug."""
    return _Planted(inner) if os.environ.get(RAISES_ENV) in POINTS else inner
