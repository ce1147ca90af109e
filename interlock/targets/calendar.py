"""Google Calendar events as a tier-1 target: a client-chosen event id makes Calendar refuse a second insert, and
an id once used (even by an event deleted since) is taken for good, which can shut out a stray insert."""

from __future__ import annotations

import weakref
from typing import Any, cast

from googleapiclient.errors import HttpError

from ..premises import NOT_SET, Premise
from .base import DEDUPE, TIER_DEDUPE, Rejected, Unanswered

# Where the placeholder that takes an effect's event id is put: far from any slot an agent books, and free time;
# its private property marks it, so a placeholder whose delete was lost is never taken for the booking.
PLACEHOLDER_START, PLACEHOLDER_END = "2000-01-01T00:00:00Z", "2000-01-01T00:01:00Z"
RETIRED_KEY = "interlock_retired"


def event_id_for(effect_id: str) -> str:
    """The Calendar event id of an effect: the effect id itself (hex is valid base32hex)."""
    return effect_id


class CalendarEventTarget:
    """Insert `payload["event"]` with the effect's event id; a 409 on resend means the first insert landed.

    The event id stops a second insert, not a late first one: when the slot or the request moved while an insert
    may still be in flight, `close_out` takes the id with a placeholder and deletes it, and the stray insert
    meets a 409.
    """

    name = "calendar-event"
    tier = TIER_DEDUPE
    can_lookup = True
    fences = frozenset({DEDUPE})

    def __init__(self, service: Any, calendar_id: str):
        self.service = service
        self.calendar_id = calendar_id
        self.events = events_of(service)

    def apply(self, effect_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Insert the event; on 409 report the existing one."""
        body = {**payload["event"], "id": event_id_for(effect_id)}
        try:
            event = self.events.insert(calendarId=self.calendar_id, body=body).execute(num_retries=0)
        except HttpError as exc:
            if exc.resp.status == 409:
                existing = self._get(effect_id)
                if existing is not None and (existing.get("status") == "cancelled" or retired(existing)):
                    raise Rejected("409: the event id was retired, or its event cancelled") from exc
                return {**_evidence(existing or {"id": body["id"]}), "already_existed": True}
            if 400 <= exc.resp.status < 500:
                raise Rejected(f"{exc.resp.status} {exc.reason}") from exc
            raise Unanswered(f"{exc.resp.status} {exc.reason}") from exc
        return _evidence(event)

    def close_out(self, effect_id: str, payload: dict[str, Any], *, epoch: int) -> None:
        """Take the effect's event id for good: insert a marked placeholder (off any slot, free time) and delete
        it. A 409 means the id is taken already: by the stray insert (the lookup after this finds it), or by a
        placeholder, whose delete is then finished."""
        body = {"id": event_id_for(effect_id), "summary": "interlock: event id retired", "transparency": "transparent",
                "start": {"dateTime": PLACEHOLDER_START}, "end": {"dateTime": PLACEHOLDER_END},
                "extendedProperties": {"private": {RETIRED_KEY: "true"}}}
        try:
            self.events.insert(calendarId=self.calendar_id, body=body).execute(num_retries=0)
        except HttpError as exc:
            if exc.resp.status != 409:
                raise
            existing = self._get(effect_id)
            if existing is None or not retired(existing) or existing.get("status") == "cancelled":
                return
        self.events.delete(calendarId=self.calendar_id, eventId=body["id"]).execute(num_retries=0)

    def lookup(self, effect_id: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        """The effect's event if Calendar holds it and it is not cancelled."""
        event = self._get(effect_id)
        if event is None or event.get("status") == "cancelled" or retired(event):
            return None
        return _evidence(event)

    def _get(self, effect_id: str) -> dict[str, Any] | None:
        try:
            return cast(dict[str, Any], self.events.get(calendarId=self.calendar_id,
                                                        eventId=event_id_for(effect_id)).execute(num_retries=0))
        except HttpError as exc:
            if exc.resp.status in (404, 410):
                return None
            raise


def slot_premise(service: Any, calendar_id: str, start: str, end: str, decided: list[str],
                 expect: Any = NOT_SET) -> Premise:
    """The ids of other live events overlapping the slot; this effect's own event does not count."""

    events = events_of(service)

    def read() -> list[str]:
        items = events.list(calendarId=calendar_id, timeMin=start, timeMax=end, singleEvents=True,
                                      showDeleted=False).execute(num_retries=0).get("items", [])
        return sorted(e["id"] for e in items if e.get("status") != "cancelled")

    def own_write(now: list[str], was: list[str], effect_id: str) -> bool:
        return [e for e in now if e != event_id_for(effect_id)] == was

    return Premise("other_events_in_slot", read, decided=sorted(decided), expect=expect, own_write=own_write)


_EVENTS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def events_of(service: Any) -> Any:
    """The client's events resource, built once per client and shared by the target and the premise: the client
    builds every method and its documentation each time `events()` is called, a few milliseconds each."""
    found = _EVENTS.get(service)
    if found is None:
        found = _EVENTS[service] = service.events()
    return found


def retired(event: dict[str, Any]) -> bool:
    """Whether an event is the placeholder `close_out` took an effect's id with, not a booking."""
    return bool(((event.get("extendedProperties") or {}).get("private") or {}).get(RETIRED_KEY))


def _evidence(event: dict[str, Any]) -> dict[str, Any]:
    return {"status": event.get("status"), "event": event.get("id"), "created": event.get("created")}
