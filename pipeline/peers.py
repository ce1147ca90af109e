"""What a peer's own record establishes: DBOS's system database rows for the job's workflow, or the Powertools
idempotency record for the job's key, as the harness read them after the last worker exited (or, in a cell saved
without that reading, as the last worker left them).

The reading follows the rule every other record is read by. The actor and the check are what the record itself
names: DBOS keeps the workflow's input, so the request it sent (its writer, its precondition) is on record;
Powertools keeps the response and a hash of the payload, so it names neither. The list of writes comes from the
one answer the record keeps (the step's checkpointed output, the COMPLETED record's data): a landed answer names its
generation or event id, a refusal names none, and a record still in progress or an answer that is an error cannot
say. The record cannot show an attempt whose answer it never stored; comparing its list with the service's is what
shows such an attempt.
"""

from __future__ import annotations

import json

from .load import Node
from .model import RecordSays
from .outcomes import claim

DBOS_STEP, POWERTOOLS_IDEMPOTENT = "dbos_step", "powertools_idempotent"
PEERS = {DBOS_STEP: "DBOS system database rows", POWERTOOLS_IDEMPOTENT: "Powertools idempotency record"}
# Newest reading first: the harness's, taken after the last worker exited, then the last worker's own (the restart
# worker's when there is one), each under the key holding the record as read.
RECORD_FILES = {"peer_record_after_run.json": "record", "peer_record_restart.json": "left",
                "peer_record_decide.json": "left"}
_UNFINISHED = {"PENDING", "ENQUEUED"}


def _says(source: str, actor: str | None, checks: tuple[str | None, ...], sends: int,
          writes: tuple[str, ...] | None, why: str | None, shown: tuple[tuple[str, str], ...],
          unresolved: int = 0) -> RecordSays:
    return RecordSays(source, actor, checks, sends, 0 if checks else sends, writes, unresolved, None, why, shown)


def _answer(answer: Node) -> tuple[tuple[str, ...] | None, str | None]:
    """The writes one stored answer `{outcome, ids}` names, or None and why it cannot say."""
    outcome = answer.get("outcome", "string")
    landed = claim(answer.at("outcome"))
    if landed is None:
        return None, f"the stored answer {outcome} cannot say whether the request landed"
    if not landed:
        return (), None
    ids = answer.opt_node("ids")
    named = (ids.opt("generation", "string") or ids.opt("event_id", "string")) if ids is not None else None
    if named is None:
        return None, f"the stored answer {outcome} reports a landed write without naming it"
    return (named,), None


def _request_facts(request: Node) -> tuple[str | None, str | None]:
    """(the writer, the precondition) a recorded request carries; the calendar insert carries neither."""
    metadata = request.opt_node("metadata")
    writer = metadata.opt("writer", "string") if metadata is not None else None
    generation = request.opt("if_generation_match", "string")
    return writer, f"ifGenerationMatch={generation}" if generation is not None else None


def dbos_record(left: Node) -> RecordSays:
    """The workflow's status, its recorded input (who writes, with which precondition) and its step's output."""
    source = left.path
    statuses = left.at("workflow_status").items()
    if not statuses:
        return _says(source, None, (), 0, (), None, (("workflow", "no row: DBOS never started it"),))
    workflow = statuses[0]
    status = workflow.get("status", "string")
    attempts = workflow.opt("recovery_attempts", "integer")
    shown = [("workflow status", status), ("recovery attempts", "not recorded" if attempts is None else str(attempts))]
    actor = workflow.opt("authenticated_user", "string")
    checks: tuple[str | None, ...] = ()
    inputs = left.at("workflow_input").items()
    if inputs:
        request = inputs[0].at("inputs").at("positionalArgs").items()[0]
        writer, check = _request_facts(request)
        actor, checks = actor or writer, (check,)
        shown.append(("recorded input", json.dumps(request.value, sort_keys=True)))
    steps = left.at("operation_outputs").items()
    for step in steps:
        name = step.opt("function_name", "string") or "step"
        error = step.opt_node("error")
        shown.append((f"step {name} {'error' if error else 'output'}",
                      json.dumps((error or step.at("output")).value, sort_keys=True)))
    if not steps:
        if status in _UNFINISHED:
            return _says(source, actor, checks, 0, None, f"the workflow is {status} and its step stored no output",
                         tuple(shown), unresolved=1)
        return _says(source, actor, checks, 0, None, f"the workflow ended {status} with no step output stored",
                     tuple(shown))
    last = steps[-1]
    if last.opt_node("error") is not None:
        return _says(source, actor, checks, len(steps), None,
                     "its step stored an error, not an answer",
                     tuple(shown))
    writes, why = _answer(last.at("output"))
    return _says(source, actor, checks, len(steps), writes, why, tuple(shown))


def powertools_record(left: Node) -> RecordSays:
    """The key's stored record: COMPLETED with the function's response, INPROGRESS, or nothing at all."""
    source = left.path
    value = left.opt_node("value")
    if value is None:
        return _says(source, None, (), 0, None, "Redis holds no record for the key (Powertools deletes it when the "
                     "function raises; it expires after expires_after_seconds)", (("record", "none"),))
    status = value.get("status", "string")
    shown = (("record status", status), ("stored response", value.opt("data", "string") or "none"))
    if status != "COMPLETED":
        return _says(source, None, (), 1, None, f"the record is {status}: the call it stands for stored no answer",
                     shown, unresolved=1)
    data = value.at("data")
    try:
        response = json.loads(data.expect("string"))
    except ValueError:
        raise data.bad("the COMPLETED record's data is not JSON") from None
    writes, why = _answer(Node(response, f"{data.path} (parsed)", data.file))
    return _says(source, None, (), 1, writes, why, shown)


def peer_record(files: Node, system: str) -> RecordSays:
    """What the peer's saved record establishes, from the newest reading the cell keeps."""
    name = next((name for name in RECORD_FILES if files.has(name)), None)
    if name is None:
        return RecordSays(files.child_path(next(iter(RECORD_FILES))), None, (), 0, 0, None, 0, None,
                          f"the cell keeps no record of the peer ({PEERS[system]})")
    left = files.at(name).at(RECORD_FILES[name])
    if left.value is None:
        return RecordSays(left.path, None, (), 0, 0, None, 0, None, "the worker left no reading of the record")
    return (dbos_record if system == DBOS_STEP else powertools_record)(left)
