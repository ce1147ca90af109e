"""The shipped published artifacts: byte-exact copies, re-judged to exactly the verdicts they store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import compare_published, derive, published_runs
from pipeline.build import render
from pipeline.digests import SHA256, sha256
from pipeline.published import PUBLISHED

ROOT = Path(__file__).parents[1]
NAMES = ("gcp_resource", "calendar")
# Every column the published files store and the pipeline derives; a raw cell written by the runner has none.
DERIVED_KEYS = ("outcome", "ground_truth", "want", "invariant_held", "answer_matches_service",
                "answer_matches_calendar", "can_prove_what_happened", "record", "record_says", "seconds_to_settle",
                "answer", "receipt", "journal", "conflict_recorded_at_recovery", "crash_fired", "want_agent_writes",
                "want_live_writer", "first_worker_outcome")
START = 1_800_000_000.0  # the crash of each timeline written here: a clock reading the judge takes


def published(name):
    return json.loads((PUBLISHED / f"{name}.json").read_text())


def write(tmp_path, data, name):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


def judge(*files):
    return subprocess.run([sys.executable, "-m", "pipeline", "judge", *map(str, files)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def stored_columns(name, cell):
    """The five published columns as the file stores them: outcome, agent writes, invariant, answer, proof."""
    if name == "gcp_resource":
        writes, answer = int(cell["ground_truth"].split(" ", 1)[0]), cell["answer_matches_service"]
    else:
        writes, answer = len(cell["ground_truth"]["agent_events"]), cell["answer_matches_calendar"]
    return cell["outcome"], writes, cell["invariant_held"], answer, cell["can_prove_what_happened"]


def derived_columns(cell):
    return cell.outcome, cell.agent_writes, cell.invariant_held, cell.answer_matches, cell.can_prove


def test_the_shipped_copies_are_byte_identical_to_the_published_artifacts():
    assert sorted(p.name for p in PUBLISHED.glob("*.json")) == sorted(SHA256)
    for name, digest in SHA256.items():
        assert sha256(PUBLISHED / name) == digest
        assert digest in (PUBLISHED / "README.md").read_text()


@pytest.mark.parametrize("name", NAMES)
def test_all_five_columns_of_every_published_cell_are_re_derived_as_stored(name):
    cells = published(name)["cells"]
    judged = derive(PUBLISHED / f"{name}.json")
    assert len(judged.cells) == len(cells) == {"gcp_resource": 9, "calendar": 22}[name]
    for stored, cell in zip(cells, judged.cells):
        assert derived_columns(cell) == stored_columns(name, stored), (cell.fault, cell.system, cell.proof.reason)
    assert judged.disagreements == ()


@pytest.mark.parametrize("name", NAMES)
def test_a_raw_only_cell_is_judged_to_the_same_verdicts(tmp_path, name):
    data = published(name)
    expected = [stored_columns(name, cell) for cell in data["cells"]]
    for cell in data["cells"]:
        events = cell["ground_truth"]["events_list"] if name == "calendar" else None
        seconds = cell["seconds_to_settle"]
        for key in DERIVED_KEYS:
            cell.pop(key, None)
        if events is not None:  # the raw calendar listing lives under ground_truth; only the listing is kept
            cell["ground_truth"] = {"events_list": events}
            cell["timeline"] = {"crashed_at": START, "first_exit_at": START + 0.1, "outage_done_at": None,
                                "restart_exit_at": START + seconds}
    path = write(tmp_path, data, name)
    judged = derive(path)
    assert [derived_columns(c) for c in judged.cells] == expected
    assert [c.seconds_to_settle for c in judged.cells] == [c["seconds_to_settle"] for c in published(name)["cells"]]
    assert judged.disagreements == ()
    result = judge(path)
    assert (result.returncode, result.stderr) == (0, "")


@pytest.mark.parametrize("name,index,edits", [
    # no_check wrote its stale rollback over the fix: wanting that write would make the invariant hold
    ("gcp_resource", 0, {"want_agent_writes": 1, "want_live_writer": "agent"}),
    ("gcp_resource", 0, {"want": "one agent write, and the agent owns the live object"}),
    # no_check booked for a cancelled request: wanting that booking would make the invariant hold
    ("calendar", 15, {"ground_truth.want_agent_events": 1}),
])
def test_a_want_edited_in_a_cell_does_not_change_the_verdict(tmp_path, name, index, edits):
    data = published(name)
    cell = data["cells"][index]
    for key, value in edits.items():
        target = cell["ground_truth"] if key.startswith("ground_truth.") else cell
        target[key.rsplit(".", 1)[-1]] = value
    before = derive(PUBLISHED / f"{name}.json").cells[index]
    after = derive(write(tmp_path, data, name)).cells[index]
    assert before.invariant_held is False
    assert (after.want, after.truth.want_owner, after.invariant_held) == (before.want, before.truth.want_owner, False)
    assert {d.column: d.stored for d in after.disagreements} == edits


@pytest.mark.parametrize("index,column,stored,derived", [
    (0, "want", "7 agent writes; live object owned by nobody",
     "the human's v43 stays live; the stale rollback never lands"),
    (0, "want", 7, 0),
    (0, "record_says.unresolved_sends", 99, 1),
    (2, "record_says.chain_valid", False, True),
    (0, "agent_writes", 42, 1),
    (0, "answer_matches", None, True),
    (0, "can_prove", True, False),
], ids=["want, in the published words", "want, as judge --json counts it", "unresolved sends", "hash chain", "judge's agent_writes", "judge's answer",
        "judge's proof"])
def test_every_verdict_a_published_cell_stores_that_the_pipeline_derives_is_compared(tmp_path, index, column, stored,
                                                                                     derived):
    data = published("gcp_resource")
    *parents, key = column.split(".")
    held = data["cells"][index]
    for parent in parents:
        held = held[parent]
    held[key] = stored
    path = write(tmp_path, data, "gcp_resource")
    [found] = derive(path).disagreements
    assert (found.column, found.stored, found.derived) == (column, stored, derived)
    result = judge(path)
    assert result.returncode == 1 and result.stderr.splitlines() == [f"disagreement: {found.line()}"]


def test_an_edited_stored_verdict_is_one_disagreement_line_and_exit_1(tmp_path):
    data = published("gcp_resource")
    data["cells"][0]["invariant_held"] = True  # no_check wrote over the human's fix
    path = write(tmp_path, data, "gcp_resource")
    result = judge(path)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"disagreement: {path}: crash_before_send_redeploy / no_check: invariant_held: stored true, derived false "
        "(1 agent write(s) in the service's versions, 0 wanted)"]


def test_an_edited_raw_artifact_is_one_disagreement_line_and_exit_1(tmp_path):
    data = published("calendar")
    cell = data["cells"][2]  # after_commit/none interlock: COMMITTED_BY_RETRY
    cell["evidence"]["result_file"]["outcome"] = "COMMITTED"  # still "landed": only the outcome column moves
    path = write(tmp_path, data, "calendar")
    result = judge(path)
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"disagreement: {path}: after_commit/none / interlock: outcome: stored "
                           '"COMMITTED_BY_RETRY", derived "COMMITTED" ')


def test_disagreements_are_in_the_json_and_on_the_scenario(tmp_path):
    data = published("gcp_resource")
    data["cells"][4]["artifacts"]["crashed_at"] = str(float(data["cells"][4]["artifacts"]["crashed_at"]) - 10)
    path = write(tmp_path, data, "gcp_resource")
    result = subprocess.run([sys.executable, "-m", "pipeline", "judge", "--json", str(path)], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    (found,) = json.loads(result.stdout)["disagreements"]
    assert (found["fault"], found["system"], found["column"]) == ("crash_after_commit_redeploy", "hand_check",
                                                                   "seconds_to_settle")
    assert found["derived"] == round(found["stored"] + 10, 1)
    assert [d.column for d in derive(path).disagreements] == ["seconds_to_settle"]


def test_make_results_re_judges_the_published_files(tmp_path):
    judged = render([], tmp_path / "docs").scenarios
    assert sorted(s.source for s in judged) == sorted(str(PUBLISHED / f"{name}.json") for name in NAMES)
    assert all(s.provenance.published for s in judged)
    result = subprocess.run([sys.executable, "-m", "pipeline", "build", "--out", str(tmp_path / "build")], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "2 published run(s), re-judged; 0 stored verdict(s) disagree" in result.stdout


def test_the_published_figures_come_from_judging_the_shipped_files():
    figures = published_runs()
    for name in NAMES:
        scenario = figures[name]["scenario"]
        assert scenario.source == str(PUBLISHED / f"{name}.json")
        assert figures[name]["cells"] == [{k: v for k, v in c.as_json().items() if k != "scenario"}
                                          for c in scenario.cells]


def test_published_titles_name_the_real_services():
    assert derive(PUBLISHED / "gcp_resource.json").title == "agent rollback vs. a human redeploy, Google Cloud Storage"
    assert derive(PUBLISHED / "calendar.json").title == "double booking on Google Calendar"


def test_gcp_summaries_match_the_published_bullets():
    ours = [s.line.replace("answer matched", "answer matched GCS") for s in derive(PUBLISHED / "gcp_resource.json").summaries]
    assert ours == [
        "no_check: invariant held 0/3, answer matched GCS 3/3, can prove 0/3, crash to settled 0.4s to 2.0s",
        "hand_check: invariant held 3/3, answer matched GCS 3/3, can prove 3/3, crash to settled 0.5s to 2.1s",
        "interlock: invariant held 3/3, answer matched GCS 3/3, can prove 3/3, crash to settled 30.6s to 30.9s",
    ]


def test_seconds_are_measured_where_the_file_allows_and_labelled_as_stored_where_not():
    gcp = derive(PUBLISHED / "gcp_resource.json")
    assert all(c.seconds_derived and c.seconds_basis.startswith("crash marker") for c in gcp.cells)
    calendar = derive(PUBLISHED / "calendar.json")
    assert all(not c.seconds_derived and c.seconds_basis.startswith("as stored") for c in calendar.cells)


def test_record_says_equals_what_the_published_harness_derived():
    cells = published("gcp_resource")["cells"]
    for stored, cell in zip(cells, derive(PUBLISHED / "gcp_resource.json").cells):
        said = stored["record_says"]
        assert cell.record.actor == said["actor"]
        assert list(cell.record.checks) == said["checks"]
        writes = None if cell.record.writes is None else list(cell.record.writes)
        assert writes == said["agent_writes"]
        if "chain_valid" in said:
            assert cell.record.chain_valid is said["chain_valid"]
        else:
            assert cell.record.unresolved_sends == said["unresolved_sends"]


def test_published_calendar_proof_differs_only_in_basis_and_is_explained():
    judged = derive(PUBLISHED / "calendar.json")
    diffs = compare_published(judged)
    assert {d.kind for d in diffs} == {"basis"} and {d.column for d in diffs} == {"can_prove"}
    assert len(diffs) == 22
    baseline = next(d for d in diffs if d.system == "hand_check")
    assert "valid receipt" in baseline.explanation and "names no actor" in baseline.explanation
    assert compare_published(derive(PUBLISHED / "gcp_resource.json")) == ()


def test_a_changed_published_figure_shows_as_an_explained_value_difference():
    figures = published_runs()
    row = figures["gcp_resource"]["cells"][0]
    row["invariant_held"] = True
    (diff,) = compare_published(derive(PUBLISHED / "gcp_resource.json"), figures)
    assert (diff.fault, diff.system, diff.column, diff.kind) == (row["fault"], row["system"], "invariant_held", "value")
    assert diff.published is True and diff.ours is False and "1 agent write(s)" in diff.explanation


def test_verdict_and_notes_are_derived_from_the_cells():
    gcp = derive(PUBLISHED / "gcp_resource.json")
    assert any("hand_check ties interlock on what the object store holds (3/3 each)" in s for s in gcp.verdict)
    assert any("interlock is slower: about 31s from crash to settled against about 2s" in s for s in gcp.verdict)
    cal = derive(PUBLISHED / "calendar.json")
    change_only = [s for s in cal.verdict if s.startswith("On the one fault both ran (before_send/pre_busy), hand_check")]
    assert change_only and "interlock_change_only is worse than hand_check on what the calendar holds" in change_only[0]
    note = dict((n.fault, n.text) for n in cal.notes)["before_send/pre_busy"]
    assert "interlock_change_only reported COMMITTED_BY_RETRY" in note and "double booked" in note


def test_an_edited_published_copy_shows_its_disagreements_beside_its_figures(tmp_path):
    for name in NAMES:
        data = published(name)
        if name == "calendar":
            data["cells"][0]["can_prove_what_happened"] = True
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
    figures = published_runs(tmp_path)
    assert figures["gcp_resource"]["disagreements"] == ()
    (found,) = figures["calendar"]["disagreements"]
    assert (found.fault, found.system, found.column, found.stored, found.derived) == (
        "after_commit/none", "no_check", "can_prove_what_happened", True, False)
    assert figures["calendar"]["scenario"].disagreements == (found,)


def test_an_answer_that_claims_neither_reads_cannot_say_beside_the_published_run():
    from pipeline.render.env import figure

    assert (figure(None, "answer_matches"), figure(None, "seconds_to_settle"), figure(False, "answer_matches")) == (
        "cannot say", "none", "no")
