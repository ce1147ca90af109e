"""Damage is refused, never truncated: only a torn last line is a crash leftover; a journal cut back further than
a crash can tear (a restore, a copy, a cut at any offset) refuses to open and is left byte for byte as it was."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from interlock import CallableLease, Effect, FunctionTarget, Gate, Journal, JournalCorrupt, verify_journal

ROOT = Path(__file__).resolve().parents[1]


def gated_journal(directory: Path, effects: int) -> tuple[Path, list[str]]:
    """A journal the gate wrote for `effects` committed effects; returns it and the ids the service received."""
    sent: list[str] = []
    gate = Gate(directory / "journal.jsonl", FunctionTarget("svc", lambda eid, p: sent.append(eid) or eid, tier=3))
    for n in range(effects):
        assert gate.submit(Effect(f"job:{n}", {"n": n})).status == "COMMITTED"
    gate.journal.close()
    return directory / "journal.jsonl", sent


def line_starts(raw: bytes) -> list[int]:
    return [0] + [i + 1 for i, byte in enumerate(raw) if byte == 0x0A][:-1]


def test_a_journal_cut_at_an_offset_in_the_middle_refuses_to_open_and_is_left_as_it_was(tmp_path):
    path, sent = gated_journal(tmp_path, 60)
    raw = path.read_bytes()
    starts = line_starts(raw)
    cut = raw[: starts[-117] + 40]  # a restore that lost its last 117 entries, ending inside an entry
    path.write_bytes(cut)
    again: list[str] = []
    target = FunctionTarget("svc", lambda eid, p: again.append(eid) or eid, tier=3)
    with pytest.raises(JournalCorrupt) as raised:
        Gate(path, target)
    message = str(raised.value)
    assert f"{path}:{len(starts) - 116}:" in message and "cut back" in message and "\n" not in message
    assert path.read_bytes() == cut
    assert not Path(f"{path}.torn").exists()
    assert again == []


def test_cuts_at_random_offsets_into_the_witnessed_journal_are_refused_and_past_it_are_torn(tmp_path):
    path, _ = gated_journal(tmp_path, 25)
    witnessed_end = path.stat().st_size
    late = Journal(path)  # a proposal no flush covered yet: a crash may tear it, or lose it whole
    late.append("PROPOSED", "late", {"agent": "a"})
    raw = path.read_bytes()
    last = line_starts(raw)[-1]
    assert last == witnessed_end
    witness = Path(f"{path}.witness").read_bytes()
    rng = random.Random(12)
    for offset in sorted(rng.sample(range(last), 40)) + [last - 1] + sorted(rng.sample(range(last, len(raw)), 10)):
        path.write_bytes(raw[:offset])
        Path(f"{path}.witness").write_bytes(witness)
        Path(f"{path}.torn").unlink(missing_ok=True)
        if offset < last:
            with pytest.raises(JournalCorrupt, match="cut back|rewritten|does not link|not a JSON line"):
                Journal(path)
            assert path.read_bytes() == raw[:offset], offset
            assert not Path(f"{path}.torn").exists(), offset
        else:
            with Journal(path) as journal:
                assert len(journal) == raw.count(b"\n") - 1
                assert journal.torn == ([raw[last:offset].decode()] if offset > last else [])


def test_a_refusal_is_witnessed_so_a_journal_cut_behind_it_is_refused(tmp_path):
    path = tmp_path / "journal.jsonl"
    sent: list[str] = []
    gate = Gate(path, FunctionTarget("svc", lambda eid, p: sent.append(eid) or eid, tier=3))
    revoked = CallableLease(lambda: False, lambda: {"incident": "INC-1", "status": "resolved"})
    outcome = gate.submit(Effect("job:refused", {"n": 1}, lease=revoked))
    assert outcome.status.startswith("REFUSED") and sent == []
    raw = path.read_bytes()
    path.write_bytes(raw[: line_starts(raw)[-1] + 10])  # a restore that lost the refusal, ending inside it
    with pytest.raises(JournalCorrupt, match="cut back"):
        Journal(path)

def test_a_torn_last_line_after_a_witnessed_journal_is_set_aside_and_the_next_append_chains(tmp_path):
    path, _ = gated_journal(tmp_path, 5)
    torn = b'{"seq":20,"ts":1.5,"kind":"PROP'
    with open(path, "ab") as f:
        f.write(torn)
    with Journal(path) as journal:
        assert journal.torn == [torn.decode()] and len(journal) == 20
        journal.append("PROPOSED", "a" * 12, {"agent": "a"})
    assert Path(f"{path}.torn").read_bytes() == torn + b"\n"
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(entries) == 21 and verify_journal(entries)["valid"]


def test_a_journal_rewritten_behind_its_witness_is_refused(tmp_path):
    path, _ = gated_journal(tmp_path, 4)
    (tmp_path / "other").mkdir()
    other, _ = gated_journal(tmp_path / "other", 5)
    path.write_bytes(other.read_bytes())
    with pytest.raises(JournalCorrupt, match="rewritten"):
        Journal(path)


def test_the_receipts_command_judges_a_torn_last_line_and_a_cut_as_the_library_does(tmp_path):
    path, _ = gated_journal(tmp_path, 6)
    raw = path.read_bytes()
    starts = line_starts(raw)

    def receipts() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "interlock.receipts", str(path)], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)

    path.write_bytes(raw + b'{"seq":24,"ts":1.5,"ki')
    torn = receipts()
    assert torn.returncode == 0, torn.stderr
    assert json.loads(torn.stdout)["torn_tail"] == '{"seq":24,"ts":1.5,"ki'
    with Journal(path) as journal:
        assert len(journal.torn) == 1
    path.write_bytes(raw[: starts[-5] + 7])
    cut = receipts()
    assert cut.returncode == 1 and "cut back" in cut.stdout
    with pytest.raises(JournalCorrupt, match="cut back"):
        Journal(path)


def test_a_recovery_answer_is_witnessed_so_a_journal_cut_behind_it_is_refused(tmp_path):
    path = tmp_path / "journal.jsonl"
    held: dict[str, dict] = {}

    def send(eid: str, payload: dict) -> dict:
        held[eid] = payload
        raise ConnectionResetError("the answer was lost on the way back")

    target = FunctionTarget("svc", send, tier=2, find=lambda eid, payload: held.get(eid))
    outcome = Gate(path, target, claim_wait=5).submit(Effect("job:lost", {"n": 1}))
    assert outcome.status == "COMMITTED_ON_QUERY"
    raw = path.read_bytes()
    assert json.loads(raw.splitlines()[-1])["via"] == "recovery-query"
    path.write_bytes(raw[: line_starts(raw)[-1]])  # a restore that lost exactly the recovery's answer
    with pytest.raises(JournalCorrupt, match="cut back"):
        Journal(path)


@pytest.mark.parametrize("content", [b'{"a": 1}', b"retries = 3", bytes(range(11, 250)), b'{"seq": 0, "kind": "PROPOSED"}'],
                         ids=["a JSON document", "a settings line", "binary", "an object that is not an entry"])
def test_a_file_that_is_not_a_journal_refuses_to_open_and_is_left_as_it_was(tmp_path, content):
    path = tmp_path / "settings.json"
    path.write_bytes(content)
    with pytest.raises(JournalCorrupt, match="settings.json:1: the last line has no newline and is not the start"):
        Journal(path)
    assert path.read_bytes() == content and not Path(f"{path}.torn").exists()
    verdict = subprocess.run([sys.executable, "-m", "interlock.receipts", str(path)], cwd=ROOT, capture_output=True,
                             text=True, timeout=60)
    assert verdict.returncode != 0


def test_an_entry_whose_newline_was_not_written_is_set_aside_as_torn(tmp_path):
    path, _ = gated_journal(tmp_path, 2)
    raw = path.read_bytes()
    last = raw[line_starts(raw)[-1]:]
    path.write_bytes(raw[:-1])  # the write stopped one byte short, before its newline and before any flush
    Path(f"{path}.witness").unlink()
    with Journal(path) as journal:
        assert journal.torn == [last[:-1].decode()] and len(journal) == 7
    assert path.read_bytes() == raw[: line_starts(raw)[-1]]


def test_a_lone_entry_without_its_newline_and_never_witnessed_is_refused_not_emptied(tmp_path):
    path, _ = gated_journal(tmp_path, 1)
    raw = path.read_bytes()
    only = raw[: line_starts(raw)[1] - 1]  # the first entry alone, as a tool that strips the last newline writes it
    lone = tmp_path / "copy.jsonl"
    lone.write_bytes(only)
    for _ in range(2):  # the refused open leaves no witness behind that would make the next one trust the file
        with pytest.raises(JournalCorrupt, match="copy.jsonl:1: the only line has no newline and no witness"):
            Journal(lone)
    assert lone.read_bytes() == only and not Path(f"{lone}.torn").exists()


def test_a_first_append_torn_beside_its_witness_is_set_aside(tmp_path):
    path = tmp_path / "journal.jsonl"
    Journal(path).close()  # the writer opened it, so its witness is there, then died inside its first append
    path.write_bytes(b'{"seq":0,"ts":1.5,"kind":"PROPOSED","effect_id":"job:0","hash":"ab')
    with Journal(path) as journal:
        assert len(journal) == 0 and len(journal.torn) == 1
    assert path.read_bytes() == b""


def test_the_receipts_command_calls_a_last_line_no_crash_could_leave_invalid(tmp_path):
    path, _ = gated_journal(tmp_path, 2)
    path.write_bytes(path.read_bytes() + b"# edited by hand")
    verdict = subprocess.run([sys.executable, "-m", "interlock.receipts", str(path)], cwd=ROOT, capture_output=True,
                             text=True, timeout=60)
    assert verdict.returncode == 1, verdict.stderr
    assert any("has no newline and is not the start of an entry" in p for p in json.loads(verdict.stdout)["problems"])
    with pytest.raises(JournalCorrupt, match="not the start of an entry"):
        Journal(path)


@pytest.mark.parametrize("where", ["between two entries", "at the end"])
def test_a_blank_line_the_library_refuses_the_receipts_command_calls_invalid(tmp_path, where):
    path, _ = gated_journal(tmp_path, 2)
    raw = path.read_bytes()
    at = line_starts(raw)[3] if where == "between two entries" else len(raw)
    path.write_bytes(raw[:at] + b"\n" + raw[at:])
    with pytest.raises(JournalCorrupt, match="not a JSON line"):
        Journal(path)
    verdict = subprocess.run([sys.executable, "-m", "interlock.receipts", str(path)], cwd=ROOT, capture_output=True,
                             text=True, timeout=60)
    assert verdict.returncode == 1, verdict.stderr
    line = 4 if where == "between two entries" else 9
    assert json.loads(verdict.stdout)["problems"] == [
        f"line {line}: blank: the library refuses to open a journal with a blank line"]
