"""The receipt of one effect in the published format, re-derived from its entries: the per-effect chain through
`prev`, each entry's shape, and what the entries establish, in the same terms as this journal's receipts."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from interlock.receipts import COVERS, bundle_statement
from interlock.signing import signature_holds

# Every kind the published format documents (PUBLISHED_FORMAT.md, section 3), whether or not the runs wrote it.
KINDS = frozenset({"PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED", "REFUSED", "AMBIGUOUS", "ESCALATED",
                   "DECIDED", "CONFIRMED"})
# The `via` of a COMMITTED that stands for a second send: the published gate journaled a resend only there.
RESEND_VIAS = frozenset({"retry-idempotent", "recovery-reapply"})


def entry_hash(entry: dict[str, Any]) -> str:
    """The published hash rule: sha256 over `json.dumps(sort_keys=True, separators=(",", ":"))` of the entry
    without its `hash`, so `prev` is covered."""
    body = {key: value for key, value in entry.items() if key != "hash"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


def is_published(entries: list[Any]) -> bool:
    """Whether a gate record is in the published format: entries with no `seq` (this journal numbers every one)."""
    return bool(entries) and not any(isinstance(e, dict) and "seq" in e for e in entries)


def verify(bundle: dict[str, Any] | list[Any], *, public_key: str | None = None) -> dict[str, Any]:
    """Check one published effect's chain and say what it establishes; a signature is checked only against
    `public_key`, over the same statement this journal's bundles sign."""
    entries = bundle["entries"] if isinstance(bundle, dict) else bundle
    effect_id = bundle.get("effect_id") if isinstance(bundle, dict) else None
    if effect_id is None:
        effect_id = next((e.get("effect_id") for e in entries if isinstance(e, dict)), None)
    story = _Story(effect_id)
    for i, entry in enumerate(entries):
        story.read(i, entry)
    problems = story.chain + story.shape
    signed = None
    if public_key is not None:
        signature = bundle.get("signature") if isinstance(bundle, dict) else None
        signed = signature_holds(signature, bundle_statement(effect_id or "", entries), public_key)
        if not signed:
            problems.append("signature: missing or does not verify against the given public key")
    return {"effect_id": effect_id, "format": "published", "valid": not problems,
            "tamper_evident": not story.chain, "signed": signed, **story.established(), "problems": problems,
            "covers": COVERS}


class _Story:
    """What one effect's published entries say, read in order."""

    def __init__(self, effect_id: str | None):
        self.effect_id = effect_id
        self.previous: str | None = None
        self.chain: list[str] = []
        self.shape: list[str] = []
        self.open = self.ambiguous = self.failed_send = False
        self.twice: list[str] = []  # what says the service may hold the effect more than once
        self.open_checks: list[dict[str, Any]] = []  # the checks behind the send still open
        self.fired_checks: list[dict[str, Any]] = []  # the checks behind every send that may have fired
        self.landings: list[Any] = []
        self.refused: Any = None
        self.evidence: Any = None
        self.rechecked: Any = None

    def read(self, i: int, entry: Any) -> None:
        """Check entry `i`'s place in the chain and its shape, then fold what it says."""
        if not isinstance(entry, dict):
            self.chain.append(f"entries[{i}]: not an object")
            return
        if entry.get("effect_id") != self.effect_id:
            self.chain.append(f"entries[{i}]: effect_id {entry.get('effect_id')!r} is not the bundle's "
                              f"{self.effect_id!r}")
        if entry.get("hash") != entry_hash(entry):
            self.chain.append(f"entries[{i}]: hash does not match the entry's content")
        if entry.get("prev") != self.previous:
            self.chain.append(f"entries[{i}]: prev does not link to the entry before it")
        self.previous = entry.get("hash")
        kind = entry.get("kind")
        if i == 0 and kind != "PROPOSED":
            self.shape.append("entries[0]: the first entry is not PROPOSED")
        if type(kind) is not str or kind not in KINDS:
            self.shape.append(f"entries[{i}].kind: unknown kind {kind!r}")
        elif not isinstance(entry.get("ts"), (int, float)) or isinstance(entry.get("ts"), bool):
            self.shape.append(f"entries[{i}].ts: missing or not a number")
        for key in ("checks", "rechecked"):
            if key in entry and not isinstance(entry[key], dict):
                self.shape.append(f"entries[{i}].{key}: expected an object")
        if isinstance(entry.get("rechecked"), dict):
            self.rechecked = entry["rechecked"]
        self._fold(i, kind, entry)

    def _fold(self, i: int, kind: Any, entry: dict[str, Any]) -> None:
        if kind == "DISPATCHED":
            if self.open or self.failed_send:
                self.twice.append(f"entries[{i}]: a DISPATCHED while an earlier send was open or had failed")
            self.open, self.open_checks = True, [entry.get("checks") or {}]
        elif kind == "COMMITTED":
            self.evidence = entry.get("result", entry.get("found"))
            if self.landings:
                self.twice.append(f"entries[{i}]: a second COMMITTED")
            self.landings.append(self.evidence)
            if entry.get("via") in RESEND_VIAS and isinstance(entry.get("rechecked"), dict):
                self.open_checks.append(entry["rechecked"])
            self.fired_checks += self.open_checks
            self.open, self.ambiguous, self.open_checks = False, False, []
        elif kind == "REFUSED":
            self.refused = entry.get("reason")
            self.failed_send = entry.get("code") == "target_error"
            self.open, self.open_checks = False, []
        elif kind == "AMBIGUOUS":
            self.fired_checks += self.open_checks
            self.open, self.ambiguous, self.open_checks = False, True, []

    def established(self) -> dict[str, Any]:
        """What the entries establish, whether or not they verify."""
        fired = self.fired_checks + self.open_checks
        happened: Any = True if self.landings else ("unknown" if self.open or self.ambiguous else False)
        return {
            "happened": happened,
            "happened_once": not self.twice,
            "held_twice": list(self.twice),
            "authorized_when_fired": all(c.get("lease_live") is True for c in fired) if fired else None,
            "assumptions_held": all(c.get("violations") == [] for c in fired) if fired else None,
            "refused": self.refused if happened is not True else None,
            "evidence": self.evidence,
            "rechecked_at_recovery": self.rechecked,
        }
