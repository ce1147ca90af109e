"""The calendar scenario end to end: real worker processes, real SIGKILL, the Calendar stand-in, the real client."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.calendar.scenario import Calendar
from experiments.runner import main
from interlock import verify

ROOT = Path(__file__).resolve().parents[1]
DERIVED = {"outcome", "want", "invariant_held", "answer_matches_calendar", "can_prove_what_happened", "answer",
           "receipt", "journal", "seconds_to_settle", "conflict_recorded_at_recovery", "crash_fired",
           "first_worker_outcome", "timing", "worker_exit_codes"}


def _run(tmp_path_factory, name: str, *argv: str) -> dict:
    out = tmp_path_factory.mktemp(name) / "calendar.json"
    assert main(Calendar, [*argv, "--out", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def slot_busy(tmp_path_factory):
    return _run(tmp_path_factory, "slot-busy", "--faults", "before_send/slot_busy", "--raced-trials", "0",
                "--systems", "no_check,hand_check,interlock,interlock_change_only")


@pytest.fixture(scope="module")
def extra(tmp_path_factory):
    return _run(tmp_path_factory, "extra", "--faults", "before_send/pre_busy,network_cut/none,before_send/raced_busy",
                "--systems", "no_check,hand_check,interlock_change_only", "--raced-trials", "2")


def _cells(result: dict) -> dict[tuple[str, str], dict]:
    return {(c["fault"], c["system"]): c for c in result["cells"]}


def _agent_events(cell: dict) -> list[str]:
    return [e["id"] for e in cell["ground_truth"]["events_list"]
            if (e.get("extendedProperties") or {}).get("private", {}).get("booking_request") == cell["request_id"]]


def test_a_cell_holds_observations_and_no_derived_column(slot_busy, extra):
    for cell in slot_busy["cells"] + extra["cells"]:
        assert DERIVED.isdisjoint(cell) and set(cell["ground_truth"]) == {"events_list"}
        assert {"crashed_at", "first_exit_at", "outage_done_at", "restart_exit_at"} <= set(cell["timeline"])


def test_only_no_check_books_on_top_of_the_customer_when_the_slot_is_taken_during_the_outage(slot_busy):
    cells = _cells(slot_busy)
    expected = {"no_check": "BOOKED", "hand_check": "REFUSED:slot_busy",
                "interlock": "REFUSED:stale_premise_at_recovery",
                "interlock_change_only": "REFUSED:stale_premise_at_recovery"}
    for system, outcome in expected.items():
        cell = cells[("before_send/slot_busy", system)]
        assert cell["evidence"]["result_file"]["outcome"] == outcome
        assert cell["worker_exits"] == [-9, 0] and cell["evidence"]["crash_marker"] == "before_send"
        assert len(_agent_events(cell)) == (system == "no_check")
        assert cell["outage"]["when"] == "during the outage" and cell["outage"]["events_on_slot_before"] == []
        assert cell["outage"]["customer_event"] in [e["id"] for e in cell["ground_truth"]["events_list"]]


def test_the_baselines_keep_only_the_records_the_published_baselines_kept(slot_busy):
    for system in ("no_check", "hand_check"):
        cell = _cells(slot_busy)[("before_send/slot_busy", system)]
        assert re.fullmatch(r"crash injected: SIGKILL at before_send \(pid \d+\)\n", cell["evidence"]["worker_log"])
        assert set(cell["evidence"]["result_file"]) <= {"outcome", "answer", "event_id", "busy", "pid", "finished"}
        assert cell["evidence"]["receipt_bundle"] is None


def test_gate_cells_carry_a_receipt_that_verifies_and_records_the_failed_recheck(slot_busy):
    cell = _cells(slot_busy)[("before_send/slot_busy", "interlock")]
    receipt = verify(cell["evidence"]["receipt_bundle"])

    assert receipt["valid"] and receipt["happened"] is False
    assert [e["kind"] for e in cell["evidence"]["receipt_bundle"]["entries"]] == ["PROPOSED", "AUTHORIZED",
                                                                                 "DISPATCHED", "REFUSED"]
    assert receipt["rechecked_at_recovery"]["violations"]


def test_every_event_the_run_created_is_deleted_and_reads_back_cancelled(slot_busy):
    seen = {e["id"] for c in slot_busy["cells"] for e in c["ground_truth"]["events_list"]}

    assert {item["id"] for item in slot_busy["cleanup"]} == seen and len(seen) == 5
    assert all(item["deleted"] and item["status_after_delete"] == "cancelled" for item in slot_busy["cleanup"])
    assert slot_busy["events_kept"] is False


def test_the_result_file_is_labelled_as_a_stand_in_run(slot_busy):
    services = slot_busy["provenance"]["services"]

    assert slot_busy["scenario"] == slot_busy["key"] == "calendar" and slot_busy["schema_version"] == 1
    assert services["calendar"]["real"] is False and services["model"]["real"] is False
    assert all(c["decision"]["model"] == "offline-scripted" for c in slot_busy["cells"])
    assert all("stand-in" in c["emulated"] for c in slot_busy["cells"])


def test_a_change_only_premise_books_over_a_slot_taken_before_the_decision(extra):
    cells = _cells(extra)
    change_only = cells[("before_send/pre_busy", "interlock_change_only")]
    hand = cells[("before_send/pre_busy", "hand_check")]

    assert change_only["evidence"]["result_file"]["outcome"] == "COMMITTED_BY_RETRY"
    assert change_only["worker_exits"] == [-9, 0] and len(_agent_events(change_only)) == 1
    assert change_only["outage"]["when"] == "before the first worker"
    assert hand["evidence"]["result_file"]["outcome"] == "REFUSED:slot_busy" and hand["worker_exits"] == [0, 0]
    assert hand["timeline"]["crashed_at"] is None and _agent_events(hand) == []


def test_a_cut_connection_after_the_insert_is_settled_without_a_second_event(extra):
    cells = _cells(extra)
    hand, gate = cells[("network_cut/none", "hand_check")], cells[("network_cut/none", "interlock_change_only")]

    assert hand["evidence"]["first_result_file"]["outcome"] == "FOUND_BY_LOOKUP"
    assert gate["evidence"]["first_result_file"]["outcome"] == "COMMITTED_BY_RETRY"
    assert gate["evidence"]["result_file"]["outcome"] == "DUPLICATE_IGNORED"
    for cell in (hand, gate):
        assert cell["outage"]["connection_cut"]["status"] == 200
        assert cell["worker_exits"] == [0, 0] and len(_agent_events(cell)) == 1


@pytest.mark.parametrize("system", ["no_check", "hand_check", "interlock_change_only"])
def test_in_the_raced_row_every_system_pauses_after_its_last_check_right_before_its_insert(extra, system):
    cell = _cells(extra)[("before_send/raced_busy", system)]
    first = cell["evidence"]["first_result_file"]

    assert cell["pause_reached"] is True and cell["worker_exits"][0] == 0
    assert cell["outage"]["when"].startswith("while the worker was paused after its last check")
    # every check passed before the customer came, and nothing looks again after the pause point
    assert first["answer"] == "booked"
    assert cell["outage"]["customer_event"] in [e["id"] for e in cell["ground_truth"]["events_list"]]
    assert len(_agent_events(cell)) == 1


def test_raced_trials_record_raw_observations_for_every_system(extra):
    raced = extra["raced_dispatch"]
    unforced = [t for t in raced["trials"] if t["kind"] == "unforced"]

    assert raced["pause_point"] == "before_request" and raced["trials_per_system"] == 2
    assert sorted(t["system"] for t in unforced) == sorted(["no_check", "hand_check", "interlock_change_only"] * 2)
    for trial in unforced:
        assert trial["customer_insert"]["event_id"] == trial["customer_event"]
        assert trial["started"] <= trial["customer_sent"] <= trial["customer_answered"]
        assert trial["customer_event"] in [e["id"] for e in trial["events_after"]]
        assert trial["checked_at"] is None or trial["started"] <= trial["checked_at"] <= trial["returned_at"]
        assert (trial["checked_at"] is None) == (trial["agent_insert"] is None)  # no insert without the point
        assert not {"slipped", "double_booked", "window_ms", "invariant_held"} & set(trial)


@pytest.mark.parametrize("argv, says", [
    (["--systems", "nope"], "--systems: unknown 'nope'"),
    (["--faults", "before_send/flood"], "--faults: unknown 'before_send/flood'"),
    (["--raced-trials", "x"], "--raced-trials"),
    (["--raced-trials", "-1"], "--raced-trials"),
    (["--live", "--faults", "network_cut/none"], "local stand-in"),
    (["--bogus"], "unrecognized arguments"),
])
def test_bad_arguments_are_one_line_and_exit_2(argv, says, tmp_path, capsys):
    out = tmp_path / "calendar.json"

    assert main(Calendar, [*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and not out.exists()


@pytest.mark.parametrize("argv", [["--faults", "after_commit/none"], ["--raced-trials", "3"],
                                  ["--systems", "no_check,hand_check,interlock,interlock_change_only"]])
def test_a_reduced_run_needs_its_own_out_and_leaves_the_committed_file_alone(argv, capsys):
    committed = ROOT / "results" / "scenarios" / "calendar.json"
    before = committed.stat().st_mtime_ns if committed.exists() else None

    assert main(Calendar, argv) == 2

    err = capsys.readouterr().err
    assert "--out" in err and err.count("\n") == 1
    assert (committed.stat().st_mtime_ns if committed.exists() else None) == before


def test_live_without_credentials_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("INTERLOCK_CALENDAR_KEY_FILE", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    out = tmp_path / "calendar.json"

    with pytest.raises(SystemExit) as exited:
        main(Calendar, ["--live", "--out", str(out)])

    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "INTERLOCK_CALENDAR_KEY_FILE" in err and "ANTHROPIC_API_KEY" in err and err.count("\n") == 1
    assert not out.exists()


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in args:
            found.append(args)
    return found


def test_ctrl_c_mid_run_stops_every_worker_removes_the_cells_and_writes_nothing(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = tmp_path / "calendar.json"
    runner = subprocess.Popen(
        [sys.executable, "-m", "experiments.calendar", "--faults", "after_commit/none,before_send/none",
         "--systems", "no_check,hand_check,interlock,interlock_change_only", "--raced-trials", "0", "--out", str(out)],
        cwd=ROOT, env={**os.environ, "TMPDIR": str(scratch)},
        stderr=subprocess.PIPE, text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert runner.stderr.readline().startswith("[1/8]")  # one cell done, the next one's worker is starting
        runner.send_signal(signal.SIGINT)
        err = runner.communicate(timeout=60)[1]
    finally:
        runner.kill()

    assert runner.returncode == 130 and "interrupted" in err
    assert not out.exists() and list(scratch.iterdir()) == []
    assert _processes_mentioning(str(scratch)) == []
