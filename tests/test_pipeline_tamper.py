"""A tampered gate journal turns proof to no, with the reason shown; it never stops the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline import derive

REFERENCE = Path(__file__).parents[1] / "results" / "published"
GCP_GATE_CELLS = [2, 5, 8]
CALENDAR_GATE_CELLS = [2, 5, 8, 11, 14, 17, 20, 21]


def gcp_journal(data, i):
    return data["cells"][i]["artifacts"]["journal.jsonl"]


def calendar_journal(data, i):
    return data["cells"][i]["evidence"]["receipt_bundle"]["entries"]


def change_a_character(entries):
    entry = entries[-1]
    key = "found" if "found" in entry else "result" if "result" in entry else "reason"
    text = json.dumps(entry[key])
    entry[key] = json.loads(text.replace("1", "2", 1) if "1" in text else text.replace("e", "f", 1))


def remove_the_lookup_result(entries):
    last = max(i for i, e in enumerate(entries) if e["kind"] in ("COMMITTED", "REFUSED"))
    del entries[last]


def reorder_two_lines(entries):
    entries[1], entries[2] = entries[2], entries[1]


def judge_tampered(tmp_path, name, journal, cells, tamper):
    data = json.loads((REFERENCE / name).read_text())
    for i in cells:
        tamper(journal(data, i))
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return derive(path)


@pytest.mark.parametrize("name,journal,cells", [("gcp_resource.json", gcp_journal, GCP_GATE_CELLS),
                                                ("calendar.json", calendar_journal, CALENDAR_GATE_CELLS)])
@pytest.mark.parametrize("tamper,reason", [
    (change_a_character, "hash does not match"),
    (reorder_two_lines, "does not link"),
])
def test_a_broken_chain_means_no_proof(tmp_path, name, journal, cells, tamper, reason):
    scenario = judge_tampered(tmp_path, name, journal, cells, tamper)
    for i in cells:
        cell = scenario.cells[i]
        assert cell.can_prove is False and cell.record.chain_valid is False
        assert cell.record.writes is None
        assert "the hash chain does not verify" in cell.proof.reason and reason in cell.proof.reason
    untouched = [c for i, c in enumerate(scenario.cells) if i not in cells]
    assert untouched and all(c.record.chain_valid is None for c in untouched)


def test_removing_the_lookup_result_leaves_the_send_unresolved(tmp_path):
    scenario = judge_tampered(tmp_path, "gcp_resource.json", gcp_journal, GCP_GATE_CELLS, remove_the_lookup_result)
    for i in GCP_GATE_CELLS:
        cell = scenario.cells[i]
        assert cell.can_prove is False and cell.record.writes is None and cell.record.unresolved_sends == 1
        assert "leaves a send unresolved" in cell.proof.reason
        assert cell.invariant_held is True  # the service's state does not depend on the record


def remove_the_recovery_refusal(entries):
    del entries[next(i for i, e in enumerate(entries) if e["kind"] == "REFUSED")]


def test_removing_a_calendar_refusal_in_the_middle_breaks_the_chain(tmp_path):
    scenario = judge_tampered(tmp_path, "calendar.json", calendar_journal, [14, 17], remove_the_recovery_refusal)
    for i in (14, 17):
        assert scenario.cells[i].can_prove is False
        assert "does not link" in scenario.cells[i].proof.reason


# ---- the tamper corpus's summary (results/reliability/tamper.json) ----------------------------------------------

def _more_signed_than_made(data):
    for counts in (data["kinds"][0], data["totals"]):
        counts["flagged_signed"] += 10 ** 6


@pytest.mark.parametrize("damage,problem", [
    (_more_signed_than_made, "kinds[0].flagged_signed: {signed} mutants, more than the {made} made"),
    (lambda d: d.update(misses=["field_changed: signed verify did not flag it"] * 3),
     "misses: 3 miss(es) listed where 0 mutant(s) were missed: the file lists the first of its misses, so some when "
     "any was missed, and never more"),
    (lambda d: d["torn_tail"].update(offsets_tried=-1), "torn_tail.offsets_tried: expected a count of at least 0, got "
                                                        "-1"),
], ids=["more flagged than made", "misses listed where none was missed", "a negative count"])
def test_tamper_counts_no_corpus_run_could_give_are_bad_input_naming_the_field(tmp_path, damage, problem):
    from pipeline.load import BadInput
    from pipeline.reliability import tamper

    data = json.loads((REFERENCE.parent / "reliability" / "tamper.json").read_text())
    kind = data["kinds"][0]
    damage(data)
    path = tmp_path / "tamper.json"
    path.write_text(json.dumps(data))
    with pytest.raises(BadInput) as refused:
        tamper(path, "tamper.json")
    assert str(refused.value) == f"{path}: " + problem.format(signed=kind["flagged_signed"], made=kind["generated"])
