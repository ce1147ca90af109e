"""What the pipeline knows about each scenario beyond its files: titles, wording, and what each fault wants."""

from __future__ import annotations

from dataclasses import dataclass

from .load import Node

GATE = "interlock"


@dataclass(frozen=True)
class Spec:
    """Fixed facts of one scenario."""

    name: str
    title: str
    holds: str  # how the verdict names the service's state, "what GCS holds"
    writes_word: str  # "agent write(s)" / "agent event(s)"


GCP = Spec("gcp_resource", "agent rollback vs. a human redeploy, Google Cloud Storage", "what the object store holds",
           "agent write(s)")
CALENDAR = Spec("calendar", "double booking on Google Calendar", "what the calendar holds", "agent event(s)")
SPECS = {GCP.name: GCP, CALENDAR.name: CALENDAR}

# Published gcp faults: (agent writes wanted, who should own the live object). Cells of other faults say so
# themselves with `want_agent_writes` and `want_live_writer`.
GCP_WANTS = {
    "crash_before_send_redeploy": (0, "human-redeploy"),
    "crash_after_commit_redeploy": (1, "human-redeploy"),
    "crash_after_commit_no_change": (1, "agent"),
}


def scenario_name(top: Node) -> str:
    """The scenario a file holds: `scenario` in the project's files and gcp's, `key` in the published calendar."""
    key = "scenario" if top.has("scenario") else "key"
    node = top.at(key)
    name = node.expect("string")
    if name not in SPECS:
        raise node.bad(f"unknown scenario {name!r} (known: {', '.join(SPECS)})")
    return name


def gcp_want(cell: Node, fault: str) -> tuple[int, str]:
    """Agent writes wanted and the wanted owner of the live object for a gcp cell."""
    if cell.has("want_agent_writes") or fault not in GCP_WANTS:
        return cell.get("want_agent_writes", "integer"), cell.get("want_live_writer", "string")
    return GCP_WANTS[fault]


def calendar_want(crash_point: str, outage_action: str) -> int:
    """One agent event after a commit or with no outage change, none when the slot was taken or the request gone."""
    return 1 if crash_point == "after_commit" or outage_action == "none" else 0
