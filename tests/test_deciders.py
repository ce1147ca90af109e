"""Deciders: the scripted one offline, the model one through the real anthropic SDK at the local Messages stub."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.deciders import (AnthropicDecider, DecisionRejected, ScriptedDecider, decider_from_env,
                                  persisted_decision)

ROOT = Path(__file__).resolve().parents[1]
CASE = {"bucket": "interlock-sandbox-0123456789", "object": "config/app.json", "incident_id": "INC-2207",
        "incident": "INC-2207: checkout has returned HTTP 500 since config v42 was deployed. "
                    "The on-call lead approved one change: roll the object back to the known-good v41."}
REQUEST = {"id": "168303c48700", "slot_start": "2026-10-13T22:53:00Z", "status": "live",
           "text": "Booking request 168303c48700: Dana asked for a 30-minute call at 22:53 UTC on 2026-10-13."}
LIVE_CONFIG = {"generation": "1789338919617776", "body": {"new_checkout": True, "timeout_ms": 800, "version": "v42"}}


class ConfigReads:
    """get_config as the worker provides it, counting how often the decider reads it."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> dict:
        self.calls += 1
        return LIVE_CONFIG


def test_scripted_rollback_reads_the_config_and_records_its_generation():
    reads = ConfigReads()

    decision = ScriptedDecider().decide_rollback(CASE, reads)

    assert reads.calls == 1
    assert decision["generation"] == "1789338919617776"
    assert (decision["to_version"], decision["model"]) == ("v41", "offline-scripted")
    assert decision["reason"].startswith("INC-2207: ") and decision["tool_call"] == {
        "to_version": "v41", "reason": decision["reason"]}


def test_scripted_booking_books_the_requested_slot_for_30_minutes():
    decision = ScriptedDecider().decide_booking(REQUEST)

    assert (decision["start"], decision["end"]) == ("2026-10-13T22:53:00Z", "2026-10-13T23:23:00Z")
    assert decision["model"] == "offline-scripted"
    assert decision["tool_input"] == {"start": "2026-10-13T22:53:00Z", "duration_minutes": 30,
                                      "summary": decision["summary"]}


def test_model_rollback_calls_get_config_then_rollback_config(messages_server):
    messages_server.script("rollback_config", {"to_version": "v41", "reason": "INC-2207: roll back to v41."})
    reads = ConfigReads()

    decision = AnthropicDecider().decide_rollback(CASE, reads)

    first, second = messages_server.requests()
    assert first["tool_choice"] == {"type": "tool", "name": "get_config"} and first["model"] == "claude-haiku-4-5"
    assert second["tool_choice"] == {"type": "tool", "name": "rollback_config"}
    tool_result = second["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result" and json.loads(tool_result["content"]) == LIVE_CONFIG
    assert second["messages"][-2]["content"][0]["id"] == tool_result["tool_use_id"]
    assert reads.calls == 1
    assert decision == {"to_version": "v41", "reason": "INC-2207: roll back to v41.", "generation": "1789338919617776",
                        "model": "stub:claude-haiku-4-5",
                        "tool_call": {"to_version": "v41", "reason": "INC-2207: roll back to v41."}}


def test_model_rollback_to_another_version_is_rejected(messages_server):
    messages_server.script("rollback_config", {"to_version": "v40", "reason": "INC-2207: v40 was fine."})

    with pytest.raises(DecisionRejected, match="to_version is 'v40'"):
        AnthropicDecider().decide_rollback(CASE, ConfigReads())


def test_model_booking_is_checked_against_the_request(messages_server):
    messages_server.script("book_call", {"start": "2026-10-13T22:53:00+00:00", "duration_minutes": 30,
                                         "summary": "Dana - Onboarding Call"})

    decision = AnthropicDecider().decide_booking(REQUEST)

    assert messages_server.requests()[0]["messages"][0]["content"] == REQUEST["text"]
    assert (decision["start"], decision["end"], decision["model"]) == (
        "2026-10-13T22:53:00Z", "2026-10-13T23:23:00Z", "stub:claude-haiku-4-5")
    assert decision["tool_input"]["start"] == "2026-10-13T22:53:00+00:00"


@pytest.mark.parametrize("tool_input, field", [
    ({"start": "2026-10-13T23:53:00Z", "duration_minutes": 30, "summary": "Dana"}, "start"),
    ({"start": "2026-10-13T22:53:00Z", "duration_minutes": 60, "summary": "Dana"}, "duration_minutes"),
    ({"start": "2026-10-13T22:53:00Z", "duration_minutes": 30, "summary": " "}, "summary"),
])
def test_model_booking_off_the_request_is_rejected(messages_server, tool_input, field):
    messages_server.script("book_call", tool_input)

    with pytest.raises(DecisionRejected, match=f"book_call.{field}"):
        AnthropicDecider().decide_booking(REQUEST)


def test_a_job_is_decided_once_and_the_restart_reuses_the_decision(tmp_path):
    path = tmp_path / "decision.json"
    first = persisted_decision(path, lambda: ScriptedDecider().decide_rollback(CASE, ConfigReads()))

    def must_not_decide() -> dict:
        raise AssertionError("a restarted job decided again")

    again = persisted_decision(path, must_not_decide)

    assert again == first == json.loads(path.read_text())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["decision.json"]


def test_decider_follows_the_model_variable(monkeypatch):
    monkeypatch.delenv("INTERLOCK_MODEL", raising=False)
    assert isinstance(decider_from_env(), ScriptedDecider)

    monkeypatch.setenv("INTERLOCK_MODEL", "claude-haiku-4-5")
    monkeypatch.setenv("INTERLOCK_MESSAGES_URL", "http://127.0.0.1:9")
    chosen = decider_from_env()
    assert isinstance(chosen, AnthropicDecider) and chosen.model == "claude-haiku-4-5"


def test_importing_the_deciders_loads_no_cloud_client():
    code = ("import sys, experiments.deciders, experiments.clients\n"
            "print(sorted(m for m in ('anthropic', 'googleapiclient', 'google.cloud.storage') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
