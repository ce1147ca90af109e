"""What a receipt flags beyond the chain: a result journaled under a claim epoch that was already superseded, and
every sign that the service holds the effect twice, from the record alone and against the service's own export."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from interlock import CallableLease, Effect, FunctionTarget, Gate, Journal, verify, verify_journal
from interlock.kinds import KINDS, open_send
from interlock.receipts._check import EffectCheck
from interlock.receipts._entry import Entry

ROOT = Path(__file__).resolve().parents[1]
EID = "e" * 12


def journal_of(tmp_path: Path, *entries: tuple[str, dict]) -> list[dict]:
    """The entries as the file journal stores them, after a PROPOSED and an AUTHORIZED."""
    with Journal(tmp_path / "journal.jsonl") as journal:
        journal.append("PROPOSED", EID, {"payload_hash": "p"})
        journal.append("AUTHORIZED", EID, {"lease": None})
        for kind, data in entries:
            journal.append(kind, EID, data)
        return journal.entries()


CHECKS = {"lease_live": True, "lease": None, "violations": []}


def test_a_result_journaled_by_a_superseded_epoch_is_a_problem(tmp_path):
    entries = journal_of(tmp_path, ("DISPATCHED", {"checks": CHECKS, "epoch": 1}),
                         ("REDISPATCHED", {"via": "recovery-reapply", "rechecked": CHECKS, "epoch": 2}),
                         ("COMMITTED", {"via": "send", "result": {"v": 1}, "epoch": 1}))
    receipt = verify(entries)
    assert receipt["tamper_evident"] and not receipt["valid"]
    assert "entries[4]: COMMITTED journaled by claim epoch 1 after epoch 2 took the effect over" in receipt["problems"]
    assert not verify_journal(entries)["valid"]


def test_a_result_under_the_newest_epoch_is_no_problem(tmp_path):
    entries = journal_of(tmp_path, ("DISPATCHED", {"checks": CHECKS, "epoch": 1}),
                         ("REDISPATCHED", {"via": "recovery-reapply", "rechecked": CHECKS, "epoch": 2}),
                         ("COMMITTED", {"via": "recovery-reapply", "result": {"v": 2}, "epoch": 2}))
    receipt = verify(entries)
    assert receipt["valid"] and receipt["happened_once"] and receipt["held_twice"] == []


def test_a_late_landing_unlike_the_resends_is_held_twice(tmp_path):
    entries = journal_of(tmp_path, ("DISPATCHED", {"checks": CHECKS, "epoch": 1}),
                         ("REDISPATCHED", {"via": "recovery-reapply", "rechecked": CHECKS, "epoch": 2}),
                         ("COMMITTED", {"via": "recovery-reapply", "result": {"v": 2}, "epoch": 2}),
                         ("COMMITTED", {"via": "send", "result": {"v": 1}, "epoch": 1}))
    assert entries[-1]["kind"] == "LATE_RESULT"
    receipt = verify(entries)
    assert receipt["valid"] and receipt["happened"] is True  # the record is honest: it shows both landings
    assert receipt["happened_once"] is False
    assert receipt["held_twice"] == ["entries[5]: a second landing, its evidence unlike the first's"]
    assert verify_journal(entries)["held_twice"] == [EID]


def test_a_late_answer_unlike_the_lookup_is_not_a_second_landing_when_one_send_was_made(tmp_path):
    entries = journal_of(tmp_path, ("DISPATCHED", {"checks": CHECKS, "epoch": 1}),
                         ("COMMITTED", {"via": "recovery-query", "found": {"generation": 7}, "epoch": 2}),
                         ("COMMITTED", {"via": "send", "result": {"name": "o", "generation": "7"}, "epoch": 1}))
    assert entries[-1]["kind"] == "LATE_RESULT"
    receipt = verify(entries)
    assert receipt["valid"] and receipt["happened"] is True and receipt["happened_once"]
    assert receipt["held_twice"] == [] and verify_journal(entries)["held_twice"] == []


def test_late_answers_with_no_send_on_record_are_a_problem_and_two_unlike_ones_are_held_twice(tmp_path):
    entries = journal_of(tmp_path, ("LATE_RESULT", {"late_kind": "COMMITTED", "result": {"copy": 1}}),
                         ("LATE_RESULT", {"late_kind": "COMMITTED", "result": {"copy": 2}}))
    receipt = verify(entries)
    assert not receipt["valid"] and "entries[2]: a late answer that the effect landed, with no send on record" in (
        receipt["problems"])
    assert receipt["held_twice"] == ["entries[3]: a second landing, its evidence unlike the first's"]


def test_a_third_answer_unlike_both_landings_of_two_sends_is_not_a_third_copy(tmp_path):
    entries = journal_of(tmp_path, ("DISPATCHED", {"checks": CHECKS, "epoch": 1}),
                         ("REDISPATCHED", {"via": "recovery-reapply", "rechecked": CHECKS, "epoch": 2}),
                         ("COMMITTED", {"via": "recovery-reapply", "result": {"v": 2}, "epoch": 2}),
                         ("COMMITTED", {"via": "send", "result": {"v": 1}, "epoch": 1}),
                         ("COMMITTED", {"via": "send", "result": {"v": 1, "seen": "again"}, "epoch": 1}))
    assert verify(entries)["held_twice"] == ["entries[5]: a second landing, its evidence unlike the first's"]


def test_the_same_landing_answered_twice_is_held_once(tmp_path):
    entries = journal_of(tmp_path, ("DISPATCHED", {"checks": CHECKS, "epoch": 1}),
                         ("COMMITTED", {"via": "recovery-query", "found": {"v": 1}, "epoch": 2}),
                         ("COMMITTED", {"via": "send", "result": {"v": 1}, "epoch": 1}))
    assert verify(entries)["held_twice"] == []


def test_a_lookup_that_found_two_copies_is_held_twice(tmp_path):
    entries = journal_of(tmp_path, ("DISPATCHED", {"checks": CHECKS, "epoch": 1}),
                         ("COMMITTED", {"via": "recovery-query", "found": ["gen-1", "gen-2"], "epoch": 2}))
    receipt = verify(entries)
    assert receipt["valid"] and receipt["held_twice"] == ["entries[3]: the lookup found 2 copies"]


def test_a_send_while_another_was_open_is_held_twice(tmp_path):
    entries = journal_of(tmp_path, ("DISPATCHED", {"checks": CHECKS, "epoch": 1}),
                         ("DISPATCHED", {"checks": CHECKS, "epoch": 2}),
                         ("COMMITTED", {"via": "send", "result": {"v": 1}, "epoch": 2}))
    assert verify(entries)["held_twice"] == ["entries[3]: a second DISPATCHED while the first send was open"]


@pytest.fixture
def gated(tmp_path):
    """A gate journal with one committed and one refused effect, and their ids."""
    path = tmp_path / "journal.jsonl"
    gate = Gate(path, FunctionTarget("svc", lambda eid, payload: {"stored": payload["n"]}, tier=3))
    sent = gate.submit(Effect("job:sent", {"n": 1}))
    refused = gate.submit(Effect("job:refused", {"n": 2}, lease=CallableLease(lambda: False)))
    gate.journal.close()
    return path, sent.effect_id, refused.effect_id


def test_the_service_export_flags_a_second_copy_and_each_disagreement(gated):
    path, sent, refused = gated
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    assert verify_journal(entries, service={sent: 1})["valid"]
    twice = verify_journal(entries, service={sent: 2})
    assert twice["valid"] and twice["held_twice"] == [sent]
    assert twice["effects"][sent]["held_twice"] == ["service: holds 2 copies"]
    assert twice["effects"][sent]["service_copies"] == 2 and twice["effects"][refused]["service_copies"] == 0
    lost = verify_journal(entries, service={})
    assert f"effect {sent}: service: holds no copy of an effect the record says landed" in lost["problems"]
    landed = verify_journal(entries, service={sent: 1, refused: 1})
    assert f"effect {refused}: service: holds 1 copy of an effect the record says never landed" in landed["problems"]
    unnamed = verify_journal(entries, service={sent: 1, "f" * 12: 1})
    assert f"service: holds 1 copy of effect {'f' * 12}, which the journal does not name" in unnamed["problems"]


def receipts(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "interlock.receipts", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def test_the_cli_exits_1_when_the_service_holds_an_effect_twice(gated, tmp_path):
    path, sent, _ = gated
    export = tmp_path / "service.json"
    export.write_text(json.dumps({sent: 1}))
    assert receipts(str(path), "--service", str(export)).returncode == 0
    export.write_text(json.dumps({sent: 2}))
    twice = receipts(str(path), "--service", str(export))
    assert twice.returncode == 1 and json.loads(twice.stdout)["held_twice"] == [sent]


@pytest.mark.parametrize("text,field", [("[1]", "expected an object"), ('{"abc": -1}', "abc: copies"),
                                        ('{"abc": "2"}', "abc: copies"), ("{oops", "not JSON")])
def test_an_unusable_service_export_is_one_line_naming_the_file_and_field(gated, tmp_path, text, field):
    path, _, _ = gated
    export = tmp_path / "service.json"
    export.write_text(text)
    result = receipts(str(path), "--service", str(export))
    assert result.returncode == 2 and result.stdout == "" and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and str(export) in result.stderr and field in result.stderr


@pytest.mark.parametrize("kinds", list(itertools.product([*sorted(KINDS), "UNKNOWN"], repeat=3)))
def test_a_receipt_holds_a_send_open_exactly_when_the_journal_does(kinds):
    check = EffectCheck("e")
    for n, kind in enumerate(kinds):
        check.feed(Entry(kind=kind, effect_id="e", seq=n, ts=1.0), True)
    assert check.open is open_send({"kind": kind} for kind in kinds)


def _receipts(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "interlock.receipts", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("name, content, says", [
    ("deep.json", "[" * 100_000, "nested too deeply to read"),
    ("long.json", '{"a": ' + "9" * 5000 + "}", "Exceeds the limit (4300 digits) for integer string conversion"),
    ("long.jsonl", '{"a": ' + "9" * 5000 + "}\n", "line 1: Exceeds the limit"),
])
def test_json_too_deep_or_a_number_too_long_is_unreadable_input_said_in_one_line(tmp_path, name, content, says):
    (tmp_path / name).write_text(content)
    done = _receipts(str(tmp_path / name))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and says in done.stderr, done.stderr


def test_control_characters_from_a_file_name_or_its_content_print_escaped_on_one_line(tmp_path):
    odd = tmp_path / "a\nb.json"
    odd.write_text("[")
    service = tmp_path / "service.json"
    service.write_text(json.dumps({"a\nb\u001b[31m": -1}))
    for done, shown in ((_receipts(str(odd)), "a\\nb.json: not JSON"),
                        (_receipts(str(odd), "--service", str(service)), "a\\nb\\x1b[31m: copies must be")):
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and shown in done.stderr, done.stderr
        assert "\x1b" not in done.stderr
