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
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from itertools import count
from pathlib import Path
from typing import Any

from interlock import effect_id_for

from experiments.explore.hazards import SHORT_TTL
from experiments.explore.ledger_worker import CLAIM_TTL_ENV
from experiments.atomic import write_json
from experiments.journals import JOURNAL_URL_ENV

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH"})
SETTLE_MARGIN_SECONDS = 2.0
SETTLE_POLL_SECONDS = 0.005


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


class JournalChoice:
    """Where a world's gated workers keep their journal: each run's own JSONL file, or the exploration's
    PostgreSQL database, each run's sessions named for it so a hazard can end exactly those."""

    scenario: str
    database: Database | None = None

    def worker_env(self, case: Case) -> dict[str, str]:
        """What a worker of this run adds to the world's environment: the run's database address, if any."""
        if self.database is None:
            return {}
        return {JOURNAL_URL_ENV: self.database.url_for(case.ids["run"])}

    def strike(self, case: Case, how: str) -> None:
        """End the run's database sessions, or stop and start the database server."""
        if self.database is None:
            raise ValueError(f"{how} needs the PostgreSQL journal")
        if how == "terminate_session":
            self.database.terminate(case.ids["run"])
        elif how == "restart_server":
            self.database.restart()
        else:
            raise ValueError(f"unknown database hazard {how!r}")

    def raise_env(self, point: str) -> dict[str, str]:
        """Only the explorer's own workers can be made to raise inside their send."""
        raise ValueError(f"{self.scenario} runs the scenario's own workers, whose send functions cannot raise")

    def received(self, case: Case) -> bool:
        """Only a service with a delay can hold a request in flight."""
        raise ValueError(f"{self.scenario} has no service that holds a request in flight")

    def settle(self, case: Case) -> bool:
        """Every write of these stand-ins lands before its answer: nothing can still be pending."""
        return True

    def finish(self, case: Case) -> None:
        """Nothing of a run outlives it here: the stand-ins serve the whole exploration."""


class GcpWorld(JournalChoice):
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

    def setup(self, directory: Path, schedule: Any, system: str) -> Case:
        """Seed v42 as the human's deploy, open the incident, decide the rollback (scripted decider)."""
        seed = schedule.seed
        from experiments.deciders import ScriptedDecider, persisted_decision
        from experiments.gcp_resource import case as gcp

        name = f"explore/{seed}/{system}/app.json"
        offset = self.proxy.log_path.stat().st_size if self.proxy.log_path.exists() else 0
        self._upload(name, "v42", gcp.HUMAN_DEPLOY, if_generation_match=0)
        case = {"bucket": self.bucket, "object": name, "incident_id": gcp.INCIDENT_ID,
                "incident": gcp.incident_text(self.bucket, name)}
        write_json(directory / gcp.CASE_FILE, case)
        write_json(directory / gcp.INCIDENT_FILE, {gcp.INCIDENT_ID: "open"})

        def get_config() -> dict[str, Any]:
            blob = self.client.bucket(self.bucket).get_blob(name)
            return {"generation": str(blob.generation), "body": json.loads(blob.download_as_text())}

        persisted_decision(directory / gcp.DECISION_FILE, lambda: ScriptedDecider().decide_rollback(case, get_config))
        return Case(directory, system, effect_id_for(gcp.effect_key(self.bucket, name)),
                    {"object": name, "log_offset": offset, "run": f"{seed}-{system}"})

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
            write_json(case.directory / gcp.INCIDENT_FILE, {gcp.INCIDENT_ID: "resolved"})

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


class CalendarWorld(JournalChoice):
    """The Calendar v3 stand-in; one 30-minute slot and one booking request per run."""

    scenario = "calendar"
    module = "experiments.calendar.worker"
    journal = "journal.jsonl"
    log = None  # the baselines' worker.log holds notes for a reader, not send and result events
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

    def setup(self, directory: Path, schedule: Any, system: str) -> Case:
        """A live request for a fresh slot; the first worker decides it, as in the scenario."""
        seed = schedule.seed
        from experiments.calendar.request import baseline_event_id, new_request, write_request

        start = self.base + timedelta(hours=next(self.slots))
        slot_start, slot_end = _rfc3339(start), _rfc3339(start + timedelta(minutes=30))
        request_id = f"explore{seed}{system.replace('_', '')}"
        write_json(directory / "case.json", {"request_id": request_id, "calendar_id": self.calendar_id,
                                         "slot_start": slot_start, "slot_end": slot_end, "system": system})
        write_request(directory / "request.json", new_request(request_id, slot_start))
        effect_id = effect_id_for(f"booking:{request_id}")
        ours = effect_id if system.startswith("interlock") else baseline_event_id(request_id)
        return Case(directory, system, effect_id, {"request_id": request_id, "event_id": ours,
                                                   "slot": (slot_start, slot_end), "run": f"{seed}-{system}"})

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
        """Agent inserts from the stand-in's write log; live agent events from events.list on the slot. When the
        id belongs to recovery's placeholder (off the slot, taken so a stray insert meets a 409), no booking
        ever landed under it."""
        from googleapiclient.errors import HttpError

        from experiments.calendar.service import slot_events
        from interlock.targets.calendar import retired

        ours = case.ids["event_id"]
        try:
            placeholder = retired(self.service.events().get(calendarId=self.calendar_id, eventId=ours)
                                  .execute(num_retries=0))
        except HttpError as exc:
            if exc.resp.status != 404:
                raise
            placeholder = False
        writes = [(e["event_id"], float(e["ts"])) for e in self.standin.write_log()
                  if e["method"] == "insert" and e["event_id"] == ours and e["status"] == 200 and not placeholder]
        events = slot_events(self.service, self.calendar_id, *case.ids["slot"])
        live = sum(((e.get("extendedProperties") or {}).get("private") or {}).get("booking_request")
                   == case.ids["request_id"] and e.get("status") != "cancelled" for e in events)
        return Truth(writes, live)


class LedgerWorld(JournalChoice):
    """The ledger stand-in (tier 2: lookup by effect id, no dedupe); one ledger per run, so each run has its own
    write delay; the agent posts one entry to the run's account."""

    scenario = "ledger"
    module = "experiments.explore.ledger_worker"
    journal = "journal.jsonl"
    log = "log.jsonl"

    def __init__(self, work: Path):
        self.work = work
        self.env = {CLAIM_TTL_ENV: str(SHORT_TTL)}
        self.lock = threading.Lock()
        self._open: dict[str, contextlib.ExitStack] = {}

    @staticmethod
    def services(stack: contextlib.ExitStack, work: Path) -> LedgerWorld:
        """Nothing long-lived: each run starts its own ledger."""
        work.mkdir(parents=True, exist_ok=True)
        chosen = LedgerWorld(work)
        stack.callback(chosen.close)
        return chosen

    def setup(self, directory: Path, schedule: Any, system: str) -> Case:
        """A fresh ledger with the schedule's delay, an account at version 0, a live lease, the decided entry."""
        from experiments.services.ledger import ledger_service

        run = f"{schedule.seed}-{system}"
        stack = contextlib.ExitStack()
        fences = () if schedule.fence in (None, "none") else (schedule.fence,)
        ledger = stack.enter_context(ledger_service(self.work / f"ledger-{run}.jsonl", delay=schedule.delay or 0.0,
                                                    fences=fences))
        self._open[run] = stack
        key = f"ledger:explore:{run}"
        effect_id = effect_id_for(key)
        resource = f"account-{run}"
        write_json(directory / "case.json", {"endpoint": ledger.endpoint, "resource": resource, "amount": 125,
                                         "key": key, "effect_id": effect_id, "decided_version": 0,
                                         "fence": schedule.fence})
        write_json(directory / "lease.json", {"status": "live"})
        return Case(directory, system, effect_id, {"run": run, "ledger": ledger, "resource": resource})

    def argv(self, case: Case, phase: str) -> list[str]:
        """The worker's command line."""
        return [case.system, phase, str(case.directory)]

    def act(self, case: Case, action: str) -> None:
        """Someone else writes the account (its version moves), or the authorization is revoked."""
        if action == "balance_moved":
            case.ids["ledger"].human_write(case.ids["resource"], "human")
        else:
            write_json(case.directory / "lease.json", {"status": "revoked"})

    def raise_env(self, point: str) -> dict[str, str]:
        """Plant a bug in the first sender's send function."""
        from experiments.explore.ledger_worker import RAISES_ENV

        return {RAISES_ENV: point}

    def received(self, case: Case) -> bool:
        """The ledger holds (or has applied) an agent write of this effect."""
        return any(e["event"] == "put" and e["id"] == case.effect_id for e in case.ids["ledger"].log())

    def settle(self, case: Case) -> bool:
        """Wait until every write of the effect the ledger received was applied or refused (a dead sender's
        request may still be waiting out its delay); False if one is still pending after the longest delay."""
        ledger = case.ids["ledger"]
        deadline = time.monotonic() + ledger.delay + SETTLE_MARGIN_SECONDS
        while True:
            events = [e["event"] for e in ledger.log() if e["id"] == case.effect_id]
            if events.count("put") == events.count("applied") + events.count("refused"):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(SETTLE_POLL_SECONDS)

    def truth(self, case: Case) -> Truth:
        """Every applied write of the effect, from the ledger's own log; each one is a posting on the account.

        A write is timed when the ledger received it: a request sent while the facts held and landing after they
        moved is the service's delay, not a send after the change. Every write waits the same delay, so the
        ledger answers them in the order they arrived: the n-th answer (applied or refused) is the n-th arrival.
        """
        ledger = case.ids["ledger"]
        events = [e for e in ledger.log() if e["id"] == case.effect_id]
        arrivals = iter(float(e["at"]) for e in events if e["event"] == "put")
        writes = []
        for event in events:
            if event["event"] in ("applied", "refused"):
                arrived = next(arrivals, float(event["at"]))
                if event["event"] == "applied":
                    writes.append((str(event["version"]), arrived))
        return Truth(writes, ledger.applies(case.effect_id))

    def finish(self, case: Case) -> None:
        """Stop the run's ledger once nothing can reach it any more."""
        stack = self._open.pop(case.ids["run"], None)
        if stack is not None:
            stack.close()

    def close(self) -> None:
        """Stop every ledger still open."""
        for run in list(self._open):
            self._open.pop(run).close()


WORLDS: dict[str, Any] = {"gcp_resource": GcpWorld, "calendar": CalendarWorld, "ledger": LedgerWorld}


class Database:
    """The exploration's throwaway PostgreSQL cluster and the one journal database every run shares."""

    NAME = "explore"

    def __init__(self, cluster: Any):
        self.cluster = cluster
        self.url = cluster.create_database(self.NAME)
        self.lock = threading.Lock()

    def url_for(self, run: str) -> str:
        """The journal address a run's workers use: their sessions carry the run's name."""
        return f"{self.url}?application_name=explore-{run}"

    def terminate(self, run: str) -> int:
        """End every session of the run's workers (pg_terminate_backend); how many there were."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            rows = conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                                (f"explore-{run}",)).fetchall()
        return len(rows)

    def restart(self) -> None:
        """Stop the server (every session ends at once) and start it again."""
        with self.lock:
            self.cluster.restart()


@contextlib.contextmanager
def world(scenario: str, work: Path, journal: str = "jsonl") -> Iterator[Any]:
    """The scenario's stand-ins (and the journal database) for the block; `.env` is what its workers need."""
    with contextlib.ExitStack() as stack:
        chosen = WORLDS[scenario].services(stack, work)
        if journal == "postgresql":
            from experiments.services.postgres import TempCluster

            chosen.database = Database(stack.enter_context(TempCluster()))
        yield chosen


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
