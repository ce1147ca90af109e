"""Unforced raced trials: a customer event lands at a random moment while a system books the same slot.

Calendar has no conditional insert, so nothing at the service stops an insert whose last check went stale a few
milliseconds earlier. `python -m experiments.calendar.raced --dir D ...` runs every named system in this one
process, trial by trial on a fresh slot, with the customer's insert on its own connection in a thread, started at
a random offset (uniform over the system's own median booking time, measured by warm-up trials without a
customer) after the booking starts. Systems take turns trial by trial, so load hits them alike.

Each trial records raw observations only: when the system reached `before_request` (after its own last check,
right before its insert: the same point for every system), when its booking returned and with what outcome,
and when the customer's insert left and was answered. The harness adds the stand-in's log of both inserts and
the events on the slot afterwards; the pipeline counts the slips and measures the check-to-send window.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, cast

from interlock import effect_id_for

from experiments import crash
from experiments.atomic import write_json
from experiments.calendar.job import CASE_FILE, GATED, REQUEST_FILE, Job
from experiments.calendar.request import baseline_event_id, customer_event, new_request, rfc3339, write_request
from experiments.calendar.systems import SYSTEMS
from experiments.clients import calendar_service
from experiments.phases import DECIDE

WARMUP_TRIALS = 3
TRIALS_FILE = "trials.jsonl"


class CheckStamp:
    """A hook that only notes when the system reached `before_request`: its last check is behind it."""

    def __init__(self) -> None:
        self.checked_at: float | None = None

    def reach(self, point: str) -> None:
        """Stamp the time at the pause point of the raced rows; every other point passes."""
        if point == crash.BEFORE_REQUEST:
            self.checked_at = time.time()


class Customer:
    """A person's calendar client on its own connection, inserting the customer event when told."""

    def __init__(self, calendar_id: str):
        self.service = calendar_service()
        self.calendar_id = calendar_id

    def insert(self, start: str, end: str) -> dict[str, Any]:
        """Insert the customer event; its id, and when the request left and the answer came back."""
        sent = time.time()
        event = self.service.events().insert(calendarId=self.calendar_id,
                                             body=customer_event(start, end)).execute(num_retries=0)
        return {"customer_event": event["id"], "customer_sent": sent, "customer_answered": time.time()}


class Trials:
    """The trial worker's state: the Calendar service, the customer, and the slot clock."""

    def __init__(self, directory: Path, calendar_id: str, base: datetime, tag: str):
        self.directory, self.calendar_id, self.base, self.tag = directory, calendar_id, base, tag
        self.service = calendar_service()
        self.customer = Customer(calendar_id)
        self.count = 0

    def trial(self, system: str, kind: str, offset: float | None) -> dict[str, Any]:
        """One booking on a fresh slot; the customer inserts `offset` s after the booking starts (None: never)."""
        index = self.count
        self.count += 1
        request_id = f"{self.tag}{index:04d}"
        start = self.base + timedelta(hours=index)
        slot = (rfc3339(start), rfc3339(start + timedelta(minutes=30)))
        case = self.directory / request_id
        case.mkdir()
        write_json(case / CASE_FILE, {"request_id": request_id, "calendar_id": self.calendar_id,
                                      "slot_start": slot[0], "slot_end": slot[1], "system": system})
        write_request(case / REQUEST_FILE, new_request(request_id, slot[0]))
        job = Job(case, system, DECIDE, self.service)
        decision = job.decision()
        stamp, customer = CheckStamp(), cast(dict[str, Any], {})  # the customer insert's record, filled in by _race
        racer = None if offset is None else threading.Thread(target=self._race, args=(offset, slot, customer))
        started = time.time()
        if racer is not None:
            racer.start()
        try:
            outcome = SYSTEMS[system](job, decision, stamp)["outcome"]
        finally:
            returned = time.time()
            if racer is not None:
                racer.join()
        ours = effect_id_for(f"booking:{request_id}") if system in GATED else baseline_event_id(request_id)
        return {"system": system, "kind": kind, "request_id": request_id, "event_id": ours, "slot_start": slot[0],
                "slot_end": slot[1], "offset_s": offset, "started": started, "checked_at": stamp.checked_at,
                "returned_at": returned, "outcome": outcome, **customer}

    def _race(self, offset: float, slot: tuple[str, str], into: dict[str, Any]) -> None:
        time.sleep(offset)  # the race itself: the customer acts this long after the booking began
        into.update(self.customer.insert(*slot))


def run_trials(directory: Path, calendar_id: str, base: datetime, tag: str, systems: list[str], trials: int,
               seed: int) -> None:
    """Warm-up trials per system to learn how long a booking takes, then the unforced trials, systems in turn."""
    state = Trials(directory, calendar_id, base, tag)
    rng = random.Random(seed)
    with open(directory / TRIALS_FILE, "w", encoding="utf-8") as out:
        def record(row: dict[str, Any]) -> dict[str, Any]:
            out.write(json.dumps(row) + "\n")
            out.flush()
            return row

        spans = {}
        for system in systems:
            warm = [record(state.trial(system, "warmup", None)) for _ in range(WARMUP_TRIALS)]
            spans[system] = statistics.median(row["returned_at"] - row["started"] for row in warm)
        for _ in range(trials):
            for system in systems:
                record(state.trial(system, "unforced", rng.uniform(0.0, spans[system])))


def main(argv: list[str] | None = None) -> int:
    """Run the trials into DIR/trials.jsonl."""
    parser = argparse.ArgumentParser(prog="python -m experiments.calendar.raced")
    parser.add_argument("--dir", required=True, type=Path)
    parser.add_argument("--calendar", required=True)
    parser.add_argument("--base", required=True, help="first slot start, RFC3339 UTC")
    parser.add_argument("--tag", required=True, help="request id prefix")
    parser.add_argument("--systems", required=True, help="comma-separated")
    parser.add_argument("--trials", required=True, type=int)
    parser.add_argument("--seed", required=True, type=int)
    args = parser.parse_args(argv)
    base = datetime.fromisoformat(args.base.replace("Z", "+00:00"))
    run_trials(args.dir, args.calendar, base, args.tag, args.systems.split(","), args.trials, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
