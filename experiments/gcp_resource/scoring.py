"""The published judging rules for this scenario, applied when a cell is stored (the pipeline re-derives them).

Ground truth is the service's: who wrote each generation (from the version listing, or the proxy's write log
when the bucket keeps no versions). record_says reads only the system's own record: log.jsonl for the baselines,
the journal (through verify()) for the gate.
"""

from __future__ import annotations

from typing import Any

from interlock.outcomes import landed
from interlock.receipts import verify

RECEIPT_KEYS = ("valid", "tamper_evident", "signed", "happened", "happened_once", "authorized_when_fired",
                "assumptions_held", "refused", "evidence", "rechecked_at_recovery", "problems")
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH"})


def journal_kinds(entries: list[dict[str, Any]]) -> list[str]:
    """The kinds of an effect's entries, each with its `via` when it has one."""
    return [e["kind"] + (f" via {e['via']}" if e.get("via") else "") for e in entries]


def receipt_summary(entries: list[dict[str, Any]], effect_id: str) -> dict[str, Any]:
    """The published subset of verify() over one effect's entries."""
    result = verify({"effect_id": effect_id, "entries": entries})
    return {key: result.get(key) for key in RECEIPT_KEYS}


def writes_from_versions(versions: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(generation, writer) for every generation the listing holds, oldest first."""
    pairs = [(v["generation"], (v.get("metadata") or {}).get("writer", "unknown")) for v in versions]
    return sorted(pairs, key=lambda pair: int(pair[0]))


def writes_from_log(write_log: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(generation, writer) for every write the service committed, as the proxy saw it: answered 200, or cut."""
    return [(e["generation"], (e.get("metadata") or {}).get("writer", "unknown")) for e in write_log
            if e.get("method") in WRITE_METHODS and e.get("generation") and (e.get("status") == 200 or e.get("cut"))]


def judge(writes: list[tuple[str, str]], live: dict[str, Any] | None, want_writes: int,
          want_owner: str) -> dict[str, Any]:
    """Agent writes, the live generation and its writer, and whether the row's invariant held."""
    agent = [generation for generation, writer in writes if writer == "agent"]
    live_generation = live["generation"] if live else None
    live_writer = (live.get("metadata") or {}).get("writer", "unknown") if live else None
    return {"agent_writes": agent, "live_generation": live_generation, "live_writer": live_writer,
            "held": len(agent) == want_writes and live_writer == want_owner}


def claims_landed(outcome: str) -> bool | None:
    """What an outcome string claims: landed, not landed, or cannot say (the project's outcome vocabulary)."""
    return landed(outcome)


def answer_matches(outcome: str, agent_writes: list[str]) -> bool | None:
    """The claim against the service; an outcome that cannot say matches nothing (None)."""
    claim = claims_landed(outcome)
    return None if claim is None else claim == bool(agent_writes)


def baseline_record(log: list[dict[str, Any]]) -> dict[str, Any]:
    """What log.jsonl alone establishes: the published replay of sends and results."""
    actor = log[0].get("agent") if log else None
    checks, writes, unresolved = [], [], 0
    for line in log:
        if line.get("event") == "send":
            checks.append(line.get("check"))
            unresolved += 1
        elif line.get("event") == "result":
            unresolved = max(unresolved - 1, 0)
            ids = line.get("ids") or {}
            if "writes_found" in ids:
                writes, unresolved = list(ids["writes_found"]), 0
            elif line.get("outcome") == "WRITTEN":
                writes.append(ids.get("generation"))
    return {"actor": actor, "checks": checks, "agent_writes": None if unresolved else writes,
            "unresolved_sends": unresolved}


def gate_record(journal: list[dict[str, Any]]) -> dict[str, Any]:
    """What the journal alone establishes, through verify() over the first effect's entries."""
    if not journal:
        return {"actor": None, "checks": [], "agent_writes": None, "chain_valid": None}
    effect_id = journal[0].get("effect_id")
    entries = [e for e in journal if e.get("effect_id") == effect_id]
    result = verify({"effect_id": effect_id, "entries": entries})
    proposed = next((e for e in entries if e.get("kind") == "PROPOSED"), {})
    checks = [f"{e['kind']}: {(e.get('checks') or e.get('rechecked'))!r}" for e in entries
              if e.get("checks") or e.get("rechecked")]
    writes: list[str] | None = None
    if result["valid"]:
        happened = result.get("happened")
        evidence = result.get("evidence")
        if isinstance(evidence, dict):
            evidence = evidence.get("generation")
        writes = [evidence] if happened is True else [] if happened is False else None
    return {"actor": proposed.get("agent"), "checks": checks, "agent_writes": writes, "chain_valid": result["valid"]}


def can_prove(said: dict[str, Any], agent_writes: list[str]) -> bool:
    """Actor named, checks recorded, and the record's list of writes equals the service's."""
    return (bool(said.get("actor")) and bool(said.get("checks")) and said.get("agent_writes") is not None
            and sorted(said["agent_writes"]) == sorted(agent_writes))


def ground_truth_line(truth: dict[str, Any]) -> str:
    """The published one-line ground truth."""
    return (f"{len(truth['agent_writes'])} agent write(s) {truth['agent_writes']!r}; live generation "
            f"{truth['live_generation']} deployed by {truth['live_writer']}")
