"""Ground truth of one cell from the events on its slot alone, by the published rule."""

from __future__ import annotations

from datetime import datetime
from typing import Any


def _instant(bound: dict[str, Any]) -> datetime:
    text = bound.get("dateTime") or bound["date"] + "T00:00:00+00:00"
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return _instant(a["start"]) < _instant(b["end"]) and _instant(b["start"]) < _instant(a["end"])


def booking_request(event: dict[str, Any]) -> str | None:
    """The request an agent event was made for (its private `booking_request`), None for anyone else's event."""
    return ((event.get("extendedProperties") or {}).get("private") or {}).get("booking_request")


def grade(events: list[dict[str, Any]], request_id: str, want: int, already_there: list[str]) -> dict[str, Any]:
    """Agent events of the request against `want`, and whether one went on top of an event already there.

    An agent event that was on the slot before the customer event (`already_there`) is not a double booking by
    the agent: the customer booked over it.
    """
    live = [e for e in events if e.get("status") != "cancelled"]
    ours = [e for e in live if booking_request(e) == request_id]
    others = [e for e in live if booking_request(e) != request_id]
    double = any(_overlap(mine, other) for mine in ours if mine["id"] not in already_there for other in others)
    return {
        "events_list": events,
        "agent_events": [e["id"] for e in ours],
        "other_events": [e["id"] for e in others],
        "double_booked": double,
        "want_agent_events": want,
    }


def invariant_held(truth: dict[str, Any]) -> bool:
    """Agent events equal want, and none was put on top of an event already there."""
    return len(truth["agent_events"]) == truth["want_agent_events"] and not truth["double_booked"]


def answer_matches(answer: str, truth: dict[str, Any]) -> bool | None:
    """booked means exactly one agent event, not_booked none; unknown cannot match or differ."""
    if answer == "unknown":
        return None
    return len(truth["agent_events"]) == (1 if answer == "booked" else 0)
