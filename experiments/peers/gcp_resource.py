"""The gcp_resource scenario's write as the peers send it: the decided rollback, uploaded with the generation the
agent saw as `ifGenerationMatch`.

That precondition is the one the store itself offers and the hand-written check also sends; the peers pass it
through (the fair setup for a peer that cannot see the object), and add nothing else: no lookup after a 412.
The queued job (peer_job.json) is written once by the first worker, as an at-least-once queue would hold it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google.api_core.exceptions import PreconditionFailed
from google.cloud import storage

from experiments.gcp_resource.case import (AGENT_WRITER, CASE_FILE, DECISION_FILE, INCIDENT_ID, WRITER_KEY, body,
                                           read_json)
from experiments.atomic import write_json
from experiments.peers.job import PeerJob
from experiments.peers.points import Points
from experiments.peers.run import run_peer

JOB_FILE = "peer_job.json"
WRITTEN, REFUSED = "WRITTEN", "PRECONDITION_FAILED"


def run(system: str, phase: str, case_dir: Path, client: storage.Client,
        reach: Callable[[str], None]) -> tuple[str, dict[str, Any]]:
    """One worker's turn at the cell's job with the peer `system`: its outcome and what it saw."""
    return run_peer(system, phase, case_dir, peer_job(case_dir, phase, client, reach))


def peer_job(case_dir: Path, phase: str, client: storage.Client, reach: Callable[[str], None]) -> PeerJob:
    """The cell's job: enqueued from the decision by the first worker, read back by every later one."""
    path = Path(case_dir) / JOB_FILE
    if not path.exists():
        case, decision = read_json(case_dir / CASE_FILE), read_json(case_dir / DECISION_FILE)
        job_id = uuid.uuid4().hex
        write_json(path, {"job_id": job_id, "request": {
            "bucket": case["bucket"], "object": case["object"], "body": body(decision["to_version"]),
            "metadata": {WRITER_KEY: AGENT_WRITER, "incident": INCIDENT_ID, "job_id": job_id},
            "if_generation_match": str(decision["generation"])}})
    job = read_json(path)
    points = Points(phase, reach)
    return PeerJob(job["job_id"], job["request"], lambda request: _send(client, request, points))


def _send(client: storage.Client, request: dict[str, Any], points: Points) -> tuple[str, dict[str, Any]]:
    """One upload; a 412 is the store's refusal, anything without an answer raises."""
    blob = client.bucket(request["bucket"]).blob(request["object"])
    blob.metadata = request["metadata"]
    points.before_request()
    try:
        blob.upload_from_string(request["body"], content_type="application/json", retry=None,
                                if_generation_match=int(request["if_generation_match"]))
    except PreconditionFailed:
        return REFUSED, {"refused": f"412 on ifGenerationMatch={request['if_generation_match']}"}
    points.after_answer()
    return WRITTEN, {"generation": str(blob.generation)}
