"""The project's own result files judge the same with or without the verdict columns an older runner stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline import derive

RESULTS = Path(__file__).parents[1] / "results" / "scenarios"
FILES = sorted(RESULTS.glob("*.json"))
VERDICT_KEYS = ("outcome", "want", "want_agent_writes", "want_live_writer", "invariant_held", "answer_matches_service",
                "answer_matches_calendar", "can_prove_what_happened", "record", "record_says", "seconds_to_settle",
                "answer", "receipt", "journal", "conflict_recorded_at_recovery", "crash_fired")


def columns(cell):
    return (cell.fault, cell.system, cell.outcome, cell.agent_writes, cell.want, cell.invariant_held,
            cell.answer_matches, cell.can_prove, cell.seconds_to_settle)


def raw_only(cell: dict) -> dict:
    """The cell as the runner now writes it: observations only, with a timeline where it kept none."""
    raw = {k: v for k, v in cell.items() if k not in VERDICT_KEYS}
    truth = cell.get("ground_truth")
    if isinstance(truth, dict):  # calendar: only the raw listing is an observation
        raw["ground_truth"] = {"events_list": truth["events_list"]}
    else:
        raw.pop("ground_truth", None)
    if "timeline" not in raw and "crashed_at" not in raw.get("artifacts", {}):
        start = 1_800_000_000.0  # a clock reading of this century, as the judge requires
        raw["timeline"] = {"crashed_at": start, "first_exit_at": start, "outage_done_at": None,
                           "restart_exit_at": start + cell["seconds_to_settle"]}
    return raw


def test_the_committed_results_exist():
    assert [p.name for p in FILES] == ["calendar.json", "gcp_resource.json"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_stored_verdict_of_the_committed_results_agrees_with_the_derived_one(path):
    assert [d.line() for d in derive(path).disagreements] == []


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_stripping_the_stored_verdicts_changes_no_derived_value(tmp_path, path):
    data = json.loads(path.read_text())
    original = derive(path)
    data["cells"] = [raw_only(cell) for cell in data["cells"]]
    stripped = tmp_path / path.name
    stripped.write_text(json.dumps(data))
    judged = derive(stripped)
    assert [columns(c) for c in judged.cells] == [columns(c) for c in original.cells]
    assert judged.disagreements == ()


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_stand_in_run_is_titled_and_described_as_one(path):
    scenario = derive(path)
    stand_ins = [s for s in scenario.provenance.services if not s.real]
    if not stand_ins:
        pytest.skip("a live run: nothing is a stand-in")
    assert "stand-in" in scenario.title and "(stand-in)" in scenario.provenance.summary
    assert "Google Cloud Storage" not in scenario.title.replace("stand-in for Google Cloud Storage", "")
    model = next(s for s in scenario.provenance.services if s.role == "model")
    assert model.real or scenario.title.endswith("(scripted decider)")


def test_a_run_that_records_the_machines_load_carries_it_and_a_bad_one_names_the_field(tmp_path):
    from pipeline.load import BadInput

    data = json.loads((RESULTS / "gcp_resource.json").read_text())
    data["provenance"]["load_average"] = {"at_start": 3.5, "at_end": 1.25}
    data["provenance"]["host"] = {**data["provenance"].get("host", {}), "cpus": 2}
    path = tmp_path / "gcp_resource.json"
    path.write_text(json.dumps(data))
    assert (derive(path).provenance.load, derive(path).provenance.cores) == ((3.5, 1.25), 2)
    data["provenance"]["load_average"]["at_end"] = None
    path.write_text(json.dumps(data))
    with pytest.raises(BadInput, match=r"gcp_resource\.json.*at_end"):
        derive(path)
