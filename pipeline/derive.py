"""derive(): one result file in, one judged Scenario out, from the raw artifacts alone.

Every scored column is derived here: the outcome from the worker's own outcome file, the wanted end state from the
fault catalogue, ground truth from the service's listing, what the record says from the system's own record, the
seconds from the run's clock readings. Columns a file stores besides (the published files store them all) are only
compared with the derived ones, and each difference is kept as a disagreement.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from . import judge, peers, record, score
from .commits import commit_said
from .machine import cores_said, load_said
from .digests import is_published
from .disagreements import disagreements
from .faults import fault_of
from .load import Node, quote, read
from .model import Cell, Decision, Provenance, Scenario, Service
from .outcomes import claim
from .raced import raced_dispatch
from .scenarios import CALENDAR, GATE, GCP, SPECS, calendar_setting, gcp_setting, scenario_name, trigger
from .settle import settle
from .summary import summarize
from .verdict import fault_notes, verdict

SCHEMA_VERSION = 1
_PUBLISHED_SERVICES = {GCP.name: ("object_store", "service"), CALENDAR.name: ("calendar", None)}


def _exit_code(item: Node) -> int:
    """A process's exit status as Python reports it: 0 to 255, or minus the signal that ended it."""
    code: int = item.expect("integer")
    if not -255 <= code <= 255:
        raise item.bad(f"not an exit code: {quote(code)} (a process exits 0 to 255, or minus the signal that killed "
                       "it)")
    return code


def _exits(cell: Node) -> tuple[int, ...]:
    """The workers' exit codes: `worker_exits`, or the published calendar file's `worker_exit_codes`.

    The first worker's is always there, and a SIGKILLed first worker (-9) always has a restart worker after it.
    """
    node = cell.at("worker_exits" if cell.has("worker_exits") or not cell.has("worker_exit_codes")
                   else "worker_exit_codes")
    exits = tuple(_exit_code(item) for item in node.items())
    if not exits:
        raise node.bad("no exit code: the first worker's is needed")
    if exits == (-9,):
        raise node.bad("the first worker was SIGKILLed (-9) and no restart worker's exit follows")
    return exits


def _entries(node: Node) -> list[dict[str, Any]]:
    """Journal entries, which must at least be JSON objects; anything inside them is the verifier's to judge."""
    return [item.expect("object") for item in node.items()]


def _decision(cell: Node, reason_key: str | None, summary_key: str | None) -> Decision | None:
    node = cell.opt_node("decision")
    if node is None:
        return None
    reason = node.opt(reason_key, "string") if reason_key else None
    summary = node.opt(summary_key, "string") if summary_key else None
    return Decision(node.opt("model", "string"), reason, summary, node.expect("object"))


def _gcp_outcome(artifacts: Node, exits: tuple[int, ...]) -> Node:
    """The last worker's own outcome file: the restart worker's, or the first's when it alone ran."""
    name = "outcome_restart.json" if len(exits) > 1 else "outcome_decide.json"
    return artifacts.at(name).at("outcome")


def _gcp_cell(cell: Node, system: str) -> dict[str, Any]:
    """The gcp parts of a judged cell: the object's versions (or write log), log.jsonl or journal.jsonl."""
    artifacts = cell.at("artifacts")
    journal = _entries(artifacts.at("journal.jsonl"))
    log: Any = []
    if system.startswith(GATE):
        says, receipt = record.gate_record(journal, artifacts.child_path("journal.jsonl"))
    elif system in peers.PEERS:
        says, receipt = peers.peer_record(artifacts, system), None
    else:
        lines = artifacts.at("log.jsonl").items()
        says, receipt = record.baseline_record(lines, artifacts.child_path("log.jsonl")), None
        log = [line.value for line in lines]
    exits = _exits(cell)
    decided = artifacts.opt_node("outcome_decide.json") if len(exits) > 1 else None
    first = cell.opt_node("first_worker_outcome") or (decided.opt_node("outcome") if decided else None)
    return dict(
        outcome_node=_gcp_outcome(artifacts, exits), record=says, receipt=receipt, journal=tuple(journal),
        worker_log=log, decision=_decision(cell, "reason", None), worker_exits=exits, first_node=first,
        trigger=trigger(exits, cell.opt("connection_cut_after_commit", "boolean", False), False),
        setting=gcp_setting(cell, cell.get("fault", "string")),
    )


def _first_result(evidence: Node) -> Node | None:
    """The outcome the first worker wrote itself, when it lived to write one."""
    first = evidence.opt_node("first_result_file")
    return first.opt_node("outcome") if first is not None else None


def _calendar_cell(cell: Node, system: str) -> dict[str, Any]:
    """The calendar parts of a judged cell: events on the slot, the worker log and result file, or the receipt."""
    evidence = cell.at("evidence")
    journal: list[dict[str, Any]] = []
    if system.startswith(GATE):
        bundle = evidence.at("receipt_bundle")
        journal = _entries(bundle.at("entries"))
        says, receipt = record.gate_record(journal, bundle.path)
    elif system in peers.PEERS:
        files = evidence.opt_node("case_files") or evidence
        says, receipt = peers.peer_record(files, system), None
    else:
        lines = record.worker_log_lines(evidence.at("worker_log"))
        source = f"{evidence.path}.worker_log+result_file"
        says, receipt = record.baseline_record(lines, source, evidence.at("result_file")), None
    crash_point, action = cell.get("crash_point", "string"), cell.get("outage_action", "string")
    exits = _exits(cell)
    return dict(
        outcome_node=evidence.at("result_file").at("outcome"), record=says, receipt=receipt,
        journal=tuple(journal), worker_log=evidence.get("worker_log", "string"),
        decision=_decision(cell, None, "summary"), worker_exits=exits,
        first_node=cell.opt_node("first_worker_outcome") or _first_result(evidence),
        trigger=trigger(exits, crash_point == "network_cut", action.startswith("raced")),
        setting=calendar_setting(crash_point, action),
    )


def _conflict_recorded(receipt: dict[str, Any] | None) -> bool:
    """The receipt's last re-check found a changed premise or a lease no longer live."""
    rechecked = (receipt or {}).get("rechecked_at_recovery")
    if not isinstance(rechecked, dict):
        return False
    return bool(rechecked.get("violations")) or rechecked.get("lease_live") is False


def _settle_from(cell: Node) -> str | None:
    """What a stored figure counts from, as the file says (the published gcp file says nothing)."""
    timing = cell.opt_node("timing")
    return cell.opt("settle_from", "string") or (timing.opt("settled_from", "string") if timing else None)


def derive_cell(cell: Node, index: int, scenario: str) -> Cell:
    """Judge one cell: ground truth from the service, record_says from the system's record, then both scores."""
    fault, system = fault_of(cell, scenario), cell.get("system", "string")
    calendar = scenario == CALENDAR.name
    parts = (_calendar_cell if calendar else _gcp_cell)(cell, system)
    truth = judge.judge_calendar(cell, fault) if calendar else judge.judge_gcp(cell, fault)
    exits = parts["worker_exits"]
    proof = score.prove(parts["record"], truth)
    outcome_node, first = parts.pop("outcome_node"), parts.pop("first_node")
    landed = claim(outcome_node)
    first_claim = claim(first) if first is not None else None
    timed = settle(cell)
    judged = Cell(
        index=index, scenario=scenario, fault=fault.name, system=system, outcome=outcome_node.value,
        outcome_source=outcome_node.path, landed=landed, agent_writes=len(truth.agent_writes), want=truth.want,
        wants=fault.wants, invariant_held=truth.invariant_held,
        answer_matches=score.answer_matches(landed, truth, exactly_one=calendar), can_prove=proof.ok, proof=proof,
        seconds_to_settle=timed.seconds, seconds_basis=timed.basis, seconds_derived=timed.derived, truth=truth,
        first_worker_outcome=first.value if first is not None else None,
        first_answer_matches=score.answer_matches(first_claim, truth, exactly_one=calendar),
        ids=cell.value.get("ids"), crash_fired=bool(exits) and exits[0] == -9,
        settle_from=timed.start or _settle_from(cell), conflict_recorded=_conflict_recorded(parts["receipt"]), **parts,
    )
    return dataclasses.replace(judged, disagreements=disagreements(cell, judged))


def _provenance(top: Node, scenario: str, path: str | Path) -> Provenance:
    """The file's own provenance block, or what the published real-service files say about themselves: a file in
    their format with no provenance block is taken for one only while it holds a published run's bytes (anything
    else, a project run stripped of its block say, has nothing that says its services were real)."""
    node = top.opt_node("provenance")
    extra = {k: v for k, v in top.value.items()
             if k not in ("cells", "provenance", "scenario", "key", "generated", "schema_version")
             and not isinstance(v, (dict, list))}
    if node is None:
        real = is_published(path)
        model = top.opt("model", "string")
        role, service_key = _PUBLISHED_SERVICES[scenario]
        name = top.opt(service_key, "string") if service_key else "Google Calendar API v3"
        services = (Service(role, real, name or role), Service("model", real, model or "unknown"))
        generated = top.get("generated", "string")
        said = ("published real-service run" if real else
                "no provenance and not the published run's bytes, so nothing says its services were real")
        return Provenance(
            published=True, generated=generated, script=f"experiments/scenario_{scenario}.py", services=services,
            summary=f"{said}: {services[0].name}, model {services[1].name}, generated {generated}",
            decider=model, extra=extra,
        )
    listed: list[Service] = []
    for role, item in node.at("services").expect("object").items():
        service = Node(item, node.at("services"), node.file, role)
        listed.append(Service(role, service.get("real", "boolean"), service.get("name", "string"),
                                service.opt("version", "string")))
    generated = node.get("generated", "string")
    # each service as "role: name (real)", apart by semicolons: a name may hold commas of its own
    described = "; ".join(f"{s.role.replace('_', ' ')}: {s.name} ({'real' if s.real else 'stand-in'})"
                          for s in listed)
    return Provenance(
        published=False, generated=generated, script=node.opt("script", "string"), services=tuple(listed),
        summary=f"project run generated {generated}; {described}", decider=node.opt("decider", "string"),
        versions=node.opt("versions", "object", {}), commit=commit_said(node),
        claim=node.opt("claim", "object", {}), extra=extra, peers=node.opt("peers", "object", {}),
        load=load_said(node), cores=cores_said(node),
    )


def _cells(node: Node, scenario: str) -> tuple[Cell, ...]:
    """Every cell judged; a second cell of the same (fault, system) is bad input, since a verdict would hide one."""
    cells: list[Cell] = []
    seen: dict[tuple[str, str], int] = {}
    for i, item in enumerate(node.items()):
        cell = derive_cell(item, i, scenario)
        key = (cell.fault, cell.system)
        if key in seen:
            raise item.bad(f"a second cell of fault {quote(cell.fault)}, system {quote(cell.system)} (the first is "
                           f"{node.child_path(seen[key])})")
        seen[key] = i
        cells.append(cell)
    if not cells:
        raise node.bad("no cells")
    return tuple(cells)


def _in_order(values: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


def derive(path: str | Path) -> Scenario:
    """Judge one result file; bad input raises pipeline.load.BadInput naming the file and JSON path."""
    return judged(read(path), path)


def judged(top: Node, path: str | Path) -> Scenario:
    """`derive` of a result file already read."""
    name = scenario_name(top)
    if top.has("schema_version") and top.get("schema_version", "integer") != SCHEMA_VERSION:
        raise top.at("schema_version").bad(f"unsupported schema version (this pipeline reads {SCHEMA_VERSION})")
    provenance = _provenance(top, name, path)
    cells = _cells(top.at("cells"), name)
    spec = SPECS[name]
    faults = _in_order([c.fault for c in cells])
    systems = _in_order([c.system for c in cells])
    summaries = summarize(cells, systems)
    return Scenario(
        name=name, title=spec.title(provenance.services), source=str(path), provenance=provenance, faults=faults, systems=systems,
        cells=cells, summaries=summaries, verdict=verdict(spec, cells, systems, summaries),
        notes=fault_notes(spec, cells, faults, systems), raced=raced_dispatch(top),
        disagreements=tuple(d for c in cells for d in c.disagreements),
    )
