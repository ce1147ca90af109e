"""The crash-schedule explorer: seeded schedules cover every fault, the checks catch what breaks, and over a short
run of real workers and stand-ins the gate breaks no rule outside the check-to-send window."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from experiments.explore import VIOLATIONS, check, schedule_for
from experiments.explore.processes import Finished
from experiments.explore.runner import Observation, Ran
from experiments.explore.schedules import ACTIONS, MAX_RECOVERERS, SCENARIOS, SYSTEMS
from experiments.explore.worlds import Case, Truth
from interlock import Journal
from experiments import crash

ROOT = Path(__file__).parents[1]
SHORT_RUN = 25  # schedules per scenario: about 50 in all


def test_a_seed_always_stands_for_the_same_schedule():
    assert schedule_for("gcp_resource", 41) == schedule_for("gcp_resource", 41)
    assert schedule_for("gcp_resource", 41) != schedule_for("gcp_resource", 42)
    assert schedule_for("calendar", 7).replay == "python -m experiments.explore --scenario calendar --replay 7"


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_thousand_schedules_reach_every_fault(scenario):
    schedules = [schedule_for(scenario, seed) for seed in range(1000)]
    armed = {k for s in schedules for k in s.kills if k}
    assert armed == set(crash.POINTS)
    assert any(sum(k is not None for k in s.kills) >= 2 for s in schedules)  # crashes inside recovery
    assert {s.action for s in schedules} == set(ACTIONS[scenario])
    assert {s.action_pause[1] for s in schedules if s.action_pause} == set(crash.POINTS)
    assert any(s.action_before is not None for s in schedules)
    assert {s.cut for s in schedules} == {True, False}
    assert {s.recoverers for s in schedules} == set(range(1, MAX_RECOVERERS + 1))


def observed(tmp_path, *, writes=(), live=None, outcomes=("COMMITTED",), acted_at=None, action="none",
             journal=(), system="interlock", log=()):
    schedule = replace(schedule_for("gcp_resource", 0), action=action)
    seen = Observation(schedule, system, Case(tmp_path, system, "e" * 12))
    seen.ran = [Ran("recoverer", i, None, Finished(0, f"{o}\n", "", False)) for i, o in enumerate(outcomes)]
    seen.truth = Truth(list(writes), len(writes) if live is None else live)
    seen.acted_at, seen.acted = acted_at, "before worker 1" if acted_at else None
    seen.journal, seen.log = list(journal), list(log)
    return seen


def kinds(seen):
    return {v.kind for v in check(seen)}


def gate_entries(tmp_path, *kinds_to_write):
    with Journal(tmp_path / "journal.jsonl") as journal:
        for kind in kinds_to_write:
            data = {"via": "send", "result": "1"} if kind == "COMMITTED" else {"checks": {"lease_live": True,
                                                                                         "violations": []}}
            journal.append(kind, "e" * 12, data)
        return journal.entries()


def test_checks_hold_for_a_clean_settled_effect(tmp_path):
    entries = gate_entries(tmp_path, "PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED")
    assert kinds(observed(tmp_path, writes=[("1", 5.0)], journal=entries)) == set()


def test_two_agent_writes_are_a_duplicate(tmp_path):
    entries = gate_entries(tmp_path, "PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED")
    assert "duplicate_effect" in kinds(observed(tmp_path, writes=[("1", 5.0), ("2", 6.0)], journal=entries))


def test_a_write_after_the_human_acted_breaks_the_premise_rule(tmp_path):
    seen = observed(tmp_path, writes=[("1", 9.0)], acted_at=8.0, action="human_write")
    assert "after_premise_moved" in kinds(seen)
    seen = observed(tmp_path, writes=[("1", 9.0)], acted_at=8.0, action="lease_revoked")
    assert "after_lease_ended" in kinds(seen)
    assert not {"after_premise_moved", "after_lease_ended"} & kinds(
        observed(tmp_path, writes=[("1", 7.0)], acted_at=8.0, action="human_write"))


def test_a_journal_ending_in_a_send_is_unresolved_and_its_receipt_cannot_say(tmp_path):
    entries = gate_entries(tmp_path, "PROPOSED", "AUTHORIZED", "DISPATCHED")
    found = kinds(observed(tmp_path, writes=[("1", 5.0)], journal=entries))
    assert {"unresolved_dispatch", "receipt_disagrees"} <= found


def test_a_tampered_receipt_is_invalid(tmp_path):
    entries = gate_entries(tmp_path, "PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED")
    entries[2]["checks"]["lease_live"] = False
    assert "receipt_invalid" in kinds(observed(tmp_path, writes=[("1", 5.0)], journal=entries))


def test_answers_are_held_against_the_service(tmp_path):
    assert "answer_wrong" in kinds(observed(tmp_path, writes=[], outcomes=("COMMITTED",)))
    assert "answer_wrong" in kinds(observed(tmp_path, writes=[("1", 1.0)], outcomes=("REFUSED:lease",),
                                            system="no_check"))
    assert "answer_cannot_say" in kinds(observed(tmp_path, outcomes=("AMBIGUOUS",), system="no_check"))
    assert "unknown_outcome" in kinds(observed(tmp_path, outcomes=("PROBABLY",), system="no_check"))


def test_a_baseline_log_with_a_send_and_no_result_is_unresolved(tmp_path):
    log = [{"event": "send"}, {"event": "send"}, {"event": "result"}]
    assert "unresolved_dispatch" in kinds(observed(tmp_path, writes=[("1", 1.0)], system="no_check", log=log))


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("explore")
    done = subprocess.run([sys.executable, "-m", "experiments.explore", "--schedules", str(SHORT_RUN), "--out",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return done, {s: json.loads((out / f"explore_{s}.json").read_text()) for s in SCENARIOS}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_short_run_tries_every_schedule_with_every_system(short_run, scenario):
    summary = short_run[1][scenario]
    assert summary["scenario"] == scenario and summary["seeds"] == {"first": 0, "count": SHORT_RUN}
    for system in SYSTEMS:
        row = summary["systems"][system]
        assert row["schedules"] == SHORT_RUN
        assert row["held"] + row["violated"] + row["violated_in_window"] == SHORT_RUN
        assert set(row["violations"]) == set(VIOLATIONS)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_gate_breaks_no_rule_outside_the_check_to_send_window(short_run, scenario):
    gate = short_run[1][scenario]["systems"]["interlock"]
    shown = [f for v in gate["violations"].values() for f in v["first"] if not f["in_window"]]
    assert gate["violated"] == 0, shown


def test_the_baselines_break_rules_the_gate_keeps(short_run):
    no_check = short_run[1]["gcp_resource"]["systems"]["no_check"]
    assert no_check["violations"]["duplicate_effect"]["count"] > 0
    first = no_check["violations"]["duplicate_effect"]["first"][0]
    assert first["replay"] == f"python -m experiments.explore --scenario gcp_resource --replay {first['seed']}"


def test_a_replay_runs_the_one_schedule_again():
    done = subprocess.run([sys.executable, "-m", "experiments.explore", "--scenario", "gcp_resource", "--replay", "3",
                           "--systems", "interlock"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    lines = done.stdout.splitlines()
    assert lines[0] == "python -m experiments.explore --scenario gcp_resource --replay 3"
    assert lines[1].strip() == schedule_for("gcp_resource", 3).describe()
    assert "interlock: held" in done.stdout and done.returncode == 0, done.stdout + done.stderr
