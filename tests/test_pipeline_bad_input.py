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


def broken_copy(tmp_path: Path, name: str, damage, folder: Path = REFERENCE) -> Path:
    data = json.loads((folder / name).read_text())
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


# ---- input the judge used to crash on, let through, or quote at any length -------------------------------------

RAW = ROOT / "results" / "scenarios"


def raw_copy(tmp_path: Path, name: str, damage) -> Path:
    """A copy of a committed raw result file (results/scenarios), damaged in place."""
    return broken_copy(tmp_path, name, damage, RAW)


def text_copy(tmp_path: Path, name: str, damage, literal: str) -> Path:
    """A copy of a published file whose damaged value is written as `literal`, text json.dumps would never write."""
    path = broken_copy(tmp_path, name, damage)
    text = path.read_text()
    assert text.count('"@@"') == 1
    path.write_text(text.replace('"@@"', literal))
    return path


def test_a_generation_that_is_not_a_number_is_one_line_naming_the_field(tmp_path):
    path = broken_copy(tmp_path, "gcp_resource.json",
                       lambda d: d["cells"][0]["artifacts"]["gcs_versions_raw"][0].update(generation="abc"))
    assert_one_line(judge(path), f"{path}: cells[0].artifacts.gcs_versions_raw[0].generation: not a generation "
                                 "number: 'abc'")


def test_a_generation_of_thousands_of_digits_is_ordered_as_a_number(tmp_path):
    """int() refuses more than 4,300 digits; the order needs none of it: the highest generation, padded with zeros,
    still sorts last, as a number (as text it would sort first), so it is the live one."""
    from pipeline.derive import derive

    padded = {}

    def damage(data):
        artifacts = data["cells"][0]["artifacts"]
        del artifacts["gcs_live_raw"]  # the live object is then the last write the listing holds
        last = max(artifacts["gcs_versions_raw"], key=lambda v: int(v["generation"]))
        last["generation"] = padded["generation"] = "0" * 5000 + last["generation"]
        padded["writer"] = last["metadata"]["writer"]

    path = raw_copy(tmp_path, "gcp_resource.json", damage)
    result = judge(path)
    assert (result.returncode, result.stderr) == (0, "")
    truth = derive(path).cells[0].truth
    assert (truth.live_generation, truth.live_owner) == (padded["generation"], padded["writer"])


@pytest.mark.parametrize("cell,event", [(12, 1), (3, 0)], ids=["the agent's event", "an event no overlap needs"])
def test_a_calendar_time_without_a_utc_offset_is_not_rfc_3339(tmp_path, cell, event):
    def damage(data):
        data["cells"][cell]["ground_truth"]["events_list"][event]["start"]["dateTime"] = "2026-10-13T22:53:00"
    path = broken_copy(tmp_path, "calendar.json", damage)
    assert_one_line(judge(path), f"{path}: cells[{cell}].ground_truth.events_list[{event}].start.dateTime: not an "
                                 "RFC 3339 time: '2026-10-13T22:53:00' has no UTC offset")


def test_a_calendar_time_with_neither_a_time_nor_a_date_names_both(tmp_path):
    def damage(data):
        del data["cells"][12]["ground_truth"]["events_list"][1]["start"]["dateTime"]
    path = broken_copy(tmp_path, "calendar.json", damage)
    assert_one_line(judge(path), f"{path}: cells[12].ground_truth.events_list[1].start: missing: neither dateTime "
                                 "nor date")


def test_a_journal_entry_whose_kind_is_a_list_fails_its_receipt_not_the_run(tmp_path):
    def damage(data):
        for entry in data["cells"][2]["evidence"]["receipt_bundle"]["entries"]:
            entry["kind"] = [1]
    path = broken_copy(tmp_path, "calendar.json", damage)
    result = subprocess.run([sys.executable, "-m", "pipeline", "judge", "--json", str(path)], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    judged = json.loads(result.stdout)
    assert judged["cells"][2]["system"] == "interlock" and judged["cells"][2]["can_prove"] is False
    assert [d["column"] for d in judged["disagreements"]] == ["can_prove_what_happened", "receipt.valid"]


@pytest.mark.parametrize("key", ["ids", "record_says"])
def test_a_stored_verdict_under_a_value_that_is_not_an_object_is_bad_input_not_skipped(tmp_path, key):
    path = broken_copy(tmp_path, "gcp_resource.json", lambda d: d["cells"][0].update({key: "x"}))
    assert_one_line(judge(path), f"{path}: cells[0].{key}: expected object, got string")


@pytest.mark.parametrize("name,cell,damage,problem", [
    ("gcp_resource.json", 0, lambda c: c.update(invariant_held="false"),
     "invariant_held: expected boolean, got string"),
    ("gcp_resource.json", 0, lambda c: c.update(seconds_to_settle="2.0"),
     "seconds_to_settle: expected number, got string"),
    ("gcp_resource.json", 0, lambda c: c["ids"].update(agent_write_generations="x"),
     "ids.agent_write_generations: expected array, got string"),
    ("calendar.json", 0, lambda c: c["ground_truth"].update(agent_events=[7, "x"]),
     "ground_truth.agent_events[0]: expected string, got number"),
], ids=["boolean as text", "seconds as text", "id list as text", "id list of a number and a string"])
def test_a_stored_verdict_of_the_wrong_type_is_bad_input_naming_it(tmp_path, name, cell, damage, problem):
    path = broken_copy(tmp_path, name, lambda d: damage(d["cells"][cell]))
    assert_one_line(judge(path), f"{path}: cells[{cell}].{problem}")


@pytest.mark.parametrize("marker", ["nan", "inf", "-inf", "1e999"])
def test_a_crash_marker_that_is_not_a_finite_time_is_bad_input(tmp_path, marker):
    path = broken_copy(tmp_path, "gcp_resource.json", lambda d: d["cells"][0]["artifacts"].update(crashed_at=marker))
    assert_one_line(judge(path), f"{path}: cells[0].artifacts.crashed_at: not a finite time in seconds: '{marker}'")


def test_a_crash_after_the_restart_exited_is_a_negative_duration_not_a_figure(tmp_path):
    def damage(data):
        timeline = data["cells"][0]["timeline"]
        timeline["crashed_at"] = timeline["restart_exit_at"] + 100
    path = raw_copy(tmp_path, "gcp_resource.json", damage)
    timeline = json.loads(path.read_text())["cells"][0]["timeline"]
    assert_one_line(judge(path), f"{path}: cells[0].timeline.crashed_at: {timeline['crashed_at']} is after "
                                 f"cells[0].timeline.restart_exit_at ({timeline['restart_exit_at']}): a negative "
                                 "duration")


def test_a_crash_marker_after_the_restart_settled_is_a_negative_duration(tmp_path):
    path = broken_copy(tmp_path, "gcp_resource.json",
                       lambda d: d["cells"][0]["artifacts"].update(crashed_at="1789338999"))
    assert_one_line(judge(path), f"{path}: cells[0].artifacts.crashed_at: 1789338999.0 is after "
                                 'cells[0].artifacts["outcome_restart.json"].settled_at (1789338914.6910012): a '
                                 "negative duration")


def test_a_decider_that_is_not_text_is_bad_input_naming_it(tmp_path):
    path = broken_copy(tmp_path, "calendar.json", lambda d: d["provenance"].update(decider={"model": "x"}),
                       ROOT / "results" / "scenarios")
    assert_one_line(judge(path), f"{path}: provenance.decider: expected string, got object")


def test_a_stored_figure_that_is_negative_is_bad_input(tmp_path):
    path = broken_copy(tmp_path, "calendar.json", lambda d: d["cells"][2].update(seconds_to_settle=-100.0))
    assert_one_line(judge(path), f"{path}: cells[2].seconds_to_settle: a negative duration: -100.0")


def test_a_clock_reading_that_overflows_a_float_is_bad_input_naming_it(tmp_path):
    path = text_copy(tmp_path, "gcp_resource.json",
                     lambda d: d["cells"][0]["artifacts"]["outcome_restart.json"].update(settled_at="@@"), "1e999")
    assert_one_line(judge(path), f'{path}: cells[0].artifacts["outcome_restart.json"].settled_at: expected a finite '
                                 "number, got one too large for a float (it reads as inf)")


def test_an_integer_clock_reading_too_large_for_a_float_is_bad_input_naming_it(tmp_path):
    path = broken_copy(tmp_path, "gcp_resource.json",
                       lambda d: d["cells"][0]["artifacts"]["outcome_restart.json"].update(settled_at=10 ** 400))
    assert_one_line(judge(path), f'{path}: cells[0].artifacts["outcome_restart.json"].settled_at: not a time in '
                                 f"seconds: 1{'0' * 59}… (401 characters)")


OUTSIDE = "not a time between 2000-01-01 and 2100-01-01 UTC in seconds since the epoch"
TOO_LONG = "longer than any run takes (the bound is 86,400 s, one day)"


@pytest.mark.parametrize("folder,name,damage,problem", [
    (REFERENCE, "gcp_resource.json", lambda d: d["cells"][0]["artifacts"].update(crashed_at="1e300"),
     f"cells[0].artifacts.crashed_at: {OUTSIDE}: '1e300'"),
    (REFERENCE, "gcp_resource.json",
     lambda d: d["cells"][0]["artifacts"]["outcome_restart.json"].update(settled_at=1e300),
     f'cells[0].artifacts["outcome_restart.json"].settled_at: {OUTSIDE}: 1e+300'),
    (RAW, "gcp_resource.json", lambda d: d["cells"][0]["timeline"].update(restart_exit_at=1e300),
     f"cells[0].timeline.restart_exit_at: {OUTSIDE}: 1e+300"),
    (RAW, "gcp_resource.json", lambda d: d["cells"][0]["timeline"].update(crashed_at=946684799.0),
     f"cells[0].timeline.crashed_at: {OUTSIDE}: 946684799.0"),
    (RAW, "gcp_resource.json", lambda d: d["cells"][0]["timeline"].update(crashed_at=4102444800.0),
     f"cells[0].timeline.crashed_at: {OUTSIDE}: 4102444800.0"),
    (RAW, "calendar.json", lambda d: d["raced_dispatch"]["trials"][0].update(checked_at=1796567373087.0),
     f"raced_dispatch.trials[0].checked_at: {OUTSIDE}: 1796567373087.0"),
    (RAW, "calendar.json", lambda d: d["raced_dispatch"]["trials"][0]["agent_insert"].update(ts=1e300),
     f"raced_dispatch.trials[0].agent_insert.ts: {OUTSIDE}: 1e+300"),
], ids=["crash marker", "settled_at", "restart exit", "a second before 2000", "2100 itself", "milliseconds",
        "write-log time"])
def test_a_clock_reading_from_outside_this_century_is_bad_input_naming_it(tmp_path, folder, name, damage, problem):
    path = broken_copy(tmp_path, name, damage, folder)
    assert_one_line(judge(path), f"{path}: {problem}")


@pytest.mark.parametrize("name,cell,seconds", [
    ("calendar.json", 2, 1e300), ("calendar.json", 2, 86400.0), ("gcp_resource.json", 0, 1e300),
], ids=["stored figure", "stored figure of exactly a day", "stored verdict beside the measured figure"])
def test_a_stored_duration_longer_than_any_run_is_bad_input_naming_it(tmp_path, name, cell, seconds):
    path = broken_copy(tmp_path, name, lambda d: d["cells"][cell].update(seconds_to_settle=seconds))
    assert_one_line(judge(path), f"{path}: cells[{cell}].seconds_to_settle: a duration of {seconds} s: {TOO_LONG}")


def test_a_restart_exit_more_than_a_day_after_the_crash_is_bad_input_not_a_figure(tmp_path):
    def damage(data):
        timeline = data["cells"][0]["timeline"]
        timeline["restart_exit_at"] = timeline["crashed_at"] + 2 * 86_400
    path = raw_copy(tmp_path, "gcp_resource.json", damage)
    timeline = json.loads(path.read_text())["cells"][0]["timeline"]
    assert_one_line(judge(path), f"{path}: cells[0].timeline.crashed_at: {timeline['crashed_at']} is 172,800 s before "
                                 f"cells[0].timeline.restart_exit_at ({timeline['restart_exit_at']}): {TOO_LONG}")


def test_a_raced_check_read_in_milliseconds_is_bad_input_naming_it(tmp_path):
    def damage(data):
        trial = data["raced_dispatch"]["trials"][0]
        trial["checked_at"] = trial["agent_insert"]["ts"] * 1000
    path = raw_copy(tmp_path, "calendar.json", damage)
    result = judge(path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"{path}: raced_dispatch.trials[0].checked_at: not a time between 2000-01-01 "
                                    "and 2100-01-01 UTC")


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_literals_are_not_json(tmp_path, literal):
    path = text_copy(tmp_path, "gcp_resource.json", lambda d: d["cells"][0].update(seconds_to_settle="@@"), literal)
    assert_one_line(judge(path), f"{path}: $: not valid JSON: {literal} is not a JSON number")


def test_arrays_nested_too_deeply_to_read_are_one_line(tmp_path):
    path = text_copy(tmp_path, "gcp_resource.json", lambda d: d["cells"][0].update(deep="@@"),
                     "[" * 100_000 + "]" * 100_000)
    assert_one_line(judge(path), f"{path}: $: arrays or objects nested too deeply to read")


def test_an_integer_of_more_digits_than_int_reads_is_one_line(tmp_path):
    path = text_copy(tmp_path, "gcp_resource.json", lambda d: d["cells"][0].update(seq="@@"), "9" * 5000)
    assert_one_line(judge(path), f"{path}: $: an integer of more than 4,300 digits")


def test_a_key_given_twice_in_one_object_is_refused_naming_the_key(tmp_path):
    path = text_copy(tmp_path, "gcp_resource.json", lambda d: d["cells"][0].update(system="@@"),
                     '"no_check", "system": "interlock"')
    assert_one_line(judge(path), f"{path}: $: not valid JSON: the key 'system' is given twice in one object")


HUGE = "x" * 2_000_000


@pytest.mark.parametrize("damage,where", [
    (lambda d: d["cells"][0].update(fault=HUGE), "cells[0].fault: unknown fault "),
    (lambda d: d["cells"][0]["artifacts"]["outcome_restart.json"].update(outcome=HUGE),
     'cells[0].artifacts["outcome_restart.json"].outcome: unknown outcome '),
    (lambda d: d["cells"][0].update(ground_truth_source=HUGE), "cells[0].ground_truth_source: unknown ground truth "
                                                               "source "),
    (lambda d: d.update(scenario=HUGE), "scenario: unknown scenario "),
], ids=["fault", "outcome", "ground truth source", "scenario"])
def test_a_huge_value_is_quoted_cut_short_with_its_length(tmp_path, damage, where):
    path = broken_copy(tmp_path, "gcp_resource.json", damage)
    result = judge(path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"{path}: {where}'{'x' * 60}…' (2,000,000 characters)")
    assert len(result.stderr) < len(str(path)) + 300


@pytest.mark.parametrize("exits,problem", [
    ([], "no exit code: the first worker's is needed"),
    ([-9], "the first worker was SIGKILLed (-9) and no restart worker's exit follows"),
])
def test_worker_exits_that_cannot_be_a_run_name_worker_exits(tmp_path, exits, problem):
    path = broken_copy(tmp_path, "gcp_resource.json", lambda d: d["cells"][0].update(worker_exits=exits))
    assert_one_line(judge(path), f"{path}: cells[0].worker_exits: {problem}")


def test_an_unpaired_surrogate_escape_is_not_text_and_is_one_line(tmp_path):
    path = text_copy(tmp_path, "gcp_resource.json", lambda d: d["cells"][0].update(note="@@"), '"\\ud800 alone"')
    assert_one_line(judge(path), f"{path}: $: holds an unpaired surrogate escape (\\ud800 to \\udfff with no "
                                 "partner), which is not text")


def test_a_surrogate_pair_escape_is_text_and_is_judged(tmp_path):
    path = text_copy(tmp_path, "gcp_resource.json", lambda d: d["cells"][0].update(note="@@"), '"\\ud83d\\ude00"')
    assert judge(path).returncode == 0


@pytest.mark.parametrize("name", ["reliability/tamper.json", "bench/gate.json"])
def test_judging_a_file_that_holds_no_verdict_says_which_files_it_judges(name):
    result = subprocess.run([sys.executable, "-m", "pipeline", "judge", str(ROOT / "results" / name)], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "cells: missing: not a scenario run (cells) nor an exploration (violation_kinds)" in result.stderr


@pytest.mark.parametrize("damage,problem", [
    (lambda d: d["cells"][0].update(worker_exits=[10 ** 30, 0]), f"cells[0].worker_exits[0]: not an exit code: "
     f"1{'0' * 30} (a process exits 0 to 255, or minus the signal that killed it)"),
    (lambda d: d["provenance"]["host"].update(cpus=-3), "provenance.host.cpus: expected a count of at least 1, got -3"),
], ids=["an exit code no process has", "a negative number of cores"])
def test_a_figure_no_run_could_record_is_bad_input_naming_it(tmp_path, damage, problem):
    path = raw_copy(tmp_path, "gcp_resource.json", damage)
    assert_one_line(judge(path), f"{path}: {problem}")


@pytest.mark.parametrize("damage,problem", [
    (lambda d: d.pop("trials"), "trials: missing"),
    (lambda d: d.update(excess_over_bound_max_s="fast"), "excess_over_bound_max_s: expected number, got string"),
], ids=["a figure missing", "a figure that is no number"])
def test_a_figure_the_methodology_page_states_from_a_benchmark_is_bad_input_naming_it(tmp_path, damage, problem):
    bench = tmp_path / "results" / "bench"
    bench.mkdir(parents=True)
    data = json.loads((ROOT / "results" / "bench" / "unfenced.json").read_text())
    damage(data)
    (bench / "unfenced.json").write_text(json.dumps(data))
    result = subprocess.run([sys.executable, "-m", "pipeline", "build", "--results", str(tmp_path / "results"),
                             "--out", str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"error: {bench / 'unfenced.json'}: {problem}\n"
