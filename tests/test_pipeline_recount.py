"""The judge counts every exploration again from its stored history: the reliability page shows the judge's counts,
a stored count that differs is a disagreement that fails the build, and a history row that cannot be read is one
line naming the file and the line."""

from __future__ import annotations

import gzip
import hashlib
import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pipeline.load import BadInput, Node
from pipeline.recount import broken, hazard_effects, in_window
from pipeline.reliability import reliability

ROOT = Path(__file__).parents[1]
COMMITTED = ROOT / "results" / "reliability"
NAME = "explore_ledger_pg_slow_service"  # the gate alone, on the shared journal
T = 1_800_000_000.0  # a clock reading in seconds since the epoch (2027)


def _copy(tmp_path: Path, damage=None) -> Path:
    """The committed exploration and its history in a results folder of their own, the summary damaged."""
    folder = tmp_path / "results" / "reliability"
    (folder / "history").mkdir(parents=True)
    data = json.loads((COMMITTED / f"{NAME}.json").read_text())
    if damage is not None:
        damage(data)
    (folder / f"{NAME}.json").write_text(json.dumps(data))
    shutil.copy(COMMITTED / "history" / f"{NAME}.jsonl.gz", folder / "history")
    return folder


def _row(**changes: Any) -> Node:
    """A baseline's run that held every rule: one agent write, the worker answered WRITTEN, its log settled."""
    row = {"system": "hand_check", "seed": 1, "replay": "r", "describe": "d", "acted": None, "acted_at": None,
           "interrupt": None, "in_flight": None, "journal_cut": None, "effect_id": "e1",
           "schedule": {"action": "none", "action_pause": None, "raises": None},
           "truth": {"writes": [["e1", T]], "live": 1, "settled": True},
           "ran": [{"stage": "recoverer", "index": 0, "outcome": "WRITTEN", "exit_code": 0, "timed_out": False,
                    "refused_journal": False, "traceback": False, "stderr": []}],
           "record": {"events": ["send", "result"]}}
    row.update(changes)
    return Node(row, "", "history line 1")


def _kinds(row: Node) -> list[str]:
    return [b.kind for b in broken(row)]


def test_every_committed_exploration_is_counted_again_and_agrees_with_what_its_file_stores():
    found = reliability(COMMITTED)
    assert found.explorations and all(run.recounted for run in found.explorations)
    assert found.disagreements() == []


def _stored_gate() -> dict:
    """The gate's counts as the committed file stores them."""
    return json.loads((COMMITTED / f"{NAME}.json").read_text())["systems"]["interlock"]


def test_a_stored_count_unlike_its_historys_is_a_disagreement_and_the_page_shows_the_judges_count(tmp_path):
    gate = _stored_gate()
    held, violated = gate["held"], gate["violated"]
    duplicates = gate["violations"]["duplicate_effect"]["count"]

    def hide(data: dict) -> None:  # a schedule that held, stored as one that broke a rule
        stored = data["systems"]["interlock"]
        stored["held"] -= 1
        stored["violated"] += 1
        stored["violations"]["duplicate_effect"]["count"] += 1

    [run] = reliability(_copy(tmp_path, hide)).explorations
    assert {(d.system, d.column, d.stored, d.derived) for d in run.disagreements} == {
        ("interlock", "held", held - 1, held), ("interlock", "violated", violated + 1, violated),
        ("interlock", "violations.duplicate_effect.count", duplicates + 1, duplicates)}
    [judged] = [s for s in run.systems if s.system == "interlock"]
    assert (judged.held, judged.of("duplicate_effect").count) == (held, duplicates)


def test_make_results_builds_the_site_then_fails_naming_each_count_that_differs(tmp_path):
    gate = _stored_gate()
    held, schedules, violated = gate["held"], gate["schedules"], gate["violated"]

    def hide(data: dict) -> None:  # a schedule that held, stored as one that broke a rule
        data["systems"]["interlock"]["held"] -= 1
        data["systems"]["interlock"]["violated"] += 1

    results = _copy(tmp_path, hide).parent
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "pipeline", "build", "--results", str(results), "--out", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stderr
    assert (f"disagreement: {results / 'reliability' / NAME}.json: slow_service (postgresql journal) / interlock: "
            f"held: stored {held - 1}, derived {held} (counted again from "
            f"{results / 'reliability' / 'history' / NAME}.jsonl.gz)") in run.stderr
    assert "2 stored exploration count(s) with the counts of their histories" in run.stdout
    overview = html.unescape((out / "site" / "reliability" / "index.html").read_text())
    assert f"{held} of {schedules} broke no rule" in overview
    page = html.unescape((out / "site" / "reliability" / "ledger" / "index.html").read_text())
    assert f"{held} of {schedules} broke no rule" in page
    warning = page[page.index('<div class="admonition danger">'):]
    warning = warning[:warning.index("</div>")]
    assert "2 stored counts differ from the judge's" in warning
    assert f"interlock</code> <code>held</code>: the file says {held - 1}, the history gives {held}" in warning
    assert f"interlock</code> <code>violated</code>: the file says {violated + 1}, the history gives {violated}" in warning


def test_a_file_counted_again_after_its_run_names_the_code_that_counted_it(tmp_path):
    def counted(data: dict) -> None:
        data["counted"] = {"commit": "ab" * 20, "dirty": True, "at": "2026-12-07T08:46:06+00:00"}

    [run] = reliability(_copy(tmp_path, counted)).explorations
    assert run.counted_at is not None and (run.counted_at.short, run.counted_at.dirty) == ("abababab", True)
    [plain] = reliability(_copy(tmp_path / "plain", lambda data: data.pop("counted", None))).explorations
    assert plain.counted_at is None


def test_a_history_line_that_is_not_json_names_the_file_and_the_line(tmp_path):
    folder = _copy(tmp_path)
    history = folder / "history" / f"{NAME}.jsonl.gz"
    lines = gzip.open(history, "rt").read().splitlines()
    lines[1] = lines[1][:100]
    with gzip.open(history, "wt") as out:
        out.write("\n".join(lines) + "\n")
    _resealed(folder)
    with pytest.raises(BadInput, match=rf"history/{NAME}\.jsonl\.gz line 2: \$: not a JSON row"):
        reliability(folder)


def test_a_history_row_missing_a_field_names_the_line_and_the_field(tmp_path):
    folder = _copy(tmp_path)
    history = folder / "history" / f"{NAME}.jsonl.gz"
    rows = [json.loads(line) for line in gzip.open(history, "rt")]
    del rows[2]["truth"]["live"]
    with gzip.open(history, "wt") as out:
        out.writelines(json.dumps(row) + "\n" for row in rows)
    _resealed(folder)
    with pytest.raises(BadInput, match=rf"{NAME}\.jsonl\.gz line 3: truth\.live: missing"):
        reliability(folder)


def test_a_run_that_held_every_rule_breaks_none():
    assert _kinds(_row()) == []


def test_a_write_after_the_action_counts_against_the_premise_or_the_authority_the_action_moved():
    moved = {"action": "slot_taken", "action_pause": None, "raises": None}
    ended = {"action": "request_cancelled", "action_pause": None, "raises": None}
    assert _kinds(_row(schedule=moved, acted_at=T - 1)) == ["after_premise_moved"]
    assert _kinds(_row(schedule=ended, acted_at=T - 1)) == ["after_lease_ended"]
    assert _kinds(_row(schedule=ended, acted_at=T + 1)) == []


def test_two_writes_are_a_duplicate_and_a_worker_that_says_none_landed_is_wrong():
    assert _kinds(_row(truth={"writes": [["e1", T], ["e1", T + 1]], "live": 2, "settled": True})) == [
        "duplicate_effect"]
    said = [{"stage": "recoverer", "index": 0, "outcome": "REFUSED:stale_premise", "exit_code": 0,
             "timed_out": False, "refused_journal": False, "traceback": False, "stderr": []}]
    assert _kinds(_row(ran=said)) == ["answer_wrong"]


def test_an_answer_outside_the_vocabulary_is_counted_not_guessed_and_a_last_recoverer_owes_one():
    def ran(outcome: str | None, stage: str = "recoverer") -> list[dict]:
        return [{"stage": stage, "index": 0, "outcome": outcome, "exit_code": 1, "timed_out": False,
                 "refused_journal": False, "traceback": False, "stderr": []}]

    assert _kinds(_row(ran=ran("PROBABLY_FINE"))) == ["unknown_outcome"]
    assert _kinds(_row(ran=ran("IN_FLIGHT"))) == ["answer_cannot_say"]
    assert _kinds(_row(ran=ran(None))) == ["answer_cannot_say"]
    assert _kinds(_row(ran=ran(None, stage="chain"))) == []  # the first sender may leave it to the recoverers


def test_a_baseline_log_with_a_send_and_no_result_is_an_unresolved_dispatch():
    assert _kinds(_row(record={"events": ["send"]})) == ["unresolved_dispatch"]


def test_the_gates_journal_is_held_to_its_receipt_and_an_open_send():
    [first] = [json.loads(line) for line in gzip.open(COMMITTED / "history" / "explore_calendar.jsonl.gz", "rt")
               if json.loads(line)["system"] == "interlock"][:1]
    entries = first["record"]["entries"]
    row = dict(first)
    assert _kinds(Node(row, "", "h")) == []
    row["record"] = {"entries": entries[:3]}  # cut after the DISPATCHED: a send left open, the receipt unsure
    assert "unresolved_dispatch" in _kinds(Node(row, "", "h"))
    forged = [dict(entries[0], effect_id="someone-else"), *entries[1:]]
    row["record"] = {"entries": forged}
    assert "receipt_invalid" in _kinds(Node(row, "", "h"))


def test_an_opened_journal_cut_counts_against_the_gate_only_when_it_reached_into_what_its_witness_saw_flushed():
    [first] = [json.loads(line) for line in gzip.open(COMMITTED / "history" / "explore_calendar.jsonl.gz", "rt")
               if json.loads(line)["system"] == "interlock"][:1]
    cut = {"file": "journal.jsonl", "size": 2000, "kept": 1500, "lines": 4, "lines_kept": 3,
           "inside_last_line": False}
    assert "damage_accepted" in _kinds(Node(dict(first, journal_cut=cut), "", "h"))  # no durable end recorded
    past = dict(first, journal_cut={**cut, "durable": 1500})
    assert "damage_accepted" not in _kinds(Node(past, "", "h"))
    assert ("journal_cut", "past what was flushed") in hazard_effects(Node(past, "", "h"))
    assert "damage_accepted" in _kinds(Node(dict(first, journal_cut={**cut, "durable": 1501}), "", "h"))


def test_an_action_is_inside_the_window_when_it_struck_at_a_point_between_check_and_send():
    def at(point: str) -> Node:
        return _row(schedule={"action": "slot_taken", "action_pause": [0, point], "raises": None},
                    acted=f"while worker 0 was paused at {point}", acted_at=T)

    assert in_window(at("before_send")) and in_window(at("recovery_before_resend"))
    assert not in_window(at("after_commit"))
    assert not in_window(_row(schedule={"action": "none", "action_pause": [0, "before_send"], "raises": None}))


def test_an_action_after_the_worker_exited_short_of_its_pause_point_is_outside_the_window():
    never = _row(schedule={"action": "slot_taken", "action_pause": [0, "before_send"], "raises": None},
                 acted="after worker 0 exited (it never reached before_send)", acted_at=T)
    assert not in_window(never)


def test_judge_counts_an_exploration_again_and_exits_1_on_a_count_that_differs(tmp_path):
    kinds = _stored_gate()["violations"]
    said = {"count": kinds["duplicate_effect"]["count"], "in_window": kinds["duplicate_effect"]["in_window"]}

    def hide(data: dict) -> None:
        data["systems"]["interlock"]["violations"]["duplicate_effect"]["in_window"] += 1

    path = _copy(tmp_path, hide) / f"{NAME}.json"
    run = subprocess.run([sys.executable, "-m", "pipeline", "judge", str(path), "--json"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stderr
    [counted] = json.loads(run.stdout)["explorations"]
    assert counted["systems"]["interlock"]["violations"]["duplicate_effect"] == said
    assert (f"violations.duplicate_effect.in_window: stored {said['in_window'] + 1}, derived {said['in_window']}"
            in run.stderr)
    committed = subprocess.run([sys.executable, "-m", "pipeline", "judge", str(COMMITTED / f"{NAME}.json")],
                               cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert committed.returncode == 0 and str(_stored_gate()["held"]) in committed.stdout, committed.stderr


def _history(folder: Path, rows: list) -> Path:
    history = folder / "history" / f"{NAME}.jsonl.gz"
    with gzip.open(history, "wt") as out:
        out.writelines(json.dumps(row) + "\n" for row in rows)
    return _resealed(folder)


def _resealed(folder: Path) -> Path:
    """The history beside the summary, its sha256 recorded in the summary as the explorer records the one it wrote:
    the damage is in what the explorer wrote, not a history swapped in after."""
    history, summary = folder / "history" / f"{NAME}.jsonl.gz", folder / f"{NAME}.json"
    data = json.loads(summary.read_text())
    data["history"]["sha256"] = hashlib.sha256(history.read_bytes()).hexdigest()
    summary.write_text(json.dumps(data))
    return history


def _committed_rows() -> list[dict]:
    return [json.loads(line) for line in gzip.open(COMMITTED / "history" / f"{NAME}.jsonl.gz", "rt")]


def test_a_history_whose_compressed_data_is_damaged_is_one_line_naming_it(tmp_path):
    folder = _copy(tmp_path)
    history = folder / "history" / f"{NAME}.jsonl.gz"
    data = bytearray(history.read_bytes())
    data[len(data) // 2: len(data) // 2 + 64] = bytes(64)
    history.write_bytes(bytes(data))
    _resealed(folder)
    with pytest.raises(BadInput, match=rf"history/{NAME}\.jsonl\.gz( line \d+)?: \$: (cannot read|not a JSON row)"):
        reliability(folder)


def test_a_history_other_than_the_one_the_file_was_counted_from_is_one_line_naming_the_hash(tmp_path):
    folder = _copy(tmp_path)
    rows = _committed_rows()
    _history(folder, rows[:-1])
    summary = json.loads((folder / f"{NAME}.json").read_text())
    summary["history"]["sha256"] = hashlib.sha256(b"another history").hexdigest()
    (folder / f"{NAME}.json").write_text(json.dumps(summary))
    with pytest.raises(BadInput, match=rf"{NAME}\.json: history\.sha256: the history beside the file, {NAME}\.jsonl"
                                       r"\.gz, is not the one it was counted from \(its sha256 differs\)"):
        reliability(folder)
    run = subprocess.run([sys.executable, "-m", "pipeline", "judge", str(folder / f"{NAME}.json")], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "history.sha256" in run.stderr


def test_judge_judges_every_file_it_can_and_names_each_it_cannot(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    alone = tmp_path / "alone" / f"{NAME}.json"
    alone.parent.mkdir()
    alone.write_bytes((COMMITTED / f"{NAME}.json").read_bytes())
    run = subprocess.run([sys.executable, "-m", "pipeline", "judge", str(broken), str(COMMITTED / f"{NAME}.json"),
                          str(alone)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stdout.count("slow_service") >= 2  # both explorations printed, the one with no history too
    assert run.stderr.splitlines()[0] == f"not counted again: {alone} has no history beside it"
    assert run.stderr.splitlines()[1].startswith(f"{broken}: ") and len(run.stderr.splitlines()) == 2


def test_an_empty_history_is_bad_input_not_a_file_of_no_runs(tmp_path):
    folder = _copy(tmp_path)
    _history(folder, [])
    with pytest.raises(BadInput, match="holds no rows"):
        reliability(folder)


@pytest.mark.parametrize("damage, field", [
    (lambda row: row["truth"].update(writes=[["only-an-id"]]), r"truth\.writes\[0\]: expected a 2-item array"),
    (lambda row: row["schedule"].update(action_pause=[0]), r"schedule\.action_pause: expected a 2-item array"),
    (lambda row: row["record"]["entries"][0].update(kind=["PROPOSED"]), r"record\.entries\[0\]\.kind: expected "
                                                                         "string"),
    (lambda row: row.update(journal_cut={"kept": 10, "size": 5, "inside_last_line": False}),
     r"journal_cut\.kept: kept 10 of a 5-byte journal"),
    (lambda row: row.update(describe="\ud800"), r"line 1: \$: holds an unpaired surrogate escape"),
])
def test_a_history_row_of_the_wrong_shape_names_the_line_and_the_field(tmp_path, damage, field):
    folder = _copy(tmp_path)
    [row] = [r for r in _committed_rows() if r["record"].get("entries")][:1]
    damage(row)
    _history(folder, [row])
    with pytest.raises(BadInput, match=field):
        reliability(folder)


def test_a_run_the_harness_played_twice_that_the_file_does_not_name_is_a_disagreement(tmp_path):
    folder = _copy(tmp_path)
    rows = _committed_rows()
    stored = sorted((r["seed"], r["system"]) for r in rows if r.get("harness_retried"))
    row = next(r for r in rows if not r.get("harness_retried"))
    row["harness_retried"] = "ProcessLookupError"
    _history(folder, rows)
    [run] = reliability(folder).explorations
    assert [(d.column, d.stored, d.derived) for d in run.disagreements] == [
        ("harness_retried (seed, system)", stored, sorted([*stored, (row["seed"], row["system"])]))]


def test_judging_a_missing_file_in_the_published_folder_is_one_line():
    run = subprocess.run([sys.executable, "-m", "pipeline", "judge", str(ROOT / "results" / "published" / "no.json")],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr and run.stderr.count("\n") == 1, run.stderr


def test_a_history_time_read_in_milliseconds_is_bad_input_naming_the_line_and_field():
    with pytest.raises(BadInput, match=r"history line 1: acted_at: not a time between 2000-01-01 and 2100-01-01"):
        broken(_row(acted_at=T * 1000))


def test_each_systems_runs_are_tallied_by_the_fence_its_schedules_drew_and_add_up_to_its_counts():
    explorations = reliability(COMMITTED).explorations
    fenced = [run for run in explorations if run.fences]
    assert fenced and {run.scenario for run in fenced} == {"ledger"}
    for run in fenced:
        assert [fence for fence, _ in run.fences] == ["no fence", "the claim epoch", "the decided version",
                                                      "a dedupe on the effect id"]
        for system in run.systems:
            tallies = [t for _, per in run.fences for name, t in per if name == system.system]
            assert sum(t.schedules for t in tallies) == system.schedules
            assert sum(t.held for t in tallies) == system.held
            assert sum(t.violated for t in tallies) == system.violated
            assert sum(t.violated_in_window for t in tallies) == system.violated_in_window


def test_what_the_hazard_did_counts_the_runs_it_left_alone_so_each_system_adds_up_to_its_runs(tmp_path):
    [run] = reliability(_copy(tmp_path)).explorations
    [(aspect, counts)] = run.hazard_effects_in_full()
    assert aspect == "in_flight"
    for system in run.systems:
        mine = {what: n for what, n in counts if what.startswith(f"{system.system}: ")}
        assert sum(mine.values()) == system.schedules
        assert mine[f"{system.system}: no kill or recoverer while its request waited"] == system.schedules - sum(
            n for what, n in dict(run.hazard_effects)[aspect] if what.startswith(f"{system.system}: "))


def _forged(tmp_path: Path, damage) -> Path:
    """The committed exploration with the gate's stored counts damaged and no history beside it to count again."""
    folder = _copy(tmp_path, lambda data: damage(data["systems"]["interlock"]))
    (folder / "history" / f"{NAME}.jsonl.gz").unlink()
    return folder


@pytest.mark.parametrize("damage,problem", [
    (lambda gate: gate.update(schedules=-5), "schedules: expected a count of at least 0, got -5"),
    (lambda gate: gate.update(held=10 ** 12), "schedules: {n} schedules, but held 1000000000000, violated 0 and "
                                             "violated_in_window 0 add up to 1000000000000"),
    (lambda gate: gate["violations"]["duplicate_effect"].update(count=10 ** 6),
     "violations.duplicate_effect.count: 1000000 schedules, more than the {n} run"),
    (lambda gate: gate["violations"]["answer_wrong"].update(in_window=-1),
     "violations.answer_wrong.in_window: expected a count of at least 0, got -1"),
], ids=["negative", "more held than run", "a kind broken more often than run", "negative inside the window"])
def test_stored_counts_no_tally_of_runs_could_give_are_bad_input_naming_the_field(tmp_path, damage, problem):
    folder = _forged(tmp_path, damage)
    with pytest.raises(BadInput) as refused:
        reliability(folder)
    said = problem.format(n=_stored_gate()["schedules"])
    assert str(refused.value) == f"{folder / NAME}.json: systems.interlock.{said}"


def test_a_build_from_forged_counts_with_no_history_to_count_them_again_is_one_line_and_exit_2(tmp_path):
    folder = _forged(tmp_path, lambda gate: gate.update(schedules=-5, held=10 ** 12))
    run = subprocess.run([sys.executable, "-m", "pipeline", "build", "--results", str(folder.parent), "--out",
                          str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == f"error: {folder / NAME}.json: systems.interlock.schedules: expected a count of at least 0, " \
                         "got -5\n"


def test_a_long_worker_error_is_cut_saying_so_and_how_long_it_was():
    line = "START " + "x" * 400 + " END: the exception itself"
    worker = {"stage": "recoverer", "index": 0, "outcome": "WRITTEN", "exit_code": 1, "timed_out": False,
              "refused_journal": False, "traceback": True, "stderr": ["an earlier line", line]}
    [detail] = [b.detail for b in broken(_row(ran=[worker])) if b.kind == "worker_error"]
    assert detail == f"recoverer 0: {line[:300]}… ({len(line)} characters)"


def test_a_receipts_long_list_of_problems_is_cut_saying_so_and_how_long_it_was():
    [first] = [json.loads(line) for line in gzip.open(COMMITTED / "history" / "explore_calendar.jsonl.gz", "rt")
               if json.loads(line)["system"] == "interlock"][:1]
    row = dict(first, record={"entries": [dict(e, hash="0" * 64) for e in first["record"]["entries"]]})
    [detail] = [b.detail for b in broken(Node(row, "", "h")) if b.kind == "receipt_invalid"]
    assert re.fullmatch(r".{300}… \(\d{3,} characters\)", detail, re.S)
