"""The stored scored columns of a cell, filled in by the pipeline's own cell judge (one judge, not two).

Ground truth, record_says, answer and proof come from `pipeline.derive_cell`, exactly as `python -m pipeline judge`
re-derives them later; this module only shapes them into the published cell's columns.
"""

from __future__ import annotations

from typing import Any

from interlock.receipts import verify

RECEIPT_KEYS = ("valid", "tamper_evident", "signed", "happened", "happened_once", "authorized_when_fired",
                "assumptions_held", "refused", "evidence", "rechecked_at_recovery", "problems")


def receipt_subset(result: dict[str, Any]) -> dict[str, Any]:
    """The published subset of a verify() result."""
    return {key: result.get(key) for key in RECEIPT_KEYS}


def receipt_summary(entries: list[dict[str, Any]], effect_id: str) -> dict[str, Any]:
    """The published subset of verify() over one effect's entries, as a worker reports it."""
    return receipt_subset(verify({"effect_id": effect_id, "entries": entries}))


def journal_kinds(entries: list[dict[str, Any]]) -> list[str]:
    """The kinds of an effect's entries, each with its `via` when it has one."""
    return [e["kind"] + (f" via {e['via']}" if e.get("via") else "") for e in entries]


def score(cell: dict[str, Any], source: str) -> None:
    """Fill the cell's scored columns from the pipeline's judgement of its artifacts (`source` names the file)."""
    from pipeline.derive import derive_cell
    from pipeline.load import Node

    judged = derive_cell(Node(cell, "cell", source), 0, "gcp_resource")
    truth, record = judged.truth, judged.record
    agent = list(truth.agent_writes)
    cell["ids"].update(agent_write_generations=agent, live_generation=truth.live_generation,
                       all_generations=[list(pair) for pair in truth.writes])
    if judged.receipt is not None:
        cell["ids"]["receipt"] = receipt_subset(judged.receipt)
    says: dict[str, Any] = {"actor": record.actor, "checks": list(record.checks),
                            "agent_writes": None if record.writes is None else list(record.writes),
                            "unresolved_sends": record.unresolved_sends}
    if record.chain_valid is not None:
        says["chain_valid"] = record.chain_valid
    cell.update(
        ground_truth=(f"{len(agent)} agent write(s) {agent!r}; live generation {truth.live_generation} "
                      f"deployed by {truth.live_owner}"),
        invariant_held=judged.invariant_held, answer_matches_service=judged.answer_matches,
        can_prove_what_happened=judged.can_prove, record_says=says,
    )
