"""The Calendar v3 client a worker builds, from the same environment variables as experiments.clients.

Built here rather than through experiments.clients because that module also imports the anthropic and
google-cloud-storage clients at import time (about 3 s of a worker's start-up), and a restarted worker's
start-up is part of every system's crash-to-settled time.
"""

from __future__ import annotations

import os
from typing import Any

from google.auth.credentials import AnonymousCredentials
from googleapiclient import discovery

CALENDAR_URL = "INTERLOCK_CALENDAR_URL"
CALENDAR_KEY_FILE = "INTERLOCK_CALENDAR_KEY_FILE"
SCOPES = ["https://www.googleapis.com/auth/calendar"]


def calendar_service() -> Any:
    """The real google-api-python-client Calendar service: the stand-in when INTERLOCK_CALENDAR_URL is set."""
    url = os.environ.get(CALENDAR_URL)
    if url:
        return discovery.build("calendar", "v3", static_discovery=True, cache_discovery=False,
                               credentials=AnonymousCredentials(), client_options={"api_endpoint": url})
    from google.oauth2 import service_account

    credentials = service_account.Credentials.from_service_account_file(os.environ[CALENDAR_KEY_FILE],
                                                                        scopes=SCOPES)
    return discovery.build("calendar", "v3", static_discovery=True, cache_discovery=False, credentials=credentials)


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
    answer = service.freebusy().query(body={"timeMin": start, "timeMax": end, "items": [{"id": calendar_id}]}
                                      ).execute(num_retries=0)
    return next(iter(answer.get("calendars", {}).values()), {}).get("busy", [])


def get_event(service: Any, calendar_id: str, event_id: str) -> dict[str, Any] | None:
    """The event with that id (cancelled ones included), or None when Calendar never had it."""
    from googleapiclient.errors import HttpError

    try:
        return service.events().get(calendarId=calendar_id, eventId=event_id).execute(num_retries=0)
    except HttpError as exc:
        if exc.resp.status in (404, 410):
            return None
        raise
