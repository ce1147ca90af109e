"""The examples run as written: the agent loop against the local Messages stub, and `mypy --strict` over them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from examples.booking_agent import Calendar, run_agent
from experiments.clients import anthropic_client
from interlock import Interlock, effect_id_for

ROOT = Path(__file__).resolve().parents[1]
SLOT = ("2026-10-13T10:00:00Z", "2026-10-13T10:30:00Z")


@pytest.fixture
def desk(tmp_path, messages_server):
    (tmp_path / "requests.json").write_text(json.dumps({"r1": "live"}))
    messages_server.script("book_slot", {"request_id": "r1", "start": SLOT[0], "end": SLOT[1]})
    return tmp_path


def test_the_agent_loop_books_once_however_often_the_model_calls_the_tool(desk, messages_server):
    calendar = Calendar(desk)
    with Interlock(desk / "journal.jsonl") as app:
        outcomes = run_agent(anthropic_client(), app, calendar, "r1", *SLOT)
    assert [o.status for o in outcomes] == ["COMMITTED", "DUPLICATE_IGNORED", "DUPLICATE_IGNORED"]
    assert [e["id"] for e in calendar.events()] == [effect_id_for("booking:r1")]
    requests = messages_server.requests()
    assert requests[0]["tools"][0]["name"] == "book_slot"
    result = requests[1]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and json.loads(result["content"])["status"] == "COMMITTED"


def test_the_agent_loop_refuses_a_booking_the_model_decided_on_an_empty_slot_that_filled(desk, messages_server):
    calendar = Calendar(desk)

    class SlotTakenMidTurn:
        """A person books the slot after the model was shown it free, before the tool call runs."""

        def reach(self, point: str) -> None:
            if point == "after_proposed" and not calendar.events():
                calendar.insert("dana", "someone-else", *SLOT)

    with Interlock(desk / "journal.jsonl", hooks=SlotTakenMidTurn()) as app:
        outcomes = run_agent(anthropic_client(), app, calendar, "r1", *SLOT, max_turns=1)
    assert [o.status for o in outcomes] == ["REFUSED:stale_premise"]
    assert [e["id"] for e in calendar.events()] == ["dana"]


def test_the_examples_pass_mypy_strict_against_the_package(tmp_path):
    result = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
                             "examples/"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "MYPYPATH": str(ROOT)})
    assert result.returncode == 0, result.stdout + result.stderr
