"""Raced dispatch: a customer event landing between the gate's premise read and its insert.

Calendar has no conditional insert, so nothing at the service stops an insert whose premise went stale a few
milliseconds earlier. `python -m experiments.booking.raced --dir D ...` runs the trials in one worker process:

- forced: the gate pauses at `before_send` (INTERLOCK_PAUSE_AT) and a customer thread inserts during the pause;
- unforced: a customer thread inserts concurrently at a random offset from the start of `submit`.

Each for two variants: `gate` (the gate as shipped: premise read, AUTHORIZED and DISPATCHED journaled, a last
look at lease and premises, insert) and `gate+send_recheck` (the target also re-reads the slot inside `apply`,
right before the insert, and refuses a taken slot as a failed precondition). A pause at `before_send` comes
before the gate's last look, so the forced trial shows what the last look catches. After every landed booking the worker re-reads the slot (the after-insert check)
and records whether another event is there now. The harness judges the trials from the stand-in's write log.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from experiments import crash
from interlock import Effect, Gate, Journal, Rejected, landed
from interlock.targets.base import TIER_DEDUPE
from interlock.targets.calendar import CalendarEventTarget, slot_premise

from experiments.booking.request import (AGENT, RequestLease, customer_event, event_body, new_request, rfc3339,
                                         write_request)
from experiments.booking.service import slot_events
from experiments.clients import calendar_service

VARIANTS = ("gate", "gate+send_recheck")
WARMUP_TRIALS = 3
TRIALS_FILE = "trials.jsonl"
SUMMARY = "Dana - Onboarding Call"


class StampedTarget:
    """The Calendar target, stamping when the gate hands it the send: the gate's last look has just returned."""

    name = "calendar-event"
    tier = TIER_DEDUPE
    can_lookup = True

    def __init__(self, inner: CalendarEventTarget):
        self.inner = inner
        self.read_at: float | None = None

    def apply(self, effect_id: str, payload: dict[str, Any]) -> Any:
        """Stamp the time, then insert."""
        self.read_at = time.time()
        return self.inner.apply(effect_id, payload)

    def lookup(self, effect_id: str, payload: dict[str, Any]) -> Any:
        """The inner target's lookup by event id."""
        return self.inner.lookup(effect_id, payload)


class SendRecheckTarget(StampedTarget):
    """The Calendar target with one more slot read inside `apply`, after the gate's last look, right before the
    request. A taken slot raises Rejected(precondition=True), which the gate journals as a refusal."""

    name = "calendar-event+send-recheck"

    def __init__(self, inner: CalendarEventTarget, read_slot: Any):
        super().__init__(inner)
        self.read_slot = read_slot

    def apply(self, effect_id: str, payload: dict[str, Any]) -> Any:
        """Re-read the slot, refuse if anyone else is on it, else insert."""
        others = [e for e in self.read_slot() if e != effect_id]
        self.read_at = time.time()
        if others:
            raise Rejected(f"other_events_in_slot: must be [], now {others!r} (re-read at send)", precondition=True)
        return self.inner.apply(effect_id, payload)


class Customer:
    """A person's calendar client on its own connection, inserting the customer event when told."""

    def __init__(self, calendar_id: str):
        self.service = calendar_service()
        self.calendar_id = calendar_id

    def insert(self, start: str, end: str) -> dict[str, Any]:
        """Insert the customer event; returns its id and when the request left and the answer came back."""
        sent = time.time()
        event = self.service.events().insert(calendarId=self.calendar_id,
                                             body=customer_event(start, end)).execute(num_retries=0)
        return {"customer_event": event["id"], "customer_sent": sent, "customer_answered": time.time()}


class Trials:
    """The trial worker's state: one journal per variant, request files, the Calendar service, the slot clock."""

    def __init__(self, directory: Path, calendar_id: str, base: datetime, tag: str):
        self.directory = directory
        self.calendar_id = calendar_id
        self.base = base
        self.tag = tag
        self.service = calendar_service()
        self.customer = Customer(calendar_id)
        self.journals = {v: Journal(directory / f"journal-{i}.jsonl") for i, v in enumerate(VARIANTS)}
        self.count = 0

    def trial(self, variant: str, kind: str, offset: float | None) -> dict[str, Any]:
        """One booking on a fresh slot; the customer inserts at `offset` s after submit starts (None: never)."""
        index = self.count
        self.count += 1
        request_id = f"{self.tag}{index:04d}"
        start = self.base + timedelta(hours=index)
        slot = (rfc3339(start), rfc3339(start + timedelta(minutes=30)))
        path = self.directory / f"request-{request_id}.json"
        write_request(path, new_request(request_id, slot[0]))
        decision = {"start": slot[0], "end": slot[1], "summary": SUMMARY}
        decided = sorted(e["id"] for e in slot_events(self.service, self.calendar_id, *slot))
        premise = slot_premise(self.service, self.calendar_id, *slot, decided, expect=[])
        inner = CalendarEventTarget(self.service, self.calendar_id)
        target = StampedTarget(inner) if variant == "gate" else SendRecheckTarget(inner, premise.read)
        effect = Effect(f"booking:{request_id}", {"event": event_body(variant, request_id, decision)}, [premise],
                        RequestLease(path), AGENT)
        gate = Gate(self.journals[variant], target, hooks=crash.HOOK)
        customer: dict[str, Any] = {}
        racer = self._racer(kind, offset, slot, customer)
        started = time.time()
        if racer is not None:
            racer.start()
        outcome = gate.submit(effect)
        submitted = time.time()
        if racer is not None:
            racer.join()
        after = sorted(e["id"] for e in slot_events(self.service, self.calendar_id, *slot)
                       if e["id"] != effect.effect_id)
        entries = self.journals[variant].entries(effect.effect_id)
        stamp = {e["kind"]: e["ts"] for e in entries}
        return {
            "variant": variant, "kind": kind, "request_id": request_id, "effect_id": effect.effect_id,
            "slot_start": slot[0], "slot_end": slot[1], "offset_s": offset, "started": started,
            "submit_s": submitted - started, "outcome": outcome.status,
            "authorized_ts": stamp.get("AUTHORIZED"), "dispatched_ts": stamp.get("DISPATCHED"),
            "last_read_ts": target.read_at,
            "after_insert_other_events": after if landed(outcome.status) else None,
            "detected_after_insert": bool(after) if landed(outcome.status) else None,
            "journal": [{k: e[k] for k in ("kind", "code", "reason", "via") if k in e} for e in entries],
            **customer,
        }

    def _racer(self, kind: str, offset: float | None, slot: tuple[str, str],
               into: dict[str, Any]) -> threading.Thread | None:
        if kind == "warmup":
            return None
        if kind == "forced":
            pause = self.directory / "pause"
            os.environ.update({"INTERLOCK_PAUSE_AT": crash.BEFORE_SEND, "INTERLOCK_PAUSE_FILE": str(pause)})

            def forced() -> None:
                while not pause.exists():
                    time.sleep(0.001)
                into.update(self.customer.insert(*slot))
                os.environ.pop("INTERLOCK_PAUSE_AT")
                pause.unlink()

            return threading.Thread(target=forced)

        def concurrent() -> None:
            time.sleep(offset or 0.0)
            into.update(self.customer.insert(*slot))

        return threading.Thread(target=concurrent)


def run_trials(directory: Path, calendar_id: str, base: datetime, tag: str, trials: int, seed: int) -> None:
    """Warm-up trials to learn how long a submit takes, then the forced and the unforced trials of each variant."""
    state = Trials(directory, calendar_id, base, tag)
    rng = random.Random(seed)
    with open(directory / TRIALS_FILE, "w") as out:
        def record(row: dict[str, Any]) -> None:
            out.write(json.dumps(row) + "\n")
            out.flush()

        warm = [state.trial("gate", "warmup", None) for _ in range(WARMUP_TRIALS)]
        for row in warm:
            record(row)
        span = statistics.median(r["submit_s"] for r in warm)
        for variant in VARIANTS:
            record(state.trial(variant, "forced", None))
        for i in range(trials):
            for variant in VARIANTS:  # interleaved, so both variants see the same machine load
                record(state.trial(variant, "unforced", rng.uniform(0.0, span)))


def main(argv: list[str] | None = None) -> int:
    """Run the trials into DIR/trials.jsonl."""
    parser = argparse.ArgumentParser(prog="python -m experiments.booking.raced")
    parser.add_argument("--dir", required=True, type=Path)
    parser.add_argument("--calendar", required=True)
    parser.add_argument("--base", required=True, help="first slot start, RFC3339 UTC")
    parser.add_argument("--tag", required=True, help="request id prefix")
    parser.add_argument("--trials", required=True, type=int)
    parser.add_argument("--seed", required=True, type=int)
    args = parser.parse_args(argv)
    base = datetime.fromisoformat(args.base.replace("Z", "+00:00"))
    run_trials(args.dir, args.calendar, base, args.tag, args.trials, args.seed)
    return 0



def _stats(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    ordered = sorted(values)
    return {"n": len(ordered), "min": round(ordered[0], 2), "median": round(statistics.median(ordered), 2),
            "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2), "max": round(ordered[-1], 2)}


def judge_trials(trials: list[dict[str, Any]], write_log: list[dict[str, Any]],
                 events_on: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Judge each trial from the write log's order and the events on its slot; summarize per variant.

    A trial wants no agent event when the customer's insert reached Calendar before the agent's did (the slot was
    taken before the send), and one otherwise. The window is the time from the last premise read (the gate's last
    look, stamped as the send begins; for send_recheck the re-read in apply) to the agent's insert reaching the
    stand-in (its write-log ts); gate_read_to_insert_ms runs from the gate's first check (the AUTHORIZED entry).
    """
    from experiments.booking.grade import grade, invariant_held

    inserts = {e["event_id"]: e for e in write_log if e["method"] == "insert" and e["status"] == 200}
    judged = []
    for trial in trials:
        ours = inserts.get(trial["effect_id"])
        theirs = inserts.get(trial.get("customer_event"))
        agent_first = ours is not None and theirs is not None and ours["seq"] < theirs["seq"]
        want = 0 if theirs is not None and not agent_first else 1
        truth = grade(events_on(trial), trial["request_id"], want, [trial["effect_id"]] if agent_first else [])
        last_read = trial["last_read_ts"]
        judged.append({
            **trial,
            "agent_insert": ours, "customer_insert": theirs, "agent_first": agent_first,
            "agent_events": truth["agent_events"], "other_events": truth["other_events"],
            "want_agent_events": want, "double_booked": truth["double_booked"], "invariant_held": invariant_held(truth),
            "window_ms": None if ours is None or last_read is None else (ours["ts"] - last_read) * 1000,
            "gate_read_to_insert_ms": None if ours is None or trial["authorized_ts"] is None
            else (ours["ts"] - trial["authorized_ts"]) * 1000,
        })
    summary: dict[str, Any] = {}
    for variant in VARIANTS:
        rows = [t for t in judged if t["variant"] == variant and t["kind"] == "unforced"]
        slipped = [t for t in rows if t["double_booked"]]
        forced = next((t for t in judged if t["variant"] == variant and t["kind"] == "forced"), None)
        summary[variant] = {
            "forced": None if forced is None else {
                "outcome": forced["outcome"], "double_booked": forced["double_booked"],
                "invariant_held": forced["invariant_held"], "detected_after_insert": forced["detected_after_insert"]},
            "trials": len(rows),
            "refused_customer_first": sum(1 for t in rows if t["outcome"].startswith("REFUSED:")),
            "booked_before_customer": sum(1 for t in rows if t["agent_first"]),
            "slipped_through": len(slipped),
            "slip_rate": round(len(slipped) / len(rows), 4) if rows else None,
            "detected_after_insert": sum(1 for t in slipped if t["detected_after_insert"]),
            "invariant_held": sum(1 for t in rows if t["invariant_held"]),
            "window_ms": _stats([t["window_ms"] for t in rows if t["window_ms"] is not None]),
            "gate_read_to_insert_ms": _stats([t["gate_read_to_insert_ms"] for t in rows
                                              if t["gate_read_to_insert_ms"] is not None]),
            "offset_span_ms": _stats([t["offset_s"] * 1000 for t in rows]),
        }
    return judged, summary


if __name__ == "__main__":
    sys.exit(main())
