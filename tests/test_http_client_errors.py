"""A send through a common HTTP client whose answer was lost is settled as a lost answer, not as the caller's own
error: requests against a real local HTTP service that sits on the first request past the client's timeout."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from interlock import Interlock, current_effect
from interlock.targets.base import unanswered


class Orders:
    """A service that drops the first write of each order after sitting on it, and keeps every later one."""

    def __init__(self) -> None:
        self.writes: dict[str, int] = {}
        self.held: set[str] = set()
        self.lock = threading.Lock()


@pytest.fixture
def orders() -> Iterator[tuple[str, Orders]]:
    state = Orders()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            order = self.path.rsplit("/", 1)[-1]
            with state.lock:
                state.writes[order] = state.writes.get(order, 0) + 1
                first = state.writes[order] == 1
            if first:
                time.sleep(0.5)  # past the client's timeout, and then dropped: it never lands
            else:
                state.held.add(order)
            self._answer(200, {"order": order})

        def do_GET(self) -> None:
            order = self.path.rsplit("/", 1)[-1]
            if order in state.held:
                self._answer(200, {"order": order})
            else:
                self._answer(404, {})

        def _answer(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()


def test_a_request_that_timed_out_in_requests_is_looked_up_and_sent_again_once_it_cannot_land(tmp_path, orders):
    url, state = orders

    def held(order: str) -> dict | None:
        answer = requests.get(f"{url}/orders/{current_effect()}", timeout=2)
        return answer.json() if answer.status_code == 200 else None

    with Interlock(tmp_path / "journal.jsonl", claim_wait=5.0) as app:
        @app.effect(key=lambda order: f"order:{order}", lookup=held, in_flight=0.6)
        def place(order: str) -> dict:
            answer = requests.post(f"{url}/orders/{current_effect()}", json={"order": order}, timeout=0.1)
            answer.raise_for_status()
            return answer.json()

        outcome = place("o-1")
    assert outcome.status == "REAPPLIED_AFTER_QUERY" and len(state.held) == 1
    assert list(state.writes.values()) == [2]


@pytest.mark.parametrize("status, lost", [(503, True), (500, True), (404, False), (409, False)])
def test_a_status_error_of_requests_is_a_lost_answer_only_for_a_server_error(status, lost):
    response = requests.models.Response()
    response.status_code = status
    assert unanswered(requests.exceptions.HTTPError("failed", response=response)) is lost


def test_the_callers_own_error_is_not_a_lost_answer():
    assert not unanswered(ValueError("a bug in the send")) and not unanswered(requests.exceptions.InvalidURL("x"))
