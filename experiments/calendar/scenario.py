"""Scenario calendar: double booking on Google Calendar, one booking request per cell.

Each cell is one request ("a 30-minute call at <time>") in a local request file. The first worker decides it once
and books it with one system; it is SIGKILLed right before its insert or right after Calendar's answer, or it
pauses after its last check right before its insert while a customer event lands, or its connection is cut after
the stand-in stored the event. During the outage the world does nothing, puts a customer event on the slot, or
cancels the request; in pre_busy the customer event is there before the job is decided. A restarted worker runs
the same job; then events.list on the slot is the ground truth. After the cells come the unforced raced trials
(experiments.calendar.raced), and every event the run saw is deleted and read back.

Offline (default): the project's Calendar v3 stand-in and the scripted decider, labelled so in the file. Live:
Google Calendar through the service-account key named by INTERLOCK_CALENDAR_KEY_FILE and the model through
ANTHROPIC_API_KEY; the raced and network-cut rows and the raced trials need the stand-in and are left out.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from interlock import effect_id_for
from interlock.targets.calendar import retired

from experiments import harness, live, peers
from experiments.atomic import write_json
from experiments.calendar.faults import FAULTS, PRE_BUSY, RACED_BUSY, REQUEST_CANCELLED, SLOT_BUSY, CalendarFault
from experiments.calendar.job import CASE_FILE, GATED, JOURNAL_FILE, LOG_FILE, REQUEST_FILE, RESULT_FILE
from experiments.calendar.raced import TRIALS_FILE
from experiments.calendar.request import (EMULATED, baseline_event_id, customer_event, new_request, read_request,
                                          rfc3339, write_request)
from experiments.calendar.service import get_event, slot_events
from experiments.calendar.systems import CLAIM_WAIT_SECONDS, SYSTEMS
from experiments.runner import BEFORE, CRASH_MARKER, OUTAGE, PAUSED, Case, Scenario, worker_env
from experiments.ttl_claims import TTL_SECONDS

if TYPE_CHECKING:
    from experiments.services.calendar_standin import CalendarStandin

RACED_TRIALS = 200
RACED_TIMEOUT_SECONDS = 1800.0
CLAIMS = {
    "interlock": {"kind": "flock per effect (released by the kernel when the holder dies; no TTL)",
                  "claim_wait_seconds": CLAIM_WAIT_SECONDS},
    "interlock_ttl": {"kind": "the same flock under claims with no liveness detection: a dead holder's claim is "
                              "waited out for its TTL, counted from when it was taken (experiments.ttl_claims)",
                      "ttl_seconds": TTL_SECONDS, "claim_wait_seconds": CLAIM_WAIT_SECONDS},
}
CLAIMS["interlock_change_only"] = CLAIMS["interlock"]
# Files of a case kept under their own evidence keys, so `case_files` holds only the rest.
KEPT_ELSEWHERE = (RESULT_FILE, REQUEST_FILE, LOG_FILE, CRASH_MARKER)

# Run by default, in column order; the rest of SYSTEMS runs when --systems names it.
DEFAULT_SYSTEMS = ("no_check", "hand_check", "interlock", "interlock_change_only", "dbos_step",
                   "powertools_idempotent")
# The control: the published run's claims (a 30 s TTL) on one before-send and one after-commit row.
CONTROLS = {"interlock_ttl": ("before_send/none", "after_commit/none")}
# The peers look at nothing before they send, so the raced trials (a check going stale before the send) skip them.
UNRACED = frozenset(CONTROLS) | frozenset(peers.SYSTEMS)


def _count(text: str) -> int:
    """A number of trials: a whole number, 0 or more."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number of trials, 0 or more, got {text!r}")
    return int(text)


class Calendar(Scenario):
    """Double booking on Google Calendar."""

    name = "calendar"
    worker = "experiments.calendar.worker"
    roles = (live.CALENDAR, live.MODEL)
    systems = DEFAULT_SYSTEMS
    extra_systems = tuple(name for name in SYSTEMS if name not in DEFAULT_SYSTEMS and name not in CONTROLS)
    controls = cast(dict[str, tuple[str, ...]], CONTROLS)
    faults = FAULTS
    fault_type = CalendarFault
    journal_file = JOURNAL_FILE
    actions = ("slot_taken", "request_cancelled")

    @property
    def _standin(self) -> CalendarStandin:
        """The embedded Calendar stand-in an offline run drives: its cuts, delays and write log."""
        return cast("CalendarStandin", self.services.calendar)

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """How many unforced raced trials per system."""
        parser.add_argument("--raced-trials", type=_count, default=RACED_TRIALS, metavar="N",
                            help=f"unforced raced trials per system, 0 to skip (default {RACED_TRIALS}; offline only)")

    @classmethod
    def full(cls, args: argparse.Namespace) -> bool:
        """Another number of raced trials than the default makes a reduced run."""
        return cast(bool, args.live or args.raced_trials == RACED_TRIALS)

    @contextlib.contextmanager
    def open(self) -> Iterator[None]:
        """The harness's own Calendar client, the run's base slot and request tag, the events it saw."""
        from experiments.clients import CALENDAR_KEY_FILE, calendar_service

        self.service = calendar_service()
        self.calendar_id = "primary"
        if self.args.live:
            key = json.loads(Path(os.environ[CALENDAR_KEY_FILE]).read_text(encoding="utf-8"))
            self.calendar_name = key.get("client_email", "primary")
        else:
            from experiments.services.calendar_standin import OWNER

            self.calendar_name = OWNER
        self.base = (datetime.now(timezone.utc) + timedelta(days=30)).replace(second=0, microsecond=0)
        self.tag = secrets.token_hex(5)
        self.seen: dict[str, None] = {}
        yield

    def _slot(self, index: int) -> tuple[str, str]:
        start = self.base + timedelta(hours=index)
        return rfc3339(start), rfc3339(start + timedelta(minutes=30))

    def _events(self, start: str, end: str) -> list[dict[str, Any]]:
        events = slot_events(self.service, self.calendar_id, start, end)
        self.seen.update(dict.fromkeys(e["id"] for e in events))
        return events

    def seed(self, case: Case) -> None:
        """The case file and a live request for the cell's own slot."""
        request_id = f"{self.tag}{case.index:02d}"
        start, end = self._slot(case.index)
        write_json(case.directory / CASE_FILE, {"request_id": request_id, "calendar_id": self.calendar_id,
                                                "slot_start": start, "slot_end": end, "system": case.system})
        write_request(case.directory / REQUEST_FILE, new_request(request_id, start))
        ours = effect_id_for(f"booking:{request_id}") if case.system in GATED else baseline_event_id(request_id)
        case.ids.update(request_id=request_id, slot_start=start, slot_end=end, calendar=self.calendar_name,
                        agent_event_id=ours)
        if case.system in GATED:
            case.ids["effect_id"] = ours

    def arm_cut(self, case: Case) -> None:
        """The stand-in stores the agent's insert, then resets the connection before the answer."""
        ours = case.ids["agent_event_id"]
        self._standin.cut_next(
            lambda e: e["method"] == "insert" and e["event_id"] == ours and e["status"] == 200)

    def _customer(self, case: Case, when: str) -> dict[str, Any]:
        """A person puts an event on the slot; what was there just before is kept for the double-booking rule."""
        start, end = case.ids["slot_start"], case.ids["slot_end"]
        before = [e["id"] for e in self._events(start, end)]
        event = self.service.events().insert(calendarId=self.calendar_id,
                                             body=customer_event(start, end)).execute(num_retries=0)
        self.seen[event["id"]] = None
        return {"customer_event": event["id"], "created": event.get("created"), "when": when,
                "events_on_slot_before": before}

    def act(self, case: Case, moment: str) -> dict[str, Any] | None:
        """The customer takes the slot, or the request is cancelled, at the moment the row says."""
        action = cast(CalendarFault, case.fault).outage_action
        if moment == BEFORE and action == PRE_BUSY:
            return self._customer(case, "before the first worker")
        if moment == PAUSED and action == RACED_BUSY:
            return self._customer(case, "while the worker was paused after its last check, right before its insert")
        if moment == OUTAGE and action == SLOT_BUSY:
            return self._customer(case, "during the outage")
        if moment == OUTAGE and action == REQUEST_CANCELLED:
            return self.perform(case, "request_cancelled", "during the outage")
        return None

    def perform(self, case: Case, action: str, when: str) -> dict[str, Any]:
        """A customer event lands on the slot (`slot_taken`), or the booking request is cancelled."""
        if action == "slot_taken":
            return self._customer(case, when)
        path = case.directory / REQUEST_FILE
        write_request(path, {**read_request(path), "status": "cancelled"})
        return {"request_status": "cancelled", "at": time.time(), "when": when}

    def agent_writes(self, case: Case) -> tuple[list[tuple[str, float]], int]:
        """The agent's stored inserts from the stand-in's write log, each timed when the stand-in received it; the
        live agent events on the slot. An id that recovery took with its placeholder (off the slot, so that a stray
        insert meets a 409) holds no booking."""
        if self.services.calendar is None:
            raise NotImplementedError("the agent's writes are read from the stand-in's write log")
        ours = case.ids["agent_event_id"]
        stored = get_event(self.service, self.calendar_id, ours)
        placeholder = stored is not None and retired(stored)
        writes = [(e["event_id"], float(e.get("received_ts", e["ts"]))) for e in self.services.calendar.write_log()
                  if e["method"] == "insert" and e["event_id"] == ours and e["status"] == 200 and not placeholder]
        events = slot_events(self.service, self.calendar_id, case.ids["slot_start"], case.ids["slot_end"])
        return writes, sum(((e.get("extendedProperties") or {}).get("private") or {}).get("booking_request")
                           == case.ids["request_id"] and e.get("status") != "cancelled" for e in events)

    def slow_writes(self, case: Case, seconds: float) -> None:
        """The stand-in holds each insert of the agent's event for `seconds` before it stores it."""
        ours = case.ids["agent_event_id"]
        self._standin.delays.slow(
            ours, lambda r: r["method"] == "insert" and r["event_id"] == ours, seconds)

    def held_writes(self, case: Case) -> list[dict[str, Any]]:
        """The agent inserts the stand-in held so far."""
        return self._standin.delays.arrivals(case.ids["agent_event_id"])

    def release(self, case: Case) -> None:
        """Stop holding the event's inserts."""
        if self.services.calendar is not None:
            self.services.calendar.delays.forget(case.ids["agent_event_id"])

    def _outage(self, case: Case) -> dict[str, Any] | None:
        """The published `outage` record: what the world did, or the connection cut the stand-in logged."""
        if case.fault.cut:
            ours = case.ids["agent_event_id"]
            cut = [e for e in self._standin.write_log()
                   if e["cut"] and e["event_id"] == ours]
            return {"connection_cut": cut[0] if cut else None,
                    "when": "after the stand-in stored the insert, before the worker read the answer"}
        return next((record for record in (case.actions.get(m) for m in (BEFORE, PAUSED, OUTAGE)) if record), None)

    def observe(self, case: Case) -> dict[str, Any]:
        """The published cell's observation keys: the slot's events, the request, the decision, the evidence."""
        from experiments.deciders import SCRIPTED_MODEL

        files = harness.collect_artifacts(case.directory)
        result = files.get(RESULT_FILE)
        result = result if isinstance(result, dict) else None
        crashed = case.crashed_at is not None
        note = (f"crash injected: SIGKILL at {case.fault.kill_at} (pid {cast(harness.WorkerRun, case.first).pid})\n"
                if crashed else "")
        log = files.get(LOG_FILE, "")
        bundle = result.get("receipt_bundle") if result and case.system in GATED else None
        emulated = EMULATED if self.args.live else (
            f"{EMULATED}; Calendar itself is the project's Calendar v3 stand-in on 127.0.0.1 (not Google), and the "
            f"decider is {SCRIPTED_MODEL} (no model)")
        first_result = case.first_files.get(RESULT_FILE)
        return {
            "crash_point": cast(CalendarFault, case.fault).crash_point,
            "outage_action": cast(CalendarFault, case.fault).outage_action,
            "request_id": case.ids["request_id"],
            "slot_start": case.ids["slot_start"],
            "slot_end": case.ids["slot_end"],
            "ground_truth": {"events_list": self._events(case.ids["slot_start"], case.ids["slot_end"])},
            "ids": case.ids,
            "emulated": emulated,
            "outage": self._outage(case),
            "decision": files.get("decision.json"),
            "evidence": {
                "receipt_bundle": bundle,
                "worker_log": note + (log if isinstance(log, str) else ""),
                "crash_marker": case.fault.kill_at if crashed else None,
                "result_file": result,
                "first_result_file": first_result if isinstance(first_result, dict) else None,
                "request_file": files.get(REQUEST_FILE),
                "worker_output": [cast(harness.WorkerRun, case.first).output,
                                  cast(harness.WorkerRun, case.restart).output],
                "case_files": {name: value for name, value in files.items() if name not in KEPT_ELSEWHERE
                               and not (name == JOURNAL_FILE and bundle and value == bundle.get("entries"))},
            },
            **({"claim": self.claim_settings()[case.system]} if case.system in CLAIMS else {}),
        }

    def _raced(self) -> dict[str, Any]:
        """The unforced raced trials in their own worker process, with the stand-in's log of both inserts."""
        directory = self.root / "raced"
        directory.mkdir(parents=True)
        seed = int.from_bytes(secrets.token_bytes(4), "big")
        systems = [s for s in self.args.systems if s not in UNRACED]
        args = ["--dir", str(directory), "--calendar", self.calendar_id,
                "--base", rfc3339(self.base + timedelta(days=30)), "--tag", f"{self.tag}r",
                "--systems", ",".join(systems), "--trials", str(self.args.raced_trials), "--seed", str(seed)]
        worker = harness.run_worker("experiments.calendar.raced", args, worker_env(None), RACED_TIMEOUT_SECONDS)
        rows = harness.collect_artifacts(directory).get(TRIALS_FILE, [])
        inserts = {e["event_id"]: e for e in self._standin.write_log()
                   if e["method"] == "insert"}
        trials = [{**row, "agent_insert": inserts.get(row["event_id"]),
                   "customer_insert": inserts.get(row.get("customer_event")),
                   "events_after": self._events(row["slot_start"], row["slot_end"])} for row in rows]
        return {
            "what": ("Unforced raced trials: while a system books a fresh slot, a customer's insert on its own "
                     "connection starts at a random offset, uniform over that system's median booking time "
                     "(warm-up trials, kind 'warmup', have no customer). checked_at is when the system reached "
                     "before_request, after its own last check and right before its insert, the same point for "
                     "every system; agent_insert and customer_insert are the stand-in's log entries of the two "
                     "inserts (seq orders them); events_after is events.list on the slot after the trial."),
            "pause_point": "before_request",
            "seed": seed,
            "systems": systems,
            "trials_per_system": self.args.raced_trials,
            "worker_exit_code": worker.exit_code,
            "worker_output": worker.output,
            "trials": trials,
        }

    def _cleanup(self) -> list[dict[str, Any]]:
        """Delete every event the run saw, then read each back: Calendar keeps it as cancelled."""
        from googleapiclient.errors import HttpError

        done = []
        for event_id in self.seen:
            try:
                with contextlib.suppress(HttpError):  # 410: already cancelled
                    self.service.events().delete(calendarId=self.calendar_id, eventId=event_id).execute(num_retries=0)
                after = get_event(self.service, self.calendar_id, event_id)
                done.append({"id": event_id, "deleted": True, "status_after_delete": (after or {}).get("status")})
            except (HttpError, OSError) as exc:
                done.append({"id": event_id, "deleted": False, "error": f"{type(exc).__name__}: {exc}"})
        return done

    def finish(self, cells: list[dict[str, Any]]) -> dict[str, Any]:
        """The raced trials (offline), then the clean-up of every event the run saw."""
        racing = not self.args.live and self.args.raced_trials > 0 and any(s not in UNRACED for s in self.args.systems)
        raced = self._raced() if racing else None
        cleaned = self._cleanup()
        return {"key": "calendar", "calendar": self.calendar_name,
                "claim_ttl": TTL_SECONDS if "interlock_ttl" in self.args.systems else None,
                "events_kept": not all(item.get("deleted") for item in cleaned), "cleanup": cleaned,
                "raced_dispatch": raced}

    def claim_settings(self) -> dict[str, Any]:
        """The chosen gated systems' claims."""
        from experiments import journals

        return {s: journals.claim_settings(self.args.journal, CLAIMS[s]) for s in self.args.systems if s in CLAIMS}

    def extra_services(self) -> dict[str, Any]:
        """The booking-request system is a local file."""
        return {"booking_requests": {"real": False, "name": EMULATED, "version": None}}
