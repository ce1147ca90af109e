"""A whole-journal check holds a bounded number of effects in memory and moves the others to disk; what it says is
the same either way, to the byte, however often effects come back from disk."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from experiments import tamper
from interlock import Journal, effect_id_for, verify_journal
from interlock.canonical import entry_hash
from interlock.receipts import JournalCheck, _spill
from interlock.receipts import __main__ as cli
from interlock.receipts._check import EffectCheck
from interlock.receipts.__main__ import indented, main

CHECKS = {"lease_live": True, "violations": []}


@pytest.fixture
def mixed(tmp_path):
    """A journal whose effects come back long after they were first named: late answers, a second send while one
    is open, a resend after a failed one, a fork, an edited line, a line that is not an object, an entry with no
    effect id and an effect named only at the end."""
    path = tmp_path / "journal.jsonl"
    ids = [effect_id_for(f"job:{n}") for n in range(30)]
    with Journal(path) as journal:
        for n, eid in enumerate(ids):
            journal.append("PROPOSED", eid, {"n": n})
            if n % 4:
                journal.append("DISPATCHED", eid, {"checks": {**CHECKS, "lease_live": n % 7 != 0}})
        for n, eid in enumerate(ids):
            if n % 4 == 1:
                journal.append("REDISPATCHED", eid, {"rechecked": CHECKS})  # a second send, so room for a copy
                journal.append("COMMITTED", eid, {"result": {"n": n}})
                journal.append("COMMITTED", eid, {"result": {"n": -n}})  # kept as a LATE_RESULT, a second landing
            elif n % 4 == 2:
                journal.append("DISPATCHED", eid, {"checks": CHECKS})  # while the first send is open
            elif n % 4 == 3:
                journal.append("REFUSED", eid, {"reason": "the service failed", "code": "target_error"})
        journal.append("REDISPATCHED", ids[0], {"rechecked": CHECKS})
        journal.append("AMBIGUOUS", ids[0], {})
        journal.append("DISPATCHED", ids[3], {"checks": CHECKS})  # after the send that failed
        journal.append("PROPOSED", effect_id_for("job:last"), {"n": -1})
    lines = path.read_bytes().splitlines()
    entries = [json.loads(line) for line in lines]
    fork = next(i for i, e in enumerate(entries) if e["effect_id"] == ids[5] and e["kind"] == "DISPATCHED")
    sibling = {**entries[fork], "ts": entries[fork]["ts"] + 1}
    sibling["hash"] = entry_hash(sibling)
    edited = next(i for i, e in enumerate(entries) if e["effect_id"] == ids[9] and e["kind"] == "COMMITTED")
    entries[edited]["result"] = {"n": 99}
    lines[edited] = json.dumps(entries[edited]).encode()
    lines[fork + 1:fork + 1] = [json.dumps(sibling).encode()]
    lines[40:40] = [b"[1]", json.dumps({"kind": "PROPOSED", "effect_id": 5, "ts": 1.0}).encode()]
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    service = tmp_path / "service.json"
    service.write_text(json.dumps({ids[0]: 1, ids[1]: 2, ids[2]: 0, ids[4]: 1, "never-named": 3}))
    return path, service


def printed(capsys, argv: list[str]) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().out


@pytest.mark.parametrize("kept", [1, 2, 5])
def test_receipts_moved_to_disk_print_byte_for_byte_as_held_in_memory(mixed, capsys, monkeypatch, kept):
    path, service = mixed
    for argv in ([str(path)], [str(path), "--service", str(service)]):
        in_memory = printed(capsys, argv)
        monkeypatch.setattr(cli, "KEPT", kept)
        spilled = printed(capsys, argv)
        monkeypatch.undo()
        assert spilled == in_memory
        result = json.loads(in_memory[1])
        assert in_memory[0] == 1 and not result["tamper_evident"] and result["held_twice"]
        assert len(result["effects"]) == 31


def test_an_id_never_stored_is_told_apart_when_the_filter_says_maybe(mixed, capsys, monkeypatch):
    path, service = mixed
    in_memory = printed(capsys, [str(path), "--service", str(service)])
    monkeypatch.setattr(_spill, "FILTER_BYTES", 1)  # 8 bits: after a few ids, every id reads as maybe stored
    monkeypatch.setattr(cli, "KEPT", 1)
    assert printed(capsys, [str(path), "--service", str(service)]) == in_memory


def test_a_stored_check_comes_back_as_it_left_and_an_unknown_id_does_not(monkeypatch):
    monkeypatch.setattr(_spill, "FILTER_BYTES", 1)
    store = _spill.Spilled()
    try:
        kept = EffectCheck("a")
        kept.chain, kept.landings, kept.evidence = ("entries[1]: x",), ({"n": 1.5},), {"n": 1.5}
        store.put([(7, "a", kept, None)])
        assert store.take("b") is None
        ordinal, back = store.take("a")
        assert ordinal == 7 and back.state() == kept.state()
    finally:
        store.close()


def judged(entries, **options):
    with JournalCheck(**options) as check:
        check.scan(entries)
        return check.summary(), list(check.receipts()), check.effects


def test_a_check_bounded_to_one_effect_in_memory_says_what_an_unbounded_one_says(mixed):
    path, service = mixed
    lines = path.read_bytes().splitlines()
    copies = json.loads(service.read_text())
    assert judged(lines, kept=1) == judged(lines)
    assert judged(lines, service=copies, kept=1) == judged(lines, service=copies)
    assert judged(lines, kept=1)[0] == {k: v for k, v in verify_journal(lines).items() if k != "effects"}


def test_the_mutants_of_the_tamper_corpus_are_judged_alike_from_disk():
    keys = tamper.Keys()
    journals = [m.entries for o in tamper.generated_originals() + tamper.reference_originals()
                if o.scope == "journal" for m in tamper.mutants(o, keys)]
    assert len(journals) > 500
    assert [judged(entries, kept=1) for entries in journals] == [judged(entries) for entries in journals]


def test_memory_holds_at_most_kept_effects_and_the_disk_store_is_removed_after(tmp_path, monkeypatch):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    path = tmp_path / "journal.jsonl"
    with Journal(path) as journal:
        for n in range(50):
            journal.append("PROPOSED", effect_id_for(f"job:{n}"), {"n": n})
    held = []
    with JournalCheck(kept=4) as check:
        def watched():
            for line in path.read_bytes().splitlines():
                held.append(len(check._checks))
                yield line
        check.scan(watched())
        assert [p.name.startswith("interlock-receipts-") for p in scratch.iterdir()] == [True]
        assert len(list(check.receipts())) == check.effects == 50
    assert max(held) == 4 and list(scratch.iterdir()) == []


@pytest.mark.parametrize("value", [
    {"a": [], "b": {}, "c": [[], {}, [1, [2.5, None]]], "d": {"e": {"f": True}}},
    {"text": "\u00e9\u2028\x00\n\"\\", "pair": "\ud83d\ude00", "lone": "\ud83d", "key\u00e9": 1},
    {"nan": float("nan"), "inf": float("-inf"), "big": 10 ** 40, "small": 1e-320, "neg": -0.0},
    {1: "int key", 2.5: "float key", None: "null key", True: "bool key"},
    {"path": Path("/x"), "tuple": (1, (2,)), "nested": [{"k": ("v",)}]},
    [], {}, "plain", 3, None,
])
def test_a_receipt_is_indented_as_json_dumps_indents_it(value):
    assert indented(value) == json.dumps(value, indent=2, default=str)


def test_a_temporary_folder_that_cannot_take_the_checks_is_one_line_and_exit_2(mixed, capsys, monkeypatch):
    path, _ = mixed
    monkeypatch.setattr(tempfile, "tempdir", str(path.parent / "missing"))
    monkeypatch.setattr(cli, "KEPT", 1)
    assert main([str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith(f"{path}: {path.parent / 'missing'}: cannot keep checks on disk")
