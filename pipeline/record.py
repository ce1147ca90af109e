"""record_says: what each system's own record establishes, read without looking at the service.

Baselines keep a log of sends (each with the check it made) and results; the gate keeps a hash-chained journal
whose list of writes counts only when the chain verifies; a peer (DBOS, Powertools) keeps its own record, read by
`pipeline.peers`.
"""

from __future__ import annotations

import json
from typing import Any

from published_format import verify_record

from .load import Node
from .model import RecordSays
from .outcomes import claim as outcome_claim


def _result_ids(ids: Node | None) -> tuple[list[str] | None, str | None, str | None]:
    """(writes a lookup found, the generation one upload got, the event id of a booking) named by a result."""
    if ids is None:
        return None, None, None
    found = ids.opt_node("writes_found")
    writes = [item.expect("string") for item in found.items()] if found else None
    return writes, ids.opt("generation", "string"), ids.opt("event_id", "string")


def baseline_record(lines: list[Node], source: str, last_result: Node | None = None) -> RecordSays:
    """Replay a baseline's send/result lines (then its result file, if it keeps one) into a list of writes.

    Each send opens a question; a result answers the latest one. A lookup's `writes_found` replaces the list and
    answers every open send, and so does a landed booking's event id (the same id on every attempt); a landed
    upload adds the generation it got; a result that cannot say answers nothing.
    """
    actor: str | None = None
    checks: list[str | None] = []
    writes: list[str] = []
    sends = unchecked = unresolved = 0
    unnamed = False
    results = [(line, line.opt_node("ids")) for line in lines]
    if last_result is not None:
        results.append((last_result, last_result))
    for line, ids in results:
        event = line.get("event", "string") if line is not last_result else "result"
        if actor is None and line is not last_result:
            actor = line.opt("agent", "string")
        if event == "send":
            sends += 1
            unresolved += 1
            if line.has("check"):
                checks.append(line.get("check", "string", nullable=True))
            else:
                unchecked += 1
        elif event == "result":
            claim = outcome_claim(line.at("outcome"))
            if claim is None:
                continue
            unresolved = max(unresolved - 1, 0)
            found, generation, event = _result_ids(ids)
            if found is not None:
                writes, unresolved = found, 0
            elif claim and event is not None:  # one event id per request: it answers every attempt
                writes, unresolved = list(dict.fromkeys([*writes, event])), 0
            elif claim and generation is not None:
                writes.append(generation)
            elif claim:
                unnamed = True
    if unresolved or unnamed:
        why = (f"{unresolved} send(s) have no result and nothing later covers them" if unresolved
               else "a result reports a landed write without naming it")
        return RecordSays(source, actor, tuple(checks), sends, unchecked, None, unresolved, None, why)
    return RecordSays(source, actor, tuple(checks), sends, unchecked, tuple(writes), 0, None, None)


def worker_log_lines(log: Node) -> list[Node]:
    """The structured (JSON object) lines of a free-text worker log; other lines are commentary."""
    lines = []
    for number, text in enumerate(log.expect("string").splitlines(), 1):
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict) and "event" in value:
            lines.append(Node(value, f"{log.path}[line {number}]", log.file))
    return lines


# Journal kinds that send, and the field holding the check made right before that send.
_SEND_CHECK = {"DISPATCHED": "checks", "REDISPATCHED": "rechecked"}


def _effect_write(value: Any) -> str | None:
    """The id a gate result names: a generation string, or the generation / event of a result object."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        named = value.get("generation") or value.get("event")
        return named if isinstance(named, str) else None
    return None


def gate_record(entries: list[dict[str, Any]], source: str) -> tuple[RecordSays, dict[str, Any] | None]:
    """What the gate's journal establishes for its (first) effect, and the verify() result it rests on.

    Damage never raises: it makes verify() report problems, and then the record establishes no list.
    """
    if not entries:
        return RecordSays(source, None, (), 0, 0, None, 0, None, "the journal is empty"), None
    effect_id = entries[0].get("effect_id")
    mine = [e for e in entries if e.get("effect_id") == effect_id]
    receipt = verify_record({"effect_id": effect_id, "entries": mine})
    proposed = next((e for e in mine if e.get("kind") == "PROPOSED"), {})
    actor = proposed.get("agent") if isinstance(proposed.get("agent"), str) else None
    checks, sends, unchecked = [], 0, 0
    for entry in mine:
        recorded = entry.get("checks") or entry.get("rechecked")
        if recorded:
            checks.append(f"{entry.get('kind')}: {recorded!r}")
        kind = entry.get("kind")
        if isinstance(kind, str) and kind in _SEND_CHECK:  # a damaged kind (a list, say) is verify()'s to report
            sends += 1
            unchecked += not entry.get(_SEND_CHECK[kind])
    happened = receipt.get("happened")
    unresolved = int(happened == "unknown")

    def says(writes: tuple[str, ...] | None, why: str | None) -> RecordSays:
        return RecordSays(source, actor, tuple(checks), sends, unchecked, writes, unresolved, receipt["valid"], why)

    if not receipt["valid"]:
        problems = "; ".join(receipt.get("problems") or ["verify() found it invalid"])
        return says(None, f"the hash chain does not verify: {problems}"), receipt
    if happened == "unknown":
        return says(None, "the journal leaves a send unresolved (no commit or refusal after it)"), receipt
    if happened is not True:
        return says((), None), receipt
    writes: list[str] = []
    for entry in mine:
        committed = entry.get("kind") == "COMMITTED"
        if not committed and not (entry.get("kind") == "LATE_RESULT" and entry.get("late_kind") == "COMMITTED"):
            continue
        write = _effect_write(entry.get("result", entry.get("found")))
        if write is None and committed:
            return says(None, "a COMMITTED entry names no generation or event"), receipt
        if write is not None and write not in writes:
            writes.append(write)
    return says(tuple(writes), None), receipt
