"""How each compared system sends the booking, inside a worker process.

- `no_check` looks at the request and freeBusy once, when it queues the insert (job.json); the queued insert is
  sent, and after a crash sent again, without another look. Its client-chosen event id makes a repeat meet 409.
- `hand_check` has a restarted worker look its event up by id first; otherwise it looks at the request and at
  freeBusy right before the insert, and settles a 409 or a lost answer by looking the event up.
- `interlock`, `interlock_change_only`, `interlock_ttl`: the gate, with the request as the lease and the slot's
  other events as the premise (expected to be [], or only expected to stay as decided); Calendar dedupes the
  event id derived from the effect id. `interlock_ttl` runs on claims that wait out a 30 s TTL after a holder
  dies, as the published run's did.

The baselines keep what the published baselines kept: the result file, nothing else. Every system reaches the
fault points at the same places: `before_send` and `before_request` after its last check, right before the
insert, and `after_commit` right after Calendar's answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, cast

import httplib2
from googleapiclient.errors import HttpError

from interlock import Effect, FileClaims, Gate, effect_id_for, verify
from interlock.hooks import Hooks
from interlock.premises import NOT_SET
from interlock.targets.calendar import CalendarEventTarget, slot_premise

from experiments import crash, outcomes, planted
from experiments.atomic import write_json
from experiments.calendar.job import JOURNAL_FILE, QUEUE_FILE, Job
from experiments.calendar.request import AGENT, RequestLease, baseline_event_id, event_body
from experiments.calendar.service import busy_periods, get_event
from experiments.journals import case_bundle, open_for_case
from experiments.phases import RESTART
from experiments.ttl_claims import TtlClaims

CLAIM_WAIT_SECONDS = 10.0
LOST_ANSWER = (OSError, httplib2.HttpLib2Error)
RECEIPT_KEYS = ("effect_id", "valid", "tamper_evident", "signed", "happened", "happened_once",
                "authorized_when_fired", "assumptions_held", "refused", "evidence", "rechecked_at_recovery",
                "problems")
JOURNAL_KEYS = ("kind", "via", "code", "reason", "checks", "rechecked", "result", "found")

System = Callable[[Job, dict[str, Any], Hooks], dict[str, Any]]


def _result(outcome: str, event_id: str, **extra: Any) -> dict[str, Any]:
    return {"outcome": outcome, "answer": outcomes.answer(outcome), "event_id": event_id, **extra}


def _why_not(job: Job, decision: dict[str, Any], event_id: str) -> dict[str, Any] | None:
    """The baselines' check: a cancelled request or a busy slot refuses the booking (None: go ahead)."""
    if job.request()["status"] != "live":
        return _result(outcomes.refused("request_cancelled"), event_id)
    busy = busy_periods(job.service, job.calendar_id, decision["start"], decision["end"])
    return _result(outcomes.refused("slot_busy"), event_id, busy=busy) if busy else None


def _holds(job: Job, event_id: str) -> bool:
    """Whether Calendar holds a live event with this id."""
    event = get_event(job.service, job.calendar_id, event_id)
    return event is not None and event.get("status") != "cancelled"


def _send(job: Job, body: dict[str, Any], hook: Hooks) -> None:
    """The insert, with the fault points right before it (after the last check) as every system has them."""
    hook.reach(crash.BEFORE_SEND)
    hook.reach(crash.BEFORE_REQUEST)
    planted.strike(planted.BEFORE_REQUEST)
    job.service.events().insert(calendarId=job.calendar_id, body=body).execute(num_retries=0)
    planted.strike(planted.AFTER_APPLY)


def _conflict(exc: HttpError) -> bool:
    return cast(int, exc.resp.status) == 409


def no_check(job: Job, decision: dict[str, Any], hook: Hooks) -> dict[str, Any]:
    """Look once when queueing; send the queued insert, after a crash again, without looking again."""
    event_id = baseline_event_id(job.request_id)
    queued = job.directory / QUEUE_FILE
    if not queued.exists():
        refusal = _why_not(job, decision, event_id)
        if refusal is not None:
            return refusal
        body = {**event_body(job.system, job.request_id, decision), "id": event_id}
        write_json(queued, {"event_id": event_id, "body": body, "checked": {"request": "live", "busy": []}})
    body = json.loads(queued.read_text(encoding="utf-8"))["body"]
    try:
        _send(job, body, hook)
    except HttpError as exc:
        if not _conflict(exc):
            raise
        outcome = outcomes.ALREADY_EXISTS_409
    else:
        outcome = outcomes.BOOKED
    hook.reach(crash.AFTER_COMMIT)
    return _result(outcome, event_id)


def hand_check(job: Job, decision: dict[str, Any], hook: Hooks) -> dict[str, Any]:
    """A restart looks its event up first; every send is preceded by a look at the request and freeBusy."""
    event_id = baseline_event_id(job.request_id)
    if job.phase == RESTART and _holds(job, event_id):
        return _result(outcomes.FOUND_BY_LOOKUP, event_id)
    refusal = _why_not(job, decision, event_id)
    if refusal is not None:
        return refusal
    try:
        _send(job, {**event_body(job.system, job.request_id, decision), "id": event_id}, hook)
    except HttpError as exc:
        if not _conflict(exc):
            raise
        outcome = outcomes.FOUND_BY_LOOKUP if _holds(job, event_id) else outcomes.refused("id_taken")
    except LOST_ANSWER:
        if not _holds(job, event_id):
            raise
        outcome = outcomes.FOUND_BY_LOOKUP
    else:
        outcome = outcomes.BOOKED
    hook.reach(crash.AFTER_COMMIT)
    return _result(outcome, event_id)


def gated(job: Job, decision: dict[str, Any], hook: Hooks, *, expect: Any,
          ttl: bool = False) -> dict[str, Any]:
    """Submit the booking through the gate; a restarted job submits the same effect and recovery settles it."""
    key = f"booking:{job.request_id}"
    effect_id = effect_id_for(key)
    journal, claims = open_for_case(job.directory / JOURNAL_FILE)
    if ttl:
        claims = TtlClaims(FileClaims(job.directory / f"{JOURNAL_FILE}.claims"), job.directory / f"{JOURNAL_FILE}.ttl")
    record = journal.effect(effect_id)
    recovering = record is not None and record.open_dispatch
    premise = slot_premise(job.service, job.calendar_id, decision["start"], decision["end"],
                           decision["other_events_in_slot"], expect=expect)
    effect = Effect(key, {"event": event_body(job.system, job.request_id, decision)}, [premise],
                    RequestLease(job.request_path), AGENT)
    outcome = Gate(journal, planted.target(CalendarEventTarget(job.service, job.calendar_id)), claims=claims,
                   claim_wait=CLAIM_WAIT_SECONDS, hooks=hook).submit(effect)
    receipt_bundle = case_bundle(journal, effect_id, job.directory / JOURNAL_FILE)
    receipt = verify(receipt_bundle)
    return {
        **_result(outcome.status, effect_id),
        "submit_status": outcome.status,
        "recovered": outcome.status if recovering else None,
        "effect_id": effect_id,
        "receipt": {key: receipt.get(key) for key in RECEIPT_KEYS},
        "receipt_bundle": receipt_bundle,
        "journal": [{k: entry[k] for k in JOURNAL_KEYS if k in entry} for entry in receipt_bundle["entries"]],
    }


def peer(job: Job, decision: dict[str, Any], hook: Any) -> dict[str, Any]:
    """A peer (DBOS, Powertools): the decided insert runs as the peer's documentation recommends (experiments.peers)."""
    from experiments.peers import calendar

    outcome, ids = calendar.run(job.system, job.phase, job.directory, job.service, hook.reach)
    return {**_result(outcome, baseline_event_id(job.request_id)), "peer": ids}


SYSTEMS: dict[str, System] = {
    "no_check": no_check,
    "hand_check": hand_check,
    "interlock": lambda job, decision, hook: gated(job, decision, hook, expect=[]),
    "interlock_change_only": lambda job, decision, hook: gated(job, decision, hook, expect=NOT_SET),
    "interlock_ttl": lambda job, decision, hook: gated(job, decision, hook, expect=[], ttl=True),
    "dbos_step": peer,
    "powertools_idempotent": peer,
}
