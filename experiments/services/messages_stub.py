"""A local stand-in for the Anthropic Messages API, so the real SDK path of the model decider runs offline.

It answers POST /v1/messages with one `tool_use` block for the tool the request forces (`tool_choice`), with
the input scripted for that tool, in the real response shape. It answers with the model id `stub:<requested>`, so
a decision made through it can never pass for a real model's.
"""

from __future__ import annotations

import contextlib
import copy
import json
import secrets
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

from experiments.services._serving import loopback_server, serving

NAME = "interlock Messages API stub"


class MessagesStub:
    """Scripted tool inputs by tool name, and every request body received."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inputs: dict[str, dict[str, Any]] = {"get_config": {}}
        self._requests: list[dict[str, Any]] = []
        self.endpoint = ""

    def script(self, tool: str, tool_input: dict[str, Any]) -> None:
        """Answer every forced call of `tool` with this input from now on."""
        with self._lock:
            self._inputs[tool] = copy.deepcopy(tool_input)

    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of every /v1/messages request so far, oldest first."""
        with self._lock:
            return copy.deepcopy(self._requests)

    def answer(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and body the Messages API would give for this request."""
        with self._lock:
            self._requests.append(copy.deepcopy(request))
            choice = request.get("tool_choice") or {}
            tools = [tool["name"] for tool in request.get("tools", [])]
            name = choice.get("name") if choice.get("type") == "tool" else (tools[0] if tools else None)
            if name not in tools or name not in self._inputs:
                return 400, {"type": "error", "error": {"type": "invalid_request_error",
                                                        "message": f"the stub has no scripted input for tool {name!r}"}}
            tool_input = copy.deepcopy(self._inputs[name])
        return 200, {
            "id": f"msg_stub{secrets.token_hex(8)}",
            "type": "message",
            "role": "assistant",
            "model": f"stub:{request.get('model')}",
            "content": [{"type": "tool_use", "id": f"toolu_stub{secrets.token_hex(8)}", "name": name, "input": tool_input}],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }


def _handler(stub: MessagesStub) -> type[BaseHTTPRequestHandler]:
    class MessagesHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            """Requests are kept by the stub; stderr stays quiet."""

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b"{}"
            if self.path.split("?")[0] != "/v1/messages":
                status, body = 404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}}
            else:
                status, body = stub.answer(json.loads(raw))
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return MessagesHandler


@contextlib.contextmanager
def messages_stub() -> Iterator[MessagesStub]:
    """Serve the stub on a free loopback port in a thread of this process until the block ends."""
    stub = MessagesStub()
    with serving(loopback_server(_handler(stub))) as server:
        stub.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        yield stub
