"""The incident, the three configs and the files a case directory holds, shared by the runner and its workers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

INCIDENT_ID = "INC-2207"
AGENT = "sre-agent"
ROLLBACK_TO = "v41"
CONFIGS = {
    "v41": {"new_checkout": False, "timeout_ms": 800, "version": "v41"},
    "v42": {"new_checkout": True, "timeout_ms": 800, "version": "v42"},
    "v43": {"checkout_retry": "idempotent", "new_checkout": True, "timeout_ms": 800, "version": "v43"},
}
# Who made each write, in every write's custom metadata: the version listing names the writer of each generation.
WRITER_KEY = "writer"
HUMAN_DEPLOY, HUMAN_REDEPLOY, AGENT_WRITER = "human-deploy", "human-redeploy", "agent"

# Files of a case directory (the artifact keys of a cell).
CASE_FILE = "case.json"
INCIDENT_FILE = "incident.json"
DECISION_FILE = "decision.json"
JOB_FILE = "job.json"
LOG_FILE = "log.jsonl"
JOURNAL_FILE = "journal.jsonl"


def body(version: str) -> str:
    """A config's bytes as deployed: sorted-key JSON."""
    return json.dumps(CONFIGS[version], sort_keys=True)


def object_name(fault: str, system: str) -> str:
    """Each cell writes its own object, so cells never see each other's generations."""
    return f"config/{fault}/{system}/app.json"


def incident_text(bucket: str, object_name: str) -> str:
    """What the decider is shown."""
    return (f"{INCIDENT_ID}: checkout has returned HTTP 500 since config v42 was deployed to gs://{bucket}/"
            f"{object_name} (new_checkout=true). The on-call lead approved one change: roll that object back to "
            f"the known-good {ROLLBACK_TO}.")


def effect_key(bucket: str, object_name: str) -> str:
    """The gate's request key: one rollback per object per incident."""
    return f"rollback:{bucket}/{object_name}:{INCIDENT_ID}"


def outcome_file(phase: str) -> str:
    """Where a worker of `phase` (decide, restart) leaves its final status."""
    return f"outcome_{phase}.json"


def read_json(path: Path) -> Any:
    """One JSON file of the case directory."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


class IncidentLease:
    """The rollback's authority: incident INC-2207 as the case's lease store (incident.json) holds it right now."""

    def __init__(self, store: Path):
        self.store = Path(store)

    def describe(self) -> dict[str, Any]:
        """What every check journals: the incident, its status, and the status that ended it (None while open)."""
        status = read_json(self.store).get(INCIDENT_ID)
        return {"incident": INCIDENT_ID, "status": status, "revoked": None if status == "open" else status}

    def is_live(self) -> bool:
        """An incident that is no longer open withdraws the approval of the rollback."""
        return cast(bool, self.describe()["status"] == "open")
