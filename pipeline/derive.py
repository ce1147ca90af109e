"""derive(): one result file in, one judged Scenario out, from the raw artifacts alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from interlock.outcomes import UnknownOutcome, landed

from . import judge, record, score
from .load import Node, read
from .model import Cell, Decision, Provenance, Scenario, Service
from .raced import raced_dispatch
from .scenarios import CALENDAR, GATE, GCP, SPECS, calendar_setting, gcp_setting, scenario_name, trigger
from .summary import summarize
from .verdict import fault_notes, verdict

SCHEMA_VERSION = 1
_PUBLISHED_SERVICES = {GCP.name: ("object_store", "service"), CALENDAR.name: ("calendar", None)}


def _claim(node: Node) -> bool | None:
    outcome = node.expect("string")
    try:
        return landed(outcome)
    except UnknownOutcome:
        raise node.bad(f"unknown outcome {outcome!r}") from None


def _exits(node: Node) -> tuple[int, ...]:
    return tuple(item.expect("integer") for item in node.items())


def _entries(node: Node) -> list[dict[str, Any]]:
    """Journal entries, which must at least be JSON objects; anything inside them is the verifier's to judge."""
    return [item.expect("object") for item in node.items()]


def _gcp_seconds(cell: Node, artifacts: Node) -> float:
    """Crash marker to the restart worker's end, when both files were kept; else the stored measurement."""
    restart = artifacts.opt_node("outcome_restart.json")
    crashed = artifacts.opt("crashed_at", "string")
    if restart is None or crashed is None or restart.opt("settled_at", "number") is None:
        return float(cell.get("seconds_to_settle", "number"))
    try:
        crashed_at = float(crashed)
    except ValueError:
        raise artifacts.at("crashed_at").bad(f"not a time: {crashed!r}") from None
    return round(restart.get("settled_at", "number") - crashed_at, 1)


def _decision(cell: Node, reason_key: str | None, summary_key: str | None) -> Decision | None:
    node = cell.opt_node("decision")
    if node is None:
        return None
    reason = node.opt(reason_key, "string") if reason_key else None
    summary = node.opt(summary_key, "string") if summary_key else None
    return Decision(node.opt("model", "string"), reason, summary, node.expect("object"))


def _gcp_cell(cell: Node, fault: str, system: str) -> dict[str, Any]:
    """The gcp parts of a judged cell: the object's versions (or write log), log.jsonl or journal.jsonl."""
    artifacts = cell.at("artifacts")
    journal = _entries(artifacts.at("journal.jsonl"))
    if system.startswith(GATE):
        says, receipt = record.gate_record(journal, artifacts.child_path("journal.jsonl"))
        log: Any = []
    else:
        lines = artifacts.at("log.jsonl").items()
        says, receipt = record.baseline_record(lines, artifacts.child_path("log.jsonl")), None
        log = [line.value for line in lines]
    exits = _exits(cell.at("worker_exits"))
    decided = artifacts.opt_node("outcome_decide.json")  # files written before `first_worker_outcome` was stored
    first = cell.opt_node("first_worker_outcome") or (decided.opt_node("outcome") if decided else None)
    return dict(
        truth=judge.judge_gcp(cell, fault), record=says, receipt=receipt, journal=tuple(journal), worker_log=log,
        decision=_decision(cell, "reason", None), worker_exits=exits,
        seconds_to_settle=_gcp_seconds(cell, artifacts), first_node=first,
        trigger=trigger(exits, cell.opt("connection_cut_after_commit", "boolean", False), False),
        settle_from=cell.opt("settle_from", "string"), setting=gcp_setting(cell, fault),
    )


def _calendar_cell(cell: Node, fault: str, system: str) -> dict[str, Any]:
    """The calendar parts of a judged cell: events on the slot, the worker log and result file, or the receipt."""
    evidence = cell.at("evidence")
    journal: list = []
    if system.startswith(GATE):
        bundle = evidence.at("receipt_bundle")
        journal = _entries(bundle.at("entries"))
        says, receipt = record.gate_record(journal, bundle.path)
    else:
        lines = record.worker_log_lines(evidence.at("worker_log"))
        source = f"{evidence.path}.worker_log+result_file"
        says, receipt = record.baseline_record(lines, source, evidence.at("result_file")), None
    crash_point, action = cell.get("crash_point", "string"), cell.get("outage_action", "string")
    exits = _exits(cell.at("worker_exit_codes"))
    timing = cell.opt_node("timing")
    return dict(
        truth=judge.judge_calendar(cell, crash_point, action),
        record=says, receipt=receipt, journal=tuple(journal), worker_log=evidence.get("worker_log", "string"),
        decision=_decision(cell, None, "summary"), worker_exits=exits,
        seconds_to_settle=float(cell.get("seconds_to_settle", "number")),
        first_node=cell.opt_node("first_worker_outcome"),
        trigger=trigger(exits, crash_point == "network_cut", action.startswith("raced")),
        settle_from=timing.opt("settled_from", "string") if timing else None,
        setting=calendar_setting(crash_point, action),
    )


def _stored(cell: Node, answer_key: str) -> dict[str, Any]:
    """The scored columns as the file stored them, kept only to compare with what the pipeline derives."""
    obj = cell.value
    return {
        "outcome": obj.get("outcome"),
        "invariant_held": obj.get("invariant_held"),
        "answer_matches": obj.get(answer_key),
        "can_prove": obj.get("can_prove_what_happened"),
        "seconds_to_settle": obj.get("seconds_to_settle"),
    }


def derive_cell(cell: Node, index: int, scenario: str) -> Cell:
    """Judge one cell: ground truth from the service, record_says from the system's record, then both scores."""
    fault, system = cell.get("fault", "string"), cell.get("system", "string")
    outcome_node = cell.at("outcome")
    claim = _claim(outcome_node)
    calendar = scenario == CALENDAR.name
    parts = (_calendar_cell if calendar else _gcp_cell)(cell, fault, system)
    truth, exits = parts["truth"], parts["worker_exits"]
    proof = score.prove(parts["record"], truth)
    first = parts.pop("first_node")
    first_claim = _claim(first) if first is not None else None
    return Cell(
        index=index, scenario=scenario, fault=fault, system=system, outcome=outcome_node.value, landed=claim,
        agent_writes=len(truth.agent_writes), want=truth.want, invariant_held=truth.invariant_held,
        answer_matches=score.answer_matches(claim, truth, exactly_one=calendar), can_prove=proof.ok, proof=proof,
        first_worker_outcome=first.value if first is not None else None,
        first_answer_matches=score.answer_matches(first_claim, truth, exactly_one=calendar),
        ids=cell.value.get("ids"), crash_fired=bool(exits) and exits[0] == -9,
        stored=_stored(cell, "answer_matches_calendar" if calendar else "answer_matches_service"), **parts,
    )


def _commit(node: Node) -> str | None:
    """The run's git commit, marked when the tree had uncommitted changes."""
    commit = node.opt("commit", "string")
    dirty = node.opt("commit_dirty", "boolean", False)
    return f"{commit} (with uncommitted changes)" if commit and dirty else commit


def _provenance(top: Node, scenario: str) -> Provenance:
    """The file's own provenance block, or what the published real-service files say about themselves."""
    node = top.opt_node("provenance")
    extra = {k: v for k, v in top.value.items()
             if k not in ("cells", "provenance", "scenario", "key", "generated", "schema_version")
             and not isinstance(v, (dict, list))}
    if node is None:
        model = top.opt("model", "string")
        role, service_key = _PUBLISHED_SERVICES[scenario]
        name = top.opt(service_key, "string") if service_key else "Google Calendar API v3"
        services = (Service(role, True, name or role), Service("model", True, model or "unknown"))
        generated = top.get("generated", "string")
        return Provenance(
            published=True, generated=generated, script=f"experiments/scenario_{scenario}.py", services=services,
            summary=f"published real-service run: {services[0].name}, model {services[1].name}, generated {generated}",
            decider=model, extra=extra,
        )
    services = []
    for role, item in node.at("services").expect("object").items():
        service = Node(item, node.at("services").child_path(role), node.file)
        services.append(Service(role, service.get("real", "boolean"), service.get("name", "string"),
                                service.opt("version", "string")))
    generated = node.get("generated", "string")
    described = ", ".join(f"{s.role} {s.name} ({'real' if s.real else 'stand-in'})" for s in services)
    return Provenance(
        published=False, generated=generated, script=node.opt("script", "string"), services=tuple(services),
        summary=f"project run: {described}; generated {generated}", decider=node.value.get("decider"),
        versions=node.opt("versions", "object", {}), commit=_commit(node),
        claim=node.opt("claim", "object", {}), extra=extra,
    )


def _in_order(values: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


def derive(path: str | Path) -> Scenario:
    """Judge one result file; bad input raises pipeline.load.BadInput naming the file and JSON path."""
    top = read(path)
    name = scenario_name(top)
    if top.has("schema_version") and top.get("schema_version", "integer") != SCHEMA_VERSION:
        raise top.at("schema_version").bad(f"unsupported schema version (this pipeline reads {SCHEMA_VERSION})")
    provenance = _provenance(top, name)
    cells = tuple(derive_cell(cell, i, name) for i, cell in enumerate(top.at("cells").items()))
    if not cells:
        raise top.at("cells").bad("no cells")
    spec = SPECS[name]
    faults = _in_order([c.fault for c in cells])
    systems = _in_order([c.system for c in cells])
    summaries = summarize(cells, systems)
    return Scenario(
        name=name, title=spec.title, source=str(path), provenance=provenance, faults=faults, systems=systems,
        cells=cells, summaries=summaries, verdict=verdict(spec, cells, systems, summaries),
        notes=fault_notes(spec, cells, faults, systems), raced=raced_dispatch(top),
    )
