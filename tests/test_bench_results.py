"""Benchmark results carry the date, the commit and the machine, and replace the previous file whole or not at all."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time

import pytest

from bench._results import write_result


def test_a_result_names_its_date_commit_cores_python_and_the_disks_flush_and_create_times(tmp_path):
    path = tmp_path / "gate.json"
    write_result(path, {"verify_entries_per_second": 1})
    stored = json.loads(path.read_text())
    made = stored["provenance"]
    assert stored["verify_entries_per_second"] == 1
    assert made["machine"]["cores"] == os.cpu_count() and made["machine"]["python"] == platform.python_version()
    assert len(made["commit"]) == 40 and made["date"].endswith("+00:00")
    assert made["load_average"]["at_start"] is None and made["load_average"]["at_end"] >= 0
    assert made["machine"]["fsync_ms"] > 0 and made["machine"]["file_create_us"] > 0


def test_a_result_keeps_the_machine_as_the_run_found_it(tmp_path):
    path = tmp_path / "gate.json"
    found = {"cores": 2, "fsync_ms": 0.2, "file_create_us": 240.0}
    write_result(path, {"figure": 1}, machine_at_start=found)
    assert json.loads(path.read_text())["provenance"]["machine"] == found


def test_a_result_that_cannot_be_written_leaves_the_previous_one_whole(tmp_path):
    path = tmp_path / "gate.json"
    write_result(path, {"figure": 1})
    before = path.read_bytes()
    with pytest.raises(TypeError):
        write_result(path, {"figure": object()})
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["gate.json"]


def test_a_throughput_run_times_every_effect_and_fails_when_one_does_not_go_through(tmp_path):
    from bench._throughput import run_workers
    from bench._submitters import submitter

    journal = str(tmp_path / "journal.jsonl")
    first = run_workers(submitter, (journal,), 2, 8, "run")
    assert len(first.latencies) == 8 and first.effects_per_second > 0 and first.cpu_seconds_per_effect > 0
    assert first.voluntary_switches_per_effect > 0  # each effect waits at least for its flush
    assert 0 < first.window_effects <= 8 and 0 < first.window_seconds <= first.seconds and 0 <= first.tail_share < 1
    with pytest.raises(RuntimeError, match="a benchmark worker failed"):
        run_workers(submitter, (journal,), 2, 8, "run")  # the same keys again: each is a duplicate, not a commit


def test_a_throughput_rate_counts_only_the_effects_finished_while_every_worker_ran():
    from bench._throughput import while_all_ran

    early = (0.0, 4.0, [], 0.0, 0, 0, [1.0, 2.0, 3.0, 4.0])  # started first, ended first
    late = (0.5, 10.0, [], 0.0, 0, 0, [0.6, 1.5, 2.5, 10.0])  # its last effect came in the cool-down
    assert while_all_ran([early, late], "run") == (7, 3.5)
    alone = (0.0, 4.0, [], 0.0, 0, 0, [1.0, 2.0, 3.0, 4.0])
    assert while_all_ran([alone], "run") == (4, 4.0)  # one worker: its whole run
    with pytest.raises(RuntimeError, match="no moment when every worker ran"):
        while_all_ran([(0.0, 1.0, [], 0.0, 0, 0, [1.0]), (2.0, 3.0, [], 0.0, 0, 0, [3.0])], "run")


def test_the_ceiling_run_gives_each_worker_a_journal_of_its_own(tmp_path):
    from bench._throughput import WARMUP, run_workers
    from bench._submitters import own_journal_submitter
    from interlock import Journal

    run = run_workers(own_journal_submitter, (str(tmp_path / "own"),), 2, 8, "run")
    assert len(run.latencies) == 8
    journals = sorted((tmp_path / "own").glob("journal-*.jsonl"))
    assert [p.name for p in journals] == ["journal-0.jsonl", "journal-1.jsonl"]
    for worker, path in enumerate(journals):
        with Journal(path) as journal:
            keys = [entry["key"] for entry in journal.entries() if entry["kind"] == "PROPOSED"]
        assert len(keys) == 4 + WARMUP and all(key.startswith(f"run-{worker}-") for key in keys)


def test_a_figure_stands_beside_its_target_and_whether_it_was_met():
    from bench._results import against

    assert against(0.35, "<=", 0.2) == {"measured": 0.35, "target": "<= 0.2", "met": False}
    assert against(3.5, ">=", 1.5)["met"] and against(0.025, "<", 0.5)["met"]


def test_a_target_on_a_figure_measured_over_rounds_carries_each_rounds_figure():
    from bench._results import against

    assert against(1.25, ">=", 1.5, rounds=[1.13, 1.58, 1.25]) == {
        "measured": 1.25, "target": ">= 1.5", "met": False, "rounds": [1.13, 1.58, 1.25]}


def test_a_target_the_run_also_measured_with_nothing_shared_names_that_figure():
    from bench._results import against

    assert against(1.17, ">=", 1.5, nothing_shared="jsonl_scaling_16_workers_own_journals") == {
        "measured": 1.17, "target": ">= 1.5", "met": False, "nothing_shared": "jsonl_scaling_16_workers_own_journals"}


def test_a_result_counts_the_tree_modified_by_code_not_by_results_tests_or_prose(tmp_path, monkeypatch):
    import bench._results as results

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "gate.json").write_text("{}")
    (tmp_path / "code.py").write_text("x = 1\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_code.py").write_text("def test_x(): pass\n")
    (tmp_path / "README.md").write_text("# code\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-qm", "first")
    monkeypatch.setattr(results, "ROOT", tmp_path)
    (tmp_path / "results" / "gate.json").write_text('{"figure": 2}')  # an earlier benchmark of the same run
    (tmp_path / "tests" / "test_code.py").write_text("def test_x(): assert True\n")
    (tmp_path / "README.md").write_text("# the code\n")
    assert results.provenance()["tree_modified"] is False
    (tmp_path / "code.py").write_text("x = 2\n")
    assert results.provenance()["tree_modified"] is True


def test_the_phase_run_finds_other_writers_lines_skimmed_only_where_the_journal_is_shared(tmp_path):
    from bench.append_phases import phases

    shared = phases(tmp_path / "shared", 2, False, 40)
    own = phases(tmp_path / "own", 2, True, 40)
    assert shared["other_writers_lines_skimmed_per_effect"] > 0
    assert own["other_writers_lines_skimmed_per_effect"] == 0
    assert shared["lines_folded_per_effect"] < 1  # nothing asked for another writer's effect, no index came due
    for figures in (shared, own):
        assert figures["effect_cpu_ms"] > figures["make_durable_cpu_ms"] > 0
        assert figures["lock_cpu_ms"] > 0 and figures["claim_cpu_ms"] > 0
        assert figures["rest_cpu_ms"] > 0


def test_the_servers_cpu_counts_the_work_of_a_session_that_already_ended():
    import psycopg

    from bench.pg import server_cpu_seconds
    from experiments.services.postgres import TempCluster

    with TempCluster() as cluster:
        before = server_cpu_seconds(cluster.data)
        with psycopg.connect(cluster.url) as conn:  # a session that computes, then ends before the second look
            conn.execute("SELECT count(*) FROM generate_series(1, 3000000)").fetchone()
        time.sleep(0.5)  # the postmaster waits for the ended session, which moves its time to the children's totals
        assert server_cpu_seconds(cluster.data) - before > 0.05
