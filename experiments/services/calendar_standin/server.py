"""The stand-in as a running server: started in a thread of the harness process, reached by workers over HTTP."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from experiments.services._serving import Predicate, error_log_beside, loopback_server, serving
from experiments.services.calendar_standin.handler import ROOT, handler_for
from experiments.services.calendar_standin.store import CalendarStore

NAME = "interlock Calendar v3 stand-in"


class CalendarStandin:
    """A running stand-in: its API root for `client_options["api_endpoint"]`, its write log, its cut switch."""

    def __init__(self, store: CalendarStore, port: int) -> None:
        self.store = store
        self.delays = store.delays  # inserts held a while after they arrived (services._serving.Delays)
        self.port = port
        self.endpoint = f"http://127.0.0.1:{port}{ROOT}"

    def write_log(self) -> list[dict[str, Any]]:
        """Every insert, delete and patch so far, oldest first: {seq, ts, method, calendar_id, event_id, status, cut}."""
        return self.store.write_log()

    def cut_next(self, predicate: Predicate) -> None:
        """Store the next write whose log entry satisfies `predicate`, then reset the connection unanswered."""
        self.store.cuts.cut_next(predicate)


@contextlib.contextmanager
def calendar_standin(log_path: Path | None = None) -> Iterator[CalendarStandin]:
    """Serve a fresh, empty stand-in on a free loopback port until the block ends.

    With a write log, failed exchanges (a client killed mid-exchange) go to `<log stem>.errors.log` beside it.
    """
    store = CalendarStore(log_path)
    error_log = error_log_beside(log_path) if log_path is not None else None
    with serving(loopback_server(handler_for(store), error_log)) as server:
        port = server.server_address[1]
        store.link_base = f"http://127.0.0.1:{port}"
        yield CalendarStandin(store, port)
