"""Google Calendar events as a tier-1 target: a client-chosen event id makes Calendar refuse a second insert,
which also fences a stray insert from a dead sender."""

from __future__ import annotations

from typing import Any

from googleapiclient.errors import HttpError

from ..premises import NOT_SET, Premise
from .base import TIER_DEDUPE, Rejected, Unanswered


def event_id_for(effect_id: str) -> str:
    """The Calendar event id of an effect: the effect id itself (hex is valid base32hex)."""
    return effect_id


class CalendarEventTarget:
    """Insert `payload["event"]` with the effect's event id; a 409 on resend means the first insert landed."""

    name = "calendar-event"
    tier = TIER_DEDUPE
    can_lookup = True
    fenced = True

    def __init__(self, service: Any, calendar_id: str):
        self.service = service
        self.calendar_id = calendar_id

    def apply(self, effect_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Insert the event; on 409 report the existing one."""
        body = {**payload["event"], "id": event_id_for(effect_id)}
        try:
            event = self.service.events().insert(calendarId=self.calendar_id, body=body).execute(num_retries=0)
        except HttpError as exc:
            if exc.resp.status == 409:
                existing = self._get(effect_id)
                return {**_evidence(existing or {"id": body["id"]}), "already_existed": True}
            if 400 <= exc.resp.status < 500:
                raise Rejected(f"{exc.resp.status} {exc.reason}") from exc
            raise Unanswered(f"{exc.resp.status} {exc.reason}") from exc
        return _evidence(event)

    def lookup(self, effect_id: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        """The effect's event if Calendar holds it and it is not cancelled."""
        event = self._get(effect_id)
        if event is None or event.get("status") == "cancelled":
            return None
        return _evidence(event)

    def _get(self, effect_id: str) -> dict[str, Any] | None:
        try:
            return self.service.events().get(calendarId=self.calendar_id,
                                             eventId=event_id_for(effect_id)).execute(num_retries=0)
        except HttpError as exc:
            if exc.resp.status in (404, 410):
                return None
            raise


def slot_premise(service: Any, calendar_id: str, start: str, end: str, decided: list[str],
                 expect: Any = NOT_SET) -> Premise:
    """The ids of other live events overlapping the slot; this effect's own event does not count."""

    def read() -> list[str]:
        items = service.events().list(calendarId=calendar_id, timeMin=start, timeMax=end, singleEvents=True,
                                      showDeleted=False).execute(num_retries=0).get("items", [])
        return sorted(e["id"] for e in items if e.get("status") != "cancelled")

    def own_write(now: Any, was: Any, effect_id: str) -> bool:
        return [e for e in now if e != event_id_for(effect_id)] == was

    return Premise("other_events_in_slot", read, decided=sorted(decided), expect=expect, own_write=own_write)


def _evidence(event: dict[str, Any]) -> dict[str, Any]:
    return {"status": event.get("status"), "event": event.get("id"), "created": event.get("created")}
