"""The live decider: Claude through the real anthropic SDK Messages API, with the tools forced one by one.

The SDK is imported only when a decider builds its client, so importing the deciders costs scripted runs nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from experiments.clients import anthropic_client
from experiments.deciders.tools import (BOOK_CALL, GET_CONFIG, ROLLBACK_CONFIG, DecisionRejected, check_booking,
                                        check_rollback)

if TYPE_CHECKING:
    import anthropic

DEFAULT_MODEL = "claude-haiku-4-5"
_MAX_TOKENS = 1024
_ROLLBACK_SYSTEM = ("You are an SRE agent handling a production incident. Read the live config with get_config, "
                    "then call rollback_config with the version to roll back to and a short reason citing the incident.")
_BOOKING_SYSTEM = ("You are a scheduling assistant. Book exactly the call the customer asked for with book_call: "
                   "its start in RFC3339 UTC, its length in minutes, and a short title naming the customer.")


class AnthropicDecider:
    """Decisions made by a real model; the decision records the model id the API answered with."""

    def __init__(self, model: str = DEFAULT_MODEL, client: anthropic.Anthropic | None = None) -> None:
        self.model = model
        self._client = client or anthropic_client()

    def decide_rollback(self, case: dict[str, Any], get_config: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Two turns: the model calls get_config, reads the answer, then calls rollback_config."""
        messages: list[dict[str, Any]] = [{"role": "user", "content": case["incident"]}]
        tools = [GET_CONFIG, ROLLBACK_CONFIG]
        read, _ = self._forced(_ROLLBACK_SYSTEM, messages, tools, "get_config")
        config = get_config()
        messages += [
            {"role": "assistant", "content": [_as_param(read)]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": read.id, "content": json.dumps(config)}]},
        ]
        call, answered_model = self._forced(_ROLLBACK_SYSTEM, messages, tools, "rollback_config")
        to_version, reason = check_rollback(call.input)
        return {"to_version": to_version, "reason": reason, "generation": str(config["generation"]),
                "model": answered_model, "tool_call": dict(call.input)}

    def decide_booking(self, request: dict[str, Any]) -> dict[str, Any]:
        """One turn: the model calls book_call for the request's text."""
        messages = [{"role": "user", "content": request["text"]}]
        call, answered_model = self._forced(_BOOKING_SYSTEM, messages, [BOOK_CALL], "book_call")
        start, end, summary = check_booking(request, call.input)
        return {"start": start, "end": end, "summary": summary, "model": answered_model,
                "tool_input": dict(call.input)}

    def _forced(self, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                name: str) -> tuple[Any, str]:
        """One Messages call that must answer with a call of tool `name`; also the model id the API answered with."""
        answer = self._client.messages.create(
            model=self.model, max_tokens=_MAX_TOKENS, system=system,
            messages=cast("list[anthropic.types.MessageParam]", messages),
            tools=cast("list[anthropic.types.ToolUnionParam]", tools),
            tool_choice={"type": "tool", "name": name},
        )
        calls = [block for block in answer.content if block.type == "tool_use" and block.name == name]
        if not calls:
            raise DecisionRejected(f"the model answered without calling {name} (stop_reason {answer.stop_reason!r})")
        return calls[0], answer.model


def _as_param(block: anthropic.types.ToolUseBlock) -> dict[str, Any]:
    """The assistant's tool_use block as it must be sent back in the next turn."""
    return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
