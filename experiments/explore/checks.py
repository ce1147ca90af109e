"""What must hold after every schedule, checked against the service's ground truth, never against a record."""

from __future__ import annotations

from dataclasses import dataclass

from interlock import verify
from interlock.kinds import open_send
from interlock.outcomes import UnknownOutcome, landed

from experiments.explore.runner import Observation

VIOLATIONS = {
    "duplicate_effect": "the service holds the effect more than once",
    "after_premise_moved": "the agent's write landed after the fact it was decided on changed",
    "after_lease_ended": "the agent's write landed after its authority (incident, request) ended",
    "unresolved_dispatch": "a send is still unresolved in the system's own record after recovery returned",
    "receipt_invalid": "the gate's receipt for the effect does not verify",
    "receipt_disagrees": "the receipt's `happened` differs from the service",
    "answer_wrong": "a worker reported landed when it did not, or not landed when it did",
    "answer_cannot_say": "a recoverer ended without a definite answer (AMBIGUOUS, IN_FLIGHT, or no status)",
    "unknown_outcome": "a worker printed a status outside the outcome vocabulary",
    "worker_error": "a worker timed out or died of an unexpected error",
}
PREMISE_ACTIONS = frozenset({"human_write", "slot_taken"})
# A baseline's log line that settles a job (gcp_resource writes "result", calendar "finished").
BASELINE_RESULTS = frozenset({"result", "finished"})


@dataclass(frozen=True)
class Violation:
    """One broken rule in one run."""

    kind: str
    detail: str


def check(seen: Observation) -> list[Violation]:
    """Every rule the run broke (empty when it held)."""
    truth = seen.truth
    assert truth is not None, "check() needs a finished run"
    found: list[Violation] = []
    if truth.live > 1 or len(truth.writes) > 1:
        found.append(Violation("duplicate_effect", f"{len(truth.writes)} agent write(s) committed, {truth.live} live"))
    if seen.acted_at is not None:
        late = [w for w, at in truth.writes if at > seen.acted_at]
        kind = ("after_premise_moved" if seen.schedule.action in PREMISE_ACTIONS else "after_lease_ended")
        if late:
            found.append(Violation(kind, f"agent write(s) {late} after {seen.schedule.action} {seen.acted}"))
    found += _answers(seen)
    found += _record(seen)
    for ran in seen.ran:
        error = "Traceback" in ran.finished.stderr or ran.finished.timed_out
        if error:
            tail = ran.finished.stderr.strip().splitlines()[-1:] or ["timed out"]
            found.append(Violation("worker_error", f"{ran.stage} {ran.index}: {tail[0][:200]}"))
    return found


def _answers(seen: Observation) -> list[Violation]:
    truth = seen.truth
    found = []
    for ran in seen.ran:
        outcome = ran.finished.outcome
        if outcome is None:
            if ran.stage == "recoverer" and not ran.finished.timed_out:
                said = (ran.finished.stderr.strip().splitlines() or ["nothing on stderr"])[-1][:200]
                found.append(Violation("answer_cannot_say", f"recoverer {ran.index} exited {ran.finished.exit_code} "
                                                            f"with no status ({said})"))
            continue
        try:
            claim = landed(outcome)
        except UnknownOutcome:
            found.append(Violation("unknown_outcome", f"{ran.stage} {ran.index} printed {outcome!r}"))
            continue
        if claim is None and ran.stage == "recoverer":
            found.append(Violation("answer_cannot_say", f"recoverer {ran.index} answered {outcome}"))
        elif claim is not None and claim != truth.landed:
            found.append(Violation("answer_wrong", f"{ran.stage} {ran.index} answered {outcome}, the service "
                                                   f"{'holds' if truth.landed else 'does not hold'} the effect"))
    return found


def _record(seen: Observation) -> list[Violation]:
    """The gate's journal (open dispatch, receipt) or the baselines' log (a send with no result)."""
    if not seen.system.startswith("interlock"):
        sends = sum(line.get("event") == "send" for line in seen.log)
        results = sum(line.get("event") in BASELINE_RESULTS for line in seen.log)
        if sends > results:
            return [Violation("unresolved_dispatch", f"log holds {sends} send(s) and {results} result(s)")]
        return []
    entries = [e for e in seen.journal if e.get("effect_id") == seen.case.effect_id]
    if not entries:
        return []
    found = []
    if open_send(entries):
        found.append(Violation("unresolved_dispatch", "the journal ends with a send and no resolution"))
    receipt = verify({"effect_id": seen.case.effect_id, "entries": entries})
    if not receipt["valid"]:
        found.append(Violation("receipt_invalid", "; ".join(receipt["problems"])[:300]))
    if receipt["happened"] != seen.truth.landed:
        found.append(Violation("receipt_disagrees", f"receipt happened={receipt['happened']!r}, service "
                                                    f"{'holds' if seen.truth.landed else 'does not hold'} it"))
    return found
