"""Bad input is one line naming the file and JSON path, exit 2, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
REFERENCE = ROOT / "results" / "published"


def judge(*files: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline", "judge", *map(str, files)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def broken_copy(tmp_path: Path, name: str, damage) -> Path:
    data = json.loads((REFERENCE / name).read_text())
    damage(data)
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def assert_one_line(result: subprocess.CompletedProcess, expected: str) -> None:
    assert result.returncode == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr == expected + "\n"


def test_truncated_file_names_the_file_and_says_it_is_cut(tmp_path):
    path = tmp_path / "calendar.json"
    path.write_text((REFERENCE / "calendar.json").read_text()[:5000])
    result = judge(path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"{path}: $: not valid JSON (truncated?)")


def test_missing_events_list_names_its_json_path(tmp_path):
    path = broken_copy(tmp_path, "calendar.json", lambda d: d["cells"][3]["ground_truth"].pop("events_list"))
    assert_one_line(judge(path), f"{path}: cells[3].ground_truth.events_list: missing")


def test_missing_version_listing_names_its_json_path(tmp_path):
    path = broken_copy(tmp_path, "gcp_resource.json", lambda d: d["cells"][4]["artifacts"].pop("gcs_versions_raw"))
    assert_one_line(judge(path), f"{path}: cells[4].artifacts.gcs_versions_raw: missing")


def test_wrong_type_names_the_expected_and_found_type(tmp_path):
    path = broken_copy(tmp_path, "calendar.json", lambda d: d["cells"][2].update(seconds_to_settle="fast"))
    assert_one_line(judge(path), f"{path}: cells[2].seconds_to_settle: expected number, got string")


def test_wrong_type_inside_a_dotted_artifact_key(tmp_path):
    path = broken_copy(tmp_path, "gcp_resource.json", lambda d: d["cells"][0]["artifacts"].update({"log.jsonl": "x"}))
    assert_one_line(judge(path), f'{path}: cells[0].artifacts["log.jsonl"]: expected array, got string')


def test_unknown_outcome_in_the_workers_outcome_file_is_bad_input(tmp_path):
    path = broken_copy(tmp_path, "calendar.json",
                       lambda d: d["cells"][5]["evidence"]["result_file"].update(outcome="PROBABLY_BOOKED"))
    assert_one_line(judge(path), f"{path}: cells[5].evidence.result_file.outcome: unknown outcome 'PROBABLY_BOOKED'")


def test_a_second_cell_of_the_same_fault_and_system_is_bad_input(tmp_path):
    path = broken_copy(tmp_path, "gcp_resource.json", lambda d: d["cells"].append(d["cells"][4]))
    assert_one_line(judge(path), f"{path}: cells[9]: a second cell of fault 'crash_after_commit_redeploy', "
                                 "system 'hand_check' (the first is cells[4])")


def test_a_fault_missing_from_the_catalogue_is_bad_input(tmp_path):
    path = broken_copy(tmp_path, "calendar.json", lambda d: d["cells"][0].update(fault="after_commit/flood"))
    assert_one_line(judge(path), f"{path}: cells[0].fault: unknown fault 'after_commit/flood' for calendar: the "
                                 "fault catalogue (pipeline/faults.py) has no row saying what it wants")


def test_unknown_outcome_in_a_baseline_log_line_is_bad_input(tmp_path):
    def damage(data):
        data["cells"][1]["artifacts"]["log.jsonl"][2]["outcome"] = "FINE"
    path = broken_copy(tmp_path, "gcp_resource.json", damage)
    assert_one_line(judge(path), f'{path}: cells[1].artifacts["log.jsonl"][2].outcome: unknown outcome \'FINE\'')


def test_missing_file_and_unknown_scenario(tmp_path):
    missing = tmp_path / "nope.json"
    assert_one_line(judge(missing), f"{missing}: $: cannot read: No such file or directory")
    path = broken_copy(tmp_path, "gcp_resource.json", lambda d: d.update(scenario="weather"))
    assert_one_line(judge(path), f"{path}: scenario: unknown scenario 'weather' (known: gcp_resource, calendar)")


def test_the_published_files_judge_with_exit_0_and_no_disagreement_in_json():
    result = subprocess.run([sys.executable, "-m", "pipeline", "judge", "--json", str(REFERENCE / "gcp_resource.json"),
                             str(REFERENCE / "calendar.json")], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    judged = json.loads(result.stdout)
    assert len(judged["cells"]) == 31 and judged["disagreements"] == []
    assert set(judged["cells"][0]) == {"file", "scenario", "fault", "system", "outcome", "agent_writes", "want",
                                       "invariant_held", "answer_matches", "can_prove", "seconds_to_settle",
                                       "seconds_basis"}
