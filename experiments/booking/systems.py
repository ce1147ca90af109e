"""The three ways of sending the booking that the scenario compares, each run inside a worker process.

- no_check: checks the request and freeBusy once, when the job is enqueued; the queued insert is replayed after a
  crash without looking again. A client-chosen id makes a replayed insert meet 409.
- hand_check: checks the request and the slot before every send; on 409 or after a restart it looks its event up.
- interlock / interlock_change_only: the gate, with the request as lease and the slot's other events as premise
  (expected to be [] / only expected to stay unchanged); Calendar dedupes the event id derived from the effect id.

Both baselines reach the same kill points as the gate (right before the insert, right after its answer), so one
schedule drives every system.
"""

from __future__ import annotations

import json
import os
from typing import Any

import httplib2
from googleapiclient.errors import HttpError

from experiments import crash
from interlock import Effect, Gate, effect_id_for, landed, verify
from interlock.premises import NOT_SET
from interlock.targets.calendar import CalendarEventTarget, slot_premise

from experiments.booking.job import JOURNAL_FILE, QUEUE_FILE, Job
from experiments.booking.request import AGENT, RequestLease, baseline_event_id, event_body
from experiments.booking.service import busy_periods, get_event
from experiments.harness import write_result
from experiments.journals import case_bundle, open_for_case

CLAIM_WAIT_SECONDS = 10.0
LOST_ANSWER = (OSError, httplib2.HttpLib2Error)
RECEIPT_KEYS = ("effect_id", "valid", "tamper_evident", "signed", "happened", "happened_once",
                "authorized_when_fired", "assumptions_held", "refused", "evidence", "rechecked_at_recovery",
                "problems")
JOURNAL_KEYS = ("kind", "via", "code", "reason", "checks", "rechecked", "result", "found")
HAND_CHECK = "request {status}; freeBusy on the slot {busy}; on 409 or after a restart: events.get {event_id}"


def answer_of(outcome: str) -> str:
    """booked / not_booked / unknown, as the outcome claims."""
    claim = landed(outcome)
    return "unknown" if claim is None else ("booked" if claim else "not_booked")


def _insert(job: Job, body: dict[str, Any]) -> dict[str, Any]:
    return job.service.events().insert(calendarId=job.calendar_id, body=body).execute(num_retries=0)


def _live(job: Job, event_id: str) -> bool:
    event = get_event(job.service, job.calendar_id, event_id)
    return event is not None and event.get("status") != "cancelled"


def _result(job: Job, outcome: str, event_id: str, **extra: Any) -> dict[str, Any]:
    return {"outcome": outcome, "answer": answer_of(outcome), "event_id": event_id, **extra}


def no_check(job: Job, decision: dict[str, Any]) -> dict[str, Any]:
    """Check once at enqueue, then send (and after a crash, resend) the queued insert blindly."""
    event_id = baseline_event_id(job.request_id)
    queue = job.directory / QUEUE_FILE
    if not queue.exists():
        if job.request()["status"] != "live":
            return _result(job, "REFUSED:request_cancelled", event_id)
        busy = busy_periods(job.service, job.calendar_id, decision["start"], decision["end"])
        if busy:
            return _result(job, "REFUSED:slot_busy", event_id, busy=busy)
        body = {**event_body(job.system, job.request_id, decision), "id": event_id}
        write_result(queue, {"event_id": event_id, "body": body, "checked": {"request": "live", "busy": []}})
    body = json.loads(queue.read_text())["body"]
    job.log("send", event_id=event_id, check=None)
    crash.reach(crash.BEFORE_SEND)
    try:
        _insert(job, body)
        outcome = "BOOKED"
    except HttpError as exc:
        if exc.resp.status != 409:
            raise
        outcome = "ALREADY_EXISTS_409"
    crash.reach(crash.AFTER_COMMIT)
    return _result(job, outcome, event_id)


def hand_check(job: Job, decision: dict[str, Any]) -> dict[str, Any]:
    """Look up an earlier send first, then check the request and freeBusy before every send."""
    event_id = baseline_event_id(job.request_id)
    looked: dict[str, Any] = {}
    if job.sent_before():
        if _live(job, event_id):
            return _result(job, "FOUND_BY_LOOKUP", event_id, writes_found=[event_id])
        looked = {"writes_found": []}
    if job.request()["status"] != "live":
        return _result(job, "REFUSED:request_cancelled", event_id, **looked)
    busy = busy_periods(job.service, job.calendar_id, decision["start"], decision["end"])
    if busy:
        return _result(job, "REFUSED:slot_busy", event_id, busy=busy, **looked)
    body = {**event_body(job.system, job.request_id, decision), "id": event_id}
    job.log("send", event_id=event_id, check=HAND_CHECK.format(status="live", busy="empty", event_id=event_id))
    crash.reach(crash.BEFORE_SEND)
    try:
        _insert(job, body)
        outcome = "BOOKED"
    except HttpError as exc:
        if exc.resp.status != 409:
            raise
        outcome = "FOUND_BY_LOOKUP" if _live(job, event_id) else "REFUSED:id_taken"
    except LOST_ANSWER:
        if not _live(job, event_id):
            raise
        outcome = "FOUND_BY_LOOKUP"
    crash.reach(crash.AFTER_COMMIT)
    if outcome == "FOUND_BY_LOOKUP":
        return _result(job, outcome, event_id, writes_found=[event_id])
    return _result(job, outcome, event_id)


def gated(job: Job, decision: dict[str, Any], *, expect: Any) -> dict[str, Any]:
    """Submit the booking through the gate; a restarted job submits the same effect and recovery settles it."""
    key = f"booking:{job.request_id}"
    effect_id = effect_id_for(key)
    journal, claims = open_for_case(job.directory / JOURNAL_FILE)
    record = journal.effect(effect_id)
    recovering = record is not None and record.open_dispatch
    premise = slot_premise(job.service, job.calendar_id, decision["start"], decision["end"],
                           decision["other_events_in_slot"], expect=expect)
    effect = Effect(key, {"event": event_body(job.system, job.request_id, decision)}, [premise],
                    RequestLease(job.request_path), AGENT)
    outcome = Gate(journal, CalendarEventTarget(job.service, job.calendar_id), claims=claims,
                   claim_wait=CLAIM_WAIT_SECONDS, hooks=crash.HOOK).submit(effect)
    receipt_bundle = case_bundle(journal, effect_id, job.directory / JOURNAL_FILE)
    receipt = verify(receipt_bundle)
    return {
        **_result(job, outcome.status, effect_id),
        "submit_status": outcome.status,
        "recovered": outcome.status if recovering else None,
        "effect_id": effect_id,
        "receipt": {key: receipt.get(key) for key in RECEIPT_KEYS},
        "receipt_bundle": receipt_bundle,
        "journal": condensed(receipt_bundle["entries"]),
    }


def condensed(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each journal entry cut to the keys a reader scans: kind, via, code, reason, checks, rechecked, result."""
    return [{key: entry[key] for key in JOURNAL_KEYS if key in entry} for entry in entries]


SYSTEM_RUNS = {
    "no_check": no_check,
    "hand_check": hand_check,
    "interlock": lambda job, decision: gated(job, decision, expect=[]),
    "interlock_change_only": lambda job, decision: gated(job, decision, expect=NOT_SET),
}
