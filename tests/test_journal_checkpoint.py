"""Opening from a checkpoint: it reads only what came after, refuses a journal that no longer reaches the
checkpoint or no longer carries its head there, and full verification still catches an edit anywhere."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from interlock import ConfigurationError, Journal, JournalCorrupt, generate_key, verify_journal
from interlock.canonical import entry_hash

ROOT = Path(__file__).resolve().parents[1]


def fill(path: Path, effects: int, **options) -> None:
    """Four entries per effect; every fifth effect is left with its send open."""
    with Journal(path, **options) as journal:
        for n in range(effects):
            eid = f"{n:012x}"
            journal.append("PROPOSED", eid, {"agent": "a", "payload_hash": f"p{n}"})
            journal.append("AUTHORIZED", eid, {"lease": None})
            journal.append("DISPATCHED", eid, {"epoch": 1})
            if n % 5:
                journal.append("COMMITTED", eid, {"via": "send", "result": n})


def bytes_read() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def checkpoints(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(f"{path}.checkpoints").read_text().splitlines()]


def rechain(entries: list[dict], start: int) -> None:
    """Re-link and re-hash every entry from `start` on, as a forger who can write the file would."""
    last_of: dict[str, str] = {}
    for i, entry in enumerate(entries):
        if i >= start:
            entry["prev"] = entries[i - 1]["hash"] if i else None
            entry["effect_prev"] = last_of.get(entry["effect_id"])
            entry["hash"] = entry_hash(entry)
        last_of[entry["effect_id"]] = entry["hash"]


def write(path: Path, entries: list[dict]) -> None:
    path.write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in entries))


def test_opening_reads_only_what_came_after_the_last_checkpoint(tmp_path):
    path = tmp_path / "journal.jsonl"
    fill(path, 400, checkpoint_every=500)
    size = path.stat().st_size
    last = checkpoints(path)[-1]
    before = bytes_read()
    with Journal(path, checkpoint_every=500) as journal:
        read = bytes_read() - before
        assert len(journal) == 1520
    assert last["seq"] < 1520 and read < (size - last["offset"]) + 64 * 1024, (read, size)


def test_effects_before_the_checkpoint_are_found_through_the_index(tmp_path):
    path = tmp_path / "journal.jsonl"
    fill(path, 100, checkpoint_every=50)
    with Journal(path, checkpoint_every=50) as journal:
        old = journal.effect(f"{3:012x}")
        assert old.payload_hash == "p3" and old.resolution["result"] == 3 and not old.open_dispatch
        assert [e["kind"] for e in journal.entries(f"{3:012x}")] == ["PROPOSED", "AUTHORIZED", "DISPATCHED",
                                                                      "COMMITTED"]
        assert sorted(r.effect_id for r in journal.open_dispatches()) == [f"{n:012x}" for n in range(0, 100, 5)]
        assert journal.effect("f" * 12) is None
        journal.append("COMMITTED", f"{0:012x}", {"via": "recovery-query", "found": 0})
        assert not journal.effect(f"{0:012x}").open_dispatch
    with Journal(path) as journal:
        assert f"{0:012x}" not in {r.effect_id for r in journal.open_dispatches()}


def test_a_deleted_index_is_rebuilt_from_the_journal(tmp_path):
    path = tmp_path / "journal.jsonl"
    fill(path, 60, checkpoint_every=40)
    for side in Path(tmp_path).glob("journal.jsonl.index*"):
        side.unlink()
    with Journal(path, checkpoint_every=40) as journal:
        assert len(journal) == 228 and len(journal.open_dispatches()) == 12
        assert journal.effect(f"{7:012x}").resolution["result"] == 7


def test_the_index_a_first_open_builds_is_committed_for_the_next_open(tmp_path):
    path = tmp_path / "journal.jsonl"
    fill(path, 300, checkpoint_every=10_000)
    assert not Path(f"{path}.index").exists()
    with Journal(path, checkpoint_every=100) as journal:  # reads 1,140 entries, moving the index every 100
        assert len(journal) == 1140
    assert checkpoints(path)[-1]["seq"] == 1139  # one checkpoint, at the end of the read
    size = path.stat().st_size
    before = bytes_read()
    with Journal(path, checkpoint_every=100) as journal:
        read = bytes_read() - before
        assert len(journal) == 1140 and len(journal.open_dispatches()) == 60
        assert journal.effect(f"{7:012x}").resolution["result"] == 7
    assert read < size // 4, (read, size)


def test_opening_refuses_a_journal_whose_entry_at_the_checkpoint_no_longer_carries_its_head(tmp_path):
    path = tmp_path / "journal.jsonl"
    fill(path, 50, checkpoint_every=60)
    seq = checkpoints(path)[-1]["seq"]
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    entries[seq]["agent"] = "someone else"
    rechain(entries, seq)
    write(path, entries)
    Path(f"{path}.witness").unlink()
    assert verify_journal(entries)["tamper_evident"]  # the chain alone no longer shows it
    before = path.read_bytes()
    with pytest.raises(JournalCorrupt, match=rf"{path}:{seq + 1}: .*(checkpointed head|head of its last checkpoint)"):
        Journal(path)
    assert path.read_bytes() == before


def test_opening_refuses_a_journal_shorter_than_its_checkpoint(tmp_path):
    path = tmp_path / "journal.jsonl"
    fill(path, 50, checkpoint_every=60)
    seq = checkpoints(path)[-1]["seq"]
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:seq - 3]))
    Path(f"{path}.witness").unlink()
    with pytest.raises(JournalCorrupt, match="shorter than its checkpoint|before its last checkpoint"):
        Journal(path)
    assert not Path(f"{path}.torn").exists()


def test_full_verification_still_catches_an_edit_in_the_checkpointed_prefix(tmp_path):
    path = tmp_path / "journal.jsonl"
    fill(path, 50, checkpoint_every=60)
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    edited = next(i for i, e in enumerate(entries) if e.get("result") == 1)
    entries[edited]["result"] = 9  # same length: every offset stays where the checkpoint says
    write(path, entries)
    with Journal(path) as journal:  # opening trusts the checkpoint for what it covers
        assert len(journal) == len(entries)
    result = verify_journal(entries)
    assert not result["valid"] and any(f"entries[{edited}]: hash does not match" in p for p in result["problems"])
    cli = subprocess.run([sys.executable, "-m", "interlock.receipts", str(path)], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert cli.returncode == 1 and f"entries[{edited}]" in cli.stdout


def test_a_keyed_journal_signs_its_checkpoints_and_refuses_one_signed_by_another_key(tmp_path):
    path = tmp_path / "journal.jsonl"
    key = generate_key()
    fill(path, 30, key=key, checkpoint_every=40)
    assert all("signature" in c for c in checkpoints(path))
    with Journal(path, key=key) as journal:
        assert len(journal) == 114
    with pytest.raises(JournalCorrupt, match="not signed by this journal's key"):
        Journal(path, key=generate_key())


def test_a_journal_with_signed_checkpoints_is_refused_to_a_process_without_the_key_before_it_writes_one(tmp_path):
    path = tmp_path / "journal.jsonl"
    key = generate_key()
    fill(path, 30, key=key, checkpoint_every=40)
    written = path.read_bytes(), (tmp_path / "journal.jsonl.checkpoints").read_bytes()
    with pytest.raises(ConfigurationError, match="checkpoints are signed.*key="):
        Journal(path, checkpoint_every=1)
    assert (path.read_bytes(), (tmp_path / "journal.jsonl.checkpoints").read_bytes()) == written
    with Journal(path, key=key) as journal:  # the keyed processes still open it
        assert len(journal) == 114


def test_a_reader_far_behind_moves_the_index_as_it_catches_up(tmp_path):
    path = tmp_path / "journal.jsonl"
    with Journal(path, checkpoint_every=50) as reader:
        fill(path, 100, checkpoint_every=10_000)  # another process appends 380 entries meanwhile
        reader.refresh()
        assert len(reader) == 380 and checkpoints(path)[-1]["seq"] > 380 - 50  # it did not hold them all
        assert reader.effect(f"{3:012x}").resolution["result"] == 3


def test_a_writer_catching_up_behind_a_later_checkpoint_leaves_the_index_whole(tmp_path):
    path = tmp_path / "journal.jsonl"
    behind = Journal(path, checkpoint_every=50)  # counts toward its next index move from the journal's start
    last = f"a{33:011x}"
    with Journal(path, checkpoint_every=50) as ahead:
        for n in range(34):
            ahead.append("PROPOSED", f"a{n:011x}", {"payload_hash": "p"})
            ahead.append("AUTHORIZED", f"a{n:011x}", {"lease": None})
        ahead.checkpoint()  # the index moves to entry 67, off the other writer's count
        ahead.append("DISPATCHED", last, {"epoch": 1})
        ahead.append("COMMITTED", last, {"via": "send", "result": 1})
    behind.append("PROPOSED", "b" * 12, {"payload_hash": "p"})  # catching up, it reaches its count at entry 49
    behind.close()
    with Journal(path, checkpoint_every=50) as reader:  # starts from the index
        assert reader.effect(last).kinds == ["PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED"]
        assert all(reader.effect(f"a{n:011x}").kinds == ["PROPOSED", "AUTHORIZED"] for n in range(33))


SENDER = """
import sys, time
from interlock import Journal
time.sleep(float(sys.argv[3]))  # a late opener reads far, and checkpoints where its read ends, off the others' count
with Journal(sys.argv[1], checkpoint_every=7, segment_bytes=10_000, archive=sys.argv[4]) as journal:
    for n in range(50):
        eid = sys.argv[2] + f"{n:06x}"
        for kind, data in (("PROPOSED", {"payload_hash": "p"}), ("DISPATCHED", {"epoch": 1}),
                           ("COMMITTED", {"via": "send", "result": n})):
            journal.append(kind, eid, data)
        if n % 17 == 5:
            journal.archive_settled()
"""


def test_processes_moving_the_index_rolling_and_archiving_at_once_leave_every_effect_whole(tmp_path):
    path, archive = tmp_path / "journal.jsonl", tmp_path / "archive"
    procs = [subprocess.Popen([sys.executable, "-c", SENDER, str(path), f"{p:06x}", str(0.05 * p), str(archive)],
                              cwd=ROOT, stderr=subprocess.PIPE, text=True) for p in range(12)]
    failed = [err.strip().splitlines()[-1] for err in (p.communicate(timeout=120)[1] for p in procs) if err.strip()]
    assert failed == []
    with Journal(path, checkpoint_every=7, archive=archive) as reader:
        found = {f"{p:06x}{n:06x}": reader.effect(f"{p:06x}{n:06x}") for p in range(12) for n in range(50)}
    assert {eid: r.kinds for eid, r in found.items() if r.kinds != ["PROPOSED", "DISPATCHED", "COMMITTED"]} == {}


def test_a_torn_last_checkpoint_line_is_passed_over_for_the_one_before(tmp_path):
    path = tmp_path / "journal.jsonl"
    fill(path, 20, checkpoint_every=10)
    checkpoints = Path(f"{path}.checkpoints")
    with open(checkpoints, "ab") as f:
        f.write(b'{"seq": 99, "hea')  # a checkpoint's write cut short by a power loss
    with Journal(path, checkpoint_every=10) as journal:
        assert len(journal) == 76 and journal.effect(f"{3:012x}").resolution is not None
