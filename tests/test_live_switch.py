"""The one switch between stand-ins and real services, and what it may and may not write."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from experiments import clients, live
from experiments.deciders import ScriptedDecider, decider_from_env

ROOT = Path(__file__).resolve().parents[1]
SECRET = "sk-ant-api03-never-in-an-artifact"
CREDENTIAL_VARIABLES = ("ANTHROPIC_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG",
                        "INTERLOCK_CALENDAR_KEY_FILE", "INTERLOCK_LIVE")


def _bare_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CREDENTIAL_VARIABLES}
    return {**env, "HOME": str(home), "PYTHONPATH": str(ROOT), **extra}


def _alive(pid: int) -> bool:
    """Whether `pid` has not exited yet (a zombie counts as exited: its server is gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def _run_live(tmp_path: Path, args: list[str], **extra: str) -> subprocess.CompletedProcess:
    work = tmp_path / "cwd"
    work.mkdir()
    return subprocess.run([sys.executable, "-m", "experiments.live", *args], cwd=work, capture_output=True,
                          text=True, timeout=60, env=_bare_env(tmp_path / "home", **extra))


@pytest.mark.parametrize("args, extra", [(["--live"], {}), ([], {"INTERLOCK_LIVE": "1"})])
def test_missing_credentials_exit_2_with_one_line_and_write_nothing(tmp_path, args, extra):
    done = _run_live(tmp_path, args, **extra)

    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("interlock: --live needs ")
    assert "ANTHROPIC_API_KEY" in done.stderr and "INTERLOCK_CALENDAR_KEY_FILE" in done.stderr
    assert list((tmp_path / "cwd").iterdir()) == []


def test_the_line_names_only_what_is_missing(tmp_path):
    key_file = tmp_path / "calendar-key.json"
    key_file.write_text("{}")
    adc = tmp_path / "adc.json"
    adc.write_text("{}")

    done = _run_live(tmp_path, ["--live"], INTERLOCK_CALENDAR_KEY_FILE=str(key_file),
                     GOOGLE_APPLICATION_CREDENTIALS=str(adc))

    assert done.returncode == 2
    assert done.stderr == "interlock: --live needs ANTHROPIC_API_KEY (Anthropic API key)\n"


def test_offline_needs_no_credential(tmp_path):
    done = _run_live(tmp_path, [])

    assert done.returncode == 0, done.stderr
    assert {role["real"] for role in json.loads(done.stdout).values()} == {False}


def test_live_services_refuse_before_creating_anything(tmp_path, monkeypatch):
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))

    with pytest.raises(SystemExit) as exited, live.services(True, tmp_path / "run"):
        pass

    assert exited.value.code == 2
    assert not (tmp_path / "run").exists()


def test_offline_services_are_labelled_stand_ins_and_reached_through_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("INTERLOCK_MODEL", "claude-haiku-4-5")
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)

    with live.services(False, tmp_path / "run") as chosen:
        clients.storage_client().create_bucket("offline-switch-check")
        event = clients.calendar_service().events().insert(calendarId="primary", body={
            "id": "bkflip0001", "start": {"dateTime": "2026-10-13T10:00:00Z"},
            "end": {"dateTime": "2026-10-13T10:30:00Z"}}).execute()
        inside = {name: os.environ.get(name) for name in live.ROLE_VARIABLES}
        decider = decider_from_env()

    assert {role: facts["real"] for role, facts in chosen.provenance.items()} == {
        "object_store": False, "calendar": False, "model": False}
    assert "fake-gcs-server" in chosen.provenance["object_store"]["name"]
    assert "stand-in" in chosen.provenance["calendar"]["name"]
    assert chosen.provenance["model"]["version"] == "offline-scripted"
    assert isinstance(decider, ScriptedDecider) and inside["INTERLOCK_MODEL"] is None
    assert inside[clients.STORAGE_EMULATOR_HOST] == chosen.gcs_proxy.endpoint
    assert inside[clients.CALENDAR_URL] == chosen.calendar.endpoint
    assert [(e["method"], e["path"], e["status"]) for e in chosen.gcs_proxy.write_log()] == [
        ("POST", "/storage/v1/b", 200)]
    assert [e["event_id"] for e in chosen.calendar.write_log()] == [event["id"]]
    assert os.environ.get(clients.STORAGE_EMULATOR_HOST) is None
    assert os.environ["INTERLOCK_MODEL"] == "claude-haiku-4-5"
    assert SECRET not in json.dumps([chosen.provenance, chosen.env])


def test_live_provenance_names_credentials_without_their_values(tmp_path, monkeypatch):
    key_file = tmp_path / "calendar-key.json"
    key_file.write_text(json.dumps({"private_key": "-----BEGIN PRIVATE KEY-----secret"}))
    adc = tmp_path / "adc.json"
    adc.write_text(json.dumps({"refresh_token": "1//secret-refresh"}))
    monkeypatch.setenv("INTERLOCK_CALENDAR_KEY_FILE", str(key_file))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv(clients.STORAGE_EMULATOR_HOST, "http://127.0.0.1:9")

    with live.services(True, tmp_path / "run") as chosen:
        inside = {name: os.environ.get(name) for name in live.ROLE_VARIABLES}

    recorded = json.dumps([chosen.provenance, chosen.env])
    assert {facts["real"] for facts in chosen.provenance.values()} == {True}
    assert chosen.provenance["model"]["credentials"] == "ANTHROPIC_API_KEY"
    assert chosen.provenance["object_store"]["credentials"] == "application default credentials"
    assert SECRET not in recorded and "secret" not in recorded and str(key_file) not in recorded
    assert inside[clients.STORAGE_EMULATOR_HOST] is None and inside["INTERLOCK_MODEL"] == "claude-haiku-4-5"


@pytest.mark.parametrize("roles, named, not_named", [
    (("object_store", "model"), ["application default credentials", "ANTHROPIC_API_KEY"], "INTERLOCK_CALENDAR_KEY_FILE"),
    (("calendar", "model"), ["INTERLOCK_CALENDAR_KEY_FILE", "ANTHROPIC_API_KEY"], "application default credentials"),
])
def test_live_asks_only_for_the_credentials_of_the_roles_a_scenario_uses(roles, named, not_named, tmp_path,
                                                                         monkeypatch, capsys):
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))

    with pytest.raises(SystemExit) as exited:
        live.check_credentials(True, roles)

    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count("\n") == 1
    assert all(phrase in err for phrase in named) and not_named not in err


def test_a_scenario_without_the_calendar_role_runs_live_without_its_key(tmp_path, monkeypatch):
    adc = tmp_path / "adc.json"
    adc.write_text("{}")
    monkeypatch.delenv("INTERLOCK_CALENDAR_KEY_FILE", raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)

    with live.services(True, tmp_path / "run", roles=("object_store", "model")) as chosen:
        pass

    assert sorted(chosen.provenance) == ["model", "object_store"]


def test_offline_starts_only_the_stand_ins_of_the_roles_asked_for(tmp_path):
    with live.services(False, tmp_path / "run", roles=("object_store", "model")) as chosen:
        inside = {name: os.environ.get(name) for name in live.ROLE_VARIABLES}

    assert chosen.calendar is None and inside[clients.CALENDAR_URL] is None
    assert inside[clients.STORAGE_EMULATOR_HOST] == chosen.gcs_proxy.endpoint
    assert sorted(chosen.provenance) == ["model", "object_store"]


def test_services_without_a_work_dir_leave_no_directory_behind(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))

    with live.services(False) as chosen:
        assert chosen.work_dir.parent == tmp_path and (chosen.work_dir / "fake-gcs-server.log").exists()

    assert list(tmp_path.iterdir()) == []


def test_sandbox_bucket_is_removed_with_every_generation(gcs_client):
    with live.sandbox_bucket(gcs_client) as bucket:
        for body in ("1", "2"):
            bucket.blob("config/app.json").upload_from_string(body)

    assert bucket.name.startswith("interlock-sandbox-")
    assert gcs_client.lookup_bucket(bucket.name) is None


def test_sandbox_bucket_cleanup_gives_up_at_once_when_the_stand_in_is_gone(tmp_path, monkeypatch):
    from experiments.services import fake_gcs

    with fake_gcs(tmp_path / "fake-gcs-server.log") as server:
        monkeypatch.setenv(clients.STORAGE_EMULATOR_HOST, server.endpoint)
        client = clients.storage_client()
        with live.sandbox_bucket(client) as bucket:
            bucket.blob("o").upload_from_string("1")
            os.kill(server.pid, signal.SIGKILL)
            while _alive(server.pid):
                time.sleep(0.01)
            started = time.monotonic()

    # The client's default policy would retry the unreachable server for two minutes, then raise RetryError.
    assert time.monotonic() - started < 30
