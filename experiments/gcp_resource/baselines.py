"""The rollback without the gate, as a team would run it: the decided rollback is a message on an at-least-once
queue (the case's job.json), handed again to a restarted worker until it is acknowledged.

- `no_check` uploads the message's body as it is;
- `hand_check` uploads it under the store's compare-and-swap (ifGenerationMatch on the generation the rollback
  was decided on), and after a 412 asks the version listing whether an earlier delivery of this job landed.

Both keep log.jsonl as their record: a `send` line naming the check made, written before every upload, and a
`result` line after it.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any, cast

from google.api_core.exceptions import NotFound, PreconditionFailed
from google.cloud import storage

from interlock.hooks import Hooks

from experiments import crash, outcomes, planted
from experiments.atomic import write_json
from experiments.gcp_resource.case import AGENT, AGENT_WRITER, INCIDENT_ID, JOB_FILE, LOG_FILE, WRITER_KEY, read_json
from experiments.phases import DECIDE

NO_CHECK, HAND_CHECK = "no_check", "hand_check"


class JobQueue:
    """The queue holding the case's one rollback message; an acknowledged message keeps its outcome."""

    def __init__(self, case_dir: Path):
        self.path = Path(case_dir) / JOB_FILE

    def put(self, case: dict[str, Any], decision: dict[str, Any], body: str) -> None:
        """Queue the decided rollback under a fresh job id, which every agent upload of it carries."""
        job_id = uuid.uuid4().hex
        write_json(self.path, {
            "bucket": case["bucket"], "object": case["object"], "body": body,
            "metadata": {WRITER_KEY: AGENT_WRITER, "incident": INCIDENT_ID, "job_id": job_id},
            "generation": decision["generation"], "job_id": job_id,
        })

    def take(self) -> dict[str, Any]:
        """The message, delivered again and again until `ack`."""
        return cast(dict[str, Any], read_json(self.path))

    def ack(self, message: dict[str, Any], outcome: str, ids: dict[str, Any]) -> None:
        """Mark the message done with what the delivery found."""
        write_json(self.path, {**message, "done": [outcome, ids]})


class SendLog:
    """log.jsonl: one JSON line per event, appended (and in the kernel) before the step that follows it."""

    def __init__(self, case_dir: Path, system: str, phase: str):
        self.path, self.system, self.phase = Path(case_dir) / LOG_FILE, system, phase

    def add(self, event: str, **fields: Any) -> None:
        """Append one line stamped with the time, the agent, the system and the worker's phase."""
        line = {"ts": time.time(), "agent": AGENT, "system": self.system, "phase": self.phase, "event": event,
                **fields}
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")


def deliver(system: str, phase: str, case_dir: Path, client: storage.Client,
            hook: Hooks) -> tuple[str, dict[str, Any]]:
    """Handle one delivery of the queued rollback; a message already acknowledged is not acted on again."""
    queue = JobQueue(case_dir)
    message = queue.take()
    if "done" in message:
        outcome, ids = message["done"]
        return outcome, ids
    guarded = system == HAND_CHECK
    check = (f"ifGenerationMatch={message['generation']}; on 412 list versions for job_id={message['job_id']}"
             if guarded else None)
    log = SendLog(case_dir, system, phase)
    log.add("send", object=message["object"], check=check)
    hook.reach(crash.BEFORE_SEND if phase == DECIDE else crash.RECOVERY_BEFORE_RESEND)
    hook.reach(crash.BEFORE_REQUEST)
    blob = client.bucket(message["bucket"]).blob(message["object"])
    blob.metadata = message["metadata"]
    precondition = {"if_generation_match": int(message["generation"])} if guarded else {}
    try:
        planted.strike(planted.BEFORE_REQUEST)
        blob.upload_from_string(message["body"], content_type="application/json", retry=None, **precondition)
        planted.strike(planted.AFTER_APPLY)
    except PreconditionFailed:
        outcome, ids = _earlier_delivery(client, message)
    else:
        hook.reach(crash.AFTER_COMMIT)
        outcome, ids = outcomes.WRITTEN, {"generation": str(blob.generation)}
    log.add("result", outcome=outcome, ids=ids)
    queue.ack(message, outcome, ids)
    return outcome, ids


def _earlier_delivery(client: storage.Client, message: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The 412 came from someone's newer write, or from this very job landing before a crash: the uploads that
    carry this job's id in the version listing tell which."""
    bucket, name = message["bucket"], message["object"]
    mine = [str(b.generation) for b in sorted(client.list_blobs(bucket, prefix=name, versions="true"),
                                              key=lambda b: b.generation)
            if b.name == name and (b.metadata or {}).get("job_id") == message["job_id"]]
    try:
        live = client.bucket(bucket).get_blob(name)
    except NotFound:
        live = None
    ids = {"writes_found": mine, "live_generation": str(live.generation) if live else None,
           "live_writer": (live.metadata or {}).get(WRITER_KEY) if live else None}
    return (outcomes.ALREADY_APPLIED if mine else outcomes.PRECONDITION_FAILED), ids
