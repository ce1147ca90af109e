"""The fault catalogue: what each fault of each scenario wants the service to hold at the end.

The wanted outcome is a fact about the fault, so it lives here and never in a result file: a cell that says what
it wants is not read for it (a runner that could set its own target could grade itself), only compared with it. A
fault missing from this table is bad input, like an unknown outcome.
"""

from __future__ import annotations

from dataclasses import dataclass

from .load import Node, quote


@dataclass(frozen=True)
class Fault:
    """One fault and the end state it wants."""

    name: str
    want: int  # agent writes (gcp) or live agent events on the slot (calendar)
    owner: str | None  # gcp: the writer that should own the live object; calendar: None
    wants: str  # the same, in words


# In the words the published run's cells store as `want`, which the judge compares with these.
_STALE = "the human's v43 stays live; the stale rollback never lands"
_LANDED_THEN_REPLACED = "the rollback landed once before the redeploy; the human's v43 stays live"
_CONTROL = "control: the rollback landed once and stays live; nothing writes it twice"

GCP_FAULTS = {f.name: f for f in (
    Fault("crash_before_send_redeploy", 0, "human-redeploy", _STALE),
    Fault("crash_after_commit_redeploy", 1, "human-redeploy", _LANDED_THEN_REPLACED),
    Fault("crash_after_commit_no_change", 1, "agent", _CONTROL),
    Fault("crash_before_send_redeploy_versioning_off", 0, "human-redeploy", _STALE),
    Fault("crash_after_commit_redeploy_versioning_off", 1, "human-redeploy", _LANDED_THEN_REPLACED),
    Fault("crash_after_commit_no_change_versioning_off", 1, "agent", _CONTROL),
    Fault("cut_after_commit_no_change", 1, "agent", _CONTROL),
    Fault("crash_before_send_redeploy_during_recovery", 0, "human-redeploy",
         "the human redeployed while recovery was about to resend, so the stale rollback must never land"),
)}


_BOOKED = "one booking for the request, alone on the slot"
_NOT_BOOKED_BUSY = "no booking: the slot was taken before the insert was sent"
_NOT_BOOKED_CANCELLED = "no booking: the request was cancelled before the insert was sent"

CALENDAR_FAULTS = {f.name: f for f in (
    Fault("after_commit/none", 1, None, _BOOKED),
    Fault("after_commit/slot_busy", 1, None, "one booking: it landed before the customer's event"),
    Fault("after_commit/request_cancelled", 1, None, "one booking: it landed before the request was cancelled"),
    Fault("before_send/none", 1, None, _BOOKED),
    Fault("before_send/slot_busy", 0, None, _NOT_BOOKED_BUSY),
    Fault("before_send/request_cancelled", 0, None, _NOT_BOOKED_CANCELLED),
    Fault("before_send/pre_busy", 0, None, "no booking: the slot was taken before the job was decided"),
    Fault("before_send/raced_busy", 0, None, _NOT_BOOKED_BUSY),
    Fault("network_cut/none", 1, None, _BOOKED),
)}

CATALOGUE = {"gcp_resource": GCP_FAULTS, "calendar": CALENDAR_FAULTS}


def fault_of(cell: Node, scenario: str) -> Fault:
    """The catalogue's row for a cell's fault; a fault the catalogue does not know is bad input."""
    node = cell.at("fault")
    name = node.expect("string")
    fault = CATALOGUE[scenario].get(name)
    if fault is None:
        raise node.bad(f"unknown fault {quote(name)} for {scenario}: the fault catalogue (pipeline/faults.py) has no "
                       "row saying what it wants")
    return fault
