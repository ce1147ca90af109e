"""What every loopback stand-in shares: a free port, a server thread, the one-shot connection cut, and the
slow writes that land seconds after they arrived."""

from __future__ import annotations

import contextlib
import re
import socket
import struct
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar, cast

Predicate = Callable[[dict], bool]
T = TypeVar("T")
PORT_ATTEMPTS = 5  # fresh ports a server is started on before its start fails for good
_BIND_FAILED = re.compile("address already in use", re.IGNORECASE)  # what every server here logs for it


class PortTaken(RuntimeError):
    """A server could not bind the port it was given: another process took it after it was found free."""


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return cast(int, probe.getsockname()[1])  # AF_INET: (host, port)


def on_a_free_port(start: Callable[[int], T]) -> T:
    """`start(port)` on a port found free; again on a fresh one while it raises PortTaken, since between the probe
    and the server's own bind any process on the machine may take the port (an outgoing connection included)."""
    attempts = PORT_ATTEMPTS
    while True:
        try:
            return start(free_port())
        except PortTaken:
            attempts -= 1
            if attempts == 0:
                raise


@contextlib.contextmanager
def port_taken_told(log: Path, server: str) -> Iterator[None]:
    """Around one start of a server that writes `log`: a RuntimeError it ends in becomes PortTaken when the log says,
    past where this start began, that the port was taken (`server` names the server and its address)."""
    offset = _log_size(log)
    try:
        yield
    except RuntimeError as exc:
        if _bind_failed(log, offset):
            raise PortTaken(f"{server}: the port was taken by another process") from exc
        raise


def _bind_failed(log: Path, offset: int) -> bool:
    """Whether the server log says, past byte `offset`, that its port was taken."""
    try:
        with open(log, "rb") as f:
            f.seek(offset)
            return _BIND_FAILED.search(f.read().decode(errors="replace")) is not None
    except FileNotFoundError:
        return False


def _log_size(log: Path) -> int:
    """Where a server's next lines will start in its log (0 before it has one)."""
    try:
        return log.stat().st_size
    except FileNotFoundError:
        return 0


class _LoopbackServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler], error_log: Path | None) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.error_log = error_log
        self._error_lock = threading.Lock()

    def handle_error(self, request: socket.socket | tuple[bytes, socket.socket],
                     client_address: tuple[str, int]) -> None:
        """A failed exchange goes to the server's error log, not into the output of the process hosting it.

        The expected ones are a client SIGKILLed mid-exchange (connection reset) and, for the proxy, an upstream
        already stopped (connection refused); either would otherwise print a traceback into a runner's progress.
        """
        if self.error_log is None:
            super().handle_error(request, client_address)
            return
        line = f"{time.time():.6f} {client_address[0]}:{client_address[1]} {traceback.format_exc()}"
        with self._error_lock, open(self.error_log, "a") as log:
            log.write(line)

    def get_request(self) -> tuple[socket.socket, tuple[str, int]]:
        """Answers go out as headers then body; without TCP_NODELAY, Nagle holds the body for a delayed ACK."""
        connection, address = super().get_request()
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection, address


def loopback_server(handler: type[BaseHTTPRequestHandler], error_log: Path | None = None) -> ThreadingHTTPServer:
    """A threaded HTTP server bound to 127.0.0.1 on a port the OS picks; failed exchanges go to `error_log`."""
    return _LoopbackServer(handler, error_log)


def error_log_beside(log_path: Path) -> Path:
    """The error log a stand-in keeps next to its write log: `gcs-wire.jsonl` -> `gcs-wire.errors.log`."""
    return log_path.with_name(f"{log_path.stem}.errors.log")


@contextlib.contextmanager
def serving(server: ThreadingHTTPServer) -> Iterator[ThreadingHTTPServer]:
    """Serve in a background thread of this process until the block ends, then close the socket."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class Cuts:
    """One-shot predicates: the next exchange one of them matches loses its connection before the answer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[Predicate] = []

    def cut_next(self, predicate: Predicate) -> None:
        """Arm a cut for the next exchange whose log entry satisfies `predicate`."""
        with self._lock:
            self._pending.append(predicate)

    def take(self, entry: dict[str, Any]) -> bool:
        """Consume and report the first armed cut that matches this entry."""
        with self._lock:
            for index, predicate in enumerate(self._pending):
                if predicate(entry):
                    del self._pending[index]
                    return True
        return False


class Delays:
    """Writes a service holds for a while after they arrived, before it lets them land: a request can outlive the
    process that sent it. Each rule has a key (one run's object or event) so it can be dropped when the run ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: dict[str, tuple[Predicate, float]] = {}
        self._arrivals: dict[str, list[dict[str, Any]]] = {}

    def slow(self, key: str, predicate: Predicate, seconds: float) -> None:
        """Hold every request that satisfies `predicate` for `seconds` before it lands, until `forget(key)`."""
        with self._lock:
            self._rules[key] = (predicate, seconds)
            self._arrivals[key] = []

    def forget(self, key: str) -> None:
        """Drop the rule and what it saw."""
        with self._lock:
            self._rules.pop(key, None)
            self._arrivals.pop(key, None)

    def arrivals(self, key: str) -> list[dict[str, Any]]:
        """The requests the rule held so far: `{"arrived": epoch seconds, "landed": bool}` each, oldest first."""
        with self._lock:
            return [dict(a) for a in self._arrivals.get(key, [])]

    @contextlib.contextmanager
    def hold(self, request: dict[str, Any]) -> Iterator[float | None]:
        """Wait out the delay of the rule `request` meets, then let the block land it; yields when it arrived
        (None: no rule held it). The wait goes on whether or not the client is still there."""
        with self._lock:
            rule = next(((key, seconds) for key, (predicate, seconds) in self._rules.items() if predicate(request)),
                        None)
            arrival = {"arrived": time.time(), "landed": False}
            if rule is not None:
                self._arrivals[rule[0]].append(arrival)
        if rule is None:
            yield None
            return
        time.sleep(rule[1])  # the service's own work, not a wait for another process
        try:
            yield arrival["arrived"]
        finally:
            with self._lock:
                arrival["landed"] = True


def reset_connection(handler: BaseHTTPRequestHandler) -> None:
    """Drop the client's connection with a TCP reset, so no byte of the answer reaches it.

    A reset (not a clean close) is what a cut link looks like to the client: its read fails with
    ConnectionResetError. A clean close would read as a stale keep-alive socket, which httplib2 silently
    resends once.
    """
    handler.close_connection = True
    handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    handler.connection.close()
