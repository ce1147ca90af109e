"""The calendar scenario's write as the peers send it: the decided booking, inserted under the client-chosen event id
the baselines use, so Calendar answers 409 to a second insert of the same request.

The event id is the dedupe key Calendar offers; the peers pass it through and add nothing else: no freeBusy or
request check before a resend, no lookup after a 409.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from googleapiclient.errors import HttpError

from experiments.calendar.request import baseline_event_id, event_body
from experiments.peers.job import PeerJob
from experiments.peers.points import Points
from experiments.peers.run import run_peer

CASE_FILE, DECISION_FILE = "case.json", "decision.json"
BOOKED, ALREADY_EXISTS = "BOOKED", "ALREADY_EXISTS_409"


def run(system: str, phase: str, case_dir: Path, service: Any,
        reach: Callable[[str], None]) -> tuple[str, dict[str, Any]]:
    """One worker's turn at the cell's booking with the peer `system` (the decision already persisted)."""
    return run_peer(system, phase, case_dir, peer_job(case_dir, phase, system, service, reach))


def peer_job(case_dir: Path, phase: str, system: str, service: Any, reach: Callable[[str], None]) -> PeerJob:
    """The cell's job: the booking request's id is the job id; the request is the event as decided."""
    case = json.loads((Path(case_dir) / CASE_FILE).read_text())
    decision = json.loads((Path(case_dir) / DECISION_FILE).read_text())
    request_id = case["request_id"]
    request = {"calendar_id": case["calendar_id"],
               "event": {**event_body(system, request_id, decision), "id": baseline_event_id(request_id)}}
    points = Points(phase, reach)
    return PeerJob(request_id, request, lambda sent: _send(service, sent, points))


def _send(service: Any, request: dict[str, Any], points: Points) -> tuple[str, dict[str, Any]]:
    """One events.insert; a 409 is Calendar's refusal of a taken id, anything without an answer raises."""
    event_id = request["event"]["id"]
    points.before_request()
    try:
        service.events().insert(calendarId=request["calendar_id"], body=request["event"]).execute(num_retries=0)
    except HttpError as exc:
        if exc.resp.status != 409:
            raise
        return ALREADY_EXISTS, {"event_id": event_id}
    points.after_answer()
    return BOOKED, {"event_id": event_id}
