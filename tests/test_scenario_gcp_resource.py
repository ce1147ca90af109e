"""The gcp_resource runner end to end, offline: real worker processes, real SIGKILL, fake-gcs-server behind the
recording proxy, the real storage client; and its command line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from experiments.scenario_gcp_resource import main

ROOT = Path(__file__).resolve().parents[1]
MODULE = "experiments.scenario_gcp_resource"
FAULT = "crash_after_commit_redeploy"


def _runner(args: list[str], env: dict[str, str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", MODULE, *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def _offline_env(tmp_path: Path, marker: str) -> dict[str, str]:
    """The runner's environment, tagged so every process it starts can be found in /proc afterwards."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_") and k != "STORAGE_EMULATOR_HOST"}
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    return {**env, "TMPDIR": str(tmp), "INTERLOCK_TEST_RUN": marker}


def _tagged_processes(marker: str) -> list[str]:
    """Command lines of live processes whose environment carries the marker (stand-ins and workers inherit it)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if f"INTERLOCK_TEST_RUN={marker}".encode() in (proc / "environ").read_bytes().split(b"\0"):
                found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    return found


@pytest.fixture(scope="module")
def one_fault(tmp_path_factory) -> tuple[dict, subprocess.CompletedProcess]:
    """One fault x the three systems, run by the real runner; its result file and its process."""
    tmp_path = tmp_path_factory.mktemp("gcp")
    out = tmp_path / "gcp_resource.json"
    env = _offline_env(tmp_path, uuid.uuid4().hex)
    done = subprocess.run([sys.executable, "-m", MODULE, "--faults", FAULT, "--out", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert list((tmp_path / "tmp").iterdir()) == []
    return json.loads(out.read_text()), done


def _cell(result: dict, system: str) -> dict:
    return next(c for c in result["cells"] if c["system"] == system)


def test_after_commit_redeploy_rows_score_as_published(one_fault):
    result, _ = one_fault
    rows = {c["system"]: (c["outcome"], len(c["ids"]["agent_write_generations"]), c["invariant_held"],
                          c["answer_matches_service"], c["can_prove_what_happened"]) for c in result["cells"]}
    assert rows == {
        "no_check": ("WRITTEN", 2, False, True, False),
        "hand_check": ("ALREADY_APPLIED", 1, True, True, True),
        "interlock": ("COMMITTED_ON_QUERY", 1, True, True, True),
    }


def test_ground_truth_is_the_version_listing_with_every_writer(one_fault):
    result, _ = one_fault
    for cell in result["cells"]:
        writers = [w for _, w in cell["ids"]["all_generations"]]
        agent = cell["ids"]["agent_write_generations"]
        assert cell["ground_truth_source"] == "versions"
        assert writers[0] == "human-deploy" and "human-redeploy" in writers
        assert [v["generation"] for v in cell["artifacts"]["gcs_versions_raw"]] == \
            [g for g, _ in cell["ids"]["all_generations"]]
        assert cell["artifacts"]["gcs_live_raw"]["generation"] == cell["ids"]["live_generation"]
        assert cell["ground_truth"].startswith(f"{len(agent)} agent write(s) {agent!r}")


def test_first_worker_is_sigkilled_and_a_new_process_settles(one_fault):
    result, _ = one_fault
    for cell in result["cells"]:
        artifacts = cell["artifacts"]
        assert cell["worker_exits"] == [-9, 0]
        assert artifacts["worker_restart.out"] == cell["outcome"] + "\n"
        assert "outcome_decide.json" not in artifacts
        settled = artifacts["outcome_restart.json"]["settled_at"] - float(artifacts["crashed_at"])
        assert cell["seconds_to_settle"] == round(settled, 1)


def test_each_system_keeps_its_own_record(one_fault):
    result, _ = one_fault
    hand = _cell(result, "hand_check")
    assert [line["event"] for line in hand["artifacts"]["log.jsonl"]] == ["send", "send", "result"]
    assert hand["record_says"]["checks"][0].startswith(f"ifGenerationMatch={hand['ids']['decided_on_generation']};")
    assert hand["artifacts"]["job.json"]["metadata"]["job_id"] == hand["artifacts"]["job.json"]["job_id"]
    assert _cell(result, "no_check")["record_says"]["agent_writes"] is None
    gate = _cell(result, "interlock")
    assert gate["ids"]["journal"][-1] == "COMMITTED via recovery-query"
    assert gate["ids"]["receipt"]["valid"] is True
    assert gate["record_says"]["agent_writes"] == gate["ids"]["agent_write_generations"]
    assert gate["artifacts"]["log.jsonl"] == [] and hand["artifacts"]["journal.jsonl"] == []


def test_result_is_labelled_as_stand_in_and_scripted(one_fault):
    result, done = one_fault
    provenance = result["provenance"]
    assert result["schema_version"] == 1 and result["scenario"] == "gcp_resource"
    assert provenance["services"]["object_store"]["real"] is False
    assert provenance["decider"] == "offline-scripted"
    assert {c["decision"]["model"] for c in result["cells"]} == {"offline-scripted"}
    assert "[3/3]" in done.stderr


def test_pipeline_rejudges_the_same_columns(one_fault, tmp_path):
    from pipeline.derive import derive

    result, _ = one_fault
    path = tmp_path / "gcp_resource.json"
    path.write_text(json.dumps(result))
    for cell, judged in zip(result["cells"], derive(path).cells):
        assert (judged.outcome, judged.invariant_held, judged.answer_matches, judged.can_prove,
                judged.seconds_to_settle) == (cell["outcome"], cell["invariant_held"],
                                              cell["answer_matches_service"], cell["can_prove_what_happened"],
                                              cell["seconds_to_settle"])


def test_a_worker_loads_the_storage_client_only():
    code = ("import sys\n"
            "from experiments.gcp_resource import worker, gated, baselines\n"
            "worker.storage_client()\n"
            "print(sorted(m for m in ('anthropic', 'googleapiclient', 'google.cloud.storage') if m in sys.modules))")
    env = {**os.environ, "STORAGE_EMULATOR_HOST": "http://127.0.0.1:9"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['google.cloud.storage']"


@pytest.mark.parametrize("argv, names", [
    (["--systems", "no_check,bogus"], "bogus"),
    (["--faults", "no_such_fault"], "no_such_fault"),
    (["--systems", ""], "--systems"),
    (["--frobnicate"], "--frobnicate"),
    (["--live", "--faults", "cut_after_commit_no_change"], "recording proxy"),
])
def test_bad_arguments_are_one_line_and_exit_2(argv, names, capsys, tmp_path):
    out = tmp_path / "never.json"

    assert main([*argv, "--out", str(out)]) == 2

    err = capsys.readouterr().err
    assert err.count("\n") == 1 and names in err and "Traceback" not in err
    assert not out.exists()


def test_live_without_credentials_exits_2_before_writing(tmp_path):
    out = tmp_path / "never.json"
    env = {k: v for k, v in os.environ.items()
           if k not in ("GOOGLE_APPLICATION_CREDENTIALS", "ANTHROPIC_API_KEY", "INTERLOCK_CALENDAR_KEY_FILE")}
    env.update(HOME=str(tmp_path), CLOUDSDK_CONFIG=str(tmp_path / "gcloud"))

    done = subprocess.run([sys.executable, "-m", MODULE, "--live", "--out", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)

    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--live needs" in done.stderr
    assert not out.exists()


def test_ctrl_c_mid_run_leaves_no_process_or_file(tmp_path):
    """Workers run in their own sessions, so the runner outlives the signal long enough to stop them and clean up."""
    marker = uuid.uuid4().hex
    out = tmp_path / "never.json"
    runner = _runner(["--faults", "crash_before_send_redeploy", "--out", str(out)], _offline_env(tmp_path, marker),
                     start_new_session=True)
    try:
        line = runner.stderr.readline()  # the stand-ins log a killed worker's reset to their own logs, not here
        assert line.startswith("[1/3]"), f"the runner's first line is not its first cell: {line!r}"
        time.sleep(0.3)  # into the second cell, with its workers running
        os.killpg(runner.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the runner's group (fake-gcs-server has its own)
        _, err = runner.communicate(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert runner.returncode == 130, err
    assert "interrupted" in err
    assert _tagged_processes(marker) == []
    assert list((tmp_path / "tmp").iterdir()) == []
    assert not out.exists()
