"""Receipts of this journal: any edit, reorder, deletion or foreign signature shows; a cut tail shows only against a
signed checkpoint; the CLI's exit codes. The published runs' receipts are tests/test_receipts_published.py's."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from interlock import (CallableLease, Effect, FunctionTarget, Gate, Journal, bundle, generate_key, public_hex, verify,
                       verify_journal, write_checkpoint)
from interlock.canonical import canonical_bytes, entry_hash, line_hash, sealed_line
from interlock.receipts import JournalCheck

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def journal_path(tmp_path):
    """A real journal of three gated effects (one refused), written by the gate."""
    path = tmp_path / "journal.jsonl"
    sent = []
    gate = Gate(path, FunctionTarget("svc", lambda eid, payload: sent.append(eid) or {"n": len(sent)}, tier=3))
    for n in range(3):
        gate.submit(Effect(f"job:{n}", {"n": n}))
    gate.submit(Effect("job:refused", {"n": 9}, lease=CallableLease(lambda: False)))
    gate.journal.close()
    return path


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_journal_written_by_the_gate_verifies_whole_and_per_effect(journal_path):
    result = verify_journal(read(journal_path))
    assert result["valid"] and result["tamper_evident"] and result["entries"] == 14
    assert sorted(v["happened"] for v in result["effects"].values()) == [False, True, True, True]
    with Journal(journal_path) as journal:
        for eid in result["effects"]:
            assert verify(bundle(journal, eid))["valid"]


def test_a_journals_receipts_are_made_when_read_and_say_what_its_streamed_receipts_say(journal_path, monkeypatch):
    import interlock.receipts._check as check_module

    made: list[str] = []
    receipt = check_module.receipt
    monkeypatch.setattr(check_module, "receipt", lambda check, *rest: made.append(check) or receipt(check, *rest))
    result = verify_journal(read(journal_path))
    assert made == [] and result["valid"]  # the verdict needs no receipt
    first = next(iter(result["effects"]))
    assert result["effects"][first]["valid"] and len(made) == 1  # one read, one receipt made
    with JournalCheck() as check:
        check.scan(read(journal_path))
        streamed = list(check.receipts())
    assert list(result["effects"].items()) == streamed and len(result["effects"]) == 4


def test_the_cli_prints_every_receipt_of_a_journal_given_as_a_json_list(journal_path, tmp_path):
    path = tmp_path / "journal.json"
    path.write_text(json.dumps(read(journal_path)))
    printed = json.loads(cli(str(path)).stdout)
    assert printed == json.loads(json.dumps(verify_journal(read(journal_path)) | {
        "effects": dict(verify_journal(read(journal_path))["effects"])}))
    assert sorted(r["happened"] for r in printed["effects"].values()) == [False, True, True, True]


def edited(entries):
    entries[5]["result"] = {"n": 7}


def reordered(entries):
    entries[4], entries[5] = entries[5], entries[4]


def entry_deleted(entries):
    del entries[6]


def effect_deleted(entries):
    eid = entries[4]["effect_id"]
    entries[:] = [e for e in entries if e["effect_id"] != eid]


@pytest.mark.parametrize("damage", [edited, reordered, entry_deleted, effect_deleted])
def test_whole_journal_verify_detects_damage_inside_the_chain(journal_path, damage):
    entries = read(journal_path)
    damage(entries)
    result = verify_journal(entries)
    assert not result["valid"] and not result["tamper_evident"] and result["problems"]


def raw_lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def test_a_journal_line_carries_its_hash_last_over_the_canonical_bytes_before_it(journal_path):
    for raw, entry in zip(raw_lines(journal_path), read(journal_path)):
        assert raw.endswith(b',"hash":"' + entry["hash"].encode() + b'"}')
        assert raw[:-75] + b"}" == canonical_bytes({k: v for k, v in entry.items() if k != "hash"})
        assert line_hash(raw) == entry["hash"].encode()


def test_verifying_the_stored_lines_says_what_verifying_their_entries_says(journal_path):
    from_lines, from_entries = verify_journal(raw_lines(journal_path)), verify_journal(read(journal_path))
    assert from_lines == from_entries and from_lines["valid"]


def test_an_effect_split_by_a_line_naming_no_effect_still_links_and_keeps_its_checks(tmp_path):
    path = tmp_path / "journal.jsonl"
    with Journal(path) as journal:
        journal.append("PROPOSED", "split", {"n": 1})
        journal.append("DISPATCHED", "split", {"checks": {"lease_live": False, "violations": []}})
        journal.append("COMMITTED", "split", {"result": {"n": 1}})
    lines = raw_lines(path)
    lines[1:1] = [json.dumps({"kind": "PROPOSED", "effect_id": 5, "ts": 1.0}).encode()]
    entries = [json.loads(line) for line in lines]
    from_lines, from_entries = verify_journal(lines), verify_journal(entries)
    assert from_lines == from_entries
    receipt = from_lines["effects"]["split"]
    assert receipt["happened"] is True and receipt["authorized_when_fired"] is False
    assert not any("effect_prev" in problem for problem in receipt["problems"])


def test_a_line_edited_in_place_fails_its_own_hash(journal_path):
    lines = raw_lines(journal_path)
    at = next(i for i, line in enumerate(lines) if b'"via":"send"' in line)
    lines[at] = lines[at].replace(b'"via":"send"', b'"via":"sent"')
    result = verify_journal(lines)
    assert not result["tamper_evident"]
    assert f"entries[{at}]: hash does not match the entry's content" in result["problems"]


@pytest.mark.parametrize("damage", [reordered, entry_deleted, effect_deleted])
def test_verifying_stored_lines_detects_damage_inside_the_chain(journal_path, damage):
    lines, entries = raw_lines(journal_path), read(journal_path)
    by_hash = {e["hash"]: line for e, line in zip(entries, lines)}
    damage(entries)
    result = verify_journal([by_hash[e["hash"]] for e in entries])
    assert not result["valid"] and not result["tamper_evident"] and result["problems"]


def test_a_line_laid_out_by_another_writer_is_checked_by_its_content(journal_path):
    lines = [json.dumps(e).encode() for e in read(journal_path)]  # insertion order, spaces: not the journal's layout
    assert all(line_hash(line) is None for line in lines)
    assert verify_journal(lines)["valid"]


def test_a_cut_tail_shows_only_against_a_signed_checkpoint(journal_path):
    key = generate_key()
    with Journal(journal_path) as journal:
        checkpoint = write_checkpoint(journal, key)
    cut = read(journal_path)[:-4]
    unsigned = verify_journal(cut)
    assert unsigned["valid"] and "cut tail" in unsigned["covers"]
    checked = verify_journal(cut, public_key=public_hex(key), checkpoint=checkpoint)
    assert not checked["valid"] and checked["signed"] is True
    assert any("tail cut" in p for p in checked["problems"])
    whole = verify_journal(read(journal_path), public_key=public_hex(key), checkpoint=checkpoint)
    assert whole["valid"] and whole["signed"] is True


def test_a_checkpoint_from_another_key_or_over_another_head_is_flagged(journal_path):
    key, other = generate_key(), generate_key()
    with Journal(journal_path) as journal:
        checkpoint = write_checkpoint(journal, key)
    entries = read(journal_path)
    foreign = verify_journal(entries, public_key=public_hex(other), checkpoint=checkpoint)
    assert not foreign["valid"] and foreign["signed"] is False
    rewritten = copy.deepcopy(entries)
    rewritten[-1]["ts"] += 1
    rewritten[-1]["hash"] = entry_hash(rewritten[-1])
    result = verify_journal(rewritten, public_key=public_hex(key), checkpoint=checkpoint)
    assert any("rewritten" in p for p in result["problems"])


def test_an_unsigned_checkpoint_without_a_key_holds_the_journal_to_its_head_and_finds_a_cut(journal_path):
    with Journal(journal_path) as journal:
        checkpoint = journal.checkpoint()
    whole = verify_journal(read(journal_path), checkpoint=checkpoint)
    assert whole["valid"] and whole["signed"] is False and whole["problems"] == []
    cut = verify_journal(read(journal_path)[:-4], checkpoint=checkpoint)
    assert not cut["valid"] and any("tail cut" in p for p in cut["problems"])


def test_a_checkpoint_of_an_empty_journal_verifies(tmp_path):
    key = generate_key()
    with Journal(tmp_path / "journal.jsonl") as journal:
        checkpoint = write_checkpoint(journal, key)
    assert verify_journal([], public_key=public_hex(key), checkpoint=checkpoint)["valid"]


def test_a_bundle_signed_with_another_key_is_flagged(journal_path):
    key, other = generate_key(), generate_key()
    with Journal(journal_path) as journal:
        eid = journal.entries()[0]["effect_id"]
        signed = bundle(journal, eid, key)
    good = verify(signed, public_key=public_hex(key))
    assert good["valid"] and good["signed"] is True
    bad = verify(signed, public_key=public_hex(other))
    assert not bad["valid"] and bad["signed"] is False and bad["tamper_evident"]


def test_damage_names_the_field_and_never_raises():
    entries = [{"ts": "noon", "kind": "PROPOSED", "effect_id": "e", "prev": None, "hash": "0"},
               {"ts": 1.0, "kind": "TELEPORTED", "effect_id": "e", "prev": "0", "hash": "1"}, 7]
    result = verify(entries)
    assert not result["valid"]
    assert any(p.startswith("entries[0].ts") for p in result["problems"])
    assert any(p.startswith("entries[1].kind: unknown kind 'TELEPORTED'") for p in result["problems"])
    assert any(p.startswith("entries[2]: not an object") for p in result["problems"])


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "interlock.receipts", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def test_cli_exit_codes_for_valid_invalid_and_unreadable(journal_path, tmp_path):
    assert cli(str(journal_path)).returncode == 0
    entries = read(journal_path)
    entries[2]["effect"] = {"n": 5}
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("".join(json.dumps(e) + "\n" for e in entries))
    invalid = cli(str(damaged))
    assert invalid.returncode == 1 and json.loads(invalid.stdout)["valid"] is False
    for name, text in [("bad.json", "{not json"), ("bad.jsonl", journal_path.read_text() + "{oops\n"),
                       ("entries.json", '{"effect_id": "e", "entries": {"0": {}}}'), ("scalar.json", "3")]:
        path = tmp_path / name
        path.write_text(text)
        result = cli(str(path))
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert result.stderr.count("\n") == 1 and str(path) in result.stderr
    line = cli(str(tmp_path / "bad.jsonl")).stderr
    assert f"line {len(entries) + 1}" in line


def test_cli_checks_a_checkpoint_and_a_public_key(journal_path, tmp_path):
    key = generate_key()
    with Journal(journal_path) as journal:
        write_checkpoint(journal, key)
    checkpoints = f"{journal_path}.checkpoints"
    assert cli(str(journal_path), "--checkpoint", checkpoints, "--public-key", public_hex(key)).returncode == 0
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(journal_path.read_text().splitlines(keepends=True)[:-2]))
    assert cli(str(cut)).returncode == 0
    result = cli(str(cut), "--checkpoint", checkpoints, "--public-key", public_hex(key))
    assert result.returncode == 1 and "tail cut" in result.stdout
    (tmp_path / "junk.checkpoints").write_text("[1, 2]\n")
    junk = cli(str(journal_path), "--checkpoint", str(tmp_path / "junk.checkpoints"))
    assert junk.returncode == 2 and "Traceback" not in junk.stderr and junk.stderr.count("\n") == 1


@pytest.mark.parametrize("field, value, problem", [
    ("kind", "LANDED", "kind: unknown kind 'LANDED'"),
    ("kind", None, "kind: unknown kind None"),
    ("ts", "yesterday", "ts: missing or not a number"),
    ("ts", True, "ts: missing or not a number"),
    ("ts", None, "ts: missing or not a number"),
    ("checks", [], "checks: expected an object"),
    ("rechecked", None, "rechecked: expected an object"),
])
def test_a_stored_line_of_the_wrong_shape_is_judged_as_its_entry_is(journal_path, field, value, problem):
    entries = read(journal_path)
    at = next(i for i, e in enumerate(entries) if e["kind"] == "DISPATCHED")
    body = {k: v for k, v in entries[at].items() if k != "hash"}
    body[field] = value
    digest, line = sealed_line(body)
    entries[at] = {**body, "hash": digest}
    lines = raw_lines(journal_path)
    lines[at] = line[:-1]
    from_lines = verify_journal(lines)
    assert from_lines == verify_journal(entries)
    effect = from_lines["effects"][body["effect_id"]]
    assert not from_lines["valid"] and f"entries[2].{problem}" in effect["problems"]


def long_journal(effects: int) -> list[bytes]:
    """Stored lines of `effects` effects, each PROPOSED, DISPATCHED and COMMITTED, laid out as the journal writes."""
    lines, previous, seq = [], None, 0
    for n in range(effects):
        eid, effect_prev = f"effect-{n}", None
        for kind, extra in (("PROPOSED", {}), ("DISPATCHED", {"epoch": 1, "checks": {"lease_live": True,
                                                                                      "violations": []}}),
                            ("COMMITTED", {"epoch": 1, "result": {"n": n}})):
            body = {"seq": seq, "kind": kind, "effect_id": eid, "effect_prev": effect_prev, "prev": previous,
                    "ts": 1.0 + seq, **extra}
            digest, line = sealed_line(body)
            lines.append(line[:-1])
            previous = effect_prev = digest
            seq += 1
    return lines


def test_verify_reports_an_edited_line_in_the_middle_of_a_long_journal():
    lines = long_journal(2_000)
    assert verify_journal(lines)["valid"]
    at = len(lines) // 2 + 2  # a COMMITTED
    lines[at] = lines[at].replace(b'"result":{"n":', b'"result":{"n":-')
    result = verify_journal(lines)
    assert not result["valid"] and not result["tamper_evident"]
    assert result["problems"] == [f"entries[{at}]: hash does not match the entry's content"]
    edited = result["effects"][f"effect-{at // 3}"]
    assert edited["problems"] == ["entries[2]: hash does not match the entry's content"]
    assert [eid for eid, r in result["effects"].items() if not r["valid"]] == [f"effect-{at // 3}"]


@pytest.mark.parametrize("first_kind, flagged", [("PROPOSED", False), ("AUTHORIZED", True), ("LANDED", True)])
def test_an_effect_whose_first_entry_is_not_proposed_is_flagged_from_lines_and_entries(first_kind, flagged):
    lines = long_journal(3)
    entries = [json.loads(line) for line in lines]
    body = {k: v for k, v in entries[3].items() if k != "hash"}
    body["kind"] = first_kind
    entries[3]["hash"], line = sealed_line(body)
    entries[3]["kind"], lines[3] = first_kind, line[:-1]
    for rest in entries[4:]:  # relink the chain after the rewritten entry
        rest["prev"] = entries[rest["seq"] - 1]["hash"]
        if rest["effect_id"] == body["effect_id"]:
            rest["effect_prev"] = entries[rest["seq"] - 1]["hash"]
        rest["hash"], line = sealed_line({k: v for k, v in rest.items() if k != "hash"})
        lines[rest["seq"]] = line[:-1]
    from_lines = verify_journal(lines)
    assert from_lines == verify_journal(entries) and from_lines["tamper_evident"]
    problems = from_lines["effects"]["effect-1"]["problems"]
    assert ("entries[0]: the first entry is not PROPOSED" in problems) is flagged
    assert from_lines["valid"] is not flagged


@pytest.mark.parametrize("kind", [["DISPATCHED"], {"kind": "DISPATCHED"}])
def test_an_entry_whose_kind_is_not_a_string_is_reported_not_raised(tmp_path, kind):
    from published_format import verify_record

    body = {"seq": 0, "ts": 1.0, "kind": kind, "effect_id": "e1", "prev": None, "effect_prev": None}
    digest, line = sealed_line(body)
    entry = {**body, "hash": digest}
    found = verify_journal([entry])
    assert not found["valid"] and any("unknown kind" in p for p in found["effects"]["e1"]["problems"])
    assert not verify_journal([line[:-1]])["valid"]
    assert not verify_record([entry])["valid"]
    path = tmp_path / "journal.jsonl"
    path.write_bytes(line)
    cli = subprocess.run([sys.executable, "-m", "interlock.receipts", str(path)], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1], timeout=60)
    assert cli.returncode == 1 and json.loads(cli.stdout)["valid"] is False, cli.stderr


def test_cli_checks_a_journals_own_checkpoints_against_a_public_key(journal_path, tmp_path):
    key = generate_key()
    with Journal(journal_path) as journal:
        write_checkpoint(journal, key)
    signed = cli(str(journal_path), "--public-key", public_hex(key))
    assert signed.returncode == 0 and json.loads(signed.stdout)["signed"] is True
    other = cli(str(journal_path), "--public-key", public_hex(generate_key()))
    assert other.returncode == 1 and json.loads(other.stdout)["signed"] is False
    bare = tmp_path / "bare.jsonl"
    bare.write_bytes(journal_path.read_bytes())
    unsigned = cli(str(bare), "--public-key", public_hex(key))
    assert unsigned.returncode == 2 and unsigned.stderr.strip().endswith("give --checkpoint")
    assert len(unsigned.stderr.strip().splitlines()) == 1


def test_cli_refuses_a_public_key_that_is_not_one(journal_path):
    done = cli(str(journal_path), "--public-key", "zz")
    assert done.returncode == 2 and done.stderr.startswith("--public-key: 'zz' is not a hex Ed25519 public key")


def test_cli_reads_a_journal_by_its_content_whatever_its_name(journal_path, tmp_path):
    renamed = tmp_path / "agent.journal"
    renamed.write_bytes(journal_path.read_bytes())
    done = cli(str(renamed))
    assert done.returncode == 0 and json.loads(done.stdout)["entries"] == 14


def test_a_journal_of_one_effect_prints_in_the_shape_of_any_journal_with_its_receipt_under_effects(
        journal_path, tmp_path):
    entries = read(journal_path)
    eid = entries[4]["effect_id"]
    exported = tmp_path / "one.jsonl"  # one effect's entries from the shared journal: their seqs skip the others'
    exported.write_bytes(b"".join(line + b"\n" for line in raw_lines(journal_path) if eid.encode() in line))
    whole, one = cli(str(journal_path)), cli(str(exported))
    assert whole.returncode == one.returncode == 0, one.stderr
    printed = json.loads(one.stdout)
    assert [k for k in printed if k != "read_as"] == list(json.loads(whole.stdout))
    assert list(printed["effects"]) == [eid] and printed["read_as"].startswith("one effect's export")
    with Journal(journal_path) as journal:
        receipt = verify(bundle(journal, eid))
    assert printed["effects"][eid] == json.loads(json.dumps(receipt)) and receipt["happened"] is True
    assert printed["valid"] and printed["entries"] == 4 and printed["held_twice"] == [] == printed["problems"]


def test_a_whole_journal_of_one_effect_is_judged_as_any_journal_and_not_read_as_an_export(tmp_path):
    path = tmp_path / "one.jsonl"
    with Journal(path) as journal:
        for kind in ("PROPOSED", "DISPATCHED"):
            journal.append(kind, "e1", {"payload_hash": "p"} if kind == "PROPOSED" else {})
        journal.append("COMMITTED", "e1", {"result": {"ok": True}})
    printed = json.loads(cli(str(path)).stdout)
    assert "read_as" not in printed and printed["valid"] and printed["tamper_evident"] and printed["entries"] == 3


def test_a_journal_of_one_effect_held_twice_names_it_as_any_journal_does(journal_path, tmp_path):
    eid = read(journal_path)[4]["effect_id"]
    export = tmp_path / "service.json"
    export.write_text(json.dumps({eid: 2, "f" * 12: 1}))
    exported = tmp_path / "one.jsonl"
    exported.write_bytes(b"".join(line + b"\n" for line in raw_lines(journal_path) if eid.encode() in line))
    done = cli(str(exported), "--service", str(export))
    printed = json.loads(done.stdout)
    assert done.returncode == 1 and printed["held_twice"] == [eid] and not printed["valid"]
    assert printed["effects"][eid]["held_twice"] == ["service: holds 2 copies"]
    assert printed["problems"] == [f"service: holds 1 copy of effect {'f' * 12}, which the journal does not name"]


def test_cli_reads_a_file_it_sniffs_in_one_open(journal_path, tmp_path, monkeypatch, capsys):
    import builtins
    import io

    from interlock.receipts.__main__ import main

    renamed = tmp_path / "agent.journal"
    renamed.write_bytes(journal_path.read_bytes())
    bundled = tmp_path / "bundle.json"
    with Journal(journal_path) as journal:
        bundled.write_text(json.dumps(bundle(journal, read(journal_path)[0]["effect_id"]), indent=2))
    opened, real_open = [], builtins.open

    def counted(file, *args, **kwargs):
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counted)
    monkeypatch.setattr(io, "open", counted)
    for path, shown in ((renamed, "entries"), (bundled, "happened")):
        opened.clear()
        assert main([str(path)]) == 0
        assert opened.count(str(path)) == 1 and shown in json.loads(capsys.readouterr().out)


def test_cli_stops_quietly_when_its_reader_stops_reading(tmp_path):
    path = tmp_path / "long.jsonl"
    gate = Gate(path, FunctionTarget("svc", lambda eid, payload: {"ok": True}, tier=3))
    for n in range(300):  # receipts well past what a pipe holds
        gate.submit(Effect(f"job:{n}", {"n": n}))
    gate.journal.close()
    reader = subprocess.Popen([sys.executable, "-m", "interlock.receipts", str(path)], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    reader.stdout.read(1)
    reader.stdout.close()  # as `| head -c 1` does
    _, err = reader.communicate(timeout=60)
    assert err == b""
