"""One booking job as a worker process sees it: the case directory, the request, the decision, the log."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.booking.faults import GATED
from experiments.booking.request import AGENT, read_request
from experiments.booking.service import slot_events
from experiments.harness import write_result

CASE_FILE = "case.json"
REQUEST_FILE = "request.json"
DECISION_FILE = "decision.json"
RESULT_FILE = "result.json"
LOG_FILE = "worker.log"
QUEUE_FILE = "job.json"
JOURNAL_FILE = "journal.jsonl"


@dataclass
class Job:
    """The files of one cell and the Calendar service; every worker of the cell works on the same directory."""

    directory: Path
    system: str
    phase: str
    service: Any

    def __post_init__(self) -> None:
        case = json.loads((self.directory / CASE_FILE).read_text())
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
            return json.loads(path.read_text())
        from experiments.deciders import decider_from_env, persisted_decision

        def decide() -> dict[str, Any]:
            made = {"pid": os.getpid(), "ts": time.time(), **decider_from_env().decide_booking(self.request())}
            if self.system in GATED:  # the facts the gate's premise is decided on, read with the decision
                events = slot_events(self.service, self.calendar_id, made["start"], made["end"])
                made["other_events_in_slot"] = sorted(e["id"] for e in events)
            return made

        return persisted_decision(path, decide)

    def log(self, event: str, **fields: Any) -> None:
        """Append one structured line to the cell's worker log (in the kernel before any send that follows)."""
        line = {"ts": time.time(), "agent": AGENT, "system": self.system, "phase": self.phase, "pid": os.getpid(),
                "event": event, **fields}
        with open(self.directory / LOG_FILE, "a") as out:
            out.write(json.dumps(line) + "\n")

    def sent_before(self) -> bool:
        """Whether an earlier worker of this job logged a send: a restart must find out whether it landed."""
        path = self.directory / LOG_FILE
        if not path.exists():
            return False
        for text in path.read_text().splitlines():
            try:
                line = json.loads(text)
            except ValueError:
                continue
            if isinstance(line, dict) and line.get("event") == "send" and line.get("pid") != os.getpid():
                return True
        return False

    def finish(self, result: dict[str, Any]) -> dict[str, Any]:
        """Write the result file atomically (the job's result record) and note the outcome in the log.

        The log line is a note ("finished"), not a second "result": the result file is the one result record,
        and a reader replaying sends against results must not count it twice.
        """
        stored = {**result, "pid": os.getpid(), "finished": time.time()}
        write_result(self.directory / RESULT_FILE, stored)
        self.log("finished", outcome=result["outcome"])
        return stored
