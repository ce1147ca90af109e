"""The tools the model is given, and the checks every decision passes whoever made it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, cast

ROLLBACK_TARGET = "v41"
BOOKING_MINUTES = 30

GET_CONFIG = {
    "name": "get_config",
    "description": "Read the live config object: its JSON body and its GCS generation.",
    "input_schema": {"type": "object", "properties": {}},
}
ROLLBACK_CONFIG = {
    "name": "rollback_config",
    "description": "Roll the live config object back to an earlier version.",
    "input_schema": {
        "type": "object",
        "properties": {
            "to_version": {"type": "string", "description": "The version to roll back to, e.g. v41."},
            "reason": {"type": "string", "description": "One or two sentences on why, citing the incident."},
        },
        "required": ["to_version", "reason"],
    },
}
BOOK_CALL = {
    "name": "book_call",
    "description": "Book a call on the calendar.",
    "input_schema": {
        "type": "object",
        "properties": {
            "start": {"type": "string", "description": "Start time, RFC3339 in UTC, e.g. 2026-10-13T22:53:00Z."},
            "duration_minutes": {"type": "integer", "description": "Length of the call in minutes."},
            "summary": {"type": "string", "description": "Title of the calendar event."},
        },
        "required": ["start", "duration_minutes", "summary"],
    },
}


class DecisionRejected(ValueError):
    """The tool call does not do what the case allows; nothing may be sent on it."""


def check_rollback(tool_input: dict[str, Any]) -> tuple[str, str]:
    """The only approved change is the rollback to v41, with a reason to show."""
    to_version = tool_input.get("to_version")
    reason = tool_input.get("reason")
    if to_version != ROLLBACK_TARGET:
        raise DecisionRejected(f"rollback_config.to_version is {to_version!r}; the approved rollback is {ROLLBACK_TARGET!r}")
    if not isinstance(reason, str) or not reason.strip():
        raise DecisionRejected("rollback_config.reason is missing or empty")
    return to_version, reason


def check_booking(request: dict[str, Any], tool_input: dict[str, Any]) -> tuple[str, str, str]:
    """The booking must be the requested slot, 30 minutes, with a title; returns (start, end, summary)."""
    slot_start = request["slot_start"]
    start = tool_input.get("start")
    duration = tool_input.get("duration_minutes")
    summary = tool_input.get("summary")
    if _instant(start) != _instant(slot_start):
        raise DecisionRejected(f"book_call.start is {start!r}; the request asks for {slot_start!r}")
    if duration != BOOKING_MINUTES or isinstance(duration, bool):
        raise DecisionRejected(f"book_call.duration_minutes is {duration!r}; the request asks for {BOOKING_MINUTES}")
    if not isinstance(summary, str) or not summary.strip():
        raise DecisionRejected("book_call.summary is missing or empty")
    end = cast(datetime, _instant(slot_start)) + timedelta(minutes=BOOKING_MINUTES)  # the request's slot: RFC3339 UTC
    return slot_start, end.strftime("%Y-%m-%dT%H:%M:%SZ"), summary


def _instant(text: object) -> datetime | None:
    try:
        instant = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return instant.astimezone(timezone.utc) if instant.tzinfo else None
