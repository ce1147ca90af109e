"""Receipts: what a journal proves about an effect, re-derived from its entries alone.

An unsigned chain is tamper-evident only in a narrow sense: every entry's hash recomputes and links to the one
before it, so an edit, a reorder, a deleted entry or a deleted effect inside the chain shows. Anyone who can write
the file can still rewrite it wholesale, and a cut tail leaves a shorter chain that is consistent. Only a signed
checkpoint or a signed bundle, checked against a public key kept elsewhere, rules those out.

A receipt also says what the record cannot settle alone: `held_twice` lists every sign that the service holds
the effect more than once (two landings of two sends, a lookup that found two copies, a send made while another
was open), and a result journaled under a claim epoch another process had already taken over is a problem. Given
the service's own export of how many copies of each effect it holds (`service=`), a receipt holds the record to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ..collector import collector_paused
from ..errors import BundleError, UnknownEffect
from ..signing import sign, signature_holds
from ._check import COVERS, EffectCheck, Receipts, receipt
from ._journal import JournalCheck, read

if TYPE_CHECKING:
    from .._protocols import JournalLike

__all__ = ["COVERS", "JournalCheck", "Receipts", "bundle", "bundle_statement", "verify", "verify_journal"]


def bundle_statement(effect_id: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """What a bundle signature covers: the effect, its entry count and the hash of its last entry."""
    head = entries[-1].get("hash") if entries and isinstance(entries[-1], dict) else None
    return {"statement": "interlock receipt bundle", "effect_id": effect_id, "count": len(entries), "head": head}


def bundle(journal: JournalLike, effect_id: str, key: Any = None) -> dict[str, Any]:
    """Export one effect's entries as a self-contained receipt bundle, signed when a key is given."""
    journal.refresh()
    entries = journal.entries(effect_id)
    if not entries:
        raise UnknownEffect(f"effect {effect_id} is not in {journal.path}")
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
        check.feed(*read(entry))
    signed = None  # a signature proves nothing until it is checked against a key trusted from elsewhere
    extra = []
    if public_key is not None:
        signed = signature_holds(signature, bundle_statement(effect_id or "", entries), public_key)
        if not signed:
            extra.append("signature: missing or does not verify against the given public key")
    return receipt(check, signed, extra, service)


def verify_journal(entries: Iterable[Any], *, public_key: str | None = None,
                   checkpoint: dict[str, Any] | None = None,
                   service: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Check a whole journal: the chain across all effects, an optional signed checkpoint, then every effect, and
    against the service's export of the copies it holds per effect when one is given.

    `entries` may be any iterable, a list or a stream read from the file: the journal is checked in one pass and
    never held whole, only each effect's running check, in memory (the result reads every receipt from them:
    moving checks to disk would only slow the pass). An item may be an entry or a stored line (bytes, without its
    newline), whose hash is then checked over the line's own bytes instead of re-encoding its content.

    The verdict (valid, tamper evident, signed, every problem, what is held twice) is settled by the pass;
    `effects` maps each effect id to its receipt, made from the effect's finished check when it is read."""
    if not isinstance(entries, (list, tuple)) and not hasattr(entries, "__next__"):
        raise BundleError(f"journal: expected a list of entries, got {type(entries).__name__}")
    check = JournalCheck(public_key=public_key, checkpoint=checkpoint, service=service)
    with collector_paused():
        check.scan(entries)
        return {**check.summary(), "effects": check.by_id()}


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
