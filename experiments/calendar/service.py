"""Calendar reads the booking workers and the harness share: the slot's events, freeBusy, one event by id.

The Calendar client itself comes from experiments.clients.calendar_service (the stand-in when
INTERLOCK_CALENDAR_URL is set, Google Calendar otherwise); these are the scenario's reads on top of it.
"""

from __future__ import annotations

from typing import Any, cast


def slot_events(service: Any, calendar_id: str, start: str, end: str) -> list[dict[str, Any]]:
    """Every live event overlapping the slot, as raw resources (all pages)."""
    items: list[dict[str, Any]] = []
    token = None
    while True:
        page = service.events().list(calendarId=calendar_id, timeMin=start, timeMax=end, singleEvents=True,
                                     showDeleted=False, pageToken=token).execute(num_retries=0)
        items += page.get("items", [])
        token = page.get("nextPageToken")
        if not token:
            return items


def busy_periods(service: Any, calendar_id: str, start: str, end: str) -> list[dict[str, str]]:
    """freeBusy on the slot: the busy periods the baselines check before booking."""
    answer: dict[str, dict[str, dict[str, list[dict[str, str]]]]] = service.freebusy().query(
        body={"timeMin": start, "timeMax": end, "items": [{"id": calendar_id}]}).execute(num_retries=0)
    return next(iter(answer.get("calendars", {}).values()), {}).get("busy", [])


def get_event(service: Any, calendar_id: str, event_id: str) -> dict[str, Any] | None:
    """The event with that id (cancelled ones included), or None when Calendar never had it."""
    from googleapiclient.errors import HttpError

    try:
        return cast(dict[str, Any],
                    service.events().get(calendarId=calendar_id, eventId=event_id).execute(num_retries=0))
    except HttpError as exc:
        if exc.resp.status in (404, 410):
            return None
        raise
