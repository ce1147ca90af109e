"""The two published scenarios written with `interlock.easy`, over local function services, runnable as a process.

`python -m tests.easy_worker DIR book RID` books a slot; `... DIR rollback` rolls the config back;
`... DIR recover` settles whatever a killed run left open. Each prints its outcomes as JSON. The services are
files in DIR: `calendar.json` (events with client-chosen ids, so a repeated insert is refused: tier 1) and
`objects.json` (object versions carrying the effect id in their metadata, found by lookup: tier 2).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from experiments import crash
from interlock.easy import Interlock

SLOT = ("2026-10-13T10:00:00Z", "2026-10-13T10:30:00Z")


def load(path: Path, default: Any) -> Any:
    return json.loads(path.read_text()) if path.exists() else default


def save(path: Path, value: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value))
    tmp.replace(path)


def app_for(directory: Path) -> tuple[Interlock, Any, Any]:
    """The app and its two actions: `book(rid, start, end)` and `rollback(obj, to_version)`."""
    app = Interlock(directory / "journal.jsonl", agent="scheduler", hooks=crash.HOOK)
    calendar, objects = directory / "calendar.json", directory / "objects.json"
    requests = directory / "requests.json"

    def others_in_slot(rid: str, start: str, end: str) -> list[str]:
        return sorted(e["id"] for e in load(calendar, []) if e["start"] < end and start < e["end"]
                      and e.get("booking_request") != rid)

    def find_event(rid: str, start: str, end: str, effect_id: str) -> dict | None:
        return next(({"event": e["id"]} for e in load(calendar, []) if e["id"] == effect_id), None)

    @app.effect(key=lambda rid, start, end: f"booking:{rid}",
                lease=lambda rid, start, end: load(requests, {}).get(rid) == "live",
                facts={"other_events_in_slot": others_in_slot}, expect={"other_events_in_slot": []},
                tier=1, lookup=find_event)
    def book(rid: str, start: str, end: str, effect_id: str) -> dict:
        events = load(calendar, [])
        if any(e["id"] == effect_id for e in events):
            return {"event": effect_id, "already_existed": True}
        events.append({"id": effect_id, "start": start, "end": end, "booking_request": rid})
        save(calendar, events)
        return {"event": effect_id}

    def live_generation(obj: str, to_version: str) -> str:
        return str(len([v for v in load(objects, []) if v["object"] == obj]))

    def find_write(obj: str, to_version: str, effect_id: str) -> str | None:
        versions = [v for v in load(objects, []) if v["object"] == obj]
        return next((str(n) for n, v in enumerate(versions, 1) if v.get("effect_id") == effect_id), None)

    @app.effect(key=lambda obj, to_version: f"rollback:{obj}:INC-1",
                lease=lambda obj, to_version: load(directory / "incident.json", {}).get("INC-1") == "open",
                facts={"generation": live_generation}, tier=2, lookup=find_write)
    def rollback(obj: str, to_version: str, effect_id: str) -> str:
        versions = load(objects, [])
        versions.append({"object": obj, "version": to_version, "writer": "agent", "effect_id": effect_id})
        save(objects, versions)
        return str(len([v for v in versions if v["object"] == obj]))

    return app, book, rollback


def main(argv: list[str]) -> int:
    """Run one action (or recovery) and print the outcome(s)."""
    directory, what, *rest = argv
    app, book, rollback = app_for(Path(directory))
    if what == "book":
        outcomes = [book(rest[0], *SLOT)]
    elif what == "rollback":
        outcomes = [rollback("config/app.json", "v41")]
    else:
        outcomes = app.recover()
    print(json.dumps([o.status for o in outcomes]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
