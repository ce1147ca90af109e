"""Group commit: appends from many threads and processes share flushes, and every append that returned is on
disk and in the chain, whenever its writer (or any other) is SIGKILLed."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from interlock import Journal, verify_journal
from interlock.witness import witnessed

ROOT = Path(__file__).resolve().parents[1]

APPENDER = """
import sys
from interlock import Journal
name, acks = sys.argv[2], open(sys.argv[3], "a")
with Journal(sys.argv[1]) as journal:
    for n in range(10**9):
        entry = journal.append("PROPOSED", f"{name}-{n}", {"agent": name})
        acks.write(entry["effect_id"] + "\\n")
        acks.flush()
"""


def acked(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def wait_for(condition, what: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.002)


def test_appends_that_returned_survive_sigkill_of_any_appender_at_any_moment(tmp_path):
    path = tmp_path / "journal.jsonl"
    rng = random.Random(18)
    procs: dict[str, subprocess.Popen] = {}

    def start(name: str) -> None:
        procs[name] = subprocess.Popen([sys.executable, "-c", APPENDER, str(path), name,
                                        str(tmp_path / f"{name}.acks")], cwd=ROOT)

    for w in range(4):
        start(f"w{w}-0")
    try:
        for kill in range(16):
            name = rng.choice(sorted(procs))
            already = len(acked(tmp_path / f"{name}.acks"))
            wait_for(lambda: len(acked(tmp_path / f"{name}.acks")) > already + rng.randrange(1, 6), f"{name} acks")
            os.kill(procs[name].pid, signal.SIGKILL)
            assert procs.pop(name).wait(30) == -signal.SIGKILL
            start(f"{name.split('-')[0]}-{kill + 1}")
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait(30)
    raw = path.read_bytes()
    with Journal(path) as journal:
        assert len(journal) == raw.count(b"\n")
        entries = journal.entries()
    stored = {e["effect_id"] for e in entries}
    acks = [eid for ack in tmp_path.glob("*.acks") for eid in acked(ack)]
    assert len(acks) > 16 and not set(acks) - stored
    result = verify_journal(entries)
    assert result["valid"], result["problems"][:3]


def test_threads_sending_at_once_share_flushes_and_each_send_is_durable_when_append_returns(tmp_path):
    path = tmp_path / "journal.jsonl"
    flushes = 0
    real = os.fdatasync

    def counting(fd: int) -> None:
        nonlocal flushes
        flushes += 1
        real(fd)

    os.fdatasync = counting
    try:
        late: list[int] = []
        with Journal(path) as journal:
            def work(t: int) -> None:
                for n in range(25):
                    journal.append("PROPOSED", f"t{t}-{n}", {"agent": str(t)})
                    entry = journal.append("DISPATCHED", f"t{t}-{n}", {"agent": str(t)})
                    if witnessed(path).seq < entry["seq"]:  # a flush covering it must finish before the return
                        late.append(entry["seq"])

            threads = [threading.Thread(target=work, args=(t,)) for t in range(16)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert len(journal) == 800 and late == []
    finally:
        os.fdatasync = real
    assert flushes < 400, flushes
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    assert verify_journal(entries)["valid"]


def counting_flushes(monkeypatch) -> list[int]:
    flushed: list[int] = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (flushed.append(fd), real(fd))[1])
    return flushed


def test_a_gated_effect_costs_one_journal_flush_the_one_before_its_request(tmp_path, monkeypatch):
    from interlock import Effect, FunctionTarget, Gate

    flushed_before_send: list[int] = []
    flushed = counting_flushes(monkeypatch)
    gate = Gate(tmp_path / "journal.jsonl", FunctionTarget("svc", lambda eid, p: flushed_before_send.append(
        len(flushed)) or {"stored": eid}, tier=3))
    for n in range(20):
        assert gate.submit(Effect(f"job:{n}", {"n": n})).status == "COMMITTED"
    assert len(gate.journal) == 80
    assert len(flushed) == 20  # PROPOSED, AUTHORIZED and COMMITTED ride on the next DISPATCHED's flush
    assert flushed_before_send == list(range(1, 21))  # and each request waited for its own DISPATCHED on disk
    assert witnessed(tmp_path / "journal.jsonl").seq == 78  # the last DISPATCHED; its COMMITTED is not flushed yet
    gate.journal.close()
    assert witnessed(tmp_path / "journal.jsonl").seq == 79  # a clean close makes it durable
    assert len(flushed) == 21


def test_an_entry_that_is_not_a_send_rides_on_the_next_flush_of_any_writer(tmp_path, monkeypatch):
    flushed = counting_flushes(monkeypatch)
    path = tmp_path / "journal.jsonl"
    with Journal(path) as first, Journal(path) as second:
        first.append("PROPOSED", "a", {"agent": "one"})
        first.append("AUTHORIZED", "a", {"lease": None})
        assert flushed == [] and witnessed(path) is None
        sent = second.append("DISPATCHED", "b", {"agent": "two"})
        assert witnessed(path).seq == sent["seq"] == 2 and len(flushed) == 1
        first.flush()  # nothing of its own is left to flush: the other's send covered it
        assert len(flushed) == 1


def test_catching_up_reads_complete_lines_without_waiting_for_the_append_lock(tmp_path):
    import fcntl

    path = tmp_path / "journal.jsonl"
    with Journal(path) as reader, Journal(path) as writer:
        writer.append("PROPOSED", "a", {"agent": "w"})
        held = os.open(f"{path}.lock", os.O_RDWR)
        fcntl.flock(held, fcntl.LOCK_EX)  # as a writer in the middle of an append would
        try:
            catching_up = threading.Thread(target=reader.refresh)
            catching_up.start()
            catching_up.join(30)
            assert not catching_up.is_alive() and reader.effect("a").kinds == ["PROPOSED"]
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
            os.close(held)


def _watching_the_append_lock(monkeypatch, journal: Journal) -> threading.Event:
    """An event set when `journal` starts waiting for its append lock (the journal module's own flock calls)."""
    import fcntl
    import types

    import interlock.journal

    waiting = threading.Event()

    def flock(fd: int, operation: int) -> None:
        if fd == journal._lock and operation == fcntl.LOCK_EX:
            waiting.set()
        fcntl.flock(fd, operation)

    monkeypatch.setattr(interlock.journal, "fcntl", types.SimpleNamespace(
        flock=flock, LOCK_EX=fcntl.LOCK_EX, LOCK_UN=fcntl.LOCK_UN, LOCK_SH=fcntl.LOCK_SH, LOCK_NB=fcntl.LOCK_NB))
    return waiting


def _append_while_another_writer_adds(monkeypatch, path: Path, other_line) -> tuple[dict, BaseException | None]:
    """Append to effect `e1` from a thread that has to wait for the lock, held here, while `other_line(first)`
    (the journal's first entry given) lands as another process's append would: after this append's last look
    at the file and before its turn."""
    import fcntl

    with Journal(path) as writer:
        first = writer.append("PROPOSED", "e1", {"agent": "w"})
        waiting = _watching_the_append_lock(monkeypatch, writer)
        held = os.open(f"{path}.lock", os.O_RDWR)
        fcntl.flock(held, fcntl.LOCK_EX)
        got: dict = {}

        def append() -> None:
            try:
                got["entry"] = writer.append("AUTHORIZED", "e1", {"lease": {"incident": "INC-1"}})
            except BaseException as exc:  # handed to the test thread
                got["raised"] = exc

        appending = threading.Thread(target=append)
        appending.start()
        try:
            assert waiting.wait(30), "the append never waited for the lock"
            with open(path, "ab") as f:
                f.write(other_line(first))
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
            os.close(held)
        appending.join(30)
        assert not appending.is_alive()
    return got.get("entry", {}), got.get("raised")


def test_an_append_chains_to_an_entry_of_its_effect_that_another_writer_added_while_it_waited(tmp_path,
                                                                                               monkeypatch):
    from interlock.journal import laid_out
    from interlock.records import EffectRecord

    path = tmp_path / "journal.jsonl"
    theirs: dict = {}

    def dispatched_by_another_writer(first: dict) -> bytes:
        record = EffectRecord("e1", last_hash=first["hash"])
        entry, line = laid_out("DISPATCHED", "e1", {"epoch": 2}, seq=first["seq"] + 1, prev=first["hash"],
                               record=record)
        theirs.update(entry)
        return line

    entry, raised = _append_while_another_writer_adds(monkeypatch, path, dispatched_by_another_writer)
    assert raised is None
    assert entry["prev"] == theirs["hash"] and entry["effect_prev"] == theirs["hash"]
    with Journal(path) as journal:
        assert verify_journal(journal.entries())["valid"]


def test_an_append_chains_correctly_when_another_effects_payload_names_its_effect(tmp_path, monkeypatch):
    from interlock.journal import laid_out

    path = tmp_path / "journal.jsonl"
    theirs: dict = {}

    def proposed_naming_e1(first: dict) -> bytes:
        entry, line = laid_out("PROPOSED", "e2", {"effect": {"effect_id": "e1"}}, seq=first["seq"] + 1,
                               prev=first["hash"], record=None)
        theirs.update(entry)
        return line

    entry, raised = _append_while_another_writer_adds(monkeypatch, path, proposed_naming_e1)
    assert raised is None
    assert entry["prev"] == theirs["hash"] and entry["effect_prev"] == first_hash(path)
    with Journal(path) as journal:
        assert verify_journal(journal.entries())["valid"]
        assert [e["effect_id"] for e in journal.entries()] == ["e1", "e2", "e1"]


def first_hash(path: Path) -> str:
    """The hash of a journal's first line."""
    return json.loads(path.read_bytes().split(b"\n")[0])["hash"]


def test_a_damaged_line_that_lands_while_an_append_waits_stops_the_append_before_it_returns(tmp_path, monkeypatch):
    from interlock import JournalCorrupt
    from interlock.journal import laid_out

    path = tmp_path / "journal.jsonl"

    def edited_line_of_another_effect(first: dict) -> bytes:
        _, line = laid_out("PROPOSED", "e2", {"agent": "x"}, seq=first["seq"] + 1, prev=first["hash"], record=None)
        return line.replace(b'"agent":"x"', b'"agent":"y"')  # still a JSON object; its hash no longer holds

    entry, raised = _append_while_another_writer_adds(monkeypatch, path, edited_line_of_another_effect)
    assert entry == {}
    assert isinstance(raised, JournalCorrupt) and f"{path}:2:" in str(raised) and "hash does not match" in str(raised)
    try:
        Journal(path)
    except JournalCorrupt as exc:
        assert f"{path}:2:" in str(exc)
    else:
        raise AssertionError("a journal with a damaged line opened")
