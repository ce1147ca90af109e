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

from experiments.gcp_resource.scenario import GcpResource
from experiments.runner import main as run_main
from experiments.runner import parse_args, plan

ROOT = Path(__file__).resolve().parents[1]
MODULE = "experiments.gcp_resource"
FAULT = "crash_after_commit_redeploy"
SYSTEMS = "no_check,hand_check,interlock"


def _runner(args: list[str], env: dict[str, str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", MODULE, *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def _offline_env(tmp_path: Path, marker: str) -> dict[str, str]:
    """The runner's environment, tagged so every process it starts can be found in /proc afterwards."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_") and k != "STORAGE_EMULATOR_HOST"}
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    return {**env, "TMPDIR": str(tmp), "INTERLOCK_TEST_RUN": marker}


def _wait_for(condition, timeout: float = 30.0) -> None:
    """Until the condition holds (the runner is into its second cell), with a deadline."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the runner never reached its second cell"
        time.sleep(0.005)


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


DERIVED = {"outcome", "want", "want_agent_writes", "want_live_writer", "invariant_held", "answer_matches_service",
           "can_prove_what_happened", "record_says", "seconds_to_settle", "ground_truth", "first_worker_outcome",
           "settle_from", "answer", "receipt"}


@pytest.fixture(scope="module")
def one_fault(tmp_path_factory) -> tuple[dict, subprocess.CompletedProcess]:
    """One fault x the three systems, run by the real runner; its result file and its process."""
    tmp_path = tmp_path_factory.mktemp("gcp")
    out = tmp_path / "gcp_resource.json"
    env = _offline_env(tmp_path, uuid.uuid4().hex)
    done = subprocess.run([sys.executable, "-m", MODULE, "--faults", FAULT, "--systems", SYSTEMS, "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert list((tmp_path / "tmp").iterdir()) == []
    return json.loads(out.read_text()), done


def _cell(result: dict, system: str) -> dict:
    return next(c for c in result["cells"] if c["system"] == system)


def test_a_cell_holds_observations_and_no_derived_column(one_fault):
    result, _ = one_fault
    for cell in result["cells"]:
        assert DERIVED.isdisjoint(cell) and DERIVED.isdisjoint(cell["ids"])
        assert set(cell["timeline"]) == {"crashed_at", "first_exit_at", "outage_done_at", "restart_exit_at"}


def test_the_version_listing_is_kept_raw_with_every_writer(one_fault):
    result, _ = one_fault
    for cell in result["cells"]:
        versions = cell["artifacts"]["gcs_versions_raw"]
        writers = [v["metadata"]["writer"] for v in versions]
        assert writers[0] == "human-deploy" and "human-redeploy" in writers and "agent" in writers
        assert [v["generation"] for v in versions] == sorted((v["generation"] for v in versions), key=int)
        assert versions[0]["generation"] == cell["ids"]["seed_generation"]
        assert cell["artifacts"]["gcs_live_raw"]["generation"] == versions[-1]["generation"]
    assert [v["metadata"]["writer"] for v in _cell(result, "no_check")["artifacts"]["gcs_versions_raw"]] == \
        ["human-deploy", "agent", "human-redeploy", "agent"]


def test_the_first_worker_is_sigkilled_and_the_timeline_follows_the_crash(one_fault):
    result, _ = one_fault
    for cell in result["cells"]:
        artifacts, timeline = cell["artifacts"], cell["timeline"]
        assert cell["worker_exits"] == [-9, 0]
        assert artifacts["worker_restart.out"] == artifacts["outcome_restart.json"]["outcome"] + "\n"
        assert "outcome_decide.json" not in artifacts
        assert timeline["crashed_at"] == float(artifacts["crashed_at"])
        assert timeline["crashed_at"] <= timeline["first_exit_at"] <= timeline["outage_done_at"]
        settled = artifacts["outcome_restart.json"]["settled_at"]
        assert timeline["outage_done_at"] < settled <= timeline["restart_exit_at"]


def test_each_system_keeps_the_record_the_published_baselines_kept(one_fault):
    result, _ = one_fault
    hand, blind, gate = (_cell(result, s) for s in ("hand_check", "no_check", "interlock"))
    assert [line["event"] for line in hand["artifacts"]["log.jsonl"]] == ["send", "send", "result"]
    assert hand["artifacts"]["log.jsonl"][0]["check"] == (
        f"ifGenerationMatch={hand['ids']['decided_on_generation']}; on 412 list versions for "
        f"job_id={hand['artifacts']['job.json']['job_id']}")
    assert hand["artifacts"]["outcome_restart.json"]["outcome"] == "ALREADY_APPLIED"
    assert [line["check"] for line in blind["artifacts"]["log.jsonl"] if line["event"] == "send"] == [None, None]
    assert blind["artifacts"]["outcome_restart.json"]["outcome"] == "WRITTEN"
    assert hand["artifacts"]["job.json"]["metadata"]["job_id"] == hand["artifacts"]["job.json"]["job_id"]
    assert [e["kind"] for e in gate["artifacts"]["journal.jsonl"]] == ["PROPOSED", "AUTHORIZED", "DISPATCHED",
                                                                       "COMMITTED"]
    assert gate["artifacts"]["outcome_restart.json"]["ids"]["journal"][-1] == "COMMITTED via recovery-query"
    assert gate["artifacts"]["log.jsonl"] == [] and hand["artifacts"]["journal.jsonl"] == []


def test_result_is_labelled_as_stand_in_and_scripted_with_its_incident_file_named(one_fault):
    result, done = one_fault
    provenance = result["provenance"]
    assert result["schema_version"] == 1 and result["scenario"] == "gcp_resource"
    assert provenance["services"]["object_store"]["real"] is False
    incident = provenance["services"]["incident"]
    assert incident["real"] is False and "incident.json" in incident["name"]
    assert provenance["decider"] == "offline-scripted"
    assert {c["decision"]["model"] for c in result["cells"]} == {"offline-scripted"}
    assert "[3/3]" in done.stderr


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
    (["--live", "--faults", "cut_after_commit_no_change"], "local stand-in"),
])
def test_bad_arguments_are_one_line_and_exit_2(argv, names, capsys, tmp_path):
    out = tmp_path / "never.json"

    assert run_main(GcpResource, [*argv, "--out", str(out)]) == 2

    err = capsys.readouterr().err
    assert err.count("\n") == 1 and names in err and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("argv", [["--faults", FAULT], ["--systems", "interlock"], ["--systems", "interlock_ttl"]])
def test_a_run_of_part_of_the_faults_or_systems_needs_its_own_out(argv, capsys):
    committed = ROOT / "results" / "scenarios" / "gcp_resource.json"
    before = committed.stat().st_mtime_ns if committed.exists() else None

    assert run_main(GcpResource, argv) == 2

    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out" in err
    assert (committed.stat().st_mtime_ns if committed.exists() else None) == before


def test_a_complete_run_has_the_ttl_control_on_one_before_send_and_one_after_commit_row_only(tmp_path):
    cells = plan(GcpResource, parse_args(GcpResource, ["--out", str(tmp_path / "all.json")]))
    control = [fault.name for fault, system in cells if system == "interlock_ttl"]

    assert control == ["crash_before_send_redeploy", "crash_after_commit_redeploy"]
    assert len(cells) == len(GcpResource.systems) * len(GcpResource.faults) + 2


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


def _as_from_a_terminal() -> None:
    """Give the runner Ctrl-C's default action, as a terminal would: a test suite started in the background by a
    non-interactive shell ignores SIGINT, and its children would inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_mid_run_leaves_no_process_or_file(tmp_path):
    """Workers run in their own sessions, so the runner outlives the signal long enough to stop them and clean up."""
    marker = uuid.uuid4().hex
    out = tmp_path / "never.json"
    runner = _runner(["--faults", "crash_before_send_redeploy", "--systems", SYSTEMS, "--out", str(out)],
                     _offline_env(tmp_path, marker),
                     start_new_session=True, preexec_fn=_as_from_a_terminal)
    try:
        line = runner.stderr.readline()  # the stand-ins log a killed worker's reset to their own logs, not here
        assert line.startswith("[1/3]"), f"the runner's first line is not its first cell: {line!r}"
        _wait_for(lambda: any((tmp_path / "tmp").glob("interlock-*/cells/*/hand_check/decision.json")))
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
