"""The two published scenarios written with `interlock.Interlock`, over local file services, runnable as a process.

`python -m tests.app_worker DIR book RID` books a slot; `... DIR rollback` rolls the config back; `... DIR recover`
settles whatever a killed run left open. `--async` runs the same actions as `async def` effects with async facts
and lookups, on an event loop. Each prints its outcome statuses as JSON. The services are files in DIR:
`calendar.json` (events with client-chosen ids, so a repeated insert is refused: tier 1) and `objects.json`
(object versions carrying the effect id, found by lookup: tier 2). The agent's observations are read just before
the call, as an agent would have read them when deciding.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from experiments import crash
from interlock import Interlock, current_effect

SLOT = ("2026-10-13T10:00:00Z", "2026-10-13T10:30:00Z")


def load(path: Path, default: Any) -> Any:
    return json.loads(path.read_text()) if path.exists() else default


def save(path: Path, value: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value))
    tmp.replace(path)


class World:
    """The file services and their readers."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.calendar, self.objects = directory / "calendar.json", directory / "objects.json"

    def others_in_slot(self, rid: str, start: str, end: str) -> list[str]:
        return sorted(e["id"] for e in load(self.calendar, []) if e["start"] < end and start < e["end"]
                      and e.get("booking_request") != rid)

    def request_live(self, rid: str, start: str, end: str) -> bool:
        return bool(load(self.directory / "requests.json", {}).get(rid) == "live")

    def find_event(self, rid: str, start: str, end: str) -> dict[str, str] | None:
        return next(({"event": e["id"]} for e in load(self.calendar, []) if e["id"] == current_effect()), None)

    def insert(self, rid: str, start: str, end: str) -> dict[str, Any]:
        events = load(self.calendar, [])
        if any(e["id"] == current_effect() for e in events):
            return {"event": current_effect(), "already_existed": True}
        events.append({"id": current_effect(), "start": start, "end": end, "booking_request": rid})
        save(self.calendar, events)
        return {"event": current_effect()}

    def generation(self, obj: str, to_version: str) -> str:
        return str(len([v for v in load(self.objects, []) if v["object"] == obj]))

    def incident_open(self, obj: str, to_version: str) -> bool:
        return bool(load(self.directory / "incident.json", {}).get("INC-1") == "open")

    def find_write(self, obj: str, to_version: str) -> str | None:
        versions = [v for v in load(self.objects, []) if v["object"] == obj]
        return next((str(n) for n, v in enumerate(versions, 1) if v.get("effect_id") == current_effect()), None)

    def write(self, obj: str, to_version: str) -> str:
        versions = load(self.objects, [])
        versions.append({"object": obj, "version": to_version, "writer": "agent", "effect_id": current_effect()})
        save(self.objects, versions)
        return str(len([v for v in versions if v["object"] == obj]))


def app_for(directory: Path, *, hooks: Any = crash.HOOK) -> tuple[Interlock, Any, Any]:
    """The app and its two sync actions: `book(rid, start, end)` and `rollback(obj, to_version)`."""
    app = Interlock(directory / "journal.jsonl", agent="scheduler", hooks=hooks)
    world = World(directory)

    @app.effect(name="book", key=lambda rid, start, end: f"booking:{rid}", lease=world.request_live,
                facts={"other_events_in_slot": world.others_in_slot}, expect={"other_events_in_slot": []},
                tier=1, lookup=world.find_event)
    def book(rid: str, start: str, end: str) -> dict[str, Any]:
        return world.insert(rid, start, end)

    @app.effect(name="rollback", key=lambda obj, to_version: f"rollback:{obj}:INC-1", lease=world.incident_open,
                facts={"generation": world.generation}, lookup=world.find_write, in_flight=0.0)
    def rollback(obj: str, to_version: str) -> str:
        return world.write(obj, to_version)

    return app, book, rollback


def async_app_for(directory: Path, *, hooks: Any = crash.HOOK) -> tuple[Interlock, Any, Any]:
    """The same two actions as `async def`, with async facts, leases and lookups."""
    app = Interlock(directory / "journal.jsonl", agent="scheduler", hooks=hooks)
    world = World(directory)

    async def others_in_slot(rid: str, start: str, end: str) -> list[str]:
        await asyncio.sleep(0)
        return world.others_in_slot(rid, start, end)

    async def find_event(rid: str, start: str, end: str) -> dict[str, str] | None:
        await asyncio.sleep(0)
        return world.find_event(rid, start, end)

    async def generation(obj: str, to_version: str) -> str:
        await asyncio.sleep(0)
        return world.generation(obj, to_version)

    async def find_write(obj: str, to_version: str) -> str | None:
        await asyncio.sleep(0)
        return world.find_write(obj, to_version)

    @app.effect(name="book", key=lambda rid, start, end: f"booking:{rid}", lease=world.request_live,
                facts={"other_events_in_slot": others_in_slot}, expect={"other_events_in_slot": []},
                tier=1, lookup=find_event)
    async def book(rid: str, start: str, end: str) -> dict[str, Any]:
        await asyncio.sleep(0)
        return world.insert(rid, start, end)

    @app.effect(name="rollback", key=lambda obj, to_version: f"rollback:{obj}:INC-1", lease=world.incident_open,
                facts={"generation": generation}, lookup=find_write, in_flight=0.0)
    async def rollback(obj: str, to_version: str) -> str:
        await asyncio.sleep(0)
        return world.write(obj, to_version)

    return app, book, rollback


def main(argv: list[str]) -> int:
    """Run one action (or recovery) and print the statuses."""
    use_async = "--async" in argv
    directory, what, *rest = [a for a in argv if a != "--async"]
    world = World(Path(directory))
    if use_async:
        app, book, rollback = async_app_for(Path(directory))

        async def run() -> list[str]:
            if what == "book":
                seen = world.others_in_slot(rest[0], *SLOT)
                return [(await book(rest[0], *SLOT, observed={"other_events_in_slot": seen})).status]
            if what == "rollback":
                seen = world.generation("config/app.json", "v41")
                return [(await rollback("config/app.json", "v41", observed={"generation": seen})).status]
            return [o.status for o in (await app.arecover()).settled]

        statuses = asyncio.run(run())
    else:
        app, book, rollback = app_for(Path(directory))
        if what == "book":
            seen = world.others_in_slot(rest[0], *SLOT)
            statuses = [book(rest[0], *SLOT, observed={"other_events_in_slot": seen}).status]
        elif what == "rollback":
            seen = world.generation("config/app.json", "v41")
            statuses = [rollback("config/app.json", "v41", observed={"generation": seen}).status]
        else:
            statuses = [o.status for o in app.recover().settled]
    app.close()
    print(json.dumps(statuses), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
