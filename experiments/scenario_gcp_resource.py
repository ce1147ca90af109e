"""Scenario gcp_resource: an agent's config rollback against a human's redeploy, with the first worker SIGKILLed.

`python -m experiments.scenario_gcp_resource [--live] [--systems a,b] [--faults f,g] [--journal URL] [--out PATH]`

Per cell: seed v42 (human-deploy), let the decider read the live object and decide the rollback to v41, run the
first worker (its own OS process) until the fault fires, act as the human during the outage (v43, a plain upload
with no precondition), run a restart worker, then read the ground truth from the service (the full version
listing and the live object, or the recording proxy's write log when the bucket keeps no versions), save every
file the workers wrote and remove the case directory. Offline (the default) the object store is fake-gcs-server
behind the recording proxy and the decider is the scripted one; `--live` uses Google Cloud Storage in a fresh
interlock-sandbox-<10 hex> bucket and the Anthropic model. Buckets, workers and temp files are removed even on
Ctrl-C, and the result file is written only when the whole run finished. `--journal postgresql://...` keeps the
gated cells' journals and claims in that database instead of each cell's own JSONL file (experiments.journals).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments import harness, journals
from experiments.gcp_resource.case import (CASE_FILE, CRASH_MARKER, DECISION_FILE, HUMAN_DEPLOY, HUMAN_REDEPLOY,
                                           INCIDENT_FILE, INCIDENT_ID, PAUSE_FILE, WRITER_KEY, body, incident_text,
                                           object_name, outcome_file)
from experiments.gcp_resource.faults import CLAIM_TTL_SECONDS, FAULTS, OPT_IN_SYSTEMS, SYSTEMS, Fault
from experiments.gcp_resource.gated import CLAIM_WAIT_SECONDS, INTERLOCK_TTL
from experiments.gcp_resource import scoring

SCENARIO = "gcp_resource"
SCRIPT = "experiments/scenario_gcp_resource.py"
WORKER = "experiments.gcp_resource.worker"
ROLES = ("object_store", "model")  # the services this scenario uses; live mode asks only for their credentials
DEFAULT_OUT = harness.ROOT / "results" / "scenarios" / f"{SCENARIO}.json"
WORKER_TIMEOUT_SECONDS = 90.0
PAUSE_TIMEOUT_SECONDS = 30.0
RECORDS = {
    "no_check": "log.jsonl: each send (no check) and its result",
    "hand_check": "log.jsonl: each send with its precondition, and the result with any version lookup",
    "interlock": "hash-chained journal: decision, premise, incident check, each send and recovery re-check",
    "interlock_ttl": "hash-chained journal: decision, premise, incident check, each send and recovery re-check",
}
CLAIM_SETTINGS = {
    "interlock": {"kind": "flock per effect, released by the kernel when its owner dies",
                  "claim_wait_seconds": CLAIM_WAIT_SECONDS},
    "interlock_ttl": {"kind": "the same gate with liveness detection off: the restart worker waits out a claim "
                              "TTL counted from when the dead worker took the claim",
                      "ttl_seconds": CLAIM_TTL_SECONDS, "liveness_detection": False,
                      "implemented_in": "experiments/gcp_resource/gated.py (experiment worker, not the library)"},
}


class _Usage(Exception):
    """A bad command line: one line on stderr, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse would print the usage block too
        raise _Usage(message)


def _names(text: str, known: tuple[str, ...], what: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if not names or unknown:
        raise _Usage(f"--{what}: unknown {what[:-1]} {', '.join(unknown) or '(none given)'}; "
                     f"known: {', '.join(known)}")
    return list(dict.fromkeys(names))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse and validate the command line; raises _Usage with one line for anything wrong."""
    from experiments.live import add_live_flag, live_requested

    parser = _Parser(prog="python -m experiments.scenario_gcp_resource", description=__doc__.splitlines()[0])
    add_live_flag(parser)
    parser.add_argument("--systems", default=",".join(SYSTEMS),
                        help=f"comma-separated, from {', '.join(SYSTEMS + OPT_IN_SYSTEMS)} (default: the first three)")
    parser.add_argument("--faults", default=None, help=f"comma-separated, from {', '.join(FAULTS)} (default: all "
                                                       "that the chosen mode can run)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="result file (default: %(default)s)")
    journals.add_journal_flag(parser)
    args = parser.parse_args(argv)
    args.live = live_requested(args.live)
    args.systems = _names(args.systems, SYSTEMS + OPT_IN_SYSTEMS, "systems")
    if args.faults is None:
        args.faults = [name for name, f in FAULTS.items() if not (args.live and f.needs_proxy)]
    else:
        args.faults = _names(args.faults, tuple(FAULTS), "faults")
        offline_only = [name for name in args.faults if args.live and FAULTS[name].needs_proxy]
        if offline_only:
            raise _Usage(f"--faults: {', '.join(offline_only)} need(s) the recording proxy, which runs offline only")
    if args.out.exists() and args.out.is_dir():
        raise _Usage(f"--out: {args.out} is a directory")
    if args.journal is not None and INTERLOCK_TTL in args.systems:
        raise _Usage(f"--journal: {INTERLOCK_TTL} waits out a TTL on file claims; run it without --journal")
    try:
        args.journal_backend = journals.check(args.journal)
    except journals.JournalUnusable as exc:
        raise _Usage(str(exc)) from None
    return args


@dataclass
class Run:
    """What every cell of one run shares."""

    client: Any
    decider: Any
    buckets: dict[bool, str]  # versioned? -> bucket name
    proxy: Any  # the recording proxy (offline), None live
    root: Path
    live: bool
    journal: str | None  # the run's journal database, None for each cell's own JSONL file
    claims: dict[str, dict[str, Any]]  # gated system -> its claim settings


def _upload(client: Any, bucket: str, name: str, version: str, writer: str, **precondition: Any) -> str:
    blob = client.bucket(bucket).blob(name)
    blob.metadata = {WRITER_KEY: writer}
    blob.upload_from_string(body(version), content_type="application/json", retry=None, **precondition)
    return str(blob.generation)


def _get_config(client: Any, bucket: str, name: str):
    def get_config() -> dict[str, Any]:
        blob = client.bucket(bucket).get_blob(name)
        return {"generation": str(blob.generation), "body": json.loads(blob.download_as_text()),
                "metadata": blob.metadata or {}}
    return get_config


def _write_json(path: Path, obj: Any) -> None:
    harness.write_result(path, obj, indent=1)


def _text(run: harness.WorkerRun | None, path: Path) -> None:
    if run is not None:
        path.write_text(run.output, encoding="utf-8")


def _is_agent_upload_of(name: str):
    def predicate(entry: dict) -> bool:
        return (entry.get("method") == "POST" and entry.get("object") == name and entry.get("status") == 200
                and (entry.get("metadata") or {}).get(WRITER_KEY) == "agent")
    return predicate


def run_cell(run: Run, fault: Fault, system: str) -> dict[str, Any]:
    """One (fault, system) cell end to end; its case directory is gone when this returns."""
    from experiments.deciders import persisted_decision

    directory = harness.case_dir(run.root, fault.name, system)
    try:
        bucket, name = run.buckets[fault.versioned], object_name(fault.name, system)
        seed = _upload(run.client, bucket, name, "v42", HUMAN_DEPLOY, if_generation_match=0)
        case = {"bucket": bucket, "object": name, "incident_id": INCIDENT_ID, "incident": incident_text(bucket, name)}
        _write_json(directory / CASE_FILE, case)
        _write_json(directory / INCIDENT_FILE, {INCIDENT_ID: "open"})
        decision = persisted_decision(directory / DECISION_FILE,
                                      lambda: run.decider.decide_rollback(case, _get_config(run.client, bucket, name)))
        env = journals.worker_env(dict(os.environ), run.journal)
        if fault.crash:
            env.update(INTERLOCK_KILL_AT=fault.crash, INTERLOCK_KILL_MARKER=str(directory / CRASH_MARKER))
        if fault.cut:
            run.proxy.cut_next(_is_agent_upload_of(name))
        first = harness.run_worker(WORKER, [system, "decide", str(directory)], env, WORKER_TIMEOUT_SECONDS)
        _text(first, directory / "worker_decide.out")
        redeploy = None
        if fault.redeploy == "outage":
            redeploy = _upload(run.client, bucket, name, "v43", HUMAN_REDEPLOY)
        restart, paused = None, None
        if first.exit_code != 0:
            restart, paused, raced = _restart(run, fault, system, directory, bucket, name)
            redeploy = redeploy or raced
            _text(restart, directory / "worker_restart.out")
        return _cell(run, fault, system, directory, seed, decision, redeploy, first, restart, paused)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _restart(run: Run, fault: Fault, system: str, directory: Path, bucket: str,
             name: str) -> tuple[harness.WorkerRun, bool | None, str | None]:
    """The new worker; in the raced row it is paused before its resend while the human uploads v43."""
    env = journals.worker_env(dict(os.environ), run.journal)
    pause = directory / PAUSE_FILE
    if fault.redeploy == "recovery":
        env.update(INTERLOCK_PAUSE_AT="recovery_before_resend", INTERLOCK_PAUSE_FILE=str(pause))
    with harness.start_worker(WORKER, [system, "restart", str(directory)], env) as worker:
        paused, raced = None, None
        if fault.redeploy == "recovery":
            paused = harness.wait_for_file(pause, worker, PAUSE_TIMEOUT_SECONDS)
            if paused:
                raced = _upload(run.client, bucket, name, "v43", HUMAN_REDEPLOY)
                pause.unlink()
        return worker.wait(WORKER_TIMEOUT_SECONDS), paused, raced


def _ground_truth(run: Run, bucket: str, name: str) -> tuple[dict | None, list[dict]]:
    """The live object's raw resource and the raw versions=true listing of the object, oldest first."""
    from google.api_core.exceptions import NotFound

    handle = run.client.bucket(bucket)
    try:
        live = handle.get_blob(name)
    except NotFound:
        live = None
    versions = [b for b in run.client.list_blobs(bucket, prefix=name, versions="true") if b.name == name]
    versions.sort(key=lambda b: b.generation)
    return (dict(live._properties) if live else None), [dict(b._properties) for b in versions]


def _cell(run: Run, fault: Fault, system: str, directory: Path, seed: str, decision: dict, redeploy: str | None,
          first: harness.WorkerRun, restart: harness.WorkerRun | None, paused: bool | None) -> dict[str, Any]:
    live, versions = _ground_truth(run, run.buckets[fault.versioned], object_name(fault.name, system))
    artifacts: dict[str, Any] = {"gcs_live_raw": live, "gcs_versions_raw": versions}
    if run.proxy is not None and fault.needs_proxy:
        name = object_name(fault.name, system)
        artifacts["write_log"] = [e for e in run.proxy.write_log() if e.get("object") == name
                                  and e.get("method") != "GET"]
    artifacts.update(harness.collect_artifacts(directory))
    artifacts.setdefault("log.jsonl", [])
    artifacts.setdefault("journal.jsonl", [])

    last = restart or first
    settled = artifacts.get(outcome_file("restart" if restart else "decide"))
    outcome = settled["outcome"] if isinstance(settled, dict) else "AMBIGUOUS"
    first_settled = artifacts.get(outcome_file("decide"))
    start, settle_from = _fault_time(run, fault, system, artifacts, first)
    settled_at = settled.get("settled_at") if isinstance(settled, dict) else last.ended
    ids: dict[str, Any] = {
        "bucket": run.buckets[fault.versioned], "object": object_name(fault.name, system), "seed_generation": seed,
        "decided_on_generation": decision["generation"], "human_redeploy_generation": redeploy,
    }
    gated = system.startswith("interlock")
    if gated and artifacts["journal.jsonl"]:
        entries = artifacts["journal.jsonl"]
        eid = entries[0]["effect_id"]
        ids.update(effect_id=eid, journal=scoring.journal_kinds([e for e in entries if e.get("effect_id") == eid]))
    cell = {
        "system": system,
        "fault": fault.name,
        "outcome": outcome,
        "first_worker_outcome": first_settled["outcome"] if isinstance(first_settled, dict) else None,
        "ground_truth": None,  # this and the other scored columns: scoring.score(), the pipeline's judge
        "want": fault.want,
        "invariant_held": None,
        "answer_matches_service": None,
        "can_prove_what_happened": None,
        "record": RECORDS[system],
        "record_says": None,
        "ids": ids,
        "seconds_to_settle": round(settled_at - start, 1),
        "worker_exits": [first.exit_code] + ([restart.exit_code] if restart else []),
        "worker_spans": [[r.started, r.ended] for r in (first, restart) if r is not None],
        "emulated": None if run.live else "object store: fake-gcs-server stand-in; decider: offline-scripted",
        "decision": {"model": decision["model"], "to_version": decision["to_version"], "reason": decision["reason"]},
        "artifacts": artifacts,
        "ground_truth_source": fault.ground_truth_source,
        "want_agent_writes": fault.want_writes,
        "want_live_writer": fault.want_owner,
        "crash_point": fault.crash,
        "human_redeploy": fault.redeploy,
        "object_versioning": fault.versioned,
        "connection_cut_after_commit": fault.cut,
        "settle_from": settle_from,
    }
    if paused is not None:
        cell["restart_paused_before_resend"] = paused
    if system in run.claims:
        cell["claim"] = run.claims[system]
    timed_out = [r.module + " " + " ".join(r.args) for r in (first, restart) if r is not None and r.timed_out]
    if timed_out:
        cell["timed_out"] = timed_out
    scoring.score(cell, f"{fault.name}/{system}")
    return cell


def _fault_time(run: Run, fault: Fault, system: str, artifacts: dict, first: harness.WorkerRun) -> tuple[float, str]:
    """When the fault struck: the crash marker, else the proxy's cut, else the first worker's exit."""
    marker = artifacts.get(CRASH_MARKER)
    if isinstance(marker, (str, float, int)) and str(marker).strip():
        return float(marker), "crash marker (written just before SIGKILL)"
    cuts = [e for e in artifacts.get("write_log") or [] if e.get("cut")]
    if cuts:
        return float(cuts[0]["ts"]), "connection cut (recording proxy's log time)"
    return first.ended, "first worker's exit (no crash fired)"


def _summary(cell: dict[str, Any]) -> str:
    writes = len(cell["ids"]["agent_write_generations"])
    proof = "proof yes" if cell["can_prove_what_happened"] else "proof no"
    answer = {True: "answer matches", False: "answer WRONG", None: "answer cannot say"}[cell["answer_matches_service"]]
    return (f"{cell['outcome']}; {writes} agent write(s); {'held' if cell['invariant_held'] else 'VIOLATED'}; "
            f"{answer}; {proof}; {cell['seconds_to_settle']}s")


@contextlib.contextmanager
def _buckets(client: Any, versioned_needed: bool, unversioned_needed: bool) -> Iterator[dict[bool, str]]:
    from experiments.live import sandbox_bucket

    with contextlib.ExitStack() as stack:
        names = {}
        if versioned_needed:
            names[True] = stack.enter_context(sandbox_bucket(client, versioned=True)).name
        if unversioned_needed:
            names[False] = stack.enter_context(sandbox_bucket(client, versioned=False)).name
        yield names


def run_scenario(args: argparse.Namespace) -> dict[str, Any]:
    """Run every chosen cell and return the result file's content (nothing is left behind, whatever happens)."""
    from experiments.clients import storage_client
    from experiments.deciders import AnthropicDecider, DEFAULT_MODEL, ScriptedDecider
    from experiments.live import services

    faults = [FAULTS[name] for name in args.faults]
    cells: list[dict[str, Any]] = []
    progress = harness.Progress(len(faults) * len(args.systems))
    claims = {s: journals.claim_settings(args.journal, CLAIM_SETTINGS[s]) for s in args.systems if s in CLAIM_SETTINGS}
    with tempfile.TemporaryDirectory(prefix="interlock-gcp-") as root, \
            services(args.live, Path(root) / "services", ROLES) as chosen:
        client = storage_client()
        decider = AnthropicDecider(DEFAULT_MODEL) if args.live else ScriptedDecider()
        with _buckets(client, any(f.versioned for f in faults), any(not f.versioned for f in faults)) as buckets:
            run = Run(client, decider, buckets, chosen.gcs_proxy, Path(root) / "cells", args.live, args.journal, claims)
            for fault in faults:
                for system in args.systems:
                    label = f"{fault.name} / {system}"
                    progress.start(label)
                    cell = run_cell(run, fault, system)
                    progress.step(label, _summary(cell))
                    cells.append(cell)
        services_used = dict(chosen.provenance)
        services_used["queue"] = {"real": False, "name": "local job.json file (at-least-once redelivery to the "
                                                         "restart worker), for the baselines", "version": None}
        project = client.project
    model = cells[0]["decision"]["model"] if cells else None
    made = harness.provenance(SCRIPT, services_used, model, claims)
    made["journal"] = args.journal_backend
    return {
        "scenario": SCENARIO,
        "schema_version": 1,
        "generated": made["generated"],
        "project": project,
        "service": ("Google Cloud Storage JSON API" if args.live else
                    "fake-gcs-server (stand-in for the Google Cloud Storage JSON API)")
                   + " (object versioning on; off in the *_versioning_off rows)",
        "model": model,
        "bucket_deleted": buckets.get(True) or buckets.get(False),
        "buckets_deleted": sorted(buckets.values()),
        "provenance": made,
        "cells": cells,
    }


def main(argv: list[str] | None = None) -> int:
    """Parse, check credentials, run, and write the result file only once everything was saved and removed."""
    from experiments.live import check_credentials

    try:
        args = parse_args(argv)
    except _Usage as exc:
        print(f"scenario_gcp_resource: {exc}", file=sys.stderr)
        return 2
    check_credentials(args.live, ROLES)
    try:
        with harness.terminate_as_interrupt():
            result = run_scenario(args)
    except KeyboardInterrupt:
        print("scenario_gcp_resource: interrupted; no result written (workers, stand-ins, buckets and temp files "
              "removed)", file=sys.stderr)
        return 130
    harness.write_result(args.out, result, indent=1)
    print(f"wrote {args.out} ({len(result['cells'])} cells)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
