"""One booking job as a worker process sees it: the case directory, the request, the decision, the result."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from experiments.atomic import write_json
from experiments.calendar.request import read_request
from experiments.calendar.service import slot_events

CASE_FILE = "case.json"
REQUEST_FILE = "request.json"
DECISION_FILE = "decision.json"
RESULT_FILE = "result.json"
LOG_FILE = "worker.log"
QUEUE_FILE = "job.json"
JOURNAL_FILE = "journal.jsonl"
GATED = frozenset({"interlock", "interlock_change_only", "interlock_ttl"})


@dataclass
class Job:
    """The files of one cell and the Calendar service; every worker of the cell works on the same directory."""

    directory: Path
    system: str
    phase: str
    service: Any

    def __post_init__(self) -> None:
        case = json.loads((self.directory / CASE_FILE).read_text(encoding="utf-8"))
        self.request_id: str = case["request_id"]
        self.calendar_id: str = case["calendar_id"]
        self.slot_start: str = case["slot_start"]
        self.slot_end: str = case["slot_end"]

    @property
    def request_path(self) -> Path:
        """The booking system's file for this request."""
        return self.directory / REQUEST_FILE

    def request(self) -> dict[str, Any]:
        """The request as the booking system holds it now."""
        return read_request(self.request_path)

    def decision(self) -> dict[str, Any]:
        """The decision of this job: made once by the first worker, reused by a restarted one.

        The decider package is imported only when a decision is still to be made: it loads the anthropic SDK,
        which a restarted worker does not need.
        """
        path = self.directory / DECISION_FILE
        if path.exists():
            return cast(dict[str, Any], json.loads(path.read_text(encoding="utf-8")))
        from experiments.deciders import decider_from_env, persisted_decision

        def decide() -> dict[str, Any]:
            made = {"pid": os.getpid(), "ts": time.time(), **decider_from_env().decide_booking(self.request())}
            if self.system in GATED:  # the facts the gate's premise is decided on, read with the decision
                events = slot_events(self.service, self.calendar_id, made["start"], made["end"])
                made["other_events_in_slot"] = sorted(e["id"] for e in events)
            return made

        return persisted_decision(path, decide)

    def note(self, text: str) -> None:
        """Add one line of plain text to the cell's worker log (what went wrong, for a reader)."""
        with open(self.directory / LOG_FILE, "a", encoding="utf-8") as out:
            out.write(text.rstrip("\n") + "\n")

    def finish(self, result: dict[str, Any]) -> dict[str, Any]:
        """Write the result file atomically: the job's one result record, stamped with this worker and the time."""
        stored = {**result, "pid": os.getpid(), "finished": time.time()}
        write_json(self.directory / RESULT_FILE, stored)
        return stored
