"""Segments: the journal rolls to a new segment at the size the caller sets, the chain runs across segments,
settled segments can be archived, and verification and receipts read across them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from interlock import ConfigurationError, Journal, JournalCorrupt, verify_journal
from interlock.segments import rolled_segments

ROOT = Path(__file__).resolve().parents[1]


def fill(journal: Journal, first: int, effects: int, settle: bool = True) -> None:
    for n in range(first, first + effects):
        eid = f"{n:012x}"
        journal.append("PROPOSED", eid, {"agent": "a", "payload_hash": f"p{n}", "note": "x" * 60})
        journal.append("DISPATCHED", eid, {"epoch": 1})
        if settle:
            journal.append("COMMITTED", eid, {"via": "send", "result": n})


def receipts(path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "interlock.receipts", str(path), *extra], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_a_segmented_journal_rolls_at_the_size_set_and_verifies_end_to_end(tmp_path):
    path = tmp_path / "journal.jsonl"
    with Journal(path, segment_bytes=4096, checkpoint_every=40) as journal:
        fill(journal, 0, 60)
        entries = journal.entries()
    segments = rolled_segments(path, None)
    assert len(segments) >= 5 and all(s.end - s.base < 4096 + 400 for s in segments)
    assert [s.base for s in segments[1:]] == [s.end for s in segments[:-1]]
    first_of_second = json.loads(segments[1].path.read_text().splitlines()[0])
    last_of_first = json.loads(segments[0].path.read_text().splitlines()[-1])
    assert first_of_second["prev"] == last_of_first["hash"] and first_of_second["seq"] == last_of_first["seq"] + 1
    assert len(entries) == 180 and verify_journal(entries)["valid"]
    for side in tmp_path.glob("journal.jsonl.index*"):
        side.unlink()
    with Journal(path, segment_bytes=4096) as journal:  # a full read across every segment, checking each entry
        assert len(journal) == 180 and journal.effect(f"{3:012x}").resolution["result"] == 3
    cli = receipts(path)
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["entries"] == 180


def test_processes_appending_to_a_segmented_journal_follow_each_others_rolls(tmp_path):
    path = tmp_path / "journal.jsonl"
    appender = ("import sys\nfrom interlock import Journal\n"
                "with Journal(sys.argv[1], segment_bytes=2048) as j:\n"
                "    for n in range(60):\n"
                "        j.append('PROPOSED', sys.argv[2] + f'{n:06x}', {'agent': sys.argv[2]})\n")
    procs = [subprocess.Popen([sys.executable, "-c", appender, str(path), f"{p:06x}"], cwd=ROOT) for p in range(4)]
    assert [p.wait(120) for p in procs] == [0, 0, 0, 0]
    with Journal(path) as journal:
        entries = journal.entries()
    assert len(entries) == 240 and len(rolled_segments(path, None)) >= 10
    assert verify_journal(entries)["valid"]


def test_settled_segments_are_archived_and_still_read_from_the_archive(tmp_path):
    path, archive = tmp_path / "journal.jsonl", tmp_path / "archive"
    with Journal(path, segment_bytes=4096, archive=archive) as journal:
        fill(journal, 0, 30)
        fill(journal, 30, 1, settle=False)  # a send still open: its segment and every later one stay
        fill(journal, 31, 30)
        moved = journal.archive_settled()
        open_at = journal.effect(f"{30:012x}").offsets[0]
        archived, kept = rolled_segments(archive / path.name, None), rolled_segments(path, None)
        assert moved and [s.path for s in archived] == moved and all(s.end <= open_at for s in archived)
        assert kept and kept[0].base <= open_at  # the segment holding the open send stays beside the journal
        assert [r.effect_id for r in journal.open_dispatches()] == [f"{30:012x}"]
    with Journal(path, archive=archive) as journal:
        assert journal.effect(f"{2:012x}").resolution["result"] == 2
        assert len(journal.entries()) == 31 * 3 + 29 * 3 + 2 and verify_journal(journal.entries())["valid"]
    with Journal(path) as journal:  # opens from its checkpoint; an archived effect needs the archive
        with pytest.raises(ConfigurationError, match="no segment holds byte.*archive=DIR"):
            journal.effect(f"{2:012x}")
        fill(journal, 61, 1)  # not taken for damage: the rest of the journal is still written and read
        assert journal.effect(f"{61:012x}").resolution["result"] == 61
    assert receipts(path).returncode == 2
    assert receipts(path, "--archive", str(archive)).returncode == 0


def test_a_segment_found_both_beside_the_journal_and_cut_short_in_the_archive_is_read_from_beside_it(tmp_path):
    path, archive = tmp_path / "journal.jsonl", tmp_path / "archive"
    with Journal(path, segment_bytes=4096, archive=archive) as journal:
        fill(journal, 0, 30)
    first = rolled_segments(path, None)[0].path
    archive.mkdir()
    (archive / first.name).write_bytes(first.read_bytes()[:100])  # a copy to the archive that a crash cut short
    with Journal(path, archive=archive) as journal:
        assert journal.effect(f"{0:012x}").resolution["result"] == 0 and verify_journal(journal.entries())["valid"]
        assert journal.archive_settled() and (archive / first.name).read_bytes()[-1:] == b"\n"
    assert not first.exists() and receipts(path, "--archive", str(archive)).returncode == 0


def archived_whole(tmp_path: Path) -> tuple[Path, Path]:
    """A journal of 40 settled effects whose every rolled segment was archived, and its archive."""
    path, archive = tmp_path / "journal.jsonl", tmp_path / "archive"
    with Journal(path, segment_bytes=4096, archive=archive) as journal:
        fill(journal, 0, 40)
        journal.archive_settled()
    return path, archive


def test_receipts_on_a_journal_whose_every_rolled_segment_was_archived_say_to_pass_the_archive(tmp_path):
    path, archive = archived_whole(tmp_path)
    assert not rolled_segments(path, None) and rolled_segments(archive / path.name, None)
    alone = receipts(path)
    verdict = json.loads(alone.stdout)
    assert not verdict["valid"]
    assert any(p.endswith("; a journal whose rolled segments were archived is read with --archive DIR")
               for p in verdict["problems"]), verdict["problems"]
    assert receipts(path, "--archive", str(archive)).returncode == 0


def test_opening_a_journal_whose_every_rolled_segment_was_archived_without_the_archive_names_it(tmp_path):
    path, archive = archived_whole(tmp_path)
    with pytest.raises(JournalCorrupt, match=r"journal.jsonl:1: the first entry is seq \d+, and no segment before "
                                             r"it was found .* opened with archive=DIR"):
        Journal(path)
    with Journal(path, archive=archive) as journal:
        assert len(journal) == 40 * 3


def test_archiving_without_an_archive_directory_is_refused_before_anything_is_written(tmp_path):
    path = tmp_path / "journal.jsonl"
    with Journal(path, segment_bytes=4096) as journal:
        fill(journal, 0, 10)
        checkpoints = journal.checkpoints_path.read_bytes() if journal.checkpoints_path.exists() else b""
        with pytest.raises(ConfigurationError, match="journal.jsonl: archive_settled needs an archive directory"):
            journal.archive_settled()
        assert (journal.checkpoints_path.read_bytes() if journal.checkpoints_path.exists() else b"") == checkpoints
