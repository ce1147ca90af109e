"""The two baselines: a job from an at-least-once queue (job.json), sent plainly (no_check) or under the store's
own compare-and-swap with a job-id lookup on 412 (hand_check). Each logs its send before sending and its result
after, to log.jsonl."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from google.api_core.exceptions import NotFound, PreconditionFailed
from google.cloud import storage

from experiments import crash

from experiments.gcp_resource.case import AGENT, AGENT_WRITER, INCIDENT_ID, JOB_FILE, LOG_FILE, WRITER_KEY, read_json
from experiments.harness import write_result

NO_CHECK, HAND_CHECK = "no_check", "hand_check"


def enqueue(case_dir: Path, case: dict[str, Any], decision: dict[str, Any], body: str) -> None:
    """Put the decided rollback on the queue: the message the restart worker gets again until it is marked done."""
    job_id = uuid.uuid4().hex
    write_result(case_dir / JOB_FILE, {
        "bucket": case["bucket"], "object": case["object"], "body": body,
        "metadata": {WRITER_KEY: AGENT_WRITER, "incident": INCIDENT_ID, "job_id": job_id},
        "generation": decision["generation"], "job_id": job_id,
    })


def run_job(system: str, phase: str, case_dir: Path, client: storage.Client) -> tuple[str, dict[str, Any]]:
    """Process the queued job once; an acknowledged (done) job is not delivered again."""
    job = read_json(case_dir / JOB_FILE)
    if "done" in job:
        outcome, ids = job["done"]
        return outcome, ids
    check = None
    if system == HAND_CHECK:
        check = f"ifGenerationMatch={job['generation']}; on 412 list versions for job_id={job['job_id']}"
    log = _Log(case_dir / LOG_FILE, system, phase)
    log.write(event="send", object=job["object"], check=check)
    crash.reach(crash.BEFORE_SEND if phase == "decide" else crash.RECOVERY_BEFORE_RESEND)
    blob = client.bucket(job["bucket"]).blob(job["object"])
    blob.metadata = job["metadata"]
    try:
        blob.upload_from_string(job["body"], content_type="application/json", retry=None,
                                if_generation_match=int(job["generation"]) if check else None)
    except PreconditionFailed:
        outcome, ids = _look_up(client, job)
    else:
        crash.reach(crash.AFTER_COMMIT)
        outcome, ids = "WRITTEN", {"generation": str(blob.generation)}
    log.write(event="result", outcome=outcome, ids=ids)
    write_result(case_dir / JOB_FILE, {**job, "done": [outcome, ids]})
    return outcome, ids


def _look_up(client: storage.Client, job: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """After a 412: did an earlier delivery of this job land? The version listing answers by the job id."""
    versions = client.list_blobs(job["bucket"], prefix=job["object"], versions="true")
    found = sorted((b for b in versions if b.name == job["object"]
                    and (b.metadata or {}).get("job_id") == job["job_id"]), key=lambda b: b.generation)
    try:
        live = client.bucket(job["bucket"]).get_blob(job["object"])
    except NotFound:
        live = None
    ids = {"writes_found": [str(b.generation) for b in found],
           "live_generation": str(live.generation) if live else None,
           "live_writer": (live.metadata or {}).get(WRITER_KEY) if live else None}
    return ("ALREADY_APPLIED" if found else "PRECONDITION_FAILED"), ids


class _Log:
    """log.jsonl: one line per send (with the check it makes) and per result, appended as they happen."""

    def __init__(self, path: Path, system: str, phase: str):
        self.path, self.system, self.phase = path, system, phase

    def write(self, **fields: Any) -> None:
        line = {"ts": time.time(), "agent": AGENT, "system": self.system, "phase": self.phase, **fields}
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")
