"""The crash-schedule explorer: seeded schedules cover every fault of every hazard, the checks catch what breaks
from the stored history rows alone, and short runs of real workers and stand-ins store one row per run and count
them per hazard and system."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from experiments import crash
from experiments.explore import HAZARDS, VIOLATIONS, check, result_name, schedule_for
from experiments.explore.hazards import SHORT_TTL
from experiments.explore.history import HistoryUnreadable, HistoryWriter, read_history
from experiments.explore.schedules import ACTIONS, HELD_POINTS, MAX_RECOVERERS, SCENARIOS, SYSTEMS
from experiments.explore.tally import Tally
from interlock import Journal

ROOT = Path(__file__).parents[1]
SHORT_RUN = 25  # crash schedules per scenario
HAZARD_RUN = 4  # schedules of each hazard tried here


def test_a_seed_always_stands_for_the_same_schedule():
    assert schedule_for("gcp_resource", 41) == schedule_for("gcp_resource", 41)
    assert schedule_for("gcp_resource", 41) != schedule_for("gcp_resource", 42)
    assert schedule_for("calendar", 7).replay == "python -m experiments.explore --scenario calendar --replay 7"
    held = schedule_for("ledger", 7, "paused_past_ttl", "postgresql")
    assert held == schedule_for("ledger", 7, "paused_past_ttl", "postgresql")
    assert held.replay == ("python -m experiments.explore --scenario ledger --hazard paused_past_ttl --journal "
                           "postgresql --replay 7")


@pytest.mark.parametrize("scenario", ("gcp_resource", "calendar"))
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


def _drawn(hazard, journal="jsonl", scenario="ledger", count=300):
    return [schedule_for(scenario, seed, hazard, journal) for seed in range(count)]


def test_held_senders_are_stopped_at_every_point_the_gate_reaches():
    for scenario in ("gcp_resource", "ledger"):
        held = [s.interrupt for s in _drawn("sigstop", scenario=scenario)]
        assert all(i is not None and i.how == "sigstop" for i in held)
        assert {i.point for i in held} == set(HELD_POINTS)
    past = [s.interrupt.seconds for s in _drawn("paused_past_ttl", "postgresql")]
    assert min(past) > SHORT_TTL
    assert {s.interrupt.how for s in _drawn("session_terminated", "postgresql", "calendar")} == {"terminate_session"}
    assert {s.interrupt.how for s in _drawn("server_restart", "postgresql")} == {"restart_server"}


def test_slow_writes_land_up_to_two_seconds_late_with_their_sender_killed_or_beside_recoverers():
    slow = _drawn("slow_service")
    assert 0 <= min(s.delay for s in slow) < 0.1 and 1.9 < max(s.delay for s in slow) <= 2.0
    assert {s.in_flight for s in slow} == {"kill", None}
    past = _drawn("slow_send_past_ttl", "postgresql")
    assert min(s.delay for s in past) > SHORT_TTL and {s.in_flight for s in past} == {"recover"}


def test_late_requests_are_held_past_every_in_flight_bound_then_their_sender_is_killed_while_they_wait():
    from experiments.explore.ledger_worker import IN_FLIGHT_SECONDS as LEDGER
    from experiments.gcp_resource.gated import IN_FLIGHT_SECONDS as GCS

    for journal in ("jsonl", "postgresql"):
        late = _drawn("late_request", journal, "ledger")
        holds = [s.hold for s in late]
        assert min(holds) < 0.5 and max(LEDGER, GCS) < max(holds) <= 6.0
        assert {s.in_flight for s in late} == {"kill"} and all(s.kills == (None,) for s in late)
        assert all(s.delay is not None and 0 <= s.delay <= 2.0 for s in late)


def test_cut_journals_and_raising_sends_cover_their_range():
    cuts = [s.journal_cut for s in _drawn("journal_cut", scenario="calendar")]
    assert min(cuts) < 0.05 and max(cuts) > 0.95
    assert {s.raises for s in _drawn("send_raises")} == {"before_request", "after_apply"}


def test_every_hazard_runs_on_every_scenario():
    assert all(set(kind.scenarios) == set(SCENARIOS) for kind in HAZARDS.values())


def test_a_hazard_does_not_run_where_it_cannot_strike():
    with pytest.raises(ValueError, match="session_terminated"):
        schedule_for("ledger", 0, "session_terminated", "jsonl")
    done = subprocess.run([sys.executable, "-m", "experiments.explore", "--hazard", "journal_cut", "--journal",
                           "postgresql"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "journal_cut" in done.stderr


def test_every_hazard_has_its_own_result_file():
    names = {result_name(s, h, j) for h, kind in HAZARDS.items() for s in kind.scenarios for j in kind.journals}
    assert len(names) == sum(len(k.scenarios) * len(k.journals) for k in HAZARDS.values())
    assert result_name("gcp_resource", "crash", "jsonl") == "explore_gcp_resource.json"
    assert result_name("ledger", "paused_past_ttl", "postgresql") == "explore_ledger_pg_paused_past_ttl.json"


def ran(stage="recoverer", index=0, outcome="COMMITTED", **extra):
    return {"stage": stage, "index": index, "kill": None, "exit_code": 0 if outcome else 1, "outcome": outcome,
            "timed_out": False, "traceback": False, "refused_journal": False, "stderr": [], **extra}


def row(*, writes=(), live=None, runs=None, acted_at=None, action="none", entries=(), system="interlock",
        events=(), journal_cut=None, interrupt=None, hazard="crash"):
    schedule = schedule_for("gcp_resource", 0).row()
    schedule.update(action=action, hazard=hazard, interrupt=interrupt)
    return {"scenario": "gcp_resource", "hazard": hazard, "journal": "jsonl", "seed": 0, "system": system,
            "replay": "python -m experiments.explore --scenario gcp_resource --replay 0", "schedule": schedule,
            "describe": "", "effect_id": "e" * 12, "ran": runs if runs is not None else [ran()],
            "acted": "before worker 1" if acted_at else None, "acted_at": acted_at,
            "interrupt": interrupt, "in_flight": None, "journal_cut": journal_cut,
            "truth": {"writes": [list(w) for w in writes], "live": len(writes) if live is None else live},
            "record": {"entries": list(entries)} if system.startswith("interlock") else {"events": list(events)}}


def kinds(found_row):
    return {v.kind for v in check(found_row)}


def gate_entries(tmp_path, *kinds_to_write):
    with Journal(tmp_path / "journal.jsonl") as journal:
        for kind in kinds_to_write:
            data = {"via": "send", "result": "1"} if kind == "COMMITTED" else {"checks": {"lease_live": True,
                                                                                         "violations": []}}
            journal.append(kind, "e" * 12, data)
        return journal.entries()


def test_checks_hold_for_a_clean_settled_effect(tmp_path):
    entries = gate_entries(tmp_path, "PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED")
    assert kinds(row(writes=[("1", 5.0)], entries=entries)) == set()


def test_two_agent_writes_are_a_duplicate(tmp_path):
    entries = gate_entries(tmp_path, "PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED")
    assert "duplicate_effect" in kinds(row(writes=[("1", 5.0), ("2", 6.0)], entries=entries))


def test_a_write_after_the_human_acted_breaks_the_premise_rule():
    assert "after_premise_moved" in kinds(row(writes=[("1", 9.0)], acted_at=8.0, action="human_write"))
    assert "after_lease_ended" in kinds(row(writes=[("1", 9.0)], acted_at=8.0, action="lease_revoked"))
    assert "after_premise_moved" in kinds(row(writes=[("1", 9.0)], acted_at=8.0, action="balance_moved"))
    assert not {"after_premise_moved", "after_lease_ended"} & kinds(
        row(writes=[("1", 7.0)], acted_at=8.0, action="human_write"))


def test_a_journal_ending_in_a_send_is_unresolved_and_its_receipt_cannot_say(tmp_path):
    entries = gate_entries(tmp_path, "PROPOSED", "AUTHORIZED", "DISPATCHED")
    assert {"unresolved_dispatch", "receipt_cannot_say"} <= kinds(row(writes=[("1", 5.0)], entries=entries))


def test_a_tampered_receipt_is_invalid(tmp_path):
    entries = gate_entries(tmp_path, "PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED")
    entries[2]["checks"]["lease_live"] = False
    assert "receipt_invalid" in kinds(row(writes=[("1", 5.0)], entries=entries))


def test_answers_are_held_against_the_service():
    assert "answer_wrong" in kinds(row(writes=[], runs=[ran(outcome="COMMITTED")]))
    assert "answer_wrong" in kinds(row(writes=[("1", 1.0)], runs=[ran(outcome="REFUSED:lease")], system="no_check"))
    assert "answer_cannot_say" in kinds(row(runs=[ran(outcome="AMBIGUOUS")], system="no_check"))
    assert "unknown_outcome" in kinds(row(runs=[ran(outcome="PROBABLY")], system="no_check"))


def test_a_recoverer_beside_a_held_sender_may_defer_but_the_settler_may_not():
    beside = [ran("chain", outcome="COMMITTED"), ran("concurrent", outcome="IN_FLIGHT"), ran("settler")]
    assert "answer_cannot_say" not in kinds(row(writes=[("1", 1.0)], runs=beside, system="no_check"))
    undecided = [ran("chain", outcome="COMMITTED"), ran("settler", outcome="IN_FLIGHT")]
    assert "answer_cannot_say" in kinds(row(writes=[("1", 1.0)], runs=undecided, system="no_check"))


def test_a_journal_cut_before_its_last_line_must_be_refused(tmp_path):
    entries = gate_entries(tmp_path, "PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED")
    cut = {"file": "journal.jsonl", "size": 2000, "kept": 700, "lines": 4, "lines_kept": 1,
           "inside_last_line": False}
    opened = row(writes=[("1", 1.0)], entries=entries, journal_cut=cut, runs=[ran(outcome="DUPLICATE_IGNORED")])
    assert "damage_accepted" in kinds(opened)
    refusing = [ran(outcome=None, traceback=True, refused_journal=True, stderr=["JournalCorrupt: journal.jsonl"])]
    assert kinds(row(writes=[("1", 1.0)], entries=entries[:1], journal_cut=cut, runs=refusing)) == set()
    torn = {**cut, "kept": 1990, "lines_kept": 3, "inside_last_line": True}
    assert "damage_accepted" not in kinds(row(writes=[("1", 1.0)], entries=entries, journal_cut=torn))
    flushed_and_torn = row(writes=[("1", 1.0)], entries=entries[:3], journal_cut=torn, runs=refusing)
    assert kinds(flushed_and_torn) == set()  # a refused record is not read for an open send


def test_a_journal_cut_past_what_its_witness_saw_flushed_may_be_opened_and_one_into_it_may_not(tmp_path):
    entries = gate_entries(tmp_path, "PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED")
    cut = {"file": "journal.jsonl", "size": 2000, "kept": 1500, "lines": 4, "lines_kept": 3,
           "inside_last_line": False, "durable": 1500}
    opened = [ran(outcome="COMMITTED")]
    assert "damage_accepted" not in kinds(row(writes=[("1", 1.0)], entries=entries, journal_cut=cut, runs=opened))
    into_flushed = {**cut, "durable": 1501}
    assert "damage_accepted" in kinds(row(writes=[("1", 1.0)], entries=entries, journal_cut=into_flushed,
                                          runs=opened))


def test_a_baseline_log_with_a_send_and_no_result_is_unresolved():
    events = ["send", "send", "result"]
    assert "unresolved_dispatch" in kinds(row(writes=[("1", 1.0)], system="no_check", events=events))


def test_an_action_while_a_sender_is_held_right_before_its_request_counts_in_the_window():
    held = {"how": "sigstop", "point": "before_request", "reached": True, "at": 1.0, "released_at": 2.0}
    tally = Tally(["no_check"])
    late = row(writes=[("1", 3.0)], acted_at=1.5, action="lease_revoked", system="no_check", interrupt=held,
               hazard="sigstop")
    tally.add(late)
    counts = tally.summary()["systems"]["no_check"]
    assert counts["violated_in_window"] == 1 and counts["violations"]["after_lease_ended"]["in_window"] == 1
    assert tally.summary()["hazard_effects"]["interrupt"] == {"no_check: sigstop at before_request: struck": 1}


@pytest.mark.parametrize("acted, inside", [("while worker 0 was paused at before_send", True),
                                           ("after worker 0 exited (it never reached before_send)", False)])
def test_an_action_at_a_pause_point_counts_in_the_window_only_when_the_worker_waited_there(acted, inside):
    tally = Tally(["no_check"])
    late = row(writes=[("1", 3.0)], acted_at=1.5, action="lease_revoked", system="no_check")
    late["schedule"]["action_pause"] = [0, "before_send"]
    late["acted"] = acted
    tally.add(late)
    counts = tally.summary()["systems"]["no_check"]
    assert (counts["violated_in_window"], counts["violated"]) == ((1, 0) if inside else (0, 1))
    timing = "inside the check-to-send window" if inside else "after the worker exited, its pause point not reached"
    assert tally.summary()["dimensions"]["action_timing"] == {timing: 1}


def _committed_result(tmp_path: Path, name: str = "explore_ledger_pg_send_raises") -> tuple[Path, dict]:
    """A committed exploration copied beside its history, the file naming the copy."""
    history = tmp_path / "history" / f"{name}.jsonl.gz"
    history.parent.mkdir()
    history.write_bytes((ROOT / "results" / "reliability" / "history" / history.name).read_bytes())
    stored = json.loads((ROOT / "results" / "reliability" / f"{name}.json").read_text())
    stored["history"]["path"] = str(history)
    return tmp_path / f"{name}.json", stored


def test_counting_again_rewrites_the_counts_from_the_history_and_keeps_what_the_run_recorded(tmp_path):
    path, stored = _committed_result(tmp_path)
    forged = json.loads(json.dumps(stored))
    forged["systems"]["interlock"]["held"] += 7
    path.write_text(json.dumps(forged))
    done = subprocess.run([sys.executable, "-m", "experiments.explore.count_again", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    again = json.loads(path.read_text())
    assert again["systems"] == stored["systems"]
    for fact in ("generated", "command", "provenance", "seeds", "seconds", "seconds_per_run", "jobs"):
        assert again[fact] == stored[fact], fact
    assert (again["history"]["sha256"], again["history"]["rows"]) == (stored["history"]["sha256"],
                                                                      stored["history"]["rows"])
    assert set(again["counted"]) == {"commit", "dirty", "at"}
    assert len(again["counted"]["commit"]) == 40 and int(again["counted"]["commit"], 16) >= 0


def test_counting_again_refuses_a_history_other_than_the_one_the_file_was_counted_from(tmp_path):
    path, stored = _committed_result(tmp_path)
    stored["history"]["sha256"] = "0" * 64
    path.write_text(json.dumps(stored))
    done = subprocess.run([sys.executable, "-m", "experiments.explore.count_again", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and str(path) in done.stderr and "history.sha256" in done.stderr
    assert json.loads(path.read_text()) == stored


def test_counting_again_names_a_history_row_the_explorer_would_not_write_in_one_line(tmp_path):
    path, stored = _committed_result(tmp_path)
    history = Path(stored["history"]["path"])
    with gzip.open(history, "rt") as lines:
        rows = [json.loads(line) for line in lines]
    del rows[3]["schedule"]
    with gzip.open(history, "wt") as lines:
        lines.writelines(json.dumps(row) + "\n" for row in rows)
    stored["history"]["sha256"] = hashlib.sha256(history.read_bytes()).hexdigest()
    path.write_text(json.dumps(stored))
    done = subprocess.run([sys.executable, "-m", "experiments.explore.count_again", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stderr) == (2, f"explore: {history}: a row has no field 'schedule', which the "
                                                 "explorer writes\n")
    assert json.loads(path.read_text()) == stored


def test_counting_again_refuses_a_file_missing_what_its_run_recorded(tmp_path):
    path, stored = _committed_result(tmp_path)
    del stored["seeds"]
    path.write_text(json.dumps(stored))
    done = subprocess.run([sys.executable, "-m", "experiments.explore.count_again", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stderr) == (2, f"explore: {path}: seeds: missing; counting again keeps what the "
                                                 "run recorded there\n")


def test_the_runner_says_a_worker_waited_at_its_point_in_the_words_the_counting_reads():
    """The window's rule reads the runner's `acted`: an action while a worker waited opens with PAUSED, one after
    the worker exited short of its point does not."""
    import ast

    from experiments.explore.tally import PAUSED
    from pipeline.recount import PAUSED as JUDGED

    tree = ast.parse((ROOT / "experiments" / "explore" / "runner.py").read_text())
    said = ["".join(part.value for part in node.args[0].values if isinstance(part, ast.Constant))
            for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "_act"
            and isinstance(node.args[0], ast.JoinedStr)]
    waited = [text for text in said if " was paused at " in text or " was held at " in text]
    assert PAUSED == JUDGED and len(waited) == 2 and all(text.startswith(PAUSED) for text in waited)
    assert any("never reached" in text for text in said)
    assert not any(text.startswith(PAUSED) for text in said if text not in waited)


def test_counting_again_says_how_it_is_used_when_asked_or_given_nothing():
    asked = subprocess.run([sys.executable, "-m", "experiments.explore.count_again", "--help"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    bare = subprocess.run([sys.executable, "-m", "experiments.explore.count_again"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert (asked.returncode, bare.returncode) == (0, 2)
    assert asked.stdout.startswith("usage: python -m experiments.explore.count_again RESULT...")
    assert bare.stderr.startswith("usage: ") and not bare.stdout


def test_counting_again_names_a_file_that_names_no_history(tmp_path):
    path = tmp_path / "explore_ledger.json"
    path.write_text(json.dumps({"history": {"path": 3}}))
    done = subprocess.run([sys.executable, "-m", "experiments.explore.count_again", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert done.stderr == f"explore: {path}: history: expected an object with the history's path and sha256\n"


def test_a_history_takes_its_name_only_when_complete(tmp_path):
    path = tmp_path / "history" / "explore_x.jsonl.gz"
    with HistoryWriter(path) as history:
        history.add(row())
        history.complete()
    with pytest.raises(RuntimeError), HistoryWriter(path) as history:
        history.add(row(system="no_check"))
        raise RuntimeError("interrupted")
    assert [r["system"] for r in read_history(path)] == ["interlock"]
    assert list(path.parent.iterdir()) == [path]


def test_an_unreadable_history_names_the_file_and_the_line(tmp_path):
    path = tmp_path / "bad.jsonl.gz"
    with gzip.open(path, "wt") as out:
        out.write(json.dumps(row()) + "\n{not json\n")
    with pytest.raises(HistoryUnreadable, match=r"bad\.jsonl\.gz: line 2"):
        list(read_history(path))
    done = subprocess.run([sys.executable, "-m", "experiments.explore", "--check", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "bad.jsonl.gz: line 2" in done.stderr and done.stderr.count("\n") == 1


def _explore(out, *args):
    done = subprocess.run([sys.executable, "-m", "experiments.explore", "--out", str(out), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return done


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("explore")
    for scenario in ("gcp_resource", "calendar"):
        _explore(out, "--scenario", scenario, "--schedules", str(SHORT_RUN))
    return out, {s: json.loads((out / f"explore_{s}.json").read_text()) for s in ("gcp_resource", "calendar")}


@pytest.mark.parametrize("scenario", ("gcp_resource", "calendar"))
def test_a_short_run_tries_every_schedule_with_every_system(short_run, scenario):
    summary = short_run[1][scenario]
    assert summary["scenario"] == scenario and summary["seeds"]["first"] == 0
    assert summary["seeds"]["count"] == SHORT_RUN
    assert summary["hazard"]["name"] == "crash" and summary["history"]["rows"] == SHORT_RUN * len(SYSTEMS)
    for system in SYSTEMS:
        counts = summary["systems"][system]
        assert counts["schedules"] == SHORT_RUN
        assert counts["held"] + counts["violated"] + counts["violated_in_window"] == SHORT_RUN
        assert set(counts["violations"]) == set(VIOLATIONS)


@pytest.mark.parametrize("scenario", ("gcp_resource", "calendar"))
def test_the_gate_breaks_no_rule_outside_the_check_to_send_window(short_run, scenario):
    gate = short_run[1][scenario]["systems"]["interlock"]
    shown = [f for v in gate["violations"].values() for f in v["first"] if not f["in_window"]]
    assert gate["violated"] == 0, shown


def test_the_baselines_break_rules_the_gate_keeps(short_run):
    no_check = short_run[1]["gcp_resource"]["systems"]["no_check"]
    assert no_check["violations"]["duplicate_effect"]["count"] > 0
    first = no_check["violations"]["duplicate_effect"]["first"][0]
    assert first["replay"] == f"python -m experiments.explore --scenario gcp_resource --replay {first['seed']}"


def test_the_counts_come_back_from_the_stored_history_alone(short_run):
    out, summaries = short_run
    history = out / "history" / "explore_gcp_resource.jsonl.gz"
    done = subprocess.run([sys.executable, "-m", "experiments.explore", "--check", str(history)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    gate = summaries["gcp_resource"]["systems"]["interlock"]
    assert f"interlock: {SHORT_RUN} schedules, {gate['held']} held" in done.stdout, done.stdout + done.stderr


HAZARD_RUNS = [("gcp_resource", "sigstop", "jsonl"), ("calendar", "journal_cut", "jsonl"),
               ("ledger", "slow_service", "jsonl"), ("ledger", "send_raises", "jsonl"),
               ("gcp_resource", "slow_service", "jsonl"), ("calendar", "send_raises", "jsonl"),
               ("ledger", "paused_past_ttl", "postgresql"), ("gcp_resource", "session_terminated", "postgresql"),
               ("calendar", "server_restart", "postgresql"), ("gcp_resource", "slow_send_past_ttl", "postgresql"),
               ("ledger", "late_request", "jsonl"), ("calendar", "late_request", "postgresql")]


@pytest.mark.parametrize(("scenario", "hazard", "journal"), HAZARD_RUNS)
def test_a_hazard_run_stores_a_row_per_run_and_counts_it_per_system(tmp_path, scenario, hazard, journal):
    _explore(tmp_path, "--scenario", scenario, "--hazard", hazard, "--journal", journal, "--schedules",
             str(HAZARD_RUN))
    summary = json.loads((tmp_path / result_name(scenario, hazard, journal)).read_text())
    assert summary["hazard"]["name"] == hazard and summary["hazard"]["journal"] == journal
    rows = list(read_history(tmp_path / "history" / result_name(scenario, hazard, journal).replace(".json",
                                                                                                   ".jsonl.gz")))
    systems = SYSTEMS if journal == "jsonl" else ("interlock",)  # the baselines keep no journal to strike
    assert len(rows) == HAZARD_RUN * len(systems) == summary["history"]["rows"]
    assert {r["hazard"] for r in rows} == {hazard}
    for system in systems:
        counts = summary["systems"][system]
        assert counts["held"] + counts["violated"] + counts["violated_in_window"] == HAZARD_RUN
    assert summary["hazard_effects"], "the hazard's own effect on each run is recorded"
    if hazard == "journal_cut":  # where the gate's witness saw the flushed part end, read before the cut
        cut = [r["journal_cut"] for r in rows if r["system"] == "interlock" and r["journal_cut"]["size"]]
        assert cut and all(0 < c["durable"] <= c["size"] for c in cut)
    if hazard == "late_request":
        assert all(r["in_flight"]["how"] == "kill" for r in rows)


def test_a_server_restart_strikes_only_the_run_that_holds_the_cluster(tmp_path):
    _explore(tmp_path, "--scenario", "ledger", "--hazard", "server_restart", "--journal", "postgresql",
             "--schedules", "4", "--jobs", "2")
    summary = json.loads((tmp_path / "explore_ledger_pg_server_restart.json").read_text())
    assert summary["jobs"] == 2 and "cluster per concurrent run" in summary["hazard"]["journal_backend"]
    rows = list(read_history(tmp_path / "history" / "explore_ledger_pg_server_restart.jsonl.gz"))
    assert all(not r["interrupt"]["reached"] or r["interrupt"]["how"] == "restart_server" for r in rows)


@pytest.mark.parametrize("point", ("before_request", "after_apply"))
def test_a_planted_bug_raises_from_the_send_function_the_gate_calls(monkeypatch, point):
    from experiments import planted

    class Target:
        fenced = True
        sent: list[str] = []

        def apply(self, effect_id, payload):
            self.sent.append(effect_id)
            return "generation-1"

    monkeypatch.delenv(planted.RAISES_ENV, raising=False)
    plain = Target()
    assert planted.target(plain) is plain
    monkeypatch.setenv(planted.RAISES_ENV, point)
    wrapped = planted.target(Target())
    assert wrapped.fenced is True
    with pytest.raises(KeyError):
        wrapped.apply("e1", {})
    assert Target.sent == ([] if point == "before_request" else ["e1"])


def test_the_baselines_may_try_fewer_of_the_same_schedules_than_the_gate(tmp_path):
    _explore(tmp_path, "--scenario", "ledger", "--hazard", "send_raises", "--schedules", "3",
             "--baseline-schedules", "1")
    summary = json.loads((tmp_path / "explore_ledger_send_raises.json").read_text())
    assert summary["seeds"]["per_system"] == {"interlock": 3, "hand_check": 1, "no_check": 1}
    assert {s: c["schedules"] for s, c in summary["systems"].items()} == summary["seeds"]["per_system"]
    assert "--baseline-schedules 1" in summary["command"]


def test_a_stopped_sender_is_seen_stopped_by_the_kernel(tmp_path):
    _explore(tmp_path, "--scenario", "ledger", "--hazard", "sigstop", "--schedules", "3", "--systems", "no_check")
    rows = list(read_history(tmp_path / "history" / "explore_ledger_sigstop.jsonl.gz"))
    struck = [r["interrupt"] for r in rows if r["interrupt"]["reached"]]
    assert struck and all(i["seen_stopped"] and i["released_at"] > i["at"] for i in struck)


def test_a_slow_ledger_lands_a_request_after_its_sender_was_killed(tmp_path):
    _explore(tmp_path, "--scenario", "ledger", "--hazard", "slow_service", "--schedules", "4", "--systems",
             "no_check")
    rows = list(read_history(tmp_path / "history" / "explore_ledger_slow_service.jsonl.gz"))
    killed = [r for r in rows if r["schedule"]["in_flight"] == "kill"]
    assert killed and all(r["in_flight"]["received"] and r["ran"][0]["kill"] == "in_flight" for r in killed)
    # the request outlived its killed sender: the blind resend lands a second time
    assert any(len(r["truth"]["writes"]) == 2 for r in killed)


def test_a_replay_runs_the_one_schedule_again():
    done = subprocess.run([sys.executable, "-m", "experiments.explore", "--scenario", "gcp_resource", "--replay", "3",
                           "--systems", "interlock"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    lines, said = done.stdout.splitlines(), done.stdout + done.stderr
    assert lines[:1] == ["python -m experiments.explore --scenario gcp_resource --replay 3"], said
    assert lines[1].strip() == schedule_for("gcp_resource", 3).describe(), said
    assert "interlock: held" in done.stdout and done.returncode == 0, said


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_slow_service_times_a_write_when_it_arrived_not_when_it_landed(tmp_path, scenario):
    from experiments.explore.worlds import world

    schedule = replace(schedule_for(scenario, 0, "slow_service"), delay=0.3)
    with world(scenario, tmp_path / "world") as explored:
        case_dir = tmp_path / "case"
        case_dir.mkdir()
        case = explored.setup(case_dir, schedule, "no_check")
        sent = time.time()
        done = subprocess.run([sys.executable, "-m", explored.module, *explored.argv(case, "decide")], cwd=ROOT,
                              env={**os.environ, **explored.env}, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        [held] = explored.scenario.held_writes(case)
        assert explored.received(case) and explored.settle(case)
        truth = explored.truth(case)
        explored.finish(case)
    [(_, arrived)] = truth.writes
    assert truth.live == 1 and sent < arrived < sent + 60 and arrived == held["arrived"]


def test_a_run_whose_deadline_passed_before_any_schedule_writes_nothing(tmp_path):
    done = subprocess.run([sys.executable, "-m", "experiments.explore", "--scenario", "ledger", "--hazard",
                           "send_raises", "--schedules", "3", "--until", "00:00", "--out", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "nothing written" in done.stderr
    assert not (tmp_path / "explore_ledger_send_raises.json").exists()
    history = tmp_path / "history"
    assert not history.exists() or not any(history.iterdir())


def test_an_event_id_recovery_retired_with_its_placeholder_holds_no_booking(tmp_path):
    from interlock.targets.calendar import CalendarEventTarget
    from experiments.explore.worlds import world

    schedule = schedule_for("calendar", 0, "slow_service")
    with world("calendar", tmp_path / "world") as explored:
        case_dir = tmp_path / "case"
        case_dir.mkdir()
        case = explored.setup(case_dir, schedule, "interlock")
        target = CalendarEventTarget(explored.scenario.service, explored.scenario.calendar_id)
        target.close_out(case.ids["effect_id"], {}, epoch=1)
        log = explored.scenario.services.calendar.write_log()
        truth = explored.truth(case)
        explored.finish(case)
    assert any(e["method"] == "insert" and e["event_id"] == case.ids["agent_event_id"] and e["status"] == 200
               for e in log), "the placeholder's own insert is in the stand-in's write log"
    assert truth.writes == [] and truth.live == 0


def _failing_first(monkeypatch, failures):
    """The explorer's harness raising (as a SIGCONT to a worker already gone did) on seed 1's first `failures`
    plays with the gate, then playing for real."""
    import experiments.explore.__main__ as explorer

    real, calls = explorer.run, []

    def run(world, forker, schedule, system, root):
        if schedule.seed == 1 and system == "interlock" and len(calls) < failures:
            calls.append(schedule.seed)
            raise ProcessLookupError(3, "No such process")
        return real(world, forker, schedule, system, root)

    monkeypatch.setattr(explorer, "run", run)
    return explorer


def test_a_run_the_harness_itself_failed_is_played_once_more_and_the_file_names_it(tmp_path, monkeypatch):
    explorer = _failing_first(monkeypatch, 1)
    assert explorer.main(["--out", str(tmp_path), "--scenario", "ledger", "--hazard", "send_raises",
                          "--systems", "interlock", "--schedules", "3"]) == 0
    summary = json.loads((tmp_path / "explore_ledger_send_raises.json").read_text())
    assert summary["systems"]["interlock"]["schedules"] == 3
    [retried] = summary["harness_retried"]
    assert retried["seed"] == 1 and retried["system"] == "interlock"
    assert retried["first_failure"] == "ProcessLookupError: [Errno 3] No such process"
    rows = list(read_history(tmp_path / "history" / "explore_ledger_send_raises.jsonl.gz"))
    assert [r.get("harness_retried") is not None for r in rows] == [False, True, False]


def test_a_run_the_harness_failed_twice_writes_no_file_and_says_which_seed(tmp_path, monkeypatch, capsys):
    explorer = _failing_first(monkeypatch, 2)
    assert explorer.main(["--out", str(tmp_path), "--scenario", "ledger", "--hazard", "send_raises",
                          "--systems", "interlock", "--schedules", "3"]) == 1
    said = capsys.readouterr().err
    assert "explore_ledger_send_raises.json: seed 1 (interlock): the harness failed twice" in said
    assert not (tmp_path / "explore_ledger_send_raises.json").exists()


def test_a_run_the_harness_fails_leaves_none_of_its_workers_running(tmp_path, monkeypatch):
    from experiments.explore import runner
    from experiments.explore.hazards import claim_ttl
    from experiments.explore.processes import Forker
    from experiments.explore.worlds import world

    started = []

    def chain(self, index, kill):  # the harness starts the first worker, then loses its place
        started.append(self._start("decide", self.directory / "worker0"))
        raise RuntimeError("the harness lost its place")

    monkeypatch.setattr(runner.Run, "_chain_worker", chain)
    forker = Forker()
    try:
        with world("ledger", tmp_path / "world", "jsonl", claim_ttl("ledger", "crash")) as chosen:
            with pytest.raises(RuntimeError, match="lost its place"):
                runner.run(chosen, forker, schedule_for("ledger", 0, "crash", "jsonl"), "interlock", tmp_path / "runs")
            [worker] = started
            worker.process.join(10)
            assert worker.process.exitcode == -9  # killed, not left to finish its job
    finally:
        forker.stop()


def test_a_worker_that_cannot_load_its_code_fails_the_harness_not_the_system(tmp_path, monkeypatch, capsys):
    import experiments.explore.worlds as worlds

    real = worlds.world

    @contextlib.contextmanager
    def broken(*args, **kwargs):  # the interpreter's packages gone under a running exploration
        with real(*args, **kwargs) as chosen:
            chosen.module = "experiments.explore.no_such_worker"
            yield chosen

    import experiments.explore.__main__ as explorer
    monkeypatch.setattr(worlds, "world", broken)
    assert explorer.main(["--out", str(tmp_path), "--scenario", "ledger", "--hazard", "send_raises",
                          "--systems", "interlock", "--schedules", "2"]) == 1
    said = capsys.readouterr().err
    assert "the harness failed twice" in said and "could not load its code: ModuleNotFoundError" in said
    assert not (tmp_path / "explore_ledger_send_raises.json").exists()


def _stored(out: Path, per_system: dict, first: int = 0, name: str = "explore_ledger_send_raises") -> Path:
    """A stored result counting these schedules per system, with a history beside it."""
    path = out / f"{name}.json"
    path.write_text(json.dumps({"seeds": {"first": first, "per_system": per_system}}))
    (out / "history").mkdir(exist_ok=True)
    (out / "history" / f"{name}.jsonl.gz").write_bytes(b"stored")
    return path


def _offline(monkeypatch, rows):
    """The explorer with no service: each system's run returns `rows(system)`; returns the module and its parsed
    command lines."""
    import experiments.explore.__main__ as explorer
    import experiments.explore.worlds as worlds

    parsed = []
    real_parse = explorer.parse_args

    def parse_args(argv):
        parsed.append(real_parse(argv))
        return parsed[-1]

    monkeypatch.setattr(worlds, "world", lambda *args, **kwargs: contextlib.nullcontext())
    monkeypatch.setattr(explorer, "run", lambda world, forker, schedule, system, root: {**rows(system),
                                                                                       "seed": schedule.seed})
    monkeypatch.setattr(explorer, "parse_args", parse_args)
    return explorer, parsed


def _nothing_runs(monkeypatch):
    import experiments.explore.__main__ as explorer

    def explore(*args):
        raise AssertionError("a run started")

    monkeypatch.setattr(explorer, "explore", explore)
    monkeypatch.setattr(explorer, "replay", explore)
    return explorer


LEDGER = ["--scenario", "ledger", "--hazard", "send_raises"]


@pytest.mark.parametrize("narrower, stored, first", [
    (["--systems", "interlock", "--schedules", "3"], {"interlock": 3, "hand_check": 3, "no_check": 3}, 0),
    (["--schedules", "2"], {"interlock": 3, "hand_check": 3, "no_check": 3}, 0),
    (["--schedules", "3", "--baseline-schedules", "1"], {"interlock": 3, "hand_check": 3, "no_check": 3}, 0),
    (["--schedules", "3", "--seed", "1"], {"interlock": 3, "hand_check": 3, "no_check": 3}, 0),
], ids=["fewer systems", "fewer schedules", "fewer baseline schedules", "another first seed"])
def test_a_run_of_fewer_systems_or_schedules_refuses_to_replace_a_stored_result(tmp_path, monkeypatch, capsys,
                                                                                narrower, stored, first):
    path = _stored(tmp_path, stored, first)
    before = path.read_bytes()
    explorer = _nothing_runs(monkeypatch)
    assert explorer.main(["--out", str(tmp_path), *LEDGER, *narrower]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and str(path) in said and "seeds.per_system" in said and "--replace" in said
    assert path.read_bytes() == before


def test_a_stored_result_that_is_not_json_is_not_replaced_unless_asked(tmp_path, monkeypatch, capsys):
    path = tmp_path / "explore_ledger_send_raises.json"
    path.write_text("{half a file")
    explorer = _nothing_runs(monkeypatch)
    assert explorer.main(["--out", str(tmp_path), *LEDGER, "--schedules", "3"]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and str(path) in said and "JSON" in said
    assert path.read_text() == "{half a file"
    assert explorer._refusal(explorer.parse_args(["--out", str(tmp_path), *LEDGER, "--replace"])) is None


def test_a_run_covering_what_the_stored_result_holds_replaces_it(tmp_path, monkeypatch):
    entries = gate_entries(tmp_path, "PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED")
    out = tmp_path / "out"
    out.mkdir()
    path = _stored(out, {"interlock": 2})
    explorer, _ = _offline(monkeypatch, lambda system: row(writes=[("1", 5.0)], entries=entries, system=system))
    assert explorer.main(["--out", str(out), *LEDGER, "--systems", "interlock", "--schedules", "3"]) == 0
    assert json.loads(path.read_text())["seeds"]["per_system"] == {"interlock": 3}
    assert len(list(read_history(out / "history" / "explore_ledger_send_raises.jsonl.gz"))) == 3


def test_a_narrower_run_replaces_a_stored_result_when_asked(tmp_path, monkeypatch):
    entries = gate_entries(tmp_path, "PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED")
    out = tmp_path / "out"
    out.mkdir()
    path = _stored(out, {"interlock": 5, "no_check": 5})
    explorer, _ = _offline(monkeypatch, lambda system: row(writes=[("1", 5.0)], entries=entries, system=system))
    assert explorer.main(["--out", str(out), *LEDGER, "--systems", "interlock", "--schedules", "2",
                          "--replace"]) == 0
    assert json.loads(path.read_text())["seeds"]["per_system"] == {"interlock": 2}


def test_a_deadline_that_leaves_fewer_schedules_than_the_stored_result_writes_neither_file(tmp_path, monkeypatch,
                                                                                             capsys):
    path = _stored(tmp_path, {"interlock": 3})
    history = tmp_path / "history" / "explore_ledger_send_raises.jsonl.gz"
    before = path.read_bytes()

    def first_then_deadline(system):  # the deadline passes once the first schedule is done
        parsed[0].until = 0
        return row(system=system)

    explorer, parsed = _offline(monkeypatch, first_then_deadline)
    assert explorer.main(["--out", str(tmp_path), *LEDGER, "--systems", "interlock", "--schedules", "3",
                          "--jobs", "1", "--until", "23:59:59"]) == 1
    said = capsys.readouterr().err.splitlines()
    [refused] = [line for line in said if "nothing written" in line]
    assert str(path) in refused and "the deadline left interlock 1" in refused
    assert path.read_bytes() == before and history.read_bytes() == b"stored"


def test_every_committed_exploration_may_be_renewed_by_the_command_it_records():
    import shlex

    import experiments.explore.__main__ as explorer

    committed = sorted((ROOT / "results" / "reliability").glob("explore_*.json"))
    assert committed
    for path in committed:
        argv = shlex.split(json.loads(path.read_text())["command"])[3:]
        assert explorer._refusal(explorer.parse_args([*argv, "--out", str(path.parent)])) is None, path.name


@pytest.mark.parametrize("bad", ["a file", "under a file", "history is a file"])
def test_an_out_that_cannot_be_made_exits_2_before_any_run_and_writes_nothing(tmp_path, monkeypatch, capsys, bad):
    (tmp_path / "file").write_text("kept")
    out = {"a file": tmp_path / "file", "under a file": tmp_path / "file" / "out",
           "history is a file": tmp_path}[bad]
    if bad == "history is a file":
        (tmp_path / "history").write_text("kept")
    before = sorted(tmp_path.iterdir())
    explorer = _nothing_runs(monkeypatch)
    assert explorer.main(["--out", str(out), *LEDGER, "--schedules", "2"]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and str(out) in said
    assert sorted(tmp_path.iterdir()) == before and (tmp_path / "file").read_text() == "kept"


def test_help_shows_how_to_replay_check_and_list_stale_files(capsys):
    import experiments.explore.__main__ as explorer

    with pytest.raises(SystemExit) as done:
        explorer.main(["--help"])
    shown = capsys.readouterr().out
    assert done.value.code == 0
    assert "python -m experiments.explore --scenario S [--hazard H] [--journal J] --replay SEED" in shown
    assert "python -m experiments.explore --check HISTORY" in shown
    assert "python -m experiments.explore --stale" in shown
    assert "--replace" in shown


def test_a_history_nested_too_deep_to_read_names_the_file_and_the_line(tmp_path):
    path = tmp_path / "deep.jsonl.gz"
    with gzip.open(path, "wt") as out:
        out.write(json.dumps(row()) + "\n")
        out.write('{"truth": ' + "[" * 100_000 + "]" * 100_000 + ', "ran": []}\n')
    with pytest.raises(HistoryUnreadable, match=r"deep\.jsonl\.gz: line 2"):
        list(read_history(path))
    done = subprocess.run([sys.executable, "-m", "experiments.explore", "--check", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "deep.jsonl.gz: line 2" in done.stderr and done.stderr.count("\n") == 1


def test_a_history_outside_the_repository_is_named_by_its_whole_path(tmp_path):
    from experiments.explore.__main__ import summarize

    path = tmp_path / "history" / "explore_gcp_resource.jsonl.gz"
    with HistoryWriter(path) as history:
        history.add(row())
        history.complete()
    shown = summarize(path, tmp_path, {})["history"]
    assert shown["path"] == str(path) and shown["check"] == f"python -m experiments.explore --check {path}"


def _in_window(system):
    held = {"how": "sigstop", "point": "before_request", "reached": True, "at": 1.0, "released_at": 2.0}
    return row(writes=[("1", 3.0)], acted_at=1.5, action="lease_revoked", system=system, interrupt=held,
               hazard="sigstop")


@pytest.mark.parametrize("broken, status", [
    ({"no_check", "hand_check"}, 0), ({"interlock in the window"}, 0), ({"interlock"}, 1),
])
def test_a_replay_exits_1_only_when_the_gate_broke_a_rule_outside_the_check_to_send_window(
        tmp_path, monkeypatch, capsys, broken, status):
    entries = gate_entries(tmp_path, "PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED")

    def played(system):
        if system == "interlock" and "interlock in the window" in broken:
            return _in_window(system)
        if system in broken:
            return row(writes=[("1", 5.0), ("2", 6.0)], entries=entries, system=system, events=["send", "result"])
        return row(writes=[("1", 5.0)], entries=entries, system=system, events=["send", "result"])

    explorer, _ = _offline(monkeypatch, played)
    assert explorer.main(["--scenario", "gcp_resource", "--replay", "0"]) == status
    shown = capsys.readouterr().out
    assert shown.count("VIOLATED") == len(broken)
