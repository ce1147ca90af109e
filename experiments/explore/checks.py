"""What must hold after every schedule, checked from its stored history row alone: the service's ground truth
against the workers' answers and the system's own record. No service is reached here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from interlock import verify
from interlock.kinds import open_send
from experiments.outcomes import UnknownOutcome, claims_landed

VIOLATIONS = {
    "duplicate_effect": "the service holds the effect more than once",
    "after_premise_moved": "the agent's write landed after the fact it was decided on changed",
    "after_lease_ended": "the agent's write landed after its authority (incident, request) ended",
    "unresolved_dispatch": "a send is still unresolved in the system's own record after recovery returned",
    "receipt_invalid": "the gate's receipt for the effect does not verify",
    "receipt_disagrees": "the receipt says the effect happened, or did not, and the service says otherwise",
    "receipt_cannot_say": "the receipt cannot say whether the effect happened (the service can)",
    "damage_accepted": "the gate opened a journal cut into what it had flushed instead of refusing it",
    "answer_wrong": "a worker reported landed when it did not, or not landed when it did",
    "answer_cannot_say": "a recoverer ended without a definite answer (AMBIGUOUS, IN_FLIGHT, or no status)",
    "unknown_outcome": "a worker printed a status outside the outcome vocabulary",
    "worker_error": "a worker timed out or died of an unexpected error",
    "service_unsettled": "the service still held a write of the effect when its truth was read",
}
# The rules a hazard is there to test (the counts the reliability page leads with).
SAFETY = ("duplicate_effect", "after_premise_moved", "after_lease_ended", "receipt_disagrees", "answer_wrong")
PREMISE_ACTIONS = frozenset({"human_write", "slot_taken", "balance_moved"})
# A baseline's log line that settles a job (gcp_resource and ledger write "result", calendar "finished").
BASELINE_RESULTS = frozenset({"result", "finished"})
# Workers that may rightly end without a definite answer: the first senders, and recoverers that ran while
# another worker was held (they leave the effect to it); the last recoverers must settle it.
MAY_DEFER = frozenset({"chain", "concurrent"})


@dataclass(frozen=True)
class Violation:
    """One broken rule in one run."""

    kind: str
    detail: str


def check(row: dict[str, Any]) -> list[Violation]:
    """Every rule the run broke (empty when it held)."""
    truth = row["truth"]
    writes, live = truth["writes"], truth["live"]
    found: list[Violation] = []
    if live > 1 or len(writes) > 1:
        found.append(Violation("duplicate_effect", f"{len(writes)} agent write(s) committed, {live} live"))
    if row["acted_at"] is not None:
        late = [w for w, at in writes if at > row["acted_at"]]
        kind = "after_premise_moved" if row["schedule"]["action"] in PREMISE_ACTIONS else "after_lease_ended"
        if late:
            found.append(Violation(kind, f"agent write(s) {late} after {row['schedule']['action']} {row['acted']}"))
    if truth.get("settled") is False:
        found.append(Violation("service_unsettled", "a write was still pending at the service after its longest "
                                                    "delay"))
    found += _answers(row, _landed(truth))
    found += _record(row, _landed(truth))
    for ran in row["ran"]:
        if (ran["traceback"] and not ran["refused_journal"]) or ran["timed_out"]:
            tail = ran["stderr"][-1:] or ["timed out"]
            found.append(Violation("worker_error", f"{ran['stage']} {ran['index']}: {tail[0][:200]}"))
    return found


def crash_could_leave(cut: dict[str, Any]) -> bool:
    """Whether a crash could have left the journal as the cut did: torn inside its last line, or cut anywhere past
    the end of what its witness saw flushed (`durable`; a run that did not record it is held to the last line)."""
    durable = cut.get("durable")
    return bool(cut["inside_last_line"]) or (durable is not None and cut["kept"] >= durable)


def _landed(truth: dict[str, Any]) -> bool:
    return bool(truth["writes"]) or truth["live"] > 0


def _answers(row: dict[str, Any], at_service: bool) -> list[Violation]:
    found = []
    for ran in row["ran"]:
        outcome, who = ran["outcome"], f"{ran['stage']} {ran['index']}"
        if outcome is None:
            if ran["stage"] not in MAY_DEFER and not ran["timed_out"] and not ran["refused_journal"]:
                said = (ran["stderr"] or ["nothing on stderr"])[-1][:200]
                found.append(Violation("answer_cannot_say", f"{who} exited {ran['exit_code']} with no status ({said})"))
            continue
        try:
            claim = claims_landed(outcome)
        except UnknownOutcome:
            found.append(Violation("unknown_outcome", f"{who} printed {outcome!r}"))
            continue
        if claim is None and ran["stage"] not in MAY_DEFER:
            found.append(Violation("answer_cannot_say", f"{who} answered {outcome}"))
        elif claim is not None and claim != at_service:
            found.append(Violation("answer_wrong", f"{who} answered {outcome}, the service "
                                                   f"{'holds' if at_service else 'does not hold'} the effect"))
    return found


def _record(row: dict[str, Any], at_service: bool) -> list[Violation]:
    """The gate's journal (open dispatch, receipt, a cut it accepted) or the baselines' log (a send, no result)."""
    record = row["record"]
    if not row["system"].startswith("interlock"):
        if record["events"] is None:  # no send log to hold against the service
            return []
        sends = sum(event == "send" for event in record["events"])
        results = sum(event in BASELINE_RESULTS for event in record["events"])
        if sends > results:
            return [Violation("unresolved_dispatch", f"log holds {sends} send(s) and {results} result(s)")]
        return []
    found = []
    cut = row["journal_cut"]
    if cut is not None and cut["kept"] < cut["size"]:
        refused = [r for r in row["ran"] if r["refused_journal"]]
        opened = [r for r in row["ran"] if r["stage"] not in MAY_DEFER and r["outcome"] is not None]
        if opened and not refused and not crash_could_leave(cut):
            found.append(Violation("damage_accepted", f"journal cut to {cut['kept']} of {cut['size']} bytes "
                                                      f"({cut['lines_kept']} of {cut['lines']} lines) and opened"))
        if refused:  # the record is the harness's damage, refused: nothing more to read in it. A cut inside the
            return found  # last line may be refused too, when a flush had covered that line: no crash tears it
    entries = record["entries"]
    if not entries:
        return found
    if open_send(entries):
        found.append(Violation("unresolved_dispatch", "the journal ends with a send and no resolution"))
    receipt = verify({"effect_id": row["effect_id"], "entries": entries})
    if not receipt["valid"] and (cut is None or crash_could_leave(cut) or cut["kept"] == cut["size"]):
        found.append(Violation("receipt_invalid", "; ".join(receipt["problems"])[:300]))
    if not isinstance(receipt["happened"], bool):
        found.append(Violation("receipt_cannot_say", f"receipt happened={receipt['happened']!r}, service "
                                                     f"{'holds' if at_service else 'does not hold'} it"))
    elif receipt["happened"] != at_service:
        found.append(Violation("receipt_disagrees", f"receipt happened={receipt['happened']!r}, service "
                                                    f"{'holds' if at_service else 'does not hold'} it"))
    return found
