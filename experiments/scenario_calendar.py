"""Double booking on Google Calendar: fault injection across four systems, judged by the events on the slot.

`python -m experiments.scenario_calendar [--live] [--systems S...] [--faults F...] [--journal URL] [--out PATH]`

Each cell is one booking request ("a 30-minute call at <time>") in a local request file. A worker process decides
it once and books it with one system; it is SIGKILLed right before the insert or right after Calendar's answer
(or paused between its check and its insert, or its connection is cut after the stand-in stored the event). During
the outage the harness does nothing, puts a customer event on the slot, or cancels the request; in pre_busy the
customer event is there before the job is decided. A new worker runs the same job. Ground truth is events.list on
the slot after the second worker exits. Then the raced-dispatch trials, and every event the run created is deleted
and read back.

Services come from experiments.live (roles calendar and model). Offline (default): the project's Calendar v3
stand-in and the scripted decider, labelled so in the file. Live (`--live` or INTERLOCK_LIVE=1): Google Calendar
through the service-account key named by INTERLOCK_CALENDAR_KEY_FILE and the model through ANTHROPIC_API_KEY; the
raced and network-cut rows need the stand-in and are skipped. Workers, the stand-in and temp files are removed even
on Ctrl-C, and the result file is written only when the whole run finished. `--journal postgresql://...` keeps the
gated cells' journals and claims in that database instead of each cell's own JSONL file (experiments.journals); the
raced-dispatch trials keep their own JSONL journals.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from experiments import harness, journals, live
from experiments.booking import (EXTRA_FAULTS, FAULTS, PUBLISHED_FAULTS, SYSTEMS, Fault, customer_event, fault_named,
                                 grade, new_request, rfc3339, write_request)
from experiments.booking.faults import GATED
from experiments.booking.grade import answer_matches, invariant_held
from experiments.booking.job import CASE_FILE, JOURNAL_FILE, LOG_FILE, REQUEST_FILE, RESULT_FILE
from experiments.booking.raced import TRIALS_FILE, judge_trials
from experiments.booking.request import EMULATED, baseline_event_id, read_request
from experiments.booking.service import get_event, slot_events
from experiments.clients import CALENDAR_KEY_FILE, calendar_service
from experiments.deciders import DEFAULT_MODEL, SCRIPTED_MODEL
from interlock import effect_id_for

SCRIPT = "experiments/scenario_calendar.py"
DEFAULT_OUT = harness.ROOT / "results" / "scenarios" / "calendar.json"
SCHEMA_VERSION = 1
WORKER = "experiments.booking.worker"
RACED = "experiments.booking.raced"
WORKER_TIMEOUT = 60.0
RACED_TRIALS = 40
ROLES = (live.CALENDAR, live.MODEL)  # the services this scenario uses; live mode asks only for their credentials
CLAIM = {"kind": "flock per effect (released by the kernel when the holder dies; no TTL)",
         "claim_wait_seconds": 10.0}
# The fault variables the harness arms per worker: never inherited from the caller's shell (live.services owns the
# service variables the same way).
ARMED_ENV = ("INTERLOCK_KILL_AT", "INTERLOCK_KILL_MARKER", "INTERLOCK_PAUSE_AT", "INTERLOCK_PAUSE_FILE")
CASE_FILES_SAVED_ELSEWHERE = (RESULT_FILE, REQUEST_FILE, LOG_FILE, "crash_marker", "pause")


class ArgumentError(Exception):
    """A bad command line: one line on stderr, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's default prints usage too: keep it to one line
        raise ArgumentError(f"{self.prog}: {message}")


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command line; unknown systems or faults are argument errors naming the known ones."""
    parser = _Parser(prog="python -m experiments.scenario_calendar", description=__doc__.splitlines()[0])
    live.add_live_flag(parser)
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), metavar="SYSTEM",
                        help=f"default: all ({', '.join(SYSTEMS)})")
    parser.add_argument("--faults", nargs="+", metavar="FAULT", default=None,
                        help=f"default: all ({', '.join(f.name for f in FAULTS)}); live: the published seven")
    parser.add_argument("--raced-trials", type=int, default=RACED_TRIALS, metavar="N",
                        help=f"unforced raced-dispatch trials per variant, 0 to skip (default {RACED_TRIALS})")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"default: {DEFAULT_OUT}")
    journals.add_journal_flag(parser)
    args = parser.parse_args(argv)
    args.live = live.live_requested(args.live)
    for system in args.systems:
        if system not in SYSTEMS:
            parser.error(f"--systems: unknown system {system!r} (known: {', '.join(SYSTEMS)})")
    try:
        faults = [fault_named(name) for name in args.faults] if args.faults else \
            list(PUBLISHED_FAULTS if args.live else FAULTS)
    except KeyError as exc:
        parser.error(f"--faults: {exc.args[0]}")
    if args.live and any(not f.published for f in faults):
        parser.error("--faults: the raced and network-cut rows need the stand-in; they cannot run with --live")
    if args.raced_trials < 0:
        parser.error("--raced-trials: must be 0 or more")
    if args.out.exists() and args.out.is_dir():
        parser.error(f"--out: {args.out} is a directory")
    args.faults = faults
    try:
        args.journal_backend = journals.check(args.journal)
    except journals.JournalUnusable as exc:
        parser.error(str(exc))
    return args


@dataclass
class Run:
    """One run's shared state: where cells live, the harness's Calendar client, and every event the run saw."""

    root: Path
    service: Any
    calendar_id: str
    calendar_name: str
    base: datetime
    tag: str
    standin: Any = None
    journal: str | None = None  # the run's journal database, None for each cell's own JSONL file
    seen: dict[str, None] = field(default_factory=dict)

    def slot(self, index: int) -> tuple[str, str]:
        """Slot i: the run's base (now + 30 days, to the minute) plus i hours, 30 minutes long."""
        start = self.base + timedelta(hours=index)
        return rfc3339(start), rfc3339(start + timedelta(minutes=30))

    def customer(self, start: str, end: str, when: str) -> dict[str, Any]:
        """A person puts an event on the slot; what was there just before is kept for the double-booking rule."""
        before = [e["id"] for e in slot_events(self.service, self.calendar_id, start, end)]
        event = self.service.events().insert(calendarId=self.calendar_id,
                                             body=customer_event(start, end)).execute(num_retries=0)
        self.seen[event["id"]] = None
        return {"customer_event": event["id"], "created": event.get("created"), "when": when,
                "events_on_slot_before": before}


def _worker_env(run: Run, **armed: str) -> dict[str, str]:
    """This process's environment (live.services put the chosen endpoints in it), the run's journal, and this
    worker's armed fault."""
    return journals.worker_env({**{k: v for k, v in os.environ.items() if k not in ARMED_ENV}, **armed}, run.journal)


def _worker(case: Path, system: str, phase: str) -> list[str]:
    return ["--case", str(case), "--system", system, "--phase", phase]


def _first_worker(run: Run, case: Path, request_id: str, fault: Fault,
                  system: str) -> tuple[harness.WorkerRun, int, dict | None]:
    """Run the first worker with the fault armed; a raced row inserts the customer event while it is paused."""
    armed = {}
    if fault.kill_at:
        armed = {"INTERLOCK_KILL_AT": fault.kill_at, "INTERLOCK_KILL_MARKER": str(case / "crash_marker")}
    if fault.pause_at:
        armed = {"INTERLOCK_PAUSE_AT": fault.pause_at, "INTERLOCK_PAUSE_FILE": str(case / "pause")}
    if fault.cut:
        event_id = effect_id_for(f"booking:{request_id}") if system in GATED else baseline_event_id(request_id)
        run.standin.cut_next(lambda e: e["method"] == "insert" and e["event_id"] == event_id and e["status"] == 200)
    outage = None
    with harness.start_worker(WORKER, _worker(case, system, "decide"), _worker_env(run, **armed)) as worker:
        if fault.pause_at and harness.wait_for_file(case / "pause", worker, WORKER_TIMEOUT):
            c = _case(case)
            outage = run.customer(c["slot_start"], c["slot_end"],
                                  "while the worker was paused between its check and its insert")
            (case / "pause").unlink()
        finished = worker.wait(WORKER_TIMEOUT)
    if fault.cut:
        cut = [e for e in run.standin.write_log() if e["cut"] and e["event_id"] == event_id]
        outage = {"connection_cut": cut[0] if cut else None,
                  "when": "after the stand-in stored the insert, before the worker read the answer"}
    return finished, worker.pid, outage


def _case(case: Path) -> dict[str, Any]:
    return json.loads((case / CASE_FILE).read_text())


def _note(case: Path, text: str) -> None:
    with open(case / LOG_FILE, "a") as out:
        out.write(text + "\n")


def _outage(run: Run, case: Path, fault: Fault) -> dict[str, Any] | None:
    """What the world does while the worker is down."""
    c = _case(case)
    if fault.outage_action == "slot_busy":
        return run.customer(c["slot_start"], c["slot_end"], "during the outage")
    if fault.outage_action == "request_cancelled":
        request = read_request(case / REQUEST_FILE)
        write_request(case / REQUEST_FILE, {**request, "status": "cancelled"})
        return {"request_status": "cancelled", "at": time.time(), "when": "during the outage"}
    return None


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.exists() else None


def run_cell(run: Run, index: int, fault: Fault, system: str) -> dict[str, Any]:
    """One (fault, system) cell: set up, first worker, outage, restart, ground truth; the case dir is removed."""
    case = harness.case_dir(run.root, fault.name, system)
    try:
        return _run_case(run, case, f"{run.tag}{index:02d}", index, fault, system)
    finally:
        shutil.rmtree(case)


def _run_case(run: Run, case: Path, request_id: str, index: int, fault: Fault, system: str) -> dict[str, Any]:
    start, end = run.slot(index)
    (case / CASE_FILE).write_text(json.dumps({"request_id": request_id, "calendar_id": run.calendar_id,
                                              "slot_start": start, "slot_end": end, "system": system}))
    write_request(case / REQUEST_FILE, new_request(request_id, start))
    outage = run.customer(start, end, "before the first worker") if fault.busy_before_first_worker else None
    first, pid, raced = _first_worker(run, case, request_id, fault, system)
    outage = outage or raced
    marker = case / "crash_marker"
    crashed_at = float(marker.read_text()) if marker.exists() else None
    if first.killed and crashed_at is not None:
        _note(case, f"crash injected: SIGKILL at {fault.kill_at} (pid {pid})")
    outage_began = time.time()
    outage = _outage(run, case, fault) or outage
    outage_s = time.time() - outage_began
    restart = harness.run_worker(WORKER, _worker(case, system, "restart"), _worker_env(run), WORKER_TIMEOUT)
    events = slot_events(run.service, run.calendar_id, start, end)
    for event in events:
        run.seen[event["id"]] = None
    before = (outage or {}).get("events_on_slot_before", [])
    truth = grade(events, request_id, fault.want, before)
    result = _read_json(case / RESULT_FILE)
    outcome = result["outcome"] if result else "AMBIGUOUS"
    answer = result["answer"] if result else "unknown"
    decision = _read_json(case / "decision.json")
    receipt = result.get("receipt") if result else None
    settled_from = crashed_at if crashed_at is not None else first.ended
    # The restart worker stamps its result file as its last act; the harness's wait only polls in 50 ms steps.
    settled_at = result["finished"] if result else restart.ended
    agent = ", ".join(truth["agent_events"]) or "none"
    other = ", ".join(truth["other_events"]) or "none"
    ids = f"request {request_id}; slot {start}; calendar {run.calendar_name}; agent events {agent}; other events {other}"
    if system in GATED:
        ids += f"; interlock effect {effect_id_for(f'booking:{request_id}')}"
    rechecked = (receipt or {}).get("rechecked_at_recovery")
    files = harness.collect_artifacts(case)
    return {
        "system": system,
        "fault": fault.name,
        "crash_point": fault.crash_point,
        "outage_action": fault.outage_action,
        "request_id": request_id,
        "slot_start": start,
        "slot_end": end,
        "outcome": outcome,
        "first_worker_outcome": _printed_outcome(first),
        "answer": answer,
        "ground_truth": truth,
        "ground_truth_source": "events_list",
        "invariant_held": invariant_held(truth),
        "answer_matches_calendar": answer_matches(answer, truth),
        "can_prove_what_happened": None,  # filled in by the pipeline's one proof rule, see prove_cells()
        "conflict_recorded_at_recovery": bool(rechecked) and (bool(rechecked.get("violations"))
                                                               or rechecked.get("lease_live") is False),
        "ids": ids,
        "seconds_to_settle": round(settled_at - settled_from, 1),
        "emulated": _emulated(run),
        "worker_exit_codes": [first.exit_code, restart.exit_code],
        "crash_fired": first.killed and crashed_at is not None,
        "outage": outage,
        "decision": decision,
        "receipt": receipt,
        "journal": result.get("journal") if result and system in GATED else None,
        "evidence": {
            "receipt_bundle": result.get("receipt_bundle") if result and system in GATED else None,
            "worker_log": (case / LOG_FILE).read_text() if (case / LOG_FILE).exists() else "",
            "crash_marker": fault.kill_at if crashed_at is not None else None,
            "result_file": result,
            "request_file": read_request(case / REQUEST_FILE),
            "crashed_at": crashed_at,
            "worker_output": [first.output, restart.output],
            "case_files": _unsaved(files, result),
        },
        "timing": {
            "first_worker_s": round(first.ended - first.started, 3),
            "outage_action_s": round(outage_s, 3),
            "restart_worker_s": round(restart.ended - restart.started, 3),
            "settle_s": round(settled_at - settled_from, 3),
            "settled_from": "crash marker" if crashed_at is not None else "first worker's exit",
        },
    }


def _printed_outcome(worker: harness.WorkerRun) -> str | None:
    """What a first worker that ran to its end printed (a refusal before the send, a settled lost answer)."""
    lines = worker.output.strip().splitlines()
    return lines[-1] if worker.exit_code == 0 and lines else None


def _unsaved(files: dict[str, Any], result: dict[str, Any] | None) -> dict[str, Any]:
    """The case files not already kept elsewhere in the evidence (the journal is the receipt bundle's entries)."""
    entries = ((result or {}).get("receipt_bundle") or {}).get("entries")
    return {name: value for name, value in files.items()
            if name not in CASE_FILES_SAVED_ELSEWHERE and not (name == JOURNAL_FILE and value == entries)}


def _emulated(run: Run) -> str:
    if run.standin is None:
        return EMULATED
    return (f"{EMULATED}; Calendar itself is the project's Calendar v3 stand-in on 127.0.0.1 (not Google), "
            "and the decider is offline-scripted (no model)")


def run_raced(run: Run, trials: int, progress: harness.Progress) -> dict[str, Any]:
    """The raced-dispatch trials in their own worker process, judged from the stand-in's write log."""
    directory = run.root / "raced"
    directory.mkdir(parents=True)
    base = run.base + timedelta(days=30)
    seed = int.from_bytes(secrets.token_bytes(4), "big")
    progress.start("raced dispatch")
    args = ["--dir", str(directory), "--calendar", run.calendar_id, "--base", rfc3339(base), "--tag",
            f"{run.tag}r", "--trials", str(trials), "--seed", str(seed)]
    worker = harness.run_worker(RACED, args, _worker_env(run), WORKER_TIMEOUT * 4)
    rows = harness.collect_artifacts(directory).get(TRIALS_FILE, [])

    def events_on(trial: dict[str, Any]) -> list[dict[str, Any]]:
        events = slot_events(run.service, run.calendar_id, trial["slot_start"], trial["slot_end"])
        for event in events:
            run.seen[event["id"]] = None
        return events

    judged, summary = judge_trials(rows, run.standin.write_log(), events_on)
    progress.step("raced dispatch", f"{len(judged)} trials, exit {worker.exit_code}; " + "; ".join(
        f"{v}: {s['slipped_through']}/{s['trials']} slipped" for v, s in summary.items()))
    return {
        "what": ("A customer event lands between the gate's premise read and its insert. Calendar has no "
                 "conditional insert. forced: the worker pauses at before_send (after DISPATCHED, before the "
                 "gate's last look at lease and premises) while the customer inserts. unforced: the customer "
                 "inserts concurrently at a random offset (uniform over the median duration of a warm-up submit) "
                 "from the start of submit. gate: the gate as shipped. gate+send_recheck: the target also re-reads "
                 "the slot inside apply, right before the insert. window_ms: from the last premise read (gate: its "
                 "last look, stamped as the send begins; send_recheck: the re-read's return, timed in the worker) "
                 "to the agent's insert in the stand-in's write log; gate_read_to_insert_ms: from the gate's first "
                 "check (the AUTHORIZED entry). detected_after_insert: the worker re-read the slot after a landed "
                 "booking and found another event there (it records, it does not undo)."),
        "seed": seed,
        "trials_per_variant": trials,
        "worker_exit_code": worker.exit_code,
        "worker_output": worker.output,
        "summary": summary,
        "trials": judged,
    }


def cleanup(run: Run) -> list[dict[str, Any]]:
    """Delete every event the run saw, then read each back: Calendar keeps it as cancelled."""
    from googleapiclient.errors import HttpError

    done = []
    for event_id in run.seen:
        try:
            with contextlib.suppress(HttpError):  # 410: already cancelled
                run.service.events().delete(calendarId=run.calendar_id, eventId=event_id).execute(num_retries=0)
            after = get_event(run.service, run.calendar_id, event_id)
            done.append({"id": event_id, "deleted": True, "status_after_delete": (after or {}).get("status")})
        except (HttpError, OSError) as exc:
            done.append({"id": event_id, "deleted": False, "error": f"{type(exc).__name__}: {exc}"})
    return done


def prove_cells(cells: list[dict[str, Any]], out: Path) -> None:
    """can_prove_what_happened by the pipeline's one proof rule (actor, checks, record's list = calendar's)."""
    from pipeline.derive import derive_cell
    from pipeline.load import Node

    for i, cell in enumerate(cells):
        cell["can_prove_what_happened"] = derive_cell(Node(cell, f"cells[{i}]", str(out)), i, "calendar").can_prove


def _calendar_name(chosen: live.Services) -> str:
    """Whose calendar the run books on: the service account's (live) or the stand-in's owner."""
    if chosen.live:
        return json.loads(Path(os.environ[CALENDAR_KEY_FILE]).read_text()).get("client_email", "primary")
    from experiments.services.calendar_standin import OWNER

    return OWNER


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every requested cell, the raced trials, the cleanup; returns the result object."""
    plan = [(fault, system) for fault in args.faults for system in args.systems]
    raced = args.raced_trials > 0 and not args.live
    progress = harness.Progress(len(plan) + (1 if raced else 0))
    with tempfile.TemporaryDirectory(prefix="interlock-calendar-") as tmp, \
            live.services(args.live, Path(tmp) / "services", ROLES) as chosen:
        base = (datetime.now(timezone.utc) + timedelta(days=30)).replace(second=0, microsecond=0)
        ctx = Run(Path(tmp) / "cells", calendar_service(), "primary", _calendar_name(chosen), base,
                  secrets.token_hex(5), chosen.calendar, args.journal)
        cells = []
        for index, (fault, system) in enumerate(plan):
            label = f"{fault.name} x {system}"
            progress.start(label)
            cell = run_cell(ctx, index, fault, system)
            cells.append(cell)
            progress.step(label, f"{cell['outcome']}, {len(cell['ground_truth']['agent_events'])} agent event(s) "
                                 f"(want {cell['ground_truth']['want_agent_events']}), "
                                 f"{'held' if cell['invariant_held'] else 'VIOLATED'}, {cell['seconds_to_settle']}s")
        raced_section = run_raced(ctx, args.raced_trials, progress) if raced else None
        cleaned = cleanup(ctx)
        decider = DEFAULT_MODEL if args.live else f"{SCRIPTED_MODEL} (scripted decider, labelled; no model)"
        prov = harness.provenance(SCRIPT, chosen.provenance, decider, journals.claim_settings(args.journal, CLAIM))
        prov["journal"] = args.journal_backend
        calendar_name = ctx.calendar_name
    prove_cells(cells, args.out)
    return {
        "scenario": "calendar",
        "key": "calendar",
        "schema_version": SCHEMA_VERSION,
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "model": (cells[0].get("decision") or {}).get("model") if cells else None,
        "calendar": calendar_name,
        "claim_ttl": None,
        "events_kept": not all(item.get("deleted") for item in cleaned),
        "cleanup": cleaned,
        "provenance": prov,
        "extra_faults": {f.name: ("raced: the worker pauses between its check and its insert while a customer "
                                  "event lands" if f.pause_at else
                                  "network cut: the stand-in stores the insert, then resets the connection")
                         for f in EXTRA_FAULTS},
        "raced_dispatch": raced_section,
        "cells": cells,
    }


def main(argv: list[str] | None = None) -> int:
    """Parse, check credentials, run, write; every failure before the run is one line and exit 2."""
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except ArgumentError as exc:
        print(exc, file=sys.stderr)
        return 2
    live.check_credentials(args.live, ROLES)
    try:
        with harness.terminate_as_interrupt():
            result = run(args)
    except KeyboardInterrupt:
        print("interrupted: every worker and the stand-in were stopped; nothing was written", file=sys.stderr)
        return 130
    harness.write_result(args.out, result, indent=2)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
