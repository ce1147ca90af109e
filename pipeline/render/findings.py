"""Findings the scenario pages state in words, each computed from the judged cells and the result file: what a
receipt attests, what a failed re-check after a commit looks like in each record, which attempt a retry commit
was, where the connection was cut, what evidence was kept and how to verify it again."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from ..model import Cell, Scenario
from ..scenarios import GATE


def _join(items: Sequence[str]) -> str:
    items = list(items)
    if not items:
        return ""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _gate_cells(scenario: Scenario, system: str = GATE) -> list[Cell]:
    return [c for c in scenario.cells if c.system == system]


def receipts(scenario: Scenario) -> str | None:
    """What the gate's receipts say about themselves: valid, tamper-evident, signed or not, and what that covers."""
    found = [c.receipt for c in _gate_cells(scenario) if c.receipt]
    if not found:
        return None
    valid = sum(bool(r.get("valid")) for r in found)
    evident = sum(bool(r.get("tamper_evident")) for r in found)
    signed = {r.get("signed") for r in found}
    if signed == {True}:
        signature = "signed and checked against a trusted key"
    elif signed == {None}:
        signature = "unsigned (no trusted key was given, so no signature was checked)"
    else:
        signature = "a signature that does NOT verify in some" if False in signed else "signed in some, not in others"
    return (f"{GATE}'s receipts: {valid} of {len(found)} verify, {evident} of {len(found)} tamper-evident, "
            f"{signature}. A receipt is the gate's own attestation, written by the same worker that sent; the "
            "evidence is the service's state, which the harness copied into the result file during the run.")


def _committed(cell: Cell) -> Mapping[str, Any] | None:
    return next((e for e in reversed(cell.journal) if e.get("kind") == "COMMITTED"), None)


def failed_rechecks(scenario: Scenario) -> list[str]:
    """Faults where the effect had landed, then the world changed: the gate's journal records the failed
    re-check next to its commit; the hand check's record is described from its own lines."""
    lines = []
    for cell in _gate_cells(scenario):
        entry = _committed(cell)
        rechecked = entry.get("rechecked") if entry else None
        violations = rechecked.get("violations") if isinstance(rechecked, Mapping) else None
        if not rechecked or not (violations or rechecked.get("lease_live") is False):
            continue
        what = "; ".join(str(v) for v in violations) if violations else "the lease had ended"
        hand = scenario.cell(cell.fault, "hand_check")
        other = (f" hand_check reported {hand.outcome}; its record holds {len(hand.record.checks)} recorded "
                 "check(s) and no re-check after the commit." if hand else "")
        lines.append(f"{cell.fault}: {GATE} reported {cell.outcome}, and its journal records the failed re-check "
                     f"at recovery ({what}), which tells whoever handles the booking next.{other}")
    return lines


def retry_commits(scenario: Scenario) -> list[str]:
    """Gate cells settled by a retry that found the effect already there: the receipt proves one commit, not
    which HTTP attempt made it."""
    lines = []
    for cell in _gate_cells(scenario):
        entry = _committed(cell)
        result = entry.get("result") if entry else None
        if isinstance(result, Mapping) and result.get("already_existed") is True:
            how = {"sigkill": "the SIGKILLed first worker",
                   "network_cut": "the first worker, whose connection was cut,"}
            lines.append(f"{cell.fault}: {cell.outcome}, and the retry's answer says the event already existed "
                         f"(already_existed: true); {how.get(cell.trigger, 'the first worker')} created it.")
    return lines


def cuts(scenario: Scenario) -> list[str]:
    """The rows whose connection was cut after the service committed, with what each system then reported."""
    faults = list(dict.fromkeys(c.fault for c in scenario.cells if c.trigger == "network_cut"))
    lines = []
    for fault in faults:
        row = [c for c in scenario.cells if c.fault == fault]
        said = _join([f"{c.system} {c.outcome} ({'held' if c.invariant_held else 'VIOLATED'})" for c in row])
        lines.append(f"{fault}: {said}")
    return lines


def ties_with_hand_check(scenario: Scenario) -> tuple[int, int]:
    """Faults where the gate and the hand check end alike on invariant, answer and proof, of the faults both ran."""
    both = [(g, h) for g in _gate_cells(scenario) if (h := scenario.cell(g.fault, "hand_check"))]
    same = sum((g.invariant_held, g.answer_matches, g.can_prove) == (h.invariant_held, h.answer_matches, h.can_prove)
               for g, h in both)
    return same, len(both)


def lookups(scenario: Scenario) -> tuple[int, int]:
    """Hand-check cells whose record is settled by the lookup after a refused resend, of all hand-check cells."""
    mine = [c for c in scenario.cells if c.system == "hand_check"]
    return sum(c.outcome in ("ALREADY_APPLIED", "PRECONDITION_FAILED", "FOUND_BY_LOOKUP") and c.can_prove
               for c in mine), len(mine)


def change_only(scenario: Scenario) -> str | None:
    """Where the gate configured with a change-only premise broke the invariant in this run."""
    mine = _gate_cells(scenario, f"{GATE}_change_only")
    if not mine:
        return None
    broke = [c for c in mine if not c.invariant_held]
    if not broke:
        return f"In this run {GATE}_change_only held the invariant in all {len(mine)} faults it ran."
    said = _join([f"{c.fault} ({c.outcome}{', double booked' if c.truth.double_booked else ''})" for c in broke])
    return f"In this run {GATE}_change_only broke the invariant in {len(broke)} of {len(mine)} faults: {said}."


def expected_premises(scenario: Scenario) -> str | None:
    """The expected premise values the gate's journal states, from its first PROPOSED entry."""
    for cell in _gate_cells(scenario):
        proposed = next((e for e in cell.journal if e.get("kind") == "PROPOSED"), None)
        if proposed and isinstance(proposed.get("expect"), Mapping) and proposed["expect"]:
            expect = ", ".join(f"{k} must equal {v!r}" for k, v in proposed["expect"].items())
            return f"In this run every {GATE} journal states the premise's expected value at decision time: {expect}."
    return None


def evidence(scenario: Scenario, top: Mapping[str, Any], source: str) -> list[str]:
    """What the run kept and deleted at the service, and the command that verifies a gate record again."""
    lines = []
    cleanup = top.get("cleanup")
    if isinstance(cleanup, list) and cleanup:
        deleted = sum(bool(item.get("deleted")) for item in cleanup if isinstance(item, Mapping))
        cancelled = sum(item.get("status_after_delete") == "cancelled" for item in cleanup
                        if isinstance(item, Mapping))
        lines.append(f"After the run the harness deleted {deleted} of {len(cleanup)} events it saw; {cancelled} "
                     "read back as cancelled. Ground truth therefore rests on what the result file stored during "
                     "the run.")
    gate = next((c for c in _gate_cells(scenario) if c.journal), None)
    if gate is not None:
        lines.append(f"python -m published_format {shlex.quote(source)} --cell {gate.index}")
    return lines
