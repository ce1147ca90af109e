"""`interlock.easy`: both published scenarios in a few lines, and recovery after a real SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from interlock import effect_id_for, verify
from interlock.easy import Interlock
from tests.easy_worker import SLOT, app_for, load, save

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def world(tmp_path):
    save(tmp_path / "requests.json", {"r1": "live"})
    save(tmp_path / "incident.json", {"INC-1": "open"})
    save(tmp_path / "objects.json", [{"object": "config/app.json", "version": "v42", "writer": "human-deploy"}])
    return tmp_path


def run(directory: Path, *args: str, kill: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_")}
    if kill:
        env["INTERLOCK_KILL_AT"] = kill
    return subprocess.run([sys.executable, "-m", "tests.easy_worker", str(directory), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_a_free_slot_is_booked_once(world):
    app, book, _ = app_for(world)
    first = book("r1", *SLOT)
    assert first.status == "COMMITTED" and first.evidence == {"event": effect_id_for("booking:r1")}
    assert book("r1", *SLOT).status == "DUPLICATE_IGNORED"
    assert len(load(world / "calendar.json", [])) == 1


def test_a_slot_busy_when_decided_is_refused_not_double_booked(world):
    save(world / "calendar.json", [{"id": "dana", "start": SLOT[0], "end": SLOT[1]}])
    app, book, _ = app_for(world)
    outcome = book("r1", *SLOT)
    assert outcome.status == "REFUSED:stale_premise"
    assert outcome.rechecked.violations == ("other_events_in_slot: must be [], was ['dana'] when decided",)
    assert [e["id"] for e in load(world / "calendar.json", [])] == ["dana"]


def test_a_cancelled_request_is_refused(world):
    save(world / "requests.json", {"r1": "cancelled"})
    _, book, _ = app_for(world)
    assert book("r1", *SLOT).status == "REFUSED:lease"
    assert load(world / "calendar.json", []) == []


def test_a_rollback_keeps_the_functions_return_value_as_evidence(world):
    app, _, rollback = app_for(world)
    outcome = rollback("config/app.json", "v41")
    assert outcome.status == "COMMITTED" and outcome.evidence == "2"
    receipt = verify(app.journal.entries(outcome.effect_id))
    assert receipt["valid"] and receipt["evidence"] == "2" and receipt["assumptions_held"] is True


def test_recover_settles_a_booking_killed_after_the_calendar_committed(world):
    assert run(world, "book", "r1", kill="after_commit").returncode == -signal.SIGKILL
    recovered = run(world, "recover")
    assert recovered.returncode == 0, recovered.stderr
    assert json.loads(recovered.stdout) == ["COMMITTED_BY_RETRY"]
    assert len(load(world / "calendar.json", [])) == 1
    assert json.loads(run(world, "recover").stdout) == []


def test_recover_refuses_a_rollback_whose_generation_moved_during_the_outage(world):
    assert run(world, "rollback", kill="before_send").returncode == -signal.SIGKILL
    versions = load(world / "objects.json", [])
    save(world / "objects.json", versions + [{"object": "config/app.json", "version": "v43",
                                              "writer": "human-redeploy"}])
    recovered = run(world, "recover")
    assert json.loads(recovered.stdout) == ["REFUSED:stale_premise_at_recovery"], recovered.stderr
    assert [v["writer"] for v in load(world / "objects.json", [])] == ["human-deploy", "human-redeploy"]
    app, _, _ = app_for(world)
    entries = app.journal.entries(effect_id_for("rollback:config/app.json:INC-1"))
    assert entries[-1]["rechecked"]["violations"] == ["generation: was 1, now 2"]


def test_recover_finds_a_rollback_that_landed_before_the_kill(world):
    assert run(world, "rollback", kill="after_commit").returncode == -signal.SIGKILL
    save(world / "incident.json", {"INC-1": "resolved"})
    assert json.loads(run(world, "recover").stdout) == ["COMMITTED_ON_QUERY"]
    assert [v["writer"] for v in load(world / "objects.json", [])] == ["human-deploy", "agent"]


def test_expect_must_name_a_declared_fact(tmp_path):
    app = Interlock(tmp_path / "journal.jsonl")
    with pytest.raises(ValueError, match="not declared"):
        app.effect(key=lambda: "k", expect={"slot": []})
