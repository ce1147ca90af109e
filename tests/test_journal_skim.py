"""Skimming: a writer passes over other writers' lines (where the chain ends, which effects they name) and checks and
folds them only when it needs what they say, so a line is read once per reader that needs it, not once per writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import interlock.journal
from interlock import Effect, FunctionTarget, Gate, Journal, JournalCorrupt, verify_journal


def write_effects(journal: Journal, prefix: str, effects: int) -> None:
    for n in range(effects):
        eid = f"{prefix}{n:011x}"
        journal.append("PROPOSED", eid, {"agent": "b", "payload_hash": "p"})
        journal.append("DISPATCHED", eid, {"epoch": 1})
        journal.append("COMMITTED", eid, {"via": "send", "result": n})


@pytest.fixture
def folded(monkeypatch) -> list[bytes]:
    """Every line the journal module checks and folds one by one (skimming parses only a block's first and last)."""
    seen: list[bytes] = []
    read = interlock.journal.read_fields

    def counted(raw: bytes):
        seen.append(raw)
        return read(raw)

    monkeypatch.setattr(interlock.journal, "read_fields", counted)
    return seen


def damage_in_place(path: Path, seq: int) -> None:
    """Change one character of entry `seq`'s content, keeping its length and layout: its hash no longer holds."""
    lines = path.read_bytes().split(b"\n")
    lines[seq] = lines[seq].replace(b'"agent":"b"', b'"agent":"x"')
    path.write_bytes(b"\n".join(lines))


def test_an_append_after_other_writers_folds_none_of_their_lines(tmp_path, folded):
    path = tmp_path / "journal.jsonl"
    with Journal(path) as mine, Journal(path) as theirs:
        mine.append("PROPOSED", "a" * 12, {"agent": "a"})
        write_effects(theirs, "b", 20)
        folded.clear()
        entry = mine.append("DISPATCHED", "a" * 12, {"epoch": 1})
        assert folded == [] and entry["seq"] == 61 and entry["prev"] == theirs.head[1]
    assert verify_journal([json.loads(line) for line in path.read_text().splitlines()])["valid"]


def test_a_lookup_of_an_effect_named_by_skimmed_lines_folds_them_first(tmp_path):
    path = tmp_path / "journal.jsonl"
    with Journal(path) as mine, Journal(path) as theirs:
        mine.append("PROPOSED", "a" * 12, {"agent": "a"})
        theirs.append("PROPOSED", "c" * 12, {"agent": "b"})
        theirs.append("DISPATCHED", "c" * 12, {"epoch": 1})
        mine.refresh()
        assert mine.effect("c" * 12).kinds == ["PROPOSED", "DISPATCHED"]
        assert [r.effect_id for r in mine.open_dispatches()] == ["c" * 12]


def test_a_late_result_skimmed_earlier_is_folded_before_its_effects_next_entry(tmp_path):
    path = tmp_path / "journal.jsonl"
    with Journal(path) as stale, Journal(path) as successor:
        stale.append("PROPOSED", "x" * 12, {"agent": "a"})
        stale.append("DISPATCHED", "x" * 12, {"epoch": 1})
        found = successor.append("COMMITTED", "x" * 12, {"via": "recovery-query", "found": 1, "epoch": 2})
        stale.refresh()  # skims the successor's resolution
        stale.append("PROPOSED", "y" * 12, {"agent": "a"})  # an append of another effect leaves it unfolded
        late = stale.append("COMMITTED", "x" * 12, {"via": "send", "result": 1, "epoch": 1})
        assert late["kind"] == "LATE_RESULT" and late["effect_prev"] == found["hash"]
    assert verify_journal([json.loads(line) for line in path.read_text().splitlines()])["valid"]


def test_a_damaged_line_of_another_effect_stops_the_writer_at_its_next_check(tmp_path):
    path = tmp_path / "journal.jsonl"
    with Journal(path) as mine, Journal(path) as theirs:
        mine.append("PROPOSED", "a" * 12, {"agent": "a"})
        write_effects(theirs, "b", 3)
        damage_in_place(path, 4)  # a PROPOSED of theirs, neither the last line nor one naming mine
        mine.append("DISPATCHED", "a" * 12, {"epoch": 1})  # chains to their last line, whose hash holds
        with pytest.raises(JournalCorrupt, match=rf"{path}:5: hash does not match"):
            mine.refresh(check=True)
    with pytest.raises(JournalCorrupt, match=rf"{path}:5:"):
        Journal(path)


def test_the_process_that_moves_the_index_checks_every_line_it_covers(tmp_path):
    path = tmp_path / "journal.jsonl"
    with Journal(path, checkpoint_every=40) as mine, Journal(path, checkpoint_every=40) as theirs:
        mine.append("PROPOSED", "a" * 12, {"agent": "a"})
        write_effects(theirs, "b", 3)
        damage_in_place(path, 4)
        with pytest.raises(JournalCorrupt, match=rf"{path}:5: hash does not match"):
            for n in range(40):  # the index comes due on this writer, which must fold the damaged line to move it
                mine.append("AUTHORIZED", f"m{n:011x}", {"lease": None})


def test_a_writer_that_only_skims_follows_the_index_another_process_moved(tmp_path, folded):
    path = tmp_path / "journal.jsonl"
    with Journal(path, checkpoint_every=50) as reader, Journal(path, checkpoint_every=50) as writer:
        reader.refresh()
        write_effects(writer, "b", 100)  # the writer moves the index every 50 entries
        folded.clear()
        reader.refresh()
        assert len(reader) == 300 and len(folded) < 50  # it followed the index instead of folding 300 lines
        assert reader.effect(f"b{3:011x}").resolution["result"] == 3
        assert reader.open_dispatches() == []


def test_the_gate_checks_every_line_before_deciding_on_an_effect_claimed_before(tmp_path):
    path = tmp_path / "journal.jsonl"
    sent: list[str] = []
    target = FunctionTarget("t", lambda eid, payload: sent.append(eid) or {"id": eid}, tier=3)
    gate, other = Gate(path, target), Gate(path, target)  # two processes' views, opened before the damage
    assert gate.submit(Effect("k1", {"x": 1})).status == "COMMITTED"
    with Journal(path) as theirs:
        write_effects(theirs, "b", 3)
    damage_in_place(path, 4 + 3)  # their second PROPOSED, after the gate's four entries of k1
    with pytest.raises(JournalCorrupt, match="hash does not match"):
        gate.submit(Effect("k1", {"x": 1}))  # claimed before: its entries may be among the damaged lines
    with pytest.raises(JournalCorrupt, match="hash does not match"):
        gate.submit(Effect("k3", {"x": 3}))  # a process that found damage sends nothing more
    assert other.submit(Effect("k2", {"x": 2})).status == "COMMITTED"  # never claimed: no line can name it
    assert sent == [Effect("k1", {}).effect_id, Effect("k2", {}).effect_id]


def test_a_line_still_being_written_is_left_for_the_next_look_not_folded(tmp_path, folded):
    from interlock.journal import laid_out
    from interlock.records import EffectRecord

    path = tmp_path / "journal.jsonl"
    with Journal(path) as reader, Journal(path) as writer:
        first = writer.append("PROPOSED", "b" * 12, {"agent": "b"})
        _, line = laid_out("DISPATCHED", "b" * 12, {"epoch": 1}, seq=1, prev=first["hash"],
                           record=EffectRecord("b" * 12, last_hash=first["hash"]))
        with open(path, "ab") as f:
            f.write(line[:40])  # the first bytes of another writer's line, as a read during its write sees them
        folded.clear()
        reader.refresh()
        assert folded == [] and reader.head == (0, first["hash"])
        with open(path, "ab") as f:
            f.write(line[40:])
        reader.refresh()
        assert folded == [] and reader.head[0] == 1
        assert reader.effect("b" * 12).kinds == ["PROPOSED", "DISPATCHED"]


def test_a_journal_cut_behind_what_a_writer_skimmed_is_refused_at_its_next_fold(tmp_path):
    path = tmp_path / "journal.jsonl"
    with Journal(path) as mine, Journal(path) as theirs:
        mine.append("PROPOSED", "a" * 12, {"agent": "a"})
        write_effects(theirs, "b", 3)
        mine.refresh()  # skims their nine lines
        kept = path.read_bytes().split(b"\n")[:6]
        path.write_bytes(b"\n".join(kept) + b'\n{"seq":6,"ts"')  # a restore that lost four, then a torn write
        with pytest.raises(JournalCorrupt, match="shrank"):
            mine.refresh(check=True)


def test_a_writer_that_follows_the_index_keeps_only_its_effects_written_since(tmp_path):
    path = tmp_path / "journal.jsonl"
    with Journal(path, checkpoint_every=50) as mine, Journal(path, checkpoint_every=50) as theirs:
        for n in range(40):  # they cross each checkpoint first and move the index; this writer only follows it
            write_effects(theirs, f"b{n:02x}", 10)
            mine.append("PROPOSED", f"a{n:011x}", {"agent": "a"})
        held = len(mine._ahead) + len(mine._tail)
        assert held <= 2, held  # memory holds the effects since the index last moved, not all 40 of its own
        assert mine.effect(f"a{3:011x}").kinds == ["PROPOSED"]  # found through the index


def test_a_result_for_an_id_that_needs_an_escape_is_seen_beside_a_line_that_nests_an_effect_id(tmp_path):
    path, eid = tmp_path / "journal.jsonl", "caf\u00e9 \"x\""
    with Journal(path) as mine, Journal(path) as theirs:
        mine.append("PROPOSED", eid, {"agent": "a"})
        mine.append("DISPATCHED", eid, {"epoch": 1})
        theirs.append("COMMITTED", eid, {"via": "recovery-query", "found": 1, "epoch": 2})
        theirs.append("PROPOSED", "o" * 12, {"agent": "b", "answer": {"effect_id": "svc-123"}})
        mine.refresh()
        assert mine.effect(eid).resolution["via"] == "recovery-query" and not mine.effect(eid).open_dispatch
        assert mine.append("COMMITTED", eid, {"via": "send", "result": 1, "epoch": 1})["kind"] == "LATE_RESULT"
    assert verify_journal([json.loads(line) for line in path.read_text().splitlines()])["valid"]
