"""The calendar scenario end to end: real worker processes, real SIGKILL, the Calendar stand-in, the real client."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from experiments import scenario_calendar
from experiments.booking import grade
from interlock import verify
from pipeline import derive


def _run(tmp_path_factory, name: str, *argv: str) -> dict:
    out = tmp_path_factory.mktemp(name) / "calendar.json"
    assert scenario_calendar.main([*argv, "--out", str(out)]) == 0
    return json.loads(out.read_text()) | {"_path": str(out)}


@pytest.fixture(scope="module")
def slot_busy(tmp_path_factory):
    return _run(tmp_path_factory, "slot-busy", "--faults", "before_send/slot_busy", "--raced-trials", "0")


@pytest.fixture(scope="module")
def extra(tmp_path_factory):
    return _run(tmp_path_factory, "extra", "--faults", "before_send/pre_busy", "network_cut/none",
                "--systems", "hand_check", "interlock_change_only", "--raced-trials", "2")


def _cells(result: dict) -> dict[tuple[str, str], dict]:
    return {(c["fault"], c["system"]): c for c in result["cells"]}


def test_only_no_check_double_books_when_the_slot_is_taken_during_the_outage(slot_busy):
    cells = _cells(slot_busy)
    expected = {"no_check": "BOOKED", "hand_check": "REFUSED:slot_busy",
                "interlock": "REFUSED:stale_premise_at_recovery",
                "interlock_change_only": "REFUSED:stale_premise_at_recovery"}
    for system, outcome in expected.items():
        cell = cells[("before_send/slot_busy", system)]
        assert cell["outcome"] == outcome
        assert cell["worker_exit_codes"] == [-9, 0] and cell["crash_fired"]
        assert cell["ground_truth"]["double_booked"] is (system == "no_check")
        assert cell["invariant_held"] is (system != "no_check")
        assert cell["answer_matches_calendar"] is True
        assert cell["outage"]["when"] == "during the outage" and cell["outage"]["events_on_slot_before"] == []


def test_gate_cells_carry_a_receipt_that_verifies_and_records_the_failed_recheck(slot_busy):
    cell = _cells(slot_busy)[("before_send/slot_busy", "interlock")]
    receipt = verify(cell["evidence"]["receipt_bundle"])

    assert receipt["valid"] and receipt["happened"] is False
    assert cell["conflict_recorded_at_recovery"] is True
    assert [e["kind"] for e in cell["journal"]] == ["PROPOSED", "AUTHORIZED", "DISPATCHED", "REFUSED"]
    assert cell["receipt"]["rechecked_at_recovery"]["violations"]


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


@pytest.mark.parametrize("fixture", ["slot_busy", "extra"])
def test_the_pipeline_rejudges_every_column_as_stored(fixture, request):
    result = request.getfixturevalue(fixture)
    judged = derive(result["_path"])

    for cell, stored in zip(judged.cells, result["cells"]):
        assert cell.outcome == stored["outcome"]
        assert cell.invariant_held == stored["invariant_held"]
        assert cell.answer_matches == stored["answer_matches_calendar"]
        assert cell.can_prove == stored["can_prove_what_happened"]
        assert cell.agent_writes == len(stored["ground_truth"]["agent_events"])


def test_a_change_only_premise_double_books_a_slot_taken_before_the_decision(extra):
    cells = _cells(extra)
    change_only = cells[("before_send/pre_busy", "interlock_change_only")]
    hand = cells[("before_send/pre_busy", "hand_check")]

    assert change_only["outcome"] == "COMMITTED_BY_RETRY" and change_only["crash_fired"]
    assert change_only["ground_truth"]["double_booked"] and not change_only["invariant_held"]
    assert hand["outcome"] == "REFUSED:slot_busy" and hand["worker_exit_codes"] == [0, 0]
    assert hand["crash_fired"] is False and hand["invariant_held"]


def test_a_cut_connection_after_the_insert_is_settled_without_a_second_event(extra):
    cells = _cells(extra)
    hand, gate = cells[("network_cut/none", "hand_check")], cells[("network_cut/none", "interlock_change_only")]

    assert hand["first_worker_outcome"] == hand["outcome"] == "FOUND_BY_LOOKUP"
    assert gate["first_worker_outcome"] == "COMMITTED_BY_RETRY" and gate["outcome"] == "DUPLICATE_IGNORED"
    for cell in (hand, gate):
        assert cell["outage"]["connection_cut"]["status"] == 200
        assert cell["worker_exit_codes"] == [0, 0] and cell["crash_fired"] is False
        assert len(cell["ground_truth"]["agent_events"]) == 1 and cell["invariant_held"]


def test_a_customer_event_taken_while_the_gate_waits_to_send_is_caught_by_its_last_look(extra):
    summary = extra["raced_dispatch"]["summary"]

    for variant in ("gate", "gate+send_recheck"):
        assert summary[variant]["forced"]["outcome"] == "REFUSED:stale_premise"
        assert summary[variant]["forced"]["double_booked"] is False
    assert summary["gate"]["trials"] == summary["gate+send_recheck"]["trials"] == 2


def test_an_agent_event_already_on_the_slot_is_not_a_double_booking_by_the_agent():
    ours = {"id": "a1", "status": "confirmed", "start": {"dateTime": "2026-10-14T10:00:00Z"},
            "end": {"dateTime": "2026-10-14T10:30:00Z"},
            "extendedProperties": {"private": {"booking_request": "r1"}}}
    theirs = {"id": "c1", "status": "confirmed", "start": ours["start"], "end": ours["end"]}

    assert grade([ours, theirs], "r1", 1, already_there=["a1"])["double_booked"] is False
    assert grade([ours, theirs], "r1", 0, already_there=[])["double_booked"] is True


@pytest.mark.parametrize("argv, says", [
    (["--systems", "nope"], "--systems: unknown system 'nope'"),
    (["--faults", "before_send/flood"], "--faults: unknown fault 'before_send/flood'"),
    (["--raced-trials", "x"], "--raced-trials"),
    (["--live", "--faults", "network_cut/none"], "need the stand-in"),
    (["--bogus"], "unrecognized arguments"),
])
def test_bad_arguments_are_one_line_and_exit_2(argv, says, tmp_path, capsys):
    out = tmp_path / "calendar.json"

    assert scenario_calendar.main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and not out.exists()


def test_live_without_credentials_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("INTERLOCK_CALENDAR_KEY_FILE", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    out = tmp_path / "calendar.json"

    with pytest.raises(SystemExit) as exited:
        scenario_calendar.main(["--live", "--out", str(out)])

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
        [sys.executable, "-m", "experiments.scenario_calendar", "--faults", "after_commit/none", "before_send/none",
         "--raced-trials", "0", "--out", str(out)],
        cwd=Path(__file__).resolve().parents[1], env={**os.environ, "TMPDIR": str(scratch)},
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
