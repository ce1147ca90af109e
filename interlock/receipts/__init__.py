"""Receipts: what a journal proves about an effect, re-derived from its entries alone.

An unsigned chain is tamper-evident only in a narrow sense: every entry's hash recomputes and links to the one
before it, so an edit, a reorder, a deleted entry or a deleted effect inside the chain shows. Anyone who can write
the file can still rewrite it wholesale, and a cut tail leaves a shorter chain that is consistent. Only a signed
checkpoint or a signed bundle, checked against a public key kept elsewhere, rules those out.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Any, Iterator

from ..canonical import hash_holds
from ..errors import BundleError
from ..journal import Journal
from ..kinds import (AMBIGUOUS, COMMITTED, DISPATCHED, KINDS, LATE_RESULT, LEGACY_KINDS, PROPOSED, REDISPATCHED,
                     REFUSED, RESOLUTIONS, SENDS, settles)
from ..signing import checkpoint_statement, sign, signature_holds

COVERS = ("tamper_evident: every entry's hash recomputes and links to its predecessor. Unsigned, that rules "
          "out edits, reorders and deletions inside the chain, not a wholesale rewrite, a well-formed entry "
          "appended by whoever can write the file, or a cut tail; a valid signature over the head (signed: true) "
          "rules those out for whoever trusts the public key. Without a trusted key a signature proves nothing and "
          "is not checked (signed: null), so one made with another key shows only against the trusted one.")
LEGACY_RESEND_VIAS = frozenset({"retry-idempotent", "recovery-reapply", "retry"})


def bundle_statement(effect_id: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """What a bundle signature covers: the effect, its entry count and the hash of its last entry."""
    head = entries[-1].get("hash") if entries and isinstance(entries[-1], dict) else None
    return {"statement": "interlock receipt bundle", "effect_id": effect_id, "count": len(entries), "head": head}


def bundle(journal: Journal, effect_id: str, key: Any = None) -> dict[str, Any]:
    """Export one effect's entries as a self-contained receipt bundle, signed when a key is given."""
    journal.refresh()
    entries = journal.entries(effect_id)
    if not entries:
        raise KeyError(f"effect {effect_id} is not in {journal.path}")
    out: dict[str, Any] = {"effect_id": effect_id, "entries": entries}
    if key is not None:
        out["signature"] = sign(key, bundle_statement(effect_id, entries))
    return out


def verify(bundle: Any, *, public_key: str | None = None) -> dict[str, Any]:
    """Check one effect's chain and say what it establishes: whether it happened, once, authorized, on held facts."""
    entries, effect_id, signature = _unpack(bundle)
    return _verify(entries, effect_id, signature, public_key, [isinstance(e, dict) and hash_holds(e) for e in entries])


def _verify(entries: list[Any], effect_id: str | None, signature: Any, public_key: str | None,
            hashes: list[bool]) -> dict[str, Any]:
    """`verify` on entries whose hashes are already checked (`hashes[i]` holds for `entries[i]`)."""
    good = [e for e in entries if isinstance(e, dict)]
    chained = any("seq" in e for e in good)
    chain_problems = _effect_chain(entries, effect_id, hashes, chained)
    problems = chain_problems + [p for i, e in enumerate(entries) if isinstance(e, dict) for p in _structure(i, e)]
    if good and good[0].get("kind") != PROPOSED:
        problems.append("entries[0]: the first entry is not PROPOSED")
    if chained:
        problems += _order(entries)
    result = _fold(good)
    signed = None  # a signature proves nothing until it is checked against a key trusted from elsewhere
    if public_key is not None:
        signed = signature_holds(signature, bundle_statement(effect_id, entries), public_key)
        if not signed:
            problems.append("signature: missing or does not verify against the given public key")
    return {
        "effect_id": effect_id,
        "format": "chained" if chained else "legacy",
        "valid": not problems,
        "tamper_evident": not chain_problems,
        "signed": signed,
        **result,
        "problems": problems,
        "covers": COVERS,
    }


def verify_journal(entries: list[Any], *, public_key: str | None = None,
                   checkpoint: dict[str, Any] | None = None) -> dict[str, Any]:
    """Check a whole journal: the chain across all effects, an optional signed checkpoint, then every effect."""
    if not isinstance(entries, list):
        raise BundleError(f"journal: expected a list of entries, got {type(entries).__name__}")
    with _collector_paused():
        return _verify_journal(entries, public_key, checkpoint)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Verifying builds only acyclic data; on a million parsed entries the cycle collector's repeated passes over
    them would cost more than the hashing itself."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _verify_journal(entries: list[Any], public_key: str | None, checkpoint: dict[str, Any] | None) -> dict[str, Any]:
    problems: list[str] = []
    previous: str | None = None
    groups: dict[str, tuple[list[Any], list[bool]]] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            problems.append(f"entries[{i}]: not an object")
            previous = None
            continue
        holds = hash_holds(entry)
        stored = entry.get("hash")
        if entry.get("seq") != i:
            problems.append(f"entries[{i}]: seq {entry.get('seq')!r} where {i} was expected")
        if entry.get("prev") != previous:
            problems.append(f"entries[{i}]: prev does not link to the entry before it")
        if not holds:
            problems.append(f"entries[{i}]: hash does not match the entry's content")
        previous = stored
        eid = entry.get("effect_id")
        if isinstance(eid, str):
            group = groups.get(eid)
            if group is None:
                group = groups[eid] = ([], [])
            group[0].append(entry)
            group[1].append(holds)
    signed = None
    if checkpoint is not None:
        signed, found = _checkpoint(entries, checkpoint, public_key)
        problems += found
    chain_ok = not problems
    verified = {eid: _verify(group, eid, None, None, hashes) for eid, (group, hashes) in groups.items()}
    for eid, outcome in verified.items():
        problems += [f"effect {eid}: {p}" for p in outcome["problems"] if not p.startswith("entries[")]
    return {
        "valid": not problems and all(v["valid"] for v in verified.values()),
        "tamper_evident": chain_ok,
        "signed": signed,
        "entries": len(entries),
        "problems": problems,
        "effects": verified,
        "covers": COVERS,
    }


def _checkpoint(entries: list[Any], checkpoint: dict[str, Any], public_key: str | None) -> tuple[bool, list[str]]:
    problems = []
    seq, head = checkpoint.get("seq"), checkpoint.get("head")
    signed = public_key is not None and signature_holds(checkpoint.get("signature"), checkpoint_statement(seq, head),
                                                        public_key)
    if not signed:
        problems.append("checkpoint: signature missing or does not verify against the given public key")
    if not isinstance(seq, int) or seq < -1:
        problems.append(f"checkpoint.seq: {seq!r} is not a journal position")
    elif seq >= len(entries):
        problems.append(f"checkpoint: the journal ends at seq {len(entries) - 1}, before the checkpoint's seq {seq} "
                        "(tail cut)")
    elif (entries[seq].get("hash") if seq >= 0 and isinstance(entries[seq], dict) else None) != head:
        problems.append(f"checkpoint: entry {seq} differs from the signed head (rewritten)")
    return signed, problems


def _unpack(bundle: Any) -> tuple[list[Any], str | None, Any]:
    if isinstance(bundle, list):
        entries, signature, effect_id = bundle, None, None
    elif isinstance(bundle, dict) and "entries" in bundle:
        entries, signature, effect_id = bundle["entries"], bundle.get("signature"), bundle.get("effect_id")
        if not isinstance(entries, list):
            raise BundleError(f"entries: expected a list, got {type(entries).__name__}")
    else:
        raise BundleError("expected a receipt bundle (an object with 'entries') or a list of journal entries")
    if effect_id is None:
        effect_id = next((e.get("effect_id") for e in entries if isinstance(e, dict)), None)
    return entries, effect_id, signature


def _effect_chain(entries: list[Any], effect_id: str | None, hashes: list[bool], chained: bool) -> list[str]:
    problems = []
    link = "effect_prev" if chained else "prev"
    previous: str | None = None
    last_seq = -1
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            problems.append(f"entries[{i}]: not an object")
            continue
        if entry.get("effect_id") != effect_id:
            problems.append(f"entries[{i}]: effect_id {entry.get('effect_id')!r} is not the bundle's {effect_id!r}")
        if not hashes[i]:
            problems.append(f"entries[{i}]: hash does not match the entry's content")
        if entry.get(link) != previous:
            problems.append(f"entries[{i}]: {link} does not link to the entry before it")
        if chained:
            seq = entry.get("seq")
            if not isinstance(seq, int) or seq <= last_seq:
                problems.append(f"entries[{i}]: seq {seq!r} does not follow {last_seq}")
            else:
                last_seq = seq
        previous = entry.get("hash")
    return problems


def _order(entries: list[Any]) -> list[str]:
    """A chained journal never holds a second resolution or a result with no send open: Journal.append stores a
    late answer as LATE_RESULT and the gate resolves only what it dispatched, so either one is a forged entry."""
    problems = []
    open_send = resolved = False
    for i, entry in enumerate(entries):
        kind = entry.get("kind") if isinstance(entry, dict) else None
        if settles(entry) and resolved:
            problems.append(f"entries[{i}]: {kind} after the effect was already resolved")
        elif kind in (COMMITTED, AMBIGUOUS) and not open_send:
            problems.append(f"entries[{i}]: {kind} with no send open")
        if kind in SENDS:
            open_send = True
        elif kind in RESOLUTIONS:
            open_send, resolved = False, resolved or settles(entry)
    return problems


def _structure(i: int, entry: dict[str, Any]) -> list[str]:
    kind = entry.get("kind")
    if kind not in KINDS and kind not in LEGACY_KINDS:
        return [f"entries[{i}].kind: unknown kind {kind!r}"]
    if not isinstance(entry.get("ts"), (int, float)):
        return [f"entries[{i}].ts: missing or not a number"]
    for key in ("checks", "rechecked"):
        if key in entry and not isinstance(entry[key], dict):
            return [f"entries[{i}].{key}: expected an object"]
    return []


def _fold(entries: list[dict[str, Any]]) -> dict[str, Any]:
    counted: list[dict[str, Any]] = []  # the checks of sends that may have fired
    span: list[dict[str, Any]] = []  # the checks of sends since the last resolution
    landings: list[Any] = []  # the evidence of each distinct landing
    open_dispatch = ambiguous = False
    happened_once = True
    refused_reason: Any = None
    after_target_error = False
    evidence: Any = None
    rechecked: Any = None
    for entry in entries:
        kind = entry.get("kind")
        if isinstance(entry.get("rechecked"), dict):
            rechecked = entry["rechecked"]
        if kind == DISPATCHED:
            if open_dispatch or after_target_error:
                happened_once = False
            open_dispatch = True
            span = [entry.get("checks") or {}]
        elif kind == REDISPATCHED:
            open_dispatch = True
            span.append(entry.get("rechecked") or {})
        elif kind == COMMITTED:
            evidence = entry.get("result", entry.get("found"))
            landings.append(evidence)
            if entry.get("via") in LEGACY_RESEND_VIAS and isinstance(entry.get("rechecked"), dict) \
                    and "epoch" not in entry:
                span.append(entry["rechecked"])  # the published format journaled a resend only in its COMMITTED
            counted += span
            span, open_dispatch, ambiguous = [], False, False
        elif kind == REFUSED:
            refused_reason = entry.get("reason")
            after_target_error = entry.get("code") == "target_error"
            span, open_dispatch = [], False
        elif kind == AMBIGUOUS:
            counted += span
            span, open_dispatch, ambiguous = [], False, True
        elif kind == LATE_RESULT and entry.get("late_kind") == COMMITTED:
            late = entry.get("result", entry.get("found"))
            if late not in landings:  # the same landing reported twice is one effect, another one is a duplicate
                landings.append(late)
                evidence = evidence if evidence is not None else late
    counted += span
    if len(landings) > 1:
        happened_once = False
    happened: Any = True if landings else ("unknown" if open_dispatch or ambiguous else False)
    return {
        "happened": happened,
        "happened_once": happened_once,
        "authorized_when_fired": all(c.get("lease_live") is True for c in counted) if counted else None,
        "assumptions_held": all(c.get("violations") == [] for c in counted) if counted else None,
        "refused": refused_reason if happened is not True else None,
        "evidence": evidence,
        "rechecked_at_recovery": rechecked,
    }
