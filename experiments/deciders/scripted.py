"""The offline decider: the same tool calls as the model, made by a script, and labelled as such."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from experiments.deciders.tools import BOOKING_MINUTES, ROLLBACK_TARGET, check_booking, check_rollback

MODEL = "offline-scripted"
ROLLBACK_REASON = ("{incident_id}: checkout has returned HTTP 500 since config v42 was deployed with "
                   "new_checkout=true. Rolling back to known-good v41 as approved by the on-call lead.")
BOOKING_SUMMARY = "Dana - Onboarding Call"


class ScriptedDecider:
    """Deterministic decisions with the published shape; it still reads the config to learn the generation."""

    model = MODEL

    def decide_rollback(self, case: dict[str, Any], get_config: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """get_config, then rollback_config to v41 with a fixed reason naming the case's incident."""
        generation = str(get_config()["generation"])
        tool_call = {"to_version": ROLLBACK_TARGET, "reason": ROLLBACK_REASON.format(incident_id=case["incident_id"])}
        to_version, reason = check_rollback(tool_call)
        return {"to_version": to_version, "reason": reason, "generation": generation, "model": MODEL,
                "tool_call": tool_call}

    def decide_booking(self, request: dict[str, Any]) -> dict[str, Any]:
        """book_call on the requested slot for 30 minutes with a fixed title."""
        tool_input = {"start": request["slot_start"], "duration_minutes": BOOKING_MINUTES, "summary": BOOKING_SUMMARY}
        start, end, summary = check_booking(request, tool_input)
        return {"start": start, "end": end, "summary": summary, "model": MODEL, "tool_input": tool_input}
