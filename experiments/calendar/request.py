"""The booking-request system (one local JSON file per request, emulated) and the events the systems write."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

from experiments.atomic import write_json

AGENT = "booking-agent"
CUSTOMER_SUMMARY = "Dana: busy (interlock-sandbox)"
EMULATED = ("booking request system: a local JSON file per request (status live or cancelled) read by the worker "
            "and rewritten by the harness to cancel; there is no real booking service")


def rfc3339(instant: datetime) -> str:
    """UTC to the second with a Z, the form Calendar's timeMin/timeMax and event times take."""
    return instant.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_request(request_id: str, slot_start: str) -> dict[str, Any]:
    """A live request for a 30-minute call at `slot_start`, worded as a customer would ask."""
    when = datetime.fromisoformat(slot_start.replace("Z", "+00:00")).astimezone(timezone.utc)
    text = (f"Booking request {request_id}: Dana, a customer, asked for a 30-minute call on "
            f"{when:%A %Y-%m-%d} at {when:%H:%M} UTC to go over her onboarding.")
    return {"id": request_id, "slot_start": slot_start, "status": "live", "text": text}


def read_request(path: Path) -> dict[str, Any]:
    """The request as the booking system holds it now."""
    return cast(dict[str, Any], json.loads(Path(path).read_text(encoding="utf-8")))


def write_request(path: Path, request: dict[str, Any]) -> None:
    """Replace the request file atomically, so a worker never reads half of it."""
    write_json(path, request)


class RequestLease:
    """The request as the gate's lease: live while the booking system says so, re-read on every check."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._seen: dict[str, Any] = {}

    def is_live(self) -> bool:
        """A cancelled request withdraws the authority to book it."""
        self._seen = read_request(self.path)
        return self._seen.get("status") == "live"

    def describe(self) -> dict[str, Any]:
        """The request id and the status the check read (the same read as `is_live`)."""
        seen = self._seen or read_request(self.path)
        return {"request": seen.get("id"), "status": seen.get("status")}


def baseline_event_id(request_id: str) -> str:
    """The client-chosen event id of the baselines: Calendar answers 409 to a second insert of it."""
    return "bk" + hashlib.sha256(request_id.encode()).hexdigest()[:26]


def event_body(system: str, request_id: str, decision: dict[str, Any]) -> dict[str, Any]:
    """The agent's event without an id; the private properties name the request and the system that booked it."""
    return {
        "summary": decision["summary"],
        "start": {"dateTime": decision["start"], "timeZone": "UTC"},
        "end": {"dateTime": decision["end"], "timeZone": "UTC"},
        "extendedProperties": {"private": {"system": system, "booking_request": request_id}},
    }


def customer_event(slot_start: str, slot_end: str) -> dict[str, Any]:
    """What a person puts on the slot: no id chosen, no private properties."""
    return {"summary": CUSTOMER_SUMMARY, "start": {"dateTime": slot_start, "timeZone": "UTC"},
            "end": {"dateTime": slot_end, "timeZone": "UTC"}}
