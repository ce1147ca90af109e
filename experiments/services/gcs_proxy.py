"""A recording HTTP proxy in front of the object store: the service-side write log, and the network cut.

The experiments judge against what the service holds; this proxy adds what went over the wire: every request and
its answer, one JSON line each, with the object, the generation it produced and the object's custom metadata.
It can also cut the connection after the upstream answered (the write committed) and before the client reads a
byte of the answer, which is the one fault a process crash cannot produce; and hold chosen writes for a while
before relaying them (`delays`), so a write lands at the store seconds after it arrived, whether or not its sender
still lives. A held write's log entry carries `received_ts`, when it arrived.

What the real google-cloud-storage client does with a cut upload (pinned by tests/test_gcs_proxy.py): with
`retry=None` it raises `requests.exceptions.ConnectionError` while the object is committed upstream. With its
default policy and `if_generation_match` set, it retries the upload; the retry meets the generation its own first
attempt created and raises 412 `PreconditionFailed`. Experiments therefore upload with `retry=None`, so the cut
is seen by the system under test and not hidden inside the client.
"""

from __future__ import annotations

import contextlib
import email.parser
import email.policy
import gzip
import http.client
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from experiments.services._serving import (Cuts, Delays, Predicate, error_log_beside, loopback_server,
                                           reset_connection, serving)

if TYPE_CHECKING:
    from email.message import Message

_HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "host"}


class RecordingProxy:
    """Relays to one upstream and appends every exchange to a JSONL log."""

    def __init__(self, upstream: str, log_path: Path) -> None:
        parsed = urllib.parse.urlsplit(upstream)
        self.upstream_host = parsed.hostname or "127.0.0.1"
        self.upstream_port = parsed.port or 80
        self.log_path = Path(log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._cuts = Cuts()
        self.delays = Delays()
        self._lock = threading.Lock()
        self._seq = 0
        self._by_object: dict[str, list[dict[str, Any]]] = {}
        self.endpoint = ""

    def cut_next(self, predicate: Predicate) -> None:
        """Cut the connection of the next exchange whose log entry (without `cut`) satisfies `predicate`."""
        self._cuts.cut_next(predicate)

    def write_log(self) -> list[dict[str, Any]]:
        """Every logged exchange so far, oldest first."""
        with self._lock:
            if not self.log_path.exists():
                return []
            return [json.loads(line) for line in self.log_path.read_text().splitlines() if line]

    def exchanges_of(self, name: str) -> list[dict[str, Any]]:
        """The logged exchanges that name this object, oldest first (without reading the whole log again)."""
        with self._lock:
            return [dict(entry) for entry in self._by_object.get(name, [])]

    def record(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Number the entry, decide whether it is cut, and append it to the log."""
        with self._lock:
            self._seq += 1
            entry = {"seq": self._seq, "ts": time.time(), **entry}
            entry["cut"] = self._cuts.take(entry)
            with open(self.log_path, "a") as log:
                log.write(json.dumps(entry, sort_keys=True) + "\n")
            if entry.get("object"):
                self._by_object.setdefault(entry["object"], []).append(entry)
        return entry


def _describe(method: str, target: str, request_headers: Message, request_body: bytes | None,
              status: int, headers: Message, body: bytes) -> dict[str, Any]:
    """The log fields of one exchange: what was asked, and which object version the answer names.

    A refused upload's answer names no object, so the name then comes from the request: the path, the `name`
    query parameter, or the object resource the upload sent (a multipart upload's metadata part).
    """
    split = urllib.parse.urlsplit(target)
    query = dict(urllib.parse.parse_qsl(split.query, keep_blank_values=True))
    resource = _json_body(headers, body)
    named = resource if resource.get("kind") == "storage#object" else {}
    return {
        "method": method,
        "path": split.path,
        "query": query,
        "status": status,
        "object": named.get("name") or _object_in_path(split.path) or query.get("name") or (
            _uploaded_resource(request_headers, request_body or b"").get("name")
            if split.path.startswith("/upload/") else None),
        "generation": named.get("generation"),
        "metadata": named.get("metadata"),
    }


def _asked(method: str, target: str, headers: Message, body: bytes | None) -> dict[str, Any]:
    """What a request asks, before any answer: its method, path, the object it names and the metadata it uploads."""
    path = urllib.parse.urlsplit(target).path
    uploaded = _uploaded_resource(headers, body or b"") if path.startswith("/upload/") else {}
    return {"method": method, "path": path, "object": uploaded.get("name") or _object_in_path(path),
            "metadata": uploaded.get("metadata")}


def _json_body(headers: Message, body: bytes) -> dict[str, Any]:
    if "json" not in (headers.get("Content-Type") or ""):
        return {}
    if headers.get("Content-Encoding") == "gzip":
        body = gzip.decompress(body)
    try:
        parsed = json.loads(body)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _uploaded_resource(headers: Message, body: bytes) -> dict[str, Any]:
    """The object resource an upload sends: a multipart upload's first part, or a resumable start's JSON body."""
    content_type = headers.get("Content-Type") or ""
    if not content_type.startswith("multipart/related"):
        return _json_body(headers, body)
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body)
    parts = list(message.iter_parts()) if message.is_multipart() else []
    if not parts or parts[0].get_content_type() != "application/json":
        return {}
    return _json_body(parts[0], cast(bytes, parts[0].get_payload(decode=True) or b""))  # decode=True: the bytes


def _object_in_path(path: str) -> str | None:
    """`/storage/v1/b/<bucket>/o/<object>` (and the download form) name the object, URL-encoded."""
    marker = "/o/"
    if "/b/" not in path or marker not in path:
        return None
    return urllib.parse.unquote(path.split(marker, 1)[1])


def _handler(proxy: RecordingProxy) -> type[BaseHTTPRequestHandler]:
    class Relay(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            """The JSONL log is the record; stderr stays quiet."""

        def _relay(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            request_body = self.rfile.read(length) if length else None
            forwarded = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            with proxy.delays.hold(_asked(self.command, self.path, self.headers, request_body)) as received:
                upstream = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port, timeout=60)
                try:
                    upstream.request(self.command, self.path, body=request_body, headers=forwarded)
                    answer = upstream.getresponse()
                    body = answer.read()
                finally:
                    upstream.close()
                described = _describe(self.command, self.path, self.headers, request_body, answer.status,
                                      answer.headers, body)
                entry = proxy.record(described if received is None else {**described, "received_ts": received})
            if entry["cut"]:
                reset_connection(self)
                return
            self.send_response(answer.status, answer.reason)
            for key, value in answer.headers.items():
                if key.lower() not in _HOP_BY_HOP | {"content-length", "date", "server"}:
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _relay

    return Relay


@contextlib.contextmanager
def recording_proxy(upstream: str, log_path: Path) -> Iterator[RecordingProxy]:
    """Run the proxy on a free loopback port in a thread of this process until the block ends.

    Exchanges that fail (a client killed mid-exchange, the upstream gone) go to `<log stem>.errors.log` beside
    the log.
    """
    proxy = RecordingProxy(upstream, log_path)
    with serving(loopback_server(_handler(proxy), error_log_beside(proxy.log_path))) as server:
        proxy.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        yield proxy
