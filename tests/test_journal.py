"""The journal: one chain across all effects, O(1) appends, shared by processes, strict about damage."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from interlock import FunctionTarget, Gate, Journal, JournalCorrupt, verify_journal
from interlock.canonical import entry_hash
from interlock.effects import Effect
from interlock.journal import laid_out
from interlock.witness import RECORD

ROOT = Path(__file__).resolve().parents[1]


def fill(path: Path, effects: int = 3) -> None:
    """A small journal: a proposal, a dispatch and a commit for each effect."""
    with Journal(path) as journal:
        for n in range(effects):
            journal.append("PROPOSED", f"{n:012x}", {"agent": "a", "payload_hash": "h"})
            journal.append("DISPATCHED", f"{n:012x}", {"epoch": 1})
            journal.append("COMMITTED", f"{n:012x}", {"via": "send", "result": n})


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def rewrite(path: Path, entries: list[dict]) -> None:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))


def bytes_read() -> int:
    """Bytes this process has read through read(2)/pread(2) so far, as the kernel counts them."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def test_entries_chain_across_effects_and_within_each_effect(tmp_path):
    path = tmp_path / "journal.jsonl"
    fill(path)
    entries = lines(path)
    assert [e["seq"] for e in entries] == list(range(9))
    assert [e["prev"] for e in entries] == [None] + [e["hash"] for e in entries[:-1]]
    assert entries[4]["effect_prev"] == entries[3]["hash"] and entries[3]["effect_prev"] is None
    assert all(entry_hash(e) == e["hash"] for e in entries)
    assert verify_journal(entries)["valid"]


def test_an_append_reads_nothing_it_has_already_seen(tmp_path):
    path = tmp_path / "journal.jsonl"
    with Journal(path) as journal:
        for n in range(3000):
            journal.append("PROPOSED", f"{n % 50:012x}", {"agent": "a", "note": "x" * 100})
        size = path.stat().st_size
        before = bytes_read()
        for n in range(20):
            journal.append("AUTHORIZED", f"{n:012x}", {"lease": None})
        read = bytes_read() - before
    budget = 20 * (512 + 2 * RECORD)  # a line or so, and the witness record read before and after each fsync
    assert read < budget, f"20 appends to a {size}-byte journal read {read} bytes"


def test_a_writer_that_finds_the_lock_held_tries_a_while_then_waits_for_it_asleep(tmp_path, monkeypatch):
    import interlock.journal

    yields: list[None] = []
    sched_yield = os.sched_yield
    monkeypatch.setattr(interlock.journal.os, "sched_yield", lambda: yields.append(None) or sched_yield())
    path = tmp_path / "journal.jsonl"
    journal = Journal(path)
    holder = os.open(f"{path}.lock", os.O_RDWR)  # another open file: its flock excludes the journal's
    fcntl.flock(holder, fcntl.LOCK_EX)
    spent: list[float] = []

    def append() -> None:
        began = time.thread_time()
        journal.append("PROPOSED", "e1", {"payload_hash": "x"})
        spent.append(time.thread_time() - began)

    writer = threading.Thread(target=append)
    writer.start()
    deadline = time.monotonic() + 30  # a loaded machine gives a yielding thread its core back slowly
    while len(yields) < interlock.journal.LOCK_YIELDS and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.5)
    assert writer.is_alive() and not lines(path)  # the held lock keeps it out
    fcntl.flock(holder, fcntl.LOCK_UN)
    writer.join(10)
    assert [e["kind"] for e in lines(path)] == ["PROPOSED"]
    assert spent[0] < 0.25  # half a second held: it slept on the lock, not spun on it
    assert len(yields) == interlock.journal.LOCK_YIELDS > 0  # after giving its core up that many times
    journal.close()
    os.close(holder)


def test_an_append_catches_up_only_on_what_others_added(tmp_path):
    path = tmp_path / "journal.jsonl"
    fill(path, effects=200)
    mine, other = Journal(path), Journal(path)
    try:
        other.append("PROPOSED", "f" * 12, {"agent": "b"})
        before = bytes_read()
        entry = mine.append("AUTHORIZED", "f" * 12, {"lease": None})
        read = bytes_read() - before
        assert entry["seq"] == 601 and entry["effect_prev"] == other.effect("f" * 12).last_hash
        assert read < 1024, read
    finally:
        mine.close()
        other.close()


APPENDER = """
import sys
from interlock import Journal
with Journal(sys.argv[1]) as journal:
    for n in range(int(sys.argv[3])):
        journal.append("PROPOSED", sys.argv[2] + f"{n:06x}", {"agent": sys.argv[2]})
"""


def test_processes_appending_at_once_produce_one_valid_chain(tmp_path):
    path = tmp_path / "journal.jsonl"
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, str(path), f"{p:06x}", "60"], cwd=ROOT)
             for p in range(4)]
    assert [p.wait(60) for p in procs] == [0, 0, 0, 0]
    entries = lines(path)
    assert len(entries) == 240 and len({e["effect_id"] for e in entries}) == 240
    result = verify_journal(entries)
    assert result["valid"], result["problems"][:3]
    with Journal(path) as journal:
        assert len(journal) == 240


def test_a_torn_last_line_is_set_aside_and_every_complete_entry_kept(tmp_path):
    path = tmp_path / "journal.jsonl"
    fill(path)
    torn = b'{"seq":9,"ts":1.5,"kind":"PROP'
    with open(path, "ab") as f:
        f.write(torn)
    with Journal(path) as journal:
        assert journal.torn == [torn.decode()]
        assert len(journal) == 9
        journal.append("PROPOSED", "a" * 12, {"agent": "a"})
    assert (tmp_path / "journal.jsonl.torn").read_bytes() == torn + b"\n"
    entries = lines(path)
    assert len(entries) == 10 and verify_journal(entries)["valid"]


def edit_hash(entries: list[dict]) -> None:
    entries[2]["result"] = 99


def edit_link(entries: list[dict]) -> None:
    entries[2]["prev"] = entries[0]["hash"]
    entries[2]["hash"] = entry_hash(entries[2])


def edit_kind(entries: list[dict]) -> None:
    entries[2]["kind"] = "ESCALATED"
    entries[2]["hash"] = entry_hash(entries[2])


def edit_seq(entries: list[dict]) -> None:
    entries[2]["seq"] = 7
    entries[2]["hash"] = entry_hash(entries[2])


@pytest.mark.parametrize("damage,says", [
    (edit_hash, "hash does not match"),
    (edit_link, "prev does not link"),
    (edit_kind, "unknown kind 'ESCALATED'"),
    (edit_seq, "seq 7 where 2 was expected"),
])
def test_damage_other_than_a_torn_tail_names_the_line(tmp_path, damage, says):
    path = tmp_path / "journal.jsonl"
    fill(path)
    entries = lines(path)
    damage(entries)
    rewrite(path, entries)
    with pytest.raises(JournalCorrupt) as raised:
        Journal(path)
    assert f"{path}:3:" in str(raised.value) and says in str(raised.value)


def test_a_malformed_line_in_the_middle_is_corruption_not_a_torn_tail(tmp_path):
    path = tmp_path / "journal.jsonl"
    fill(path)
    text = path.read_text().splitlines(keepends=True)
    text[3] = text[3][:40] + "\n"
    path.write_text("".join(text))
    with pytest.raises(JournalCorrupt, match=rf"{path}:4: not a JSON line"):
        Journal(path)
    assert not (tmp_path / "journal.jsonl.torn").exists()


def test_a_shrunk_journal_is_corruption(tmp_path):
    path = tmp_path / "journal.jsonl"
    fill(path)
    with Journal(path) as journal:
        path.write_text("".join(path.read_text().splitlines(keepends=True)[:4]))
        with pytest.raises(JournalCorrupt, match="shrank"):
            journal.refresh()


def test_the_gate_does_not_dispatch_on_a_corrupt_journal(tmp_path):
    path = tmp_path / "journal.jsonl"
    sent = []
    target = FunctionTarget("t", lambda eid, payload: sent.append(eid), tier=3)
    gate = Gate(path, target)
    fill(path)
    with open(path, "a") as f:
        f.write('{"seq": 9, "kind": "COMMITTED"}\n')
    with pytest.raises(JournalCorrupt):
        gate.submit(Effect("k", {"x": 1}))
    with pytest.raises(JournalCorrupt):
        Gate(path, target)
    assert sent == []


def test_a_second_resolution_is_kept_as_a_late_result(tmp_path):
    with Journal(tmp_path / "journal.jsonl") as journal:
        journal.append("PROPOSED", "e" * 12, {"agent": "a"})
        journal.append("DISPATCHED", "e" * 12, {"epoch": 1})
        assert journal.effect("e" * 12).open_dispatch
        journal.append("COMMITTED", "e" * 12, {"via": "recovery-query", "found": "g1", "epoch": 2})
        late = journal.append("COMMITTED", "e" * 12, {"via": "send", "result": "g1", "epoch": 1})
        record = journal.effect("e" * 12)
    assert late["kind"] == "LATE_RESULT" and late["late_kind"] == "COMMITTED"
    assert record.resolution["via"] == "recovery-query" and not record.open_dispatch


def test_unknown_kinds_are_not_appended(tmp_path):
    with Journal(tmp_path / "journal.jsonl") as journal:
        with pytest.raises(ValueError, match="unknown journal kind"):
            journal.append("DONE", "e" * 12, {})
        assert len(journal) == 0


@pytest.mark.parametrize("field", ["seq", "kind", "effect_id", "prev", "effect_prev", "hash", "ts"])
def test_data_may_not_set_an_entrys_own_fields(tmp_path, field):
    with Journal(tmp_path / "journal.jsonl") as journal:
        with pytest.raises(ValueError, match=f"data may not set the entry's own fields \\['{field}'\\]"):
            journal.append("COMMITTED", "a" * 12, {field: "b" * 12})
        assert len(journal) == 0


def test_an_edited_line_before_the_checkpoint_is_refused_when_its_effect_is_read(tmp_path):
    path = tmp_path / "journal.jsonl"
    with Journal(path, checkpoint_every=5) as journal:
        journal.append("PROPOSED", "victim", {"x": 1})
        journal.append("DISPATCHED", "victim", {})
        journal.append("COMMITTED", "victim", {"result": "ok"})
        for n in range(8):
            journal.append("PROPOSED", f"other{n}", {})
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b'"kind":"COMMITTED"', b'"kind": "PROPOSED"', 1))  # the same length
    with Journal(path, checkpoint_every=5) as journal:  # opening reads only past the checkpoint
        with pytest.raises(JournalCorrupt, match="listed for effect 'victim' .* the journal was edited"):
            journal.effect("victim")
        with pytest.raises(JournalCorrupt):  # and the process appends nothing after it
            journal.append("PROPOSED", "later", {})


def test_an_append_the_disk_cuts_short_is_cut_off_and_raises(tmp_path):
    path = tmp_path / "journal.jsonl"
    with Journal(path) as journal:
        journal.append("PROPOSED", "victim", {"x": 1})
    code = ("import resource, signal, sys\n"
            "from interlock import Journal, JournalError\n"
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            f"journal = Journal({str(path)!r})\n"
            f"resource.setrlimit(resource.RLIMIT_FSIZE, ({path.stat().st_size} + 100, resource.RLIM_INFINITY))\n"
            "try:\n"
            "    journal.append('DISPATCHED', 'victim', {'pad': 'y' * 200})\n"
            "except JournalError as exc:\n"
            "    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "were written (is the disk full?); they were cut off again" in done.stdout, done.stdout + done.stderr
    assert path.read_bytes().endswith(b"\n")
    with Journal(path) as journal:
        assert journal.effect("victim").kinds == ["PROPOSED"] and not journal.torn


def test_a_history_rewritten_past_the_witnessed_end_without_the_witnessed_entry_is_refused(tmp_path):
    path = tmp_path / "journal.jsonl"
    with Journal(path) as journal:
        journal.append("PROPOSED", "victim", {"x": 1})
        journal.append("DISPATCHED", "victim", {})
        journal.append("COMMITTED", "victim", {"result": "ok"})
    first = path.read_bytes().splitlines(keepends=True)[0]
    _, longer = laid_out("PROPOSED", "filler", {"pad": "z" * 400}, seq=1, prev=json.loads(first)["hash"], record=None)
    path.write_bytes(first + longer)  # one re-hashed entry in place of two, running past the witnessed end
    rewritten = path.read_bytes()
    with pytest.raises(JournalCorrupt, match="reaches past where its witness saw entry 2 end, but holds only 2 "
                                             "entries"):
        Journal(path)
    assert path.read_bytes() == rewritten
    done = subprocess.run([sys.executable, "-m", "interlock.receipts", str(path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1 and "holds only 2 entries" in done.stdout


def test_a_journal_reached_through_a_symlink_shares_its_lock_claims_and_sends_once(tmp_path):
    real, link = tmp_path / "2026-12.jsonl", tmp_path / "current.jsonl"
    Journal(real).close()
    link.symlink_to(real.name)
    started, go, sends = threading.Event(), threading.Event(), []

    def send(effect_id, payload):  # the first sender is still waiting for its answer when the second one comes
        sends.append(effect_id)
        started.set()
        go.wait(10)
        return {"booked": effect_id}

    target = FunctionTarget("svc", send, tier=2, find=lambda eid, payload: None, in_flight=0.0)
    first, second = Gate(real, target), Gate(link, target, claim_wait=0.3)
    assert first.journal.path == second.journal.path == real and first.claims.directory == second.claims.directory
    sender = threading.Thread(target=first.submit, args=(Effect("book:r-1", {"slot": "10:00"}),))
    sender.start()
    assert started.wait(10)
    outcome = second.submit(Effect("book:r-1", {"slot": "10:00"}))
    go.set()
    sender.join()
    assert outcome.status == "IN_FLIGHT" and len(sends) == 1
    first.journal.close()
    second.journal.close()
    assert verify_journal(json.loads(line) for line in real.read_text().splitlines())["valid"]
