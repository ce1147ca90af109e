"""What the pipeline knows about each scenario beyond its files: titles and the wording of each fault's setting."""

from __future__ import annotations

from dataclasses import dataclass

from .load import Node, quote
from .model import Service

GATE = "interlock"


@dataclass(frozen=True)
class Spec:
    """Fixed facts of one scenario."""

    name: str
    subject: str  # the title with `{service}` where the service goes
    role: str  # the provenance role of the scenario's service
    real_service: str  # its name when the run talked to the real one
    standin: str  # its name when the run talked to the local stand-in
    holds: str  # how the verdict names the service's state, "what the object store holds"
    writes_word: str  # "agent write(s)" / "agent event(s)"

    def title(self, services: tuple[Service, ...]) -> str:
        """The title of a run: the real service only when the run used it; a stand-in or scripted decider named."""
        by_role = {s.role: s for s in services}
        service = by_role.get(self.role)
        title = self.subject.format(service=self.real_service if service and service.real else self.standin)
        model = by_role.get("model")
        return title if model is None or model.real else f"{title} (scripted decider)"


GCP = Spec("gcp_resource", "agent rollback vs. a human redeploy, {service}", "object_store", "Google Cloud Storage",
           "a fake-gcs-server stand-in for Google Cloud Storage", "what the object store holds", "agent write(s)")
CALENDAR = Spec("calendar", "double booking on {service}", "calendar", "Google Calendar", "a Calendar v3 stand-in",
                "what the calendar holds", "agent event(s)")
SPECS = {GCP.name: GCP, CALENDAR.name: CALENDAR}

def scenario_name(top: Node) -> str:
    """The scenario a file holds: `scenario` in the project's files and gcp's, `key` in the published calendar."""
    key = "scenario" if top.has("scenario") else "key"
    node = top.at(key)
    name: str = node.expect("string")  # expect() has checked it is a string
    if name not in SPECS:
        raise node.bad(f"unknown scenario {quote(name)} (known: {', '.join(SPECS)})")
    return name


_GCP_CRASH = {"before_send": "the first worker is SIGKILLed right before its upload",
              "after_commit": "the first worker is SIGKILLed after the store committed its upload, before anything "
                              "recorded that"}
_GCP_REDEPLOY = {"outage": "a human redeploys v43 during the outage, with no precondition",
                 "recovery": "raced recovery: the human redeploys v43 while the restart worker is paused right "
                             "before its resend"}
_CUT_PHRASE = ("no SIGKILL, the connection is cut after the {service} committed the agent's {write}, so the first "
               "worker never reads the answer; a restart worker follows, as after every fault, and the answer scored "
               "is the last worker's")
_CALENDAR_CRASH = {"before_send": "the first worker is SIGKILLed right before its insert",
                   "after_commit": "the first worker is SIGKILLed right after Calendar answered its insert",
                   "network_cut": _CUT_PHRASE.format(service="calendar", write="insert")}
_CALENDAR_ACTION = {
    "none": "nothing changes during the outage",
    "slot_busy": "a customer event lands on the slot during the outage",
    "request_cancelled": "the booking request is cancelled during the outage",
    "pre_busy": "a customer event is on the slot before the job is decided, so a system that refuses there never "
                "reaches the crash point",
    "raced_busy": "raced, no SIGKILL, the worker pauses between its check and its insert while a customer event "
                  "lands, then goes on; a restart worker follows, as after every fault, and the answer scored is the "
                  "last worker's",
}


def _published_gcp_crash(fault: str) -> str | None:
    """The published gcp files name the crash point only in the fault name."""
    return next((point for point in _GCP_CRASH if fault.startswith(f"crash_{point}")), None)


def gcp_setting(cell: Node, fault: str) -> tuple[str, ...]:
    """What a gcp fault does, from the cell's own settings (the fault name for the published files)."""
    phrases = []
    if cell.opt("connection_cut_after_commit", "boolean", False):
        phrases.append(_CUT_PHRASE.format(service="store", write="upload"))
    else:
        crash = cell.opt("crash_point", "string") or _published_gcp_crash(fault)
        if crash:
            phrases.append(_GCP_CRASH.get(crash, f"the first worker is SIGKILLed at {crash}"))
    default = "outage" if "redeploy" in fault and not cell.has("human_redeploy") else None
    redeploy = cell.opt("human_redeploy", "string", default)
    phrases.append(_GCP_REDEPLOY.get(redeploy, f"the human redeploys ({redeploy})") if redeploy
                   else "nobody else writes the object")
    if cell.opt("object_versioning", "boolean", True) is False:
        phrases.append("object versioning is off: a replaced generation leaves no trace in the listing, so ground "
                       "truth is the recording proxy's write log, and a lookup in the version listing cannot find a "
                       "write that a later one replaced")
    return tuple(phrases)


def calendar_setting(crash_point: str, outage_action: str) -> tuple[str, ...]:
    """What a calendar fault does, from its crash point and outage action."""
    action = _CALENDAR_ACTION.get(outage_action, f"outage action {outage_action}")
    if outage_action.startswith("raced"):
        return (action,)
    return (_CALENDAR_CRASH.get(crash_point, f"the first worker is SIGKILLed at {crash_point}"), action)


def trigger(exits: tuple[int, ...], cut: bool, raced: bool) -> str:
    """How the fault struck the first worker: SIGKILL, a cut connection, a raced pause, or not at all."""
    if exits and exits[0] == -9:
        return "sigkill"
    return "network_cut" if cut else "raced" if raced else "no_crash"
