"""RFC3339 instants as the Calendar API writes them, and the instant an event's start or end stands for."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from experiments.services.calendar_standin.errors import invalid


def parse_instant(text: Any, field: str) -> datetime:
    """An RFC3339 timestamp with an offset; anything else is the 400 the real service answers."""
    try:
        instant = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise invalid(f"Invalid value for {field}: {text!r}") from None
    if instant.tzinfo is None:
        raise invalid(f"Invalid value for {field}: {text!r} has no time zone offset")
    return instant.astimezone(timezone.utc)


def event_instant(bound: object, field: str) -> datetime:
    """`{"dateTime": ...}` or an all-day `{"date": "YYYY-MM-DD"}` (midnight UTC)."""
    if isinstance(bound, dict) and "dateTime" in bound:
        return parse_instant(bound["dateTime"], field)
    if isinstance(bound, dict) and "date" in bound:
        return parse_instant(f"{bound['date']}T00:00:00+00:00", field)
    raise invalid(f"Missing time for {field}")


def rfc3339(instant: datetime) -> str:
    """Seconds precision with Z, as freeBusy answers."""
    return instant.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_millis(instant: datetime) -> str:
    """Millisecond precision with Z, as `created` and `updated` are written."""
    return instant.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{instant.microsecond // 1000:03d}Z"
