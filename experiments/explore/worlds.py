"""The two scenarios as the explorer drives them: one long-lived stand-in each, a fresh object or slot per run.

A world prepares a run's case directory exactly as the scenario runner does (the workers read the same files),
performs the outage actions through the real clients, arms the stand-ins' connection cut, and reads the ground
truth back from the service: the version listing and the recording proxy's write log (gcp_resource), the events
on the slot and the stand-in's write log (calendar).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from itertools import count
from pathlib import Path
from typing import Any

from interlock import effect_id_for

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH"})


@dataclass
class Case:
    """One run's directory and the ids its ground truth is read by."""

    directory: Path
    system: str
    effect_id: str  # the gate's effect id for this job
    ids: dict[str, Any] = field(default_factory=dict)


@dataclass
class Truth:
    """What the service holds: the agent's committed writes (each with the time the service's log gave it) and
    how many agent copies the service holds now (versions in the listing; live events on the slot)."""

    writes: list[tuple[str, float]]
    live: int

    @property
    def landed(self) -> bool:
        """Whether the effect is at the service at all."""
        return bool(self.writes) or self.live > 0


class GcpWorld:
    """fake-gcs-server behind the recording proxy; one versioned bucket; one object per run."""

    scenario = "gcp_resource"
    module = "experiments.gcp_resource.worker"
    journal = "journal.jsonl"
    log = "log.jsonl"

    def __init__(self, proxy: Any, client: Any, bucket: str, env: dict[str, str]):
        self.proxy, self.client, self.bucket = proxy, client, bucket
        self.env = env  # what every worker needs to reach the stand-ins
        self.lock = threading.Lock()  # one client, shared by the explorer's threads

    @staticmethod
    def services(stack: contextlib.ExitStack, work: Path) -> GcpWorld:
        """Start the object store and its proxy for the whole exploration."""
        from experiments.gcp_resource.worker import storage_client
        from experiments.services import fake_gcs, recording_proxy

        store = stack.enter_context(fake_gcs(work / "fake-gcs-server.log"))
        proxy = stack.enter_context(recording_proxy(store.endpoint, work / "gcs-wire.jsonl"))
        env = {"STORAGE_EMULATOR_HOST": proxy.endpoint}
        _export(stack, env)
        client = storage_client()
        bucket = client.bucket(f"explore-{uuid.uuid4().hex[:10]}")
        bucket.versioning_enabled = True
        client.create_bucket(bucket)
        return GcpWorld(proxy, client, bucket.name, env)

    def setup(self, directory: Path, seed: int, system: str) -> Case:
        """Seed v42 as the human's deploy, open the incident, decide the rollback (scripted decider)."""
        from experiments.deciders import ScriptedDecider, persisted_decision
        from experiments.gcp_resource import case as gcp

        name = f"explore/{seed}/{system}/app.json"
        offset = self.proxy.log_path.stat().st_size if self.proxy.log_path.exists() else 0
        self._upload(name, "v42", gcp.HUMAN_DEPLOY, if_generation_match=0)
        case = {"bucket": self.bucket, "object": name, "incident_id": gcp.INCIDENT_ID,
                "incident": gcp.incident_text(self.bucket, name)}
        _write(directory / gcp.CASE_FILE, case)
        _write(directory / gcp.INCIDENT_FILE, {gcp.INCIDENT_ID: "open"})

        def get_config() -> dict[str, Any]:
            blob = self.client.bucket(self.bucket).get_blob(name)
            return {"generation": str(blob.generation), "body": json.loads(blob.download_as_text())}

        persisted_decision(directory / gcp.DECISION_FILE, lambda: ScriptedDecider().decide_rollback(case, get_config))
        return Case(directory, system, effect_id_for(gcp.effect_key(self.bucket, name)),
                    {"object": name, "log_offset": offset})

    def argv(self, case: Case, phase: str) -> list[str]:
        """The worker's command line."""
        return ["--case", str(case.directory), "--system", case.system, "--phase", phase]

    def arm_cut(self, case: Case) -> None:
        """Lose the answer of the next agent upload of this object that the store commits."""
        name = case.ids["object"]
        self.proxy.cut_next(lambda e: e.get("method") == "POST" and e.get("object") == name
                            and e.get("status") == 200 and (e.get("metadata") or {}).get("writer") == "agent")

    def act(self, case: Case, action: str) -> None:
        """The human redeploys v43 (a plain upload), or the incident is resolved (the lease store)."""
        from experiments.gcp_resource import case as gcp

        if action == "human_write":
            self._upload(case.ids["object"], "v43", gcp.HUMAN_REDEPLOY)
        else:
            _write(case.directory / gcp.INCIDENT_FILE, {gcp.INCIDENT_ID: "resolved"})

    def truth(self, case: Case) -> Truth:
        """Agent writes from the proxy's write log (answered 200, or committed and cut); live ones from the listing."""
        name = case.ids["object"]
        writes = [(str(e["generation"]), float(e["ts"])) for e in _jsonl(self.proxy.log_path, case.ids["log_offset"])
                  if e.get("object") == name and e.get("method") in WRITE_METHODS and e.get("generation")
                  and (e.get("status") == 200 or e.get("cut")) and (e.get("metadata") or {}).get("writer") == "agent"]
        versions = [b for b in self.client.list_blobs(self.bucket, prefix=name, versions="true") if b.name == name]
        live = sum((b.metadata or {}).get("writer") == "agent" for b in versions)
        return Truth(writes, live)

    def _upload(self, name: str, version: str, writer: str, **precondition: Any) -> None:
        from experiments.gcp_resource.case import body

        blob = self.client.bucket(self.bucket).blob(name)
        blob.metadata = {"writer": writer}
        blob.upload_from_string(body(version), content_type="application/json", retry=None, **precondition)


class CalendarWorld:
    """The Calendar v3 stand-in; one 30-minute slot and one booking request per run."""

    scenario = "calendar"
    module = "experiments.calendar.worker"
    journal = "journal.jsonl"
    log = "worker.log"
    calendar_id = "primary"

    def __init__(self, standin: Any, service: Any, env: dict[str, str]):
        self.standin, self.service = standin, service
        self.env = env  # what every worker needs to reach the stand-in
        self.lock = threading.Lock()  # httplib2 under the Calendar client is not thread-safe
        self.base = (datetime.now(timezone.utc) + timedelta(days=60)).replace(minute=0, second=0, microsecond=0)
        self.slots = count()

    @staticmethod
    def services(stack: contextlib.ExitStack, work: Path) -> CalendarWorld:
        """Start the Calendar stand-in for the whole exploration."""
        from experiments.clients import CALENDAR_URL, calendar_service
        from experiments.services import calendar_standin

        standin = stack.enter_context(calendar_standin(work / "calendar-writes.jsonl"))
        env = {CALENDAR_URL: standin.endpoint}
        _export(stack, env)
        return CalendarWorld(standin, calendar_service(), env)

    def setup(self, directory: Path, seed: int, system: str) -> Case:
        """A live request for a fresh slot; the first worker decides it, as in the scenario."""
        from experiments.calendar.request import baseline_event_id, new_request, write_request

        start = self.base + timedelta(hours=next(self.slots))
        slot_start, slot_end = _rfc3339(start), _rfc3339(start + timedelta(minutes=30))
        request_id = f"explore{seed}{system.replace('_', '')}"
        _write(directory / "case.json", {"request_id": request_id, "calendar_id": self.calendar_id,
                                         "slot_start": slot_start, "slot_end": slot_end, "system": system})
        write_request(directory / "request.json", new_request(request_id, slot_start))
        effect_id = effect_id_for(f"booking:{request_id}")
        ours = effect_id if system.startswith("interlock") else baseline_event_id(request_id)
        return Case(directory, system, effect_id, {"request_id": request_id, "event_id": ours,
                                                   "slot": (slot_start, slot_end)})

    def argv(self, case: Case, phase: str) -> list[str]:
        """The worker's command line."""
        return ["--case", str(case.directory), "--system", case.system, "--phase", phase]

    def arm_cut(self, case: Case) -> None:
        """Store the agent's insert, then reset the connection before the answer."""
        ours = case.ids["event_id"]
        self.standin.cut_next(lambda e: e["method"] == "insert" and e["event_id"] == ours and e["status"] == 200)

    def act(self, case: Case, action: str) -> None:
        """A customer event lands on the slot, or the booking request is cancelled."""
        from experiments.calendar.request import customer_event, read_request, write_request

        if action == "slot_taken":
            self.service.events().insert(calendarId=self.calendar_id,
                                         body=customer_event(*case.ids["slot"])).execute(num_retries=0)
        else:
            path = case.directory / "request.json"
            write_request(path, {**read_request(path), "status": "cancelled"})

    def truth(self, case: Case) -> Truth:
        """Agent inserts from the stand-in's write log; live agent events from events.list on the slot."""
        from experiments.calendar.service import slot_events

        ours = case.ids["event_id"]
        writes = [(e["event_id"], float(e["ts"])) for e in self.standin.write_log()
                  if e["method"] == "insert" and e["event_id"] == ours and e["status"] == 200]
        events = slot_events(self.service, self.calendar_id, *case.ids["slot"])
        live = sum(((e.get("extendedProperties") or {}).get("private") or {}).get("booking_request")
                   == case.ids["request_id"] and e.get("status") != "cancelled" for e in events)
        return Truth(writes, live)


WORLDS = {"gcp_resource": GcpWorld, "calendar": CalendarWorld}


@contextlib.contextmanager
def world(scenario: str, work: Path) -> Iterator[Any]:
    """The scenario's stand-ins for the block; `.env` is the environment its workers need."""
    with contextlib.ExitStack() as stack:
        yield WORLDS[scenario].services(stack, work)


def _export(stack: contextlib.ExitStack, env: dict[str, str]) -> None:
    """Put `env` into this process's environment (its own clients read it) until the stack closes."""
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)

    def restore() -> None:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    stack.callback(restore)


def _write(path: Path, obj: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1))
    os.replace(tmp, path)


def _jsonl(path: Path, offset: int) -> Iterator[dict[str, Any]]:
    """The log's lines from `offset` on (everything a run wrote comes after the size seen at its setup)."""
    with open(path, "rb") as lines:
        lines.seek(max(offset - 1, 0))
        if offset and lines.read(1) != b"\n":
            lines.readline()  # the offset fell inside a line written before the run: skip its rest
        for line in lines:
            if line.strip():
                yield json.loads(line)


def _rfc3339(instant: datetime) -> str:
    return instant.strftime("%Y-%m-%dT%H:%M:%SZ")
