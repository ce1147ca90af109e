"""What the explorer plants in a system's send function: a bug, the caller's own code raising KeyError right before
its request or right after the service applied it; or a late request, held that many seconds right before it is
made (a client retrying an attempt that never arrived). The explorer arms them through the worker's environment;
nothing else does.

The baselines call `strike(point)` in their send code; the gate's target is wrapped by `target()`, so the exception
or the wait comes out of the function the gate calls, as it would from a user's send function.
"""

from __future__ import annotations

import os
import time
from typing import Any

RAISES_ENV = "EXPLORE_SEND_RAISES"
HOLDS_ENV = "EXPLORE_SEND_HOLDS"
BEFORE_REQUEST, AFTER_APPLY = "before_request", "after_apply"
POINTS = (BEFORE_REQUEST, AFTER_APPLY)
VARIABLES = (RAISES_ENV, HOLDS_ENV)


class SendBug(KeyError):
    """What the planted bug raises: a plain programming error, not a lost answer."""


def strike(point: str) -> None:
    """At `point` of the send code: hold the request as long as the environment says (right before it), then
    raise SendBug when the environment plants the bug there."""
    if point == BEFORE_REQUEST and HOLDS_ENV in os.environ:
        time.sleep(float(os.environ[HOLDS_ENV]))
    if os.environ.get(RAISES_ENV) == point:
        raise SendBug(f"planted at {point}")


class _Planted:
    """A target whose apply strikes at the planted points; everything else is the wrapped target's."""

    def __init__(self, inner: Any):
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def apply(self, effect_id: str, payload: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        strike(BEFORE_REQUEST)
        result = self._inner.apply(effect_id, payload, *args, **kwargs)
        strike(AFTER_APPLY)
        return result


def target(inner: Any) -> Any:
    """The gate's target as the worker uses it: wrapped only when the environment plants something."""
    return _Planted(inner) if os.environ.get(RAISES_ENV) in POINTS or HOLDS_ENV in os.environ else inner
