"""The README's "Put the gate in your agent" example, run as written against a calendar kept in memory: the API it
shows must keep working, and it must do what its comments say."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from interlock import EffectRefused, Status

README = Path(__file__).resolve().parents[1] / "README.md"
SLOT = ("2026-12-07T10:00", "2026-12-07T11:00")


def _example() -> str:
    found = re.search(r"## Put the gate in your agent\n\n.*?```python\n(.*?)```", README.read_text(), re.S)
    assert found is not None, "the README lost its gate example"
    return found.group(1)


def _run(tmp_path: Path, monkeypatch: Any, calendar: dict[str, dict[str, str]], *,
         busy_after_looking: bool) -> dict[str, Any]:
    """Execute the example with the helpers it names defined over `calendar`; returns its namespace."""
    monkeypatch.chdir(tmp_path)

    def events_between(start: str, end: str) -> list[dict[str, str]]:
        return [e for e in calendar.values() if e["start"] < end and e["end"] > start]

    def insert_event(event_id: str, start: str, end: str) -> dict[str, str]:
        return calendar.setdefault(event_id, {"id": event_id, "start": start, "end": end})

    looked: list[int] = []

    def looking(start: str, end: str) -> list[dict[str, str]]:
        seen = events_between(start, end)
        if busy_after_looking and not looked:  # a customer books the slot right after the agent looked
            calendar["customer"] = {"id": "customer", "start": start, "end": end}
        looked.append(1)
        return seen

    def others_in_slot(request_id: str, start: str, end: str) -> list[dict[str, str]]:
        return looking(start, end)

    namespace: dict[str, Any] = {"request_is_live": lambda request_id: True, "others_in_slot": others_in_slot,
                                 "insert_event": insert_event, "find_event": calendar.get,
                                 "start": SLOT[0], "end": SLOT[1]}
    try:
        exec(compile(_example(), str(README), "exec"), namespace)
    finally:
        if "app" in namespace:
            namespace["app"].close()
    return namespace


def test_the_readme_example_books_the_slot_once_as_written(tmp_path, monkeypatch):
    calendar: dict[str, dict[str, str]] = {}
    ran = _run(tmp_path, monkeypatch, calendar, busy_after_looking=False)
    assert ran["outcome"].status is Status.COMMITTED
    assert list(calendar) == [ran["outcome"].effect_id]


def test_the_readme_example_refuses_when_the_slot_filled_after_the_agent_looked(tmp_path, monkeypatch):
    calendar: dict[str, dict[str, str]] = {}
    try:
        _run(tmp_path, monkeypatch, calendar, busy_after_looking=True)
    except EffectRefused as refused:
        assert refused.outcome.status is Status.REFUSED_STALE_PREMISE
    else:
        raise AssertionError("the example's raise_for_status() let a stale booking through")
    assert list(calendar) == ["customer"]
