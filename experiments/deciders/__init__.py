"""Who decides an effect: a real model (live) or a script making the same tool calls (offline, labelled so).

Both scenarios ask a decider through the same two methods:

- `decide_rollback(case, get_config) -> {to_version, reason, generation, model, tool_call}` (gcp_resource);
  `get_config()` returns a dict holding at least `generation` (the live object's, as a string) and the body.
- `decide_booking(request) -> {start, end, summary, model, tool_input}` (calendar); `request` holds `slot_start`
  and `text`.

`decider_from_env()` picks one for a worker process: `INTERLOCK_MODEL` set (e.g. `claude-haiku-4-5`) means the
model through the Messages API (at `INTERLOCK_MESSAGES_URL` when that is set); unset means the scripted decider.
"""

from __future__ import annotations

import os

from experiments.deciders.model import DEFAULT_MODEL, AnthropicDecider
from experiments.deciders.persisted import persisted_decision
from experiments.deciders.scripted import MODEL as SCRIPTED_MODEL
from experiments.deciders.scripted import ScriptedDecider
from experiments.deciders.tools import DecisionRejected, check_booking, check_rollback

MODEL_ENV = "INTERLOCK_MODEL"


def decider_from_env() -> AnthropicDecider | ScriptedDecider:
    """The decider the harness chose for this worker, read from the inherited environment."""
    model = os.environ.get(MODEL_ENV)
    return AnthropicDecider(model) if model else ScriptedDecider()


__all__ = [
    "DEFAULT_MODEL", "MODEL_ENV", "SCRIPTED_MODEL", "AnthropicDecider", "DecisionRejected", "ScriptedDecider",
    "check_booking", "check_rollback", "decider_from_env", "persisted_decision",
]
