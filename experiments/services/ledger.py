"""A small write service on loopback for hazard tests: slow writes that land after their sender died, with the
fences a real service may or may not offer, and an apply count per effect as ground truth.

Reached by plain `urllib` / `http.client`; every body is JSON.

| request | answer |
|---|---|
| `PUT /effects/<id>` body: a JSON object, optional `"resource"` (default `"default"`) | after the configured delay the write is applied: `200 {"id", "resource", "version", "body", "epoch", "applied_at"}` (the record). Refused answers: `412` version fence, `409` epoch fence or dedupe (`{"error", "record"?}`) |
| `GET /effects/<id>` | `200` the record of the last applied write for that id, or `404`; an `X-Epoch: <n>` header raises the id's highest epoch |
| `POST /fences/<id>` header `X-Epoch: <n>` | raises the id's highest epoch to n, at once: `200 {"id", "epoch"}` (the highest now), also when nothing was ever written |
| `GET /applies/<id>` | `200 {"id", "applies", "refused"}`: how many PUTs for the id were applied and refused (ground truth) |
| `GET /resources/<name>` | `200 {"resource", "version", "writer"}`: the version counter, bumped by every applied write |
| `POST /resources/<name>` body `{"writer": str}` | a write by someone else (a human during the outage): bumps the version |
| `GET /config`, `POST /config` body `{"delay": s, "fences": [...]}` | the service's settings, readable and changeable while it runs |
| `GET /log` | every request's event (`put`, `applied`, `refused`, `human`, `fence`), oldest first |

The delay (0 to 2 s) runs in the service after the request arrived and before the write is applied, so a write
whose client was SIGKILLed meanwhile still lands: the request outlives its sender. Fences, chosen per test
(`fences=` any of):

- `version`: a PUT carrying `If-Match: <n>` is applied only while the resource's version is n (checked when
  the write applies, atomically with it), else 412: a precondition on the decided state;
- `epoch`: a PUT carrying `X-Epoch: <n>` is refused (409) when, as it applies, a higher epoch was seen for that
  id, so a sender whose claim was taken over cannot land after its successor reached the ledger; the highest
  epoch is raised the moment any request carrying one arrives (a PUT, before its delay; a lookup; a fence),
  applied, refused or written nothing at all;
- `dedupe`: a second PUT for an id already applied is refused (409, with the existing record): a dedupe on the
  effect id.

With no fence every PUT is applied, again and again: the unfenced service. `ledger_service()` runs it in a
thread of the calling process; `python -m experiments.services.ledger --endpoint-file F` runs it as its own
process and writes its endpoint to F once it listens.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from experiments.services._serving import error_log_beside, loopback_server, serving

FENCES = frozenset({"version", "epoch", "dedupe"})
MAX_DELAY_SECONDS = 2.0
NAME = "interlock ledger stand-in"


class LedgerError(ValueError):
    """A request or a setting the ledger does not accept."""


class Ledger:
    """The ledger's state: records, apply counts, resource versions, settings and the event log."""

    def __init__(self, *, delay: float = 0.0, fences: tuple[str, ...] | frozenset[str] = ()) -> None:
        self._lock = threading.Lock()
        self._records: dict[str, dict[str, Any]] = {}
        self._applies: dict[str, int] = {}
        self._refused: dict[str, int] = {}
        self._epochs: dict[str, int] = {}
        self._resources: dict[str, dict[str, Any]] = {}
        self._log: list[dict[str, Any]] = []
        self.delay = 0.0
        self.fences: frozenset[str] = frozenset()
        self.endpoint = ""
        self.configure(delay=delay, fences=fences)

    def configure(self, *, delay: float | None = None, fences: Any = None) -> dict[str, Any]:
        """Change the delay and the fences; what is not given stays. Returns the settings now in force."""
        if delay is not None:
            if not isinstance(delay, (int, float)) or isinstance(delay, bool) or not 0 <= delay <= MAX_DELAY_SECONDS:
                raise LedgerError(f"delay must be a number of seconds from 0 to {MAX_DELAY_SECONDS}, got {delay!r}")
        if fences is not None:
            if isinstance(fences, str) or not all(isinstance(f, str) for f in fences) or set(fences) - FENCES:
                raise LedgerError(f"fences must be a list drawn from {sorted(FENCES)}, got {fences!r}")
        with self._lock:
            if delay is not None:
                self.delay = float(delay)
            if fences is not None:
                self.fences = frozenset(fences)
            return self._settings()

    def settings(self) -> dict[str, Any]:
        """The delay and fences in force."""
        with self._lock:
            return self._settings()

    def _settings(self) -> dict[str, Any]:
        return {"delay": self.delay, "fences": sorted(self.fences)}

    def put(self, effect_id: str, body: dict[str, Any], *, if_match: int | None, epoch: int | None) -> tuple[int, dict[str, Any]]:
        """Apply one write after the delay, unless a fence in force refuses it; the status and answer body."""
        resource = body.get("resource", "default")
        if not isinstance(resource, str):
            raise LedgerError("field 'resource' must be a string")
        with self._lock:
            delay = self.delay
            self._event("put", effect_id, resource=resource, if_match=if_match, epoch=epoch)
            self._raise_epoch(effect_id, epoch)
        time.sleep(delay)  # the service's own work: it goes on whether or not the client is still there
        with self._lock:
            state = self._resources.setdefault(resource, {"version": 0, "writer": None})
            if "epoch" in self.fences and epoch is not None:
                highest = self._epochs[effect_id]
                if epoch < highest:
                    return self._refuse(effect_id, 409, f"epoch {epoch} is below {highest}, already seen for this id")
            if "dedupe" in self.fences and effect_id in self._records:
                return self._refuse(effect_id, 409, "already applied", record=self._records[effect_id])
            if "version" in self.fences and if_match is not None and if_match != state["version"]:
                return self._refuse(effect_id, 412, f"version is {state['version']}, not {if_match}")
            state["version"] += 1
            state["writer"] = effect_id
            record = {"id": effect_id, "resource": resource, "version": state["version"], "body": body,
                      "epoch": epoch, "applied_at": time.time()}
            self._records[effect_id] = record
            self._applies[effect_id] = self._applies.get(effect_id, 0) + 1
            self._event("applied", effect_id, resource=resource, version=state["version"])
            return 200, copy.deepcopy(record)

    def fence(self, effect_id: str, epoch: int | None) -> dict[str, Any]:
        """Raise the id's highest epoch at once (a recoverer shutting out a stray write of a superseded epoch)."""
        with self._lock:
            self._raise_epoch(effect_id, epoch)
            self._event("fence", effect_id, epoch=epoch)
            return {"id": effect_id, "epoch": self._epochs.get(effect_id)}

    def _raise_epoch(self, effect_id: str, epoch: int | None) -> None:
        if epoch is not None:
            self._epochs[effect_id] = max(self._epochs.get(effect_id, epoch), epoch)

    def _refuse(self, effect_id: str, status: int, error: str, **extra: Any) -> tuple[int, dict[str, Any]]:
        self._refused[effect_id] = self._refused.get(effect_id, 0) + 1
        self._event("refused", effect_id, status=status, error=error)
        return status, {"error": error, **copy.deepcopy(extra)}

    def record(self, effect_id: str, epoch: int | None = None) -> dict[str, Any] | None:
        """The last applied write for the id, or None; a lookup that carries an epoch raises the id's highest."""
        with self._lock:
            self._raise_epoch(effect_id, epoch)
            found = self._records.get(effect_id)
            return copy.deepcopy(found) if found else None

    def applies(self, effect_id: str) -> int:
        """How many writes for the id were applied: the ground truth a double apply shows in."""
        with self._lock:
            return self._applies.get(effect_id, 0)

    def counts(self, effect_id: str) -> dict[str, Any]:
        """Applied and refused writes for the id."""
        with self._lock:
            return {"id": effect_id, "applies": self._applies.get(effect_id, 0),
                    "refused": self._refused.get(effect_id, 0)}

    def resource(self, name: str) -> dict[str, Any]:
        """A resource's version and last writer."""
        with self._lock:
            state = self._resources.get(name, {"version": 0, "writer": None})
            return {"resource": name, **state}

    def human_write(self, name: str, writer: str) -> dict[str, Any]:
        """Someone other than the agent writes the resource: its version moves."""
        with self._lock:
            state = self._resources.setdefault(name, {"version": 0, "writer": None})
            state["version"] += 1
            state["writer"] = writer
            self._event("human", None, resource=name, writer=writer, version=state["version"])
            return {"resource": name, **state}

    def log(self) -> list[dict[str, Any]]:
        """Every event so far, oldest first."""
        with self._lock:
            return copy.deepcopy(self._log)

    def _event(self, event: str, effect_id: str | None, **data: Any) -> None:
        self._log.append({"at": time.time(), "event": event, "id": effect_id, **data})


def _handler_for(ledger: Ledger) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = NAME

        def log_message(self, format: str, *args: Any) -> None:
            """Requests are kept in the ledger's own log, not printed."""

        def do_GET(self) -> None:
            """Look-ups: a record, an apply count, a resource, the settings, the log."""
            kind, _, name = self.path.lstrip("/").partition("/")
            if kind == "effects" and name:
                try:
                    found = ledger.record(name, self._int_header("X-Epoch"))
                except LedgerError as exc:
                    self._answer(400, {"error": str(exc)})
                    return
                self._answer(200, found) if found else self._answer(404, {"error": f"no effect {name}"})
            elif kind == "applies" and name:
                self._answer(200, ledger.counts(name))
            elif kind == "resources" and name:
                self._answer(200, ledger.resource(name))
            elif self.path == "/config":
                self._answer(200, ledger.settings())
            elif self.path == "/log":
                self._answer(200, {"events": ledger.log()})
            else:
                self._answer(404, {"error": f"no route {self.path}"})

        def do_PUT(self) -> None:
            """A write of one effect."""
            kind, _, name = self.path.lstrip("/").partition("/")
            body = self._body()
            if body is None:
                return
            if kind != "effects" or not name:
                self._answer(404, {"error": f"no route {self.path}"})
                return
            try:
                status, answer = ledger.put(name, body, if_match=self._int_header("If-Match"),
                                            epoch=self._int_header("X-Epoch"))
            except LedgerError as exc:
                self._answer(400, {"error": str(exc)})
                return
            self._answer(status, answer)

        def do_POST(self) -> None:
            """A human's write to a resource, or new settings."""
            kind, _, name = self.path.lstrip("/").partition("/")
            body = self._body()
            if body is None:
                return
            try:
                if kind == "resources" and name:
                    writer = body.get("writer", "human")
                    if not isinstance(writer, str):
                        raise LedgerError("field 'writer' must be a string")
                    self._answer(200, ledger.human_write(name, writer))
                elif kind == "fences" and name:
                    self._answer(200, ledger.fence(name, self._int_header("X-Epoch")))
                elif self.path == "/config":
                    self._answer(200, ledger.configure(delay=body.get("delay"), fences=body.get("fences")))
                else:
                    self._answer(404, {"error": f"no route {self.path}"})
            except LedgerError as exc:
                self._answer(400, {"error": str(exc)})

        def _int_header(self, name: str) -> int | None:
            raw = self.headers.get(name)
            if raw is None:
                return None
            try:
                return int(raw.strip('"'))
            except ValueError:
                raise LedgerError(f"header {name} must be an integer, got {raw!r}") from None

        def _body(self) -> dict[str, Any] | None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b"{}"
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            if not isinstance(body, dict):
                self._answer(400, {"error": "the body must be a JSON object"})
                return None
            return body

        def _answer(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextlib.contextmanager
def ledger_service(log_path: Path | None = None, *, delay: float = 0.0,
                   fences: tuple[str, ...] | frozenset[str] = ()) -> Iterator[Ledger]:
    """Serve a fresh ledger on 127.0.0.1 in a thread of this process; `.endpoint` is its base URL.

    Failed exchanges (a client killed while its write was pending) go to `<log_path stem>.errors.log`.
    """
    ledger = Ledger(delay=delay, fences=fences)
    server = loopback_server(_handler_for(ledger), error_log_beside(log_path) if log_path else None)
    with serving(server):
        ledger.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        yield ledger


def main(argv: list[str] | None = None) -> int:
    """Run the ledger as its own process until it is signalled."""
    parser = argparse.ArgumentParser(prog="python -m experiments.services.ledger")
    parser.add_argument("--endpoint-file", type=Path, required=True, help="written with the base URL once listening")
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--fence", action="append", default=[], choices=sorted(FENCES))
    args = parser.parse_args(argv)
    stop = threading.Event()
    try:
        with ledger_service(args.endpoint_file.with_suffix(".log"), delay=args.delay, fences=tuple(args.fence)) as ledger:
            tmp = args.endpoint_file.with_suffix(".tmp")
            tmp.write_text(ledger.endpoint)
            tmp.replace(args.endpoint_file)
            stop.wait()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
