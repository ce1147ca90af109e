"""The tamper corpus: damaged copies of real journals, each labelled with what a verifier must say about it.

Originals come from the published runs (results/published, shipped byte for byte, read through
published_format), the project's own result files, and journals the gate writes here over a FunctionTarget, on the
JSONL journal and on the shared PostgreSQL one (a throwaway cluster). Every mutant is checked twice: unsigned (the
chain alone) and signed (the original's bundle signature or journal checkpoint kept, the mutant's entries swapped
in). A mutant the library documents as out of reach of an unsigned chain (receipts.COVERS: a cut tail, a
well-formed appended entry) must still be flagged once signed; every other mutant must be flagged both ways.

`python -m experiments.tamper [--out FILE]` writes the counts per mutant kind (results/reliability/tamper.json).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import published_format
from interlock import (CallableLease, Effect, FunctionTarget, Gate, Journal, Premise, generate_key,
                       public_hex, verify_journal)
from interlock.canonical import entry_hash
from interlock.kinds import COMMITTED, SENDS, open_send
from interlock.receipts import COVERS, bundle_statement
from interlock.signing import checkpoint_statement, sign
from interlock.targets import TIER_BLIND, TIER_DEDUPE, TIER_LOOKUP

from experiments.atomic import write_json
from experiments.harness import code_now, load_average, provenance

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = REPO / "results" / "published"
OWN_RESULTS = REPO / "results" / "scenarios"
OUT = REPO / "results" / "reliability" / "tamper.json"

FLAG = "flag"
UNDETECTABLE = "undetectable"
KINDS = {
    "field_changed": "one character (or digit, or flag) changed in one field of one entry",
    "entry_deleted": "one entry removed from inside the chain",
    "effect_deleted": "every entry of one effect removed from a whole journal (a cut tail when they were its last)",
    "entries_swapped": "two entries exchanged",
    "entry_duplicated": "one entry stored twice",
    "cut_tail": "the last entries cut off",
    "forked_chain": "a second, well-hashed entry claiming the same predecessor as an existing one",
    "forged_committed": "a COMMITTED entry with a correct hash appended by someone who can write the file",
    "other_key": "the bundle signature or checkpoint made with a different key",
}
# What receipts.COVERS says an unsigned chain cannot rule out, in its own words.
DOCUMENTED = {"cut_tail": "a cut tail", "effect_deleted": "a cut tail",
              "forged_committed": "a well-formed entry appended",
              "other_key": "Without a trusted key a signature proves nothing"}


@dataclass
class Original:
    """One real journal or receipt bundle the corpus damages."""

    source: str
    scope: str  # "bundle" (one effect, checked by verify) or "journal" (all effects, checked by verify_journal)
    entries: list[dict[str, Any]]
    effect_id: str | None = None

    @property
    def published(self) -> bool:
        """The published runs' format: each effect chained on its own, no seq (published_format)."""
        return published_format.is_published(self.entries)

    def hashed(self, entry: dict[str, Any]) -> dict[str, Any]:
        """`entry` with the hash its original's format gives it, as a writer of the file could store it."""
        rule = published_format.entry_hash if self.published else entry_hash
        return {**entry, "hash": rule(entry)}


@dataclass
class Mutant:
    """One damaged copy: which kind, where, the entries as damaged, and what an unsigned verifier can see."""

    kind: str
    original: Original
    where: str
    entries: list[dict[str, Any]]
    expect_unsigned: str = FLAG
    foreign: dict[str, Any] | None = field(default=None, repr=False)  # another key's signature or checkpoint

    @property
    def label(self) -> str:
        """Names the mutant in a failure message."""
        return f"{self.kind} at {self.where} of {self.original.source}"


@dataclass
class Keys:
    """The key an honest exporter signs with, and a stranger's."""

    own: Ed25519PrivateKey = field(default_factory=generate_key)
    stranger: Ed25519PrivateKey = field(default_factory=generate_key)

    @property
    def public(self) -> str:
        """The public key a verifier trusts."""
        return public_hex(self.own)


# ---- originals ------------------------------------------------------------------------------------------------


def reference_originals(published: Path = PUBLISHED) -> list[Original]:
    """The published runs' receipt bundles and journals (the copies the project ships in results/published)."""
    found: list[Original] = []
    for path in sorted(published.glob("*.json")):
        found += originals_in_result_file(path, f"results/published/{path.name}")
    return found


def own_originals(results: Path = OWN_RESULTS) -> list[Original]:
    """The journals in the project's own committed result files, once they exist."""
    found: list[Original] = []
    for path in sorted(results.glob("*.json")) if results.is_dir() else []:
        found += originals_in_result_file(path, f"results/scenarios/{path.name}")
    return found


def originals_in_result_file(path: Path, label: str) -> list[Original]:
    """Every receipt bundle (cells[i].evidence.receipt_bundle) and journal (cells[i].artifacts["journal.jsonl"])."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    cells = data.get("cells") if isinstance(data, dict) else None
    found: list[Original] = []
    for i, cell in enumerate(cells if isinstance(cells, list) else []):
        if not isinstance(cell, dict):
            continue
        receipt = (cell.get("evidence") or {}).get("receipt_bundle") if isinstance(cell.get("evidence"), dict) else None
        if isinstance(receipt, dict) and _entry_list(receipt.get("entries")):
            found.append(Original(f"{label} cells[{i}].evidence.receipt_bundle", "bundle",
                                  receipt["entries"], receipt.get("effect_id")))
        journal = (cell.get("artifacts") or {}).get("journal.jsonl") if isinstance(cell.get("artifacts"), dict) else None
        if _entry_list(journal):
            found += originals_of_journal(cast(list[dict[str, Any]], journal), f'{label} cells[{i}].artifacts["journal.jsonl"]')
    return found


def originals_of_journal(entries: list[dict[str, Any]], label: str) -> list[Original]:
    """A chained journal as a whole, plus each effect's entries as a bundle."""
    found = [Original(label, "journal", entries)] if all("seq" in e for e in entries) else []
    for eid in dict.fromkeys(e.get("effect_id") for e in entries):
        found.append(Original(f"{label} effect {eid}", "bundle", [e for e in entries if e.get("effect_id") == eid],
                              eid))
    return found


def _entry_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(e, dict) for e in value)


class _Lost(ConnectionError):
    """The answer of a send never arrived."""


def gate_journal(directory: Path) -> list[dict[str, Any]]:
    """A JSONL journal the gate writes in `directory` (see `gated_entries`)."""
    directory.mkdir(parents=True, exist_ok=True)
    journal = Journal(directory / "journal.jsonl")
    try:
        return gated_entries(journal, None)
    finally:
        journal.close()


def gated_entries(journal: Any, claims: Any) -> list[dict[str, Any]]:
    """The entries the gate writes to `journal`, holding every way an effect ends: committed, refused at submit,
    committed after a lost answer (found by lookup, retried on a deduping target), ambiguous on a blind target, and
    a dispatch left open then settled later, so effects interleave in the chain."""
    store: dict[str, Any] = {}
    lookup_up = {"on": True}
    lose_next: set[str] = set()

    def send(effect_id: str, payload: dict[str, Any]) -> Any:
        store[effect_id] = payload["value"]
        if effect_id in lose_next:
            lose_next.discard(effect_id)
            raise _Lost(effect_id)
        return {"stored": payload["value"]}

    def find(effect_id: str, payload: dict[str, Any]) -> Any:
        if not lookup_up["on"]:
            raise _Lost("lookup")
        return {"stored": store[effect_id]} if effect_id in store else None

    def gate(tier: int) -> Gate:
        target = FunctionTarget(f"store-tier{tier}", send, tier=tier, find=None if tier == TIER_BLIND else find,
                                in_flight=0.0)  # an in-process store: nothing is left in flight
        return Gate(journal, target, claims=claims, claim_wait=1.0)

    live = CallableLease(lambda: True, lambda: {"incident": "INC-1", "status": "open"})
    dead = CallableLease(lambda: False, lambda: {"incident": "INC-1", "status": "resolved"})
    fact = {"value": "v1"}
    moving = Premise("config", lambda: fact["value"], decided="v1")

    def effect(key: str, lease: Any = live, premises: list[Premise] | None = None) -> Effect:
        return Effect(key, {"value": key}, premises or [], lease, agent="tamper-corpus")

    gate(TIER_LOOKUP).submit(effect("committed"))
    gate(TIER_LOOKUP).submit(effect("committed"))  # a repeat: DUPLICATE_IGNORED, nothing journaled
    gate(TIER_LOOKUP).submit(effect("lease-gone", dead))
    fact["value"] = "v2"
    gate(TIER_LOOKUP).submit(effect("premise-moved", premises=[moving]))
    for key, tier in (("lost-then-found", TIER_LOOKUP), ("lost-then-retried", TIER_DEDUPE),
                      ("lost-on-blind", TIER_BLIND)):
        lose_next.add(effect(key).effect_id)
        gate(tier).submit(effect(key))
    lookup_up["on"] = False
    lose_next.add(effect("left-open").effect_id)
    gate(TIER_LOOKUP).submit(effect("left-open"))  # answer lost, lookup down: the dispatch stays open
    gate(TIER_LOOKUP).submit(effect("after-the-open-one"))
    lookup_up["on"] = True
    gate(TIER_LOOKUP).submit(effect("left-open"))  # settled now, after another effect's entries
    return list(journal.entries())


def generated_originals() -> list[Original]:
    """The gate's own journal, whole and per effect."""
    with tempfile.TemporaryDirectory(prefix="interlock-tamper-") as tmp:
        entries = gate_journal(Path(tmp))
    return originals_of_journal(entries, "gate journal over a FunctionTarget")


def postgres_originals() -> list[Original]:
    """The same gate run on the shared PostgreSQL journal (entries hashed and chained by the server), exported,
    whole and per effect, on a throwaway cluster."""
    from interlock.pg import PgClaims, PgJournal

    from experiments.services.postgres import TempCluster

    with TempCluster() as cluster:
        journal = PgJournal(cluster.create_database("tamper"))
        claims = PgClaims(journal)
        try:
            entries = gated_entries(journal, claims)
        finally:
            claims.close()
            journal.close()
    return originals_of_journal(entries, "gate journal on PostgreSQL over a FunctionTarget")


def all_originals() -> list[Original]:
    """Every original the corpus damages."""
    return reference_originals() + own_originals() + generated_originals() + postgres_originals()


# ---- mutants --------------------------------------------------------------------------------------------------


def mutants(original: Original, keys: Keys) -> Iterator[Mutant]:
    """Every mutant of one original, in a fixed order."""
    entries = original.entries
    n = len(entries)
    for i, entry in enumerate(entries):
        for key in entry:
            changed = copy.deepcopy(entries)
            changed[i][key] = perturbed(entry[key])
            yield Mutant("field_changed", original, f"entries[{i}].{key}", changed)
    for i in range(n - 1):  # removing the last entry is a cut tail
        yield Mutant("entry_deleted", original, f"entries[{i}]", entries[:i] + entries[i + 1:])
    for i in range(n):
        for j in range(i + 1, n):
            swapped = list(entries)
            swapped[i], swapped[j] = swapped[j], swapped[i]
            yield Mutant("entries_swapped", original, f"entries[{i}] and entries[{j}]", swapped)
    for i in range(n):
        yield Mutant("entry_duplicated", original, f"entries[{i}]", entries[: i + 1] + [entries[i]] + entries[i + 1:])
    for length in range(n):
        yield Mutant("cut_tail", original, f"first {length} of {n} entries kept", entries[:length], UNDETECTABLE)
    for i in range(n):
        sibling = original.hashed({**copy.deepcopy(entries[i]), "ts": entries[i].get("ts", 0) + 1, "forked": True})
        yield Mutant("forked_chain", original, f"entries[{i}]", entries[: i + 1] + [sibling] + entries[i + 1:])
    if original.scope == "bundle":
        for k in range(1, n + 1):  # onto the whole chain, and onto each send as a crash would have left it
            if k == n or entries[k - 1].get("kind") in SENDS:
                head = entries[:k]
                expect = UNDETECTABLE if original.published or open_send(head) else FLAG
                yield Mutant("forged_committed", original, f"appended after entries[{k - 1}]",
                             head + [forged_committed(original, head)], expect)
        yield Mutant("other_key", original, "signature", list(entries), UNDETECTABLE,
                     foreign=sign(keys.stranger, bundle_statement(cast(str, _effect_id(original)), entries)))
    else:
        yield from _effect_deletions(original)
        yield Mutant("other_key", original, "checkpoint", list(entries), foreign=_checkpoint(keys.stranger, entries))


def perturbed(value: Any) -> Any:
    """The same JSON value with one character, digit or flag changed."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 0.001
    if isinstance(value, str):
        if not value:
            return "x"
        middle = len(value) // 2
        return value[:middle] + ("1" if value[middle] == "0" else "0") + value[middle + 1:]
    if isinstance(value, list):
        return [perturbed(value[0])] + value[1:] if value else [0]
    if isinstance(value, dict):
        first = sorted(value)[0] if value else None
        return {**value, first: perturbed(value[first])} if value else {"x": 0}
    return "x"


def forged_committed(original: Original, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """A COMMITTED that links to the last entry with a correct hash, as a writer of the file could append it."""
    last = entries[-1]
    forged: dict[str, Any] = {"ts": last.get("ts", 0) + 1, "kind": COMMITTED, "effect_id": last.get("effect_id")}
    if original.published:
        forged.update({"result": {"forged": True}, "prev": last.get("hash")})
    else:
        forged = {"seq": last["seq"] + 1, **forged, "via": "send", "result": {"forged": True}, "epoch": 1,
                  "prev": last.get("hash"), "effect_prev": last.get("hash")}
    return original.hashed(forged)


def _effect_deletions(original: Original) -> Iterator[Mutant]:
    entries = original.entries
    for eid in dict.fromkeys(e.get("effect_id") for e in entries):
        kept = [e for e in entries if e.get("effect_id") != eid]
        is_tail = entries[: len(kept)] == kept
        yield Mutant("effect_deleted", original, f"effect {eid}", kept, UNDETECTABLE if is_tail else FLAG)


def _effect_id(original: Original) -> str | None:
    return original.effect_id or next((e.get("effect_id") for e in original.entries), None)


def _checkpoint(key: Ed25519PrivateKey, entries: list[dict[str, Any]]) -> dict[str, Any]:
    seq, head = len(entries) - 1, entries[-1].get("hash") if entries else None
    return {"seq": seq, "head": head, "signature": sign(key, checkpoint_statement(seq, head))}


# ---- checking -------------------------------------------------------------------------------------------------


def flagged(mutant: Mutant, keys: Keys, *, signed: bool) -> bool:
    """Whether the verifier rejects the mutant, unsigned or with the original's signature or checkpoint kept."""
    original = mutant.original
    if original.scope == "bundle":
        eid = _effect_id(original)
        packed: dict[str, Any] = {"effect_id": eid, "entries": mutant.entries}
        if mutant.foreign is not None:
            packed["signature"] = mutant.foreign
        elif signed:
            packed["signature"] = sign(keys.own, bundle_statement(cast(str, eid), original.entries))
        return not published_format.verify_record(packed, public_key=keys.public if signed else None)["valid"]
    checkpoint = mutant.foreign if mutant.foreign is not None else (
        _checkpoint(keys.own, original.entries) if signed else None)
    return not verify_journal(mutant.entries, public_key=keys.public if signed or checkpoint else None,
                              checkpoint=checkpoint)["valid"]


def originals_verify(originals: list[Original], keys: Keys) -> list[str]:
    """Originals that do not verify themselves: a corpus built on them would prove nothing."""
    bad = []
    for original in originals:
        mutant = Mutant("none", original, "unchanged", original.entries)
        if flagged(mutant, keys, signed=False) or flagged(mutant, keys, signed=True):
            bad.append(original.source)
    return bad


def run_corpus(originals: list[Original], keys: Keys | None = None) -> dict[str, Any]:
    """Generate and check every mutant; return the counts per kind and the first few misses."""
    keys = keys or Keys()
    counts = {kind: {"generated": 0, "flagged_unsigned": 0, "flagged_signed": 0,
                     "documented_undetectable_unsigned": 0, "missed": 0} for kind in KINDS}
    misses: list[str] = []
    for original in originals:
        for mutant in mutants(original, keys):
            row = counts[mutant.kind]
            row["generated"] += 1
            unsigned, signed = flagged(mutant, keys, signed=False), flagged(mutant, keys, signed=True)
            row["flagged_unsigned"] += unsigned
            row["flagged_signed"] += signed
            documented = mutant.expect_unsigned == UNDETECTABLE
            row["documented_undetectable_unsigned"] += documented and not unsigned
            if not signed or (not unsigned and not documented):
                row["missed"] += 1
                misses.append(f"{mutant.label}: {'signed' if not signed else 'unsigned'} verify did not flag it")
    return {"kinds": counts, "misses": misses}


# ---- torn tails -----------------------------------------------------------------------------------------------


def torn_tail_sweep(directory: Path) -> dict[str, Any]:
    """Cut a real journal at every byte offset of its last line and open it: every complete entry must stay,
    the torn bytes must land in <journal>.torn, and the journal must accept the next append."""
    source = gate_journal(directory / "source")
    raw = (directory / "source" / "journal.jsonl").read_bytes()
    start = raw.rstrip(b"\n").rfind(b"\n") + 1
    complete = source[:-1]
    lost = wrong_tail = 0
    for offset in range(start, len(raw)):
        path = directory / f"cut-{offset}" / "journal.jsonl"
        path.parent.mkdir()
        path.write_bytes(raw[:offset])
        with Journal(path) as journal:
            kept = journal.entries()
            journal.append("PROPOSED", "0" * 12, {"after": "torn tail"})
            chain_holds = verify_journal(journal.entries())["tamper_evident"]
        torn = Path(f"{path}.torn")
        expected_tail = raw[start:offset]
        lost += kept != complete or not chain_holds
        wrong_tail += (torn.read_bytes() if torn.exists() else b"") != (expected_tail + b"\n" if expected_tail else b"")
    return {"offsets_tried": len(raw) - start, "complete_entries": len(complete),
            "runs_losing_a_complete_entry": lost, "runs_with_a_wrong_torn_file": wrong_tail}


APPENDER = """
import sys
from interlock import Journal
journal = Journal(sys.argv[1])
print("ready", flush=True)
i = 0
while True:
    journal.append("PROPOSED", "%012x" % i, {"blob": "x" * int(sys.argv[2])})
    i += 1
"""


def sigkill_mid_append(directory: Path, runs: int = 8, entry_bytes: int = 16_000_000) -> dict[str, Any]:
    """SIGKILL a real process while it appends multi-megabyte entries, then open the journal: whatever the kill
    cut, every complete entry is kept and the journal verifies."""
    torn_runs = broken = 0
    for run in range(runs):
        path = directory / f"killed-{run}" / "journal.jsonl"
        path.parent.mkdir(parents=True)
        child = subprocess.Popen([sys.executable, "-c", APPENDER, str(path), str(entry_bytes)],
                                 stdout=subprocess.PIPE, text=True, cwd=REPO)
        try:
            child.stdout.readline()  # type: ignore[union-attr]
            _wait_for_size(path, child, entry_bytes * (run + 1) // 3)  # each run cuts at another point of a line
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
        complete = path.read_bytes().count(b"\n")
        with Journal(path) as journal:
            kept = len(journal)
            entries = journal.entries()
        torn_runs += bool(journal.torn)
        broken += kept != complete or not verify_journal(entries)["tamper_evident"]
        shutil.rmtree(path.parent)  # megabytes per entry: keep no run's journal
    return {"runs": runs, "runs_killed_mid_line": torn_runs, "runs_losing_a_complete_entry": broken}


def _wait_for_size(path: Path, child: subprocess.Popen[str], size: int, timeout: float = 60) -> None:
    """Until the appender has written `size` bytes of its journal, failing if it died first."""
    deadline = time.monotonic() + timeout
    while not path.exists() or path.stat().st_size < size:
        if child.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{path}: the appender stopped before writing {size} bytes")
        time.sleep(0.001)


# ---- summary --------------------------------------------------------------------------------------------------


def summary(originals: list[Original], keys: Keys | None = None) -> dict[str, Any]:
    """The published tamper summary: sources, counts per kind, torn-tail results."""
    keys = keys or Keys()
    started, load = code_now(), load_average()
    corpus = run_corpus(originals, keys)
    kinds = [{"kind": kind, "what": KINDS[kind], "documented_undetectable_unsigned_as": DOCUMENTED.get(kind),
              **corpus["kinds"][kind]} for kind in KINDS]
    with tempfile.TemporaryDirectory(prefix="interlock-torn-") as tmp:
        torn = torn_tail_sweep(Path(tmp))
        killed = sigkill_mid_append(Path(tmp))
    return {
        "schema_version": 2,  # 2: a published original's format is "published", and the file says how it was made
        "generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "provenance": provenance("python -m experiments.tamper",
                                 {"service": "none: stored journals, and journals the gate writes here over an "
                                             "in-process FunctionTarget"}, "none (no decisions are made)", {}, started,
                                 load),
        "covers": COVERS,
        "sources": [{"source": o.source, "scope": o.scope, "format": "published" if o.published else "chained",
                     "entries": len(o.entries)} for o in originals],
        "originals_failing_verify": originals_verify(originals, keys),
        "kinds": kinds,
        "totals": {key: sum(k[key] for k in kinds) for key in
                   ("generated", "flagged_unsigned", "flagged_signed", "documented_undetectable_unsigned", "missed")},
        "misses": corpus["misses"][:20],
        "torn_tail": torn,
        "sigkill_mid_append": killed,
    }


def main(argv: list[str] | None = None) -> int:
    """Build the corpus, check it and write the summary; exit 1 if verify missed a mutant it must catch."""
    parser = argparse.ArgumentParser(prog="python -m experiments.tamper", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"summary file (default {OUT.relative_to(REPO)})")
    args = parser.parse_args(argv)
    if args.out.is_dir():
        print(f"{args.out}: is a directory, not a summary file", file=sys.stderr)
        return 2
    result = summary(all_originals())
    try:
        write_json(args.out, result)
    except OSError as exc:
        print(f"{args.out}: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return 2
    totals = result["totals"]
    print(f"{totals['generated']} mutants of {len(result['sources'])} journals: {totals['flagged_unsigned']} flagged "
          f"unsigned, {totals['flagged_signed']} signed, {totals['documented_undetectable_unsigned']} documented "
          f"undetectable unsigned, {totals['missed']} missed -> {args.out}", file=sys.stderr)
    return 1 if totals["missed"] or result["originals_failing_verify"] else 0


if __name__ == "__main__":
    sys.exit(main())
