"""The reliability page's reading of the explorer's result files: every hazard file of a scenario in one overview,
the file journal's and the plain crash schedules first, and a run stopped at its deadline says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.reliability import reliability
from pipeline.load import BadInput

ROOT = Path(__file__).parents[1]


def _summary(scenario: str, hazard: str, journal: str, **seeds: object) -> dict:
    kinds = {"duplicate_effect": "the service holds the effect more than once"}
    counts = {"schedules": 4, "held": 4, "violated": 0, "violated_in_window": 0,
              "violations": {"duplicate_effect": {"count": 0, "in_window": 0, "first": []}}}
    return {"scenario": scenario, "generated": "2026-12-01T10:00:00+00:00", "command": "python -m experiments.explore",
            "hazard": {"name": hazard, "what": "", "journal": journal}, "violation_kinds": kinds,
            "systems": {"interlock": counts}, "seeds": {"first": 0, "count": 4, "planned": 4,
                                                        "stopped_at_deadline": False, **seeds}}


def _write(folder: Path, name: str, data: dict) -> None:
    (folder / name).write_text(json.dumps(data))


def test_a_scenarios_overview_shows_the_file_journal_and_the_crash_schedules_first(tmp_path):
    _write(tmp_path, "explore_gcp_resource_pg_server_restart.json", _summary("gcp_resource", "server_restart",
                                                                              "postgresql"))
    _write(tmp_path, "explore_gcp_resource_sigstop.json", _summary("gcp_resource", "sigstop", "jsonl"))
    _write(tmp_path, "explore_gcp_resource.json", _summary("gcp_resource", "crash", "jsonl"))
    _write(tmp_path, "explore_gcp_resource_pg.json", _summary("gcp_resource", "crash", "postgresql"))
    [(scenario, runs)] = reliability(tmp_path).by_scenario()
    assert scenario == "gcp_resource"
    assert [(r.hazard, r.journal) for r in runs] == [("crash", "jsonl"), ("sigstop", "jsonl"),
                                                     ("crash", "postgresql"), ("server_restart", "postgresql")]


def test_a_run_stopped_at_its_deadline_keeps_its_planned_count_and_a_complete_one_has_none(tmp_path):
    _write(tmp_path, "explore_ledger_pg_server_restart.json",
           _summary("ledger", "server_restart", "postgresql", count=111, planned=500, stopped_at_deadline=True))
    _write(tmp_path, "explore_ledger_sigstop.json", _summary("ledger", "sigstop", "jsonl"))
    runs = {r.hazard: r for r in reliability(tmp_path).explorations}
    assert runs["server_restart"].planned == 500 and runs["sigstop"].planned is None


def test_a_deadline_run_without_its_planned_count_names_the_file_and_the_field(tmp_path):
    data = _summary("ledger", "sigstop", "jsonl", stopped_at_deadline=True)
    del data["seeds"]["planned"]
    _write(tmp_path, "explore_ledger_sigstop.json", data)
    with pytest.raises(BadInput, match=r"explore_ledger_sigstop\.json.*planned"):
        reliability(tmp_path)


@pytest.mark.parametrize("field", ["hazard", "hazard.name", "hazard.journal"])
def test_an_exploration_that_does_not_say_its_hazard_and_journal_names_the_file_and_the_field(tmp_path, field):
    data = _summary("ledger", "server_restart", "postgresql")
    *parents, last = field.split(".")
    held = data
    for key in parents:
        held = held[key]
    del held[last]
    _write(tmp_path, "explore_ledger_pg_server_restart.json", data)
    with pytest.raises(BadInput, match=rf"explore_ledger_pg_server_restart\.json.*{last}: missing"):
        reliability(tmp_path)


def test_every_committed_exploration_reads_back():
    found = reliability(ROOT / "results" / "reliability")
    assert found.explorations and all(run.systems for run in found.explorations)


def test_a_run_the_harness_played_twice_is_named_on_the_page_with_its_failure_escaped(tmp_path):
    from pipeline.render import render_site

    data = _summary("ledger", "sigstop", "jsonl")
    data["harness_retried"] = [{"seed": 7, "system": "interlock", "replay": "python -m experiments.explore "
                                "--scenario ledger --hazard sigstop --replay 7",
                                "first_failure": "ProcessLookupError: <script>alert(1)</script>"}]
    _write(tmp_path, "explore_ledger_sigstop.json", data)
    found = reliability(tmp_path)
    [run] = found.explorations
    assert [(r.seed, r.system) for r in run.retried] == [(7, "interlock")]
    docs = tmp_path / "docs"
    render_site([], {}, docs, found)
    page = (docs / "reliability" / "ledger.md").read_text()
    assert "The harness itself failed 1 run of this file" in page and "seed 7 (interlock)" in page
    assert "<script>" not in page


def test_a_retried_run_without_its_first_failure_names_the_file_and_the_field(tmp_path):
    data = _summary("ledger", "sigstop", "jsonl")
    data["harness_retried"] = [{"seed": 7, "system": "interlock", "replay": "r"}]
    _write(tmp_path, "explore_ledger_sigstop.json", data)
    with pytest.raises(BadInput, match=r"explore_ledger_sigstop\.json.*first_failure"):
        reliability(tmp_path)


def test_each_exploration_names_the_commit_and_claims_it_ran_with_and_escapes_whose_claims(tmp_path):
    from pipeline.render import render_site

    data = _summary("ledger", "sigstop", "jsonl")
    data["provenance"] = {"commit": "0c68c4223b6f8e2a0c6bd5c7a1a4f9e0d2b7c111", "commit_dirty": True,
                          "claim": {"claim_ttl_seconds": 1.5, "where": "<b>the ledger worker</b>"}}
    _write(tmp_path, "explore_ledger_sigstop.json", data)
    _write(tmp_path, "explore_ledger.json", _summary("ledger", "crash", "jsonl"))
    found = reliability(tmp_path)
    docs = tmp_path / "docs"
    render_site([], {}, docs, found)
    page = (docs / "reliability" / "ledger.md").read_text()
    assert "Run at commit <code>0c68c422</code> with changes the commit does not hold; claims lasting 1.5 s" in page
    assert "<b>" not in page and "The file records no commit." in page


def test_a_commit_that_is_not_a_string_names_the_file_and_the_field(tmp_path):
    data = _summary("ledger", "sigstop", "jsonl")
    data["provenance"] = {"commit": 12}
    _write(tmp_path, "explore_ledger_sigstop.json", data)
    with pytest.raises(BadInput, match=r"explore_ledger_sigstop\.json.*commit"):
        reliability(tmp_path)


def test_an_exploration_whose_code_moved_during_its_run_says_to_what_and_escapes_it(tmp_path):
    from pipeline.render import render_site

    data = _summary("ledger", "sigstop", "jsonl")
    data["provenance"] = {"commit": "0c68c4223b6f8e2a0c6bd5c7a1a4f9e0d2b7c111", "commit_dirty": False,
                          "code_moved_during_run": {"commit_at_end": "<i>9f1e</i>", "commit_dirty_at_end": True}}
    _write(tmp_path, "explore_ledger_sigstop.json", data)
    docs = tmp_path / "docs"
    render_site([], {}, docs, reliability(tmp_path))
    page = (docs / "reliability" / "ledger.md").read_text()
    assert ("Run at commit <code>0c68c422</code>; the code moved during the run, to <code>&#60;i&#62;9f1e&#60;/i&#62; "
            "(with uncommitted changes)</code>, which the workers started after it ran.") in page


def test_a_run_records_the_commit_it_started_on_and_where_the_code_had_moved_when_it_ended():
    from experiments.harness import Code, code_now, provenance

    now = code_now()
    assert now.commit is not None and len(now.commit) == 40
    assert "code_moved_during_run" not in provenance("run", {}, "none", {}, now, 0.5)
    made = provenance("run", {}, "none", {}, Code("0" * 40, False, "before"), 0.5)
    assert made["commit"] == "0" * 40 and made["commit_dirty"] is False
    assert made["code_moved_during_run"] == {"commit_at_end": now.commit, "commit_dirty_at_end": now.dirty}


def test_a_run_records_how_busy_the_machine_was_at_its_start_and_its_end():
    from experiments.harness import code_now, provenance

    made = provenance("run", {}, "none", {}, code_now(), 7.25)
    assert made["load_average"]["at_start"] == 7.25
    at_end = made["load_average"]["at_end"]
    assert isinstance(at_end, float) and at_end >= 0


def test_an_exploration_page_says_how_busy_the_machine_was_at_the_runs_start_and_end(tmp_path):
    from pipeline.render import render_site

    data = _summary("ledger", "sigstop", "jsonl")
    data["provenance"] = {"commit": "0c68c4223b6f8e2a0c6bd5c7a1a4f9e0d2b7c111", "commit_dirty": False,
                          "host": {"cpus": 2}, "load_average": {"at_start": 61.5, "at_end": 12.25}}
    _write(tmp_path, "explore_ledger_sigstop.json", data)
    docs = tmp_path / "docs"
    render_site([], {}, docs, reliability(tmp_path))
    page = (docs / "reliability" / "ledger.md").read_text()
    assert ("Run at commit <code>0c68c422</code>; the machine's load average 61.5 at the start and 12.25 at the end, "
            "on 2 cores.") in page


def test_a_load_average_that_is_not_a_number_names_the_file_and_the_field(tmp_path):
    data = _summary("ledger", "sigstop", "jsonl")
    data["provenance"] = {"commit": "0c68c4223b6f8e2a0c6bd5c7a1a4f9e0d2b7c111",
                          "load_average": {"at_start": "busy", "at_end": 1.0}}
    _write(tmp_path, "explore_ledger_sigstop.json", data)
    with pytest.raises(BadInput, match=r"explore_ledger_sigstop\.json.*at_start"):
        reliability(tmp_path)
