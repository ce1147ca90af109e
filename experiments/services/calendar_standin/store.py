"""The calendars' events and the write log, behind one lock."""

from __future__ import annotations

import base64
import copy
import json
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

from experiments.services._serving import Cuts, Delays
from experiments.services.calendar_standin import errors
from experiments.services.calendar_standin.timing import event_instant, parse_instant, rfc3339, rfc3339_millis

OWNER = "interlock-standin@calendar.invalid"
"""The account that owns `primary` and creates every event (a stand-in address that cannot receive mail)."""

_EVENT_ID = re.compile(r"[a-v0-9]{5,1024}")
_BASE32HEX = "0123456789abcdefghijklmnopqrstuv"
_CALLER_FIELDS = ("summary", "description", "location", "start", "end", "extendedProperties", "reminders",
                  "transparency", "attendees", "colorId", "visibility")
_MAX_RESULTS = 2500


@dataclass(frozen=True)
class Written:
    """What one write did: the status answered, the resource or error body, and whether its answer is cut."""

    status: int
    body: dict | None
    cut: bool


class CalendarStore:
    """Events of every calendar, created on first use; `primary` is the owner's calendar."""

    def __init__(self, log_path: Path | None = None, link_base: str = "") -> None:
        self.lock = threading.Lock()
        self.cuts = Cuts()
        self.delays = Delays()  # inserts held a while after they arrived, before they land
        self.link_base = link_base
        self._calendars: dict[str, dict[str, dict[str, Any]]] = {}
        self._log: list[dict[str, Any]] = []
        self._log_path = log_path
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)

    # writes -------------------------------------------------------------------------------------------------------

    def insert(self, calendar_id: str, body: dict[str, Any]) -> Written:
        """events.insert: the caller may choose the id; an id is never reused, even after a delete. An insert a
        delay holds lands after it, and its log entry carries `received_ts`, when it arrived."""
        event_id = body.get("id")
        with self.delays.hold({"method": "insert", "calendar_id": calendar_id, "event_id": event_id}) as received:
            return self._write("insert", calendar_id, event_id, lambda: self._insert(calendar_id, body), received)

    def delete(self, calendar_id: str, event_id: str) -> Written:
        """events.delete: the event stays readable as cancelled; deleting it again answers 410."""
        return self._write("delete", calendar_id, event_id, lambda: self._delete(calendar_id, event_id))

    def patch(self, calendar_id: str, event_id: str, body: dict[str, Any]) -> Written:
        """events.patch: each given top-level field replaces the stored one."""
        return self._write("patch", calendar_id, event_id, lambda: self._patch(calendar_id, event_id, body))

    def write_log(self) -> list[dict[str, Any]]:
        """Every insert, delete and patch so far, oldest first, including refused ones."""
        with self.lock:
            return copy.deepcopy(self._log)

    def _write(self, method: str, calendar_id: str, event_id: str | None,
               operation: Callable[[], dict[str, Any] | None],
               received: float | None = None) -> Written:
        with self.lock:
            try:
                resource = operation()
            except errors.ApiError as error:
                status, body = error.code, cast(dict[str, Any] | None, error.body())
            else:
                status, body = (204, None) if resource is None else (200, resource)
            entry: dict[str, Any] = {
                "seq": len(self._log) + 1,
                "ts": time.time(),
                "method": method,
                "calendar_id": calendar_id,
                "event_id": cast(dict[str, Any], body)["id"] if status == 200 else event_id,  # 200: the resource
                "status": status,
                **({} if received is None else {"received_ts": received}),
            }
            entry["cut"] = self.cuts.take(entry)
            self._log.append(entry)
            if self._log_path is not None:
                with open(self._log_path, "a") as log:
                    log.write(json.dumps(entry, sort_keys=True) + "\n")
        return Written(status, copy.deepcopy(body), entry["cut"])

    def _insert(self, calendar_id: str, body: dict[str, Any]) -> dict[str, Any]:
        events = self._calendar(calendar_id)
        event_id = body.get("id")
        if event_id is None:
            event_id = "".join(secrets.choice(_BASE32HEX) for _ in range(26))
        elif not isinstance(event_id, str) or not _EVENT_ID.fullmatch(event_id):
            raise errors.invalid("Invalid resource id value.")
        if event_id in events:
            raise errors.duplicate()
        start, end = event_instant(body.get("start"), "start"), event_instant(body.get("end"), "end")
        if end < start:
            raise errors.invalid("The specified time range is empty.")
        now = datetime.now(timezone.utc)
        owner = self._owner(calendar_id)
        resource = {
            "kind": "calendar#event",
            "etag": _etag(now),
            "id": event_id,
            "status": body.get("status") if body.get("status") == "tentative" else "confirmed",
            "htmlLink": self._html_link(event_id, owner),
            "created": rfc3339_millis(now.replace(microsecond=0)),
            "updated": rfc3339_millis(now),
            "creator": {"email": owner, "self": True},
            "organizer": {"email": owner, "self": True},
            "iCalUID": f"{event_id}@google.com",
            "sequence": 0,
            "reminders": {"useDefault": True},
            "eventType": "default",
        }
        resource.update({field: copy.deepcopy(body[field]) for field in _CALLER_FIELDS if field in body})
        events[event_id] = _order_like_google(resource)
        return events[event_id]

    def _delete(self, calendar_id: str, event_id: str) -> None:
        event = self._event(calendar_id, event_id)
        if event["status"] == "cancelled":
            raise errors.deleted()
        _touch(event, status="cancelled")

    def _patch(self, calendar_id: str, event_id: str, body: dict[str, Any]) -> dict[str, Any]:
        event = self._event(calendar_id, event_id)
        changes = {field: copy.deepcopy(body[field]) for field in (*_CALLER_FIELDS, "status") if field in body}
        for bound in ("start", "end"):
            if bound in changes:
                event_instant(changes[bound], bound)
        _touch(event, **changes)
        return event

    # reads --------------------------------------------------------------------------------------------------------

    def get_event(self, calendar_id: str, event_id: str) -> dict[str, Any]:
        """events.get: cancelled events are still returned, with status "cancelled"."""
        with self.lock:
            return copy.deepcopy(self._event(calendar_id, event_id))

    def list_events(self, calendar_id: str, query: dict[str, list[str]]) -> dict[str, Any]:
        """events.list with timeMin/timeMax overlap, privateExtendedProperty, showDeleted, orderBy and paging."""
        single = _flag(query, "singleEvents")
        order = _one(query, "orderBy")
        if order not in (None, "startTime", "updated"):
            raise errors.invalid(f"Invalid value for orderBy: {order!r}")
        if order == "startTime" and not single:
            raise errors.invalid("The requested ordering is not available for the particular query.")
        time_min = _instant(query, "timeMin")
        time_max = _instant(query, "timeMax")
        wanted = [_property(text) for text in query.get("privateExtendedProperty", [])]
        show_deleted = _flag(query, "showDeleted")
        max_results = _max_results(query)
        offset = _page_offset(_one(query, "pageToken"))
        with self.lock:
            events = list(self._calendar(calendar_id).values())
            owner = self._owner(calendar_id)
            selected = [
                event for event in events
                if (show_deleted or event["status"] != "cancelled")
                and (time_min is None or event_instant(event["end"], "end") > time_min)
                and (time_max is None or event_instant(event["start"], "start") < time_max)
                and all(event.get("extendedProperties", {}).get("private", {}).get(k) == v for k, v in wanted)
            ]
            if order == "startTime":
                selected.sort(key=lambda event: event_instant(event["start"], "start"))
            elif order == "updated":
                selected.sort(key=lambda event: event["updated"])
            page = copy.deepcopy(selected[offset:offset + max_results])
            latest = max((event["updated"] for event in events), default=rfc3339_millis(datetime.now(timezone.utc)))
        answer = {
            "kind": "calendar#events",
            "etag": f'"{len(events)}{len(selected)}"',
            "summary": owner,
            "description": "",
            "updated": latest,
            "timeZone": "UTC",
            "accessRole": "owner",
            "defaultReminders": [],
            "items": page,
        }
        if offset + max_results < len(selected):
            answer["nextPageToken"] = _page_token(offset + max_results)
        return answer

    def free_busy(self, body: dict[str, Any]) -> dict[str, Any]:
        """freeBusy.query: merged busy periods of confirmed and tentative events that are not transparent."""
        time_min = parse_instant(body.get("timeMin"), "timeMin")
        time_max = parse_instant(body.get("timeMax"), "timeMax")
        calendars = {}
        with self.lock:
            for item in body.get("items", []):
                periods = sorted(
                    (max(event_instant(e["start"], "start"), time_min), min(event_instant(e["end"], "end"), time_max))
                    for e in self._calendar(item["id"]).values()
                    if e["status"] != "cancelled" and e.get("transparency") != "transparent"
                    and event_instant(e["end"], "end") > time_min and event_instant(e["start"], "start") < time_max
                )
                calendars[item["id"]] = {"busy": [{"start": rfc3339(s), "end": rfc3339(e)} for s, e in _merge(periods)]}
        return {"kind": "calendar#freeBusy", "timeMin": rfc3339(time_min), "timeMax": rfc3339(time_max),
                "calendars": calendars}

    # helpers ------------------------------------------------------------------------------------------------------

    def _calendar(self, calendar_id: str) -> dict[str, dict[str, Any]]:
        return self._calendars.setdefault(self._owner(calendar_id), {})

    def _event(self, calendar_id: str, event_id: str) -> dict[str, Any]:
        event = self._calendar(calendar_id).get(event_id)
        if event is None:
            raise errors.not_found()
        return event

    @staticmethod
    def _owner(calendar_id: str) -> str:
        return OWNER if calendar_id == "primary" else calendar_id

    def _html_link(self, event_id: str, owner: str) -> str:
        eid = base64.urlsafe_b64encode(f"{event_id} {owner}".encode()).decode().rstrip("=")
        return f"{self.link_base}/calendar/event?eid={eid}"


def _etag(instant: datetime) -> str:
    return f'"{int(instant.timestamp() * 1_000_000) % 10**16:016d}"'


def _touch(event: dict[str, Any], **changes: object) -> None:
    now = datetime.now(timezone.utc)
    event.update(changes)
    event["updated"] = rfc3339_millis(now)
    event["etag"] = _etag(now)


def _order_like_google(resource: dict[str, Any]) -> dict[str, Any]:
    order = ["kind", "etag", "id", "status", "htmlLink", "created", "updated", "summary", "description", "location",
             "colorId", "creator", "organizer", "start", "end", "transparency", "visibility", "iCalUID", "sequence",
             "attendees", "extendedProperties", "reminders", "eventType"]
    return {key: resource[key] for key in order if key in resource}


def _merge(periods: list[tuple[datetime, datetime]]) -> list[tuple[datetime, datetime]]:
    merged: list[tuple[datetime, datetime]] = []
    for start, end in periods:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _one(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[-1] if values else None


def _flag(query: dict[str, list[str]], name: str) -> bool:
    return (_one(query, name) or "false").lower() == "true"


def _instant(query: dict[str, list[str]], name: str) -> datetime | None:
    text = _one(query, name)
    return None if text is None else parse_instant(text, name)


def _property(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep:
        raise errors.invalid(f"Invalid value for privateExtendedProperty: {text!r} (want key=value)")
    return key, value


def _max_results(query: dict[str, list[str]]) -> int:
    text = _one(query, "maxResults") or "250"
    if not text.isdigit() or int(text) < 1:
        raise errors.invalid(f"Invalid value for maxResults: {text!r}")
    return min(int(text), _MAX_RESULTS)


def _page_token(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"offset": offset}).encode()).decode()


def _page_offset(token: str | None) -> int:
    if token is None:
        return 0
    try:
        return int(json.loads(base64.urlsafe_b64decode(token.encode()))["offset"])
    except (ValueError, KeyError, TypeError):
        raise errors.invalid("Invalid page token value.") from None
