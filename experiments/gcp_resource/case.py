"""The incident, the three configs and the files a case directory holds, shared by the runner and its workers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
CRASH_MARKER = "crashed_at"
PAUSE_FILE = "paused"


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


@dataclass(frozen=True)
class IncidentLease:
    """The open incident is the authority for the rollback: the lease store is the case's incident.json."""

    path: Path
    incident: str = INCIDENT_ID

    def status(self) -> str | None:
        """The incident's status in the lease store, None when the store does not name it."""
        return read_json(self.path).get(self.incident)

    def is_live(self) -> bool:
        """Live while the incident is open."""
        return self.status() == "open"

    def describe(self) -> dict[str, Any]:
        """Journaled with every check."""
        status = self.status()
        return {"incident": self.incident, "status": status, "revoked": None if status == "open" else status}
