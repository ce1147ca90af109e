"""Receipts: what a journal proves about an effect, re-derived from its entries alone.

An unsigned chain is tamper-evident only in a narrow sense: every entry's hash recomputes and links to the one
before it, so an edit, a reorder, a deleted entry or a deleted effect inside the chain shows. Anyone who can write
the file can still rewrite it wholesale, and a cut tail leaves a shorter chain that is consistent. Only a signed
checkpoint or a signed bundle, checked against a public key kept elsewhere, rules those out.

A receipt also says what the record cannot settle alone: `held_twice` lists every sign that the service holds
the effect more than once (two landings, a lookup that found two copies, a send made while another was open),
and a result journaled under a claim epoch another process had already taken over is a problem. Given the
service's own export of how many copies of each effect it holds (`service=`), a receipt holds the record to it.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..collector import collector_paused
from ..canonical import hash_holds, line_holds, loads
from ..errors import BundleError
from ..journal import Journal
from ..signing import checkpoint_statement, sign, signature_holds
from ._check import EffectCheck

COVERS = ("tamper_evident: every entry's hash recomputes and links to its predecessor. Unsigned, that rules "
          "out edits, reorders and deletions inside the chain, not a wholesale rewrite, a well-formed entry "
          "appended by whoever can write the file, or a cut tail; a valid signature over the head (signed: true) "
          "rules those out for whoever trusts the public key. Without a trusted key a signature proves nothing and "
          "is not checked (signed: null), so one made with another key shows only against the trusted one.")


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


def verify(bundle: Any, *, public_key: str | None = None,
           service: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Check one effect's chain and say what it establishes: whether it happened, once, authorized, on held facts;
    `service` maps effect ids to the copies the service holds (an id it does not name is held 0 times)."""
    entries, effect_id, signature = _unpack(bundle)
    check = EffectCheck(effect_id)
    for entry in entries:
        check.feed(entry, isinstance(entry, dict) and hash_holds(entry))
    signed = None  # a signature proves nothing until it is checked against a key trusted from elsewhere
    extra = []
    if public_key is not None:
        signed = signature_holds(signature, bundle_statement(effect_id or "", entries), public_key)
        if not signed:
            extra.append("signature: missing or does not verify against the given public key")
    return _receipt(check, signed, extra, service)


def _receipt(check: EffectCheck, signed: bool | None, extra: list[str],
             service: Mapping[str, int] | None) -> dict[str, Any]:
    copies = None if service is None else service.get(check.effect_id or "", 0)
    problems = check.problems() + extra + (check.against_service(copies) if copies is not None else [])
    return {
        "effect_id": check.effect_id,
        "format": "chained",
        "valid": not problems,
        "tamper_evident": not check.chain,
        "signed": signed,
        **check.established(),
        "service_copies": copies,
        "problems": problems,
        "covers": COVERS,
    }


def verify_journal(entries: Iterable[Any], *, public_key: str | None = None,
                   checkpoint: dict[str, Any] | None = None,
                   service: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Check a whole journal: the chain across all effects, an optional signed checkpoint, then every effect, and
    against the service's export of the copies it holds per effect when one is given.

    `entries` may be any iterable, a list or a stream read from the file: the journal is checked in one pass and
    never held whole, only each effect's running check. An item may be an entry or a stored line (bytes, without
    its newline), whose hash is then checked over the line's own bytes instead of re-encoding its content."""
    if not isinstance(entries, (list, tuple)) and not hasattr(entries, "__next__"):
        raise BundleError(f"journal: expected a list of entries, got {type(entries).__name__}")
    with collector_paused():
        return _verify_journal(entries, public_key, checkpoint, service)


def _verify_journal(entries: Iterable[Any], public_key: str | None, checkpoint: dict[str, Any] | None,
                    service: Mapping[str, int] | None) -> dict[str, Any]:
    problems: list[str] = []
    previous: str | None = None
    checks: dict[str, EffectCheck] = {}
    wanted = checkpoint.get("seq") if checkpoint is not None else None
    at_checkpoint: Any = None
    i = -1
    holds_for, found = hash_holds, checks.get  # bound once: this loop runs once per entry
    for i, entry in enumerate(entries):
        if type(entry) is bytes:
            raw = entry
            try:
                entry = loads(raw)
            except ValueError:
                entry = None
            holds = type(entry) is dict and line_holds(raw, entry)
        elif type(entry) is dict:
            holds = holds_for(entry)
        if type(entry) is not dict:
            problems.append(f"entries[{i}]: not an object")
            previous = None
            continue
        get = entry.get
        if get("seq") != i or get("prev") != previous or not holds:
            problems += _links(i, entry, previous, holds)
        previous = get("hash")
        if i == wanted:
            at_checkpoint = previous
        eid = get("effect_id")
        check = found(eid) if isinstance(eid, str) else None
        if check is None:
            if type(eid) is not str:
                continue
            check = checks[eid] = EffectCheck(eid)
        check.feed(entry, holds)
    signed = None
    if checkpoint is not None:
        signed, unheld = _checkpoint(i + 1, at_checkpoint, checkpoint, public_key)
        problems += unheld
    chain_ok = not problems
    verified = {eid: _receipt(check, None, [], service) for eid, check in checks.items()}
    for eid, outcome in verified.items():
        problems += [f"effect {eid}: {p}" for p in outcome["problems"] if not p.startswith("entries[")]
    problems += [f"service: holds {_copies(copies)} of effect {eid}, which the journal does not name"
                 for eid, copies in sorted((service or {}).items()) if copies > 0 and eid not in verified]
    return {
        "valid": not problems and all(v["valid"] for v in verified.values()),
        "tamper_evident": chain_ok,
        "signed": signed,
        "entries": i + 1,
        "held_twice": sorted(eid for eid, outcome in verified.items() if outcome["held_twice"]),
        "problems": problems,
        "effects": verified,
        "covers": COVERS,
    }


def _copies(count: int) -> str:
    return f"{count} cop{'y' if count == 1 else 'ies'}"


def _links(i: int, entry: dict[str, Any], previous: str | None, holds: bool) -> list[str]:
    """What is wrong with entry `i`'s place in the journal-wide chain."""
    problems = []
    if entry.get("seq") != i:
        problems.append(f"entries[{i}]: seq {entry.get('seq')!r} where {i} was expected")
    if entry.get("prev") != previous:
        problems.append(f"entries[{i}]: prev does not link to the entry before it")
    if not holds:
        problems.append(f"entries[{i}]: hash does not match the entry's content")
    return problems


def _checkpoint(count: int, found: Any, checkpoint: dict[str, Any], public_key: str | None) -> tuple[bool, list[str]]:
    """Hold a journal of `count` entries, whose entry at the checkpoint's seq hashes to `found`, to `checkpoint`."""
    problems = []
    seq, head = checkpoint.get("seq"), checkpoint.get("head")
    signed = public_key is not None and signature_holds(checkpoint.get("signature"), checkpoint_statement(seq if isinstance(seq, int) else -1, head),
                                                        public_key)
    if not signed:
        problems.append("checkpoint: signature missing or does not verify against the given public key")
    if not isinstance(seq, int) or seq < -1:
        problems.append(f"checkpoint.seq: {seq!r} is not a journal position")
    elif seq >= count:
        problems.append(f"checkpoint: the journal ends at seq {count - 1}, before the checkpoint's seq {seq} "
                        "(tail cut)")
    elif (found if seq >= 0 else None) != head:
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
