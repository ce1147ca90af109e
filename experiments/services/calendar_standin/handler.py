"""HTTP routing of the Calendar v3 paths the real client calls, onto the store."""

from __future__ import annotations

import json
import urllib.parse
from http.server import BaseHTTPRequestHandler
from typing import Any

from experiments.services._serving import reset_connection
from experiments.services.calendar_standin import errors
from experiments.services.calendar_standin.store import CalendarStore, Written

ROOT = "/calendar/v3/"


def handler_for(store: CalendarStore) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to one store."""

    class CalendarHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            """The store's write log is the record; stderr stays quiet."""

        def _dispatch(self) -> None:
            split = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(split.query, keep_blank_values=True)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                answer = self._route(split.path, query, raw)
            except errors.ApiError as error:
                self._send(error.code, error.body())
                return
            if isinstance(answer, Written):
                if answer.cut:
                    reset_connection(self)
                    return
                self._send(answer.status, answer.body)
            else:
                self._send(200, answer)

        def _route(self, path: str, query: dict[str, list[str]], raw: bytes) -> dict[str, Any] | Written:
            if not path.startswith(ROOT):
                raise errors.not_found()
            parts = [urllib.parse.unquote(part) for part in path[len(ROOT):].split("/")]
            method = self.command
            if parts == ["freeBusy"] and method == "POST":
                return store.free_busy(_json(raw))
            if len(parts) == 3 and parts[0] == "calendars" and parts[2] == "events":
                if method == "GET":
                    return store.list_events(parts[1], query)
                if method == "POST":
                    return store.insert(parts[1], _json(raw))
            if len(parts) == 4 and parts[0] == "calendars" and parts[2] == "events":
                calendar_id, event_id = parts[1], parts[3]
                if method == "GET":
                    return store.get_event(calendar_id, event_id)
                if method == "DELETE":
                    return store.delete(calendar_id, event_id)
                if method == "PATCH":
                    return store.patch(calendar_id, event_id, _json(raw))
            raise errors.not_found()

        def _send(self, status: int, body: dict[str, Any] | None) -> None:
            payload = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            if body is not None:
                self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PATCH = do_DELETE = _dispatch

    return CalendarHandler


def _json(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        raise errors.ApiError(400, "parseError", "Parse Error") from None
    if not isinstance(body, dict):
        raise errors.ApiError(400, "parseError", "Parse Error")
    return body
