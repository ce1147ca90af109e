"""An agent loop with the anthropic SDK's tool use, every tool call going through the gate.

The agent reads the calendar, shows the model what it read, and lets the model call `book_slot`. Each call is a
gated effect: booked at most once per request (a retried or repeated tool call is not booked twice), only while
the booking request is live, and only while the slot still holds what the model was shown, the decision's
premise, passed as `observed=`. The tool result tells the model what the gate did.

    python -m examples.booking_agent DIR REQUEST_ID START END

runs it against the Messages API (`ANTHROPIC_API_KEY`), or against any endpoint given as ANTHROPIC_BASE_URL.
The calendar and the booking requests are JSON files in DIR, standing in for a real calendar service.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anthropic
from anthropic.types import MessageParam, ToolParam, ToolResultBlockParam, ToolUseBlock

from interlock import Action, Interlock, Outcome, current_effect

MODEL = "claude-haiku-4-5"
BOOK_SLOT: ToolParam = {
    "name": "book_slot",
    "description": "Book the calendar slot for a booking request.",
    "input_schema": {
        "type": "object",
        "properties": {"request_id": {"type": "string"}, "start": {"type": "string"}, "end": {"type": "string"}},
        "required": ["request_id", "start", "end"],
    },
}


class Calendar:
    """Events in a JSON file, each under a client-chosen id: inserting an id twice keeps one event."""

    def __init__(self, directory: Path):
        self.events_file = directory / "calendar.json"
        self.requests_file = directory / "requests.json"

    def events(self) -> list[dict[str, str]]:
        """Every event."""
        if not self.events_file.exists():
            return []
        events: list[dict[str, str]] = json.loads(self.events_file.read_text())
        return events

    def others_in_slot(self, request_id: str, start: str, end: str) -> list[str]:
        """Ids of the events overlapping the slot, other than this request's own booking."""
        return sorted(e["id"] for e in self.events()
                      if e["start"] < end and start < e["end"] and e.get("request") != request_id)

    def request_live(self, request_id: str, start: str, end: str) -> bool:
        """Whether the booking request still wants its slot."""
        requests: dict[str, str] = json.loads(self.requests_file.read_text()) if self.requests_file.exists() else {}
        return requests.get(request_id) == "live"

    def insert(self, event_id: str, request_id: str, start: str, end: str) -> dict[str, str]:
        """Insert the event under its id, once."""
        events = self.events()
        if not any(e["id"] == event_id for e in events):
            events.append({"id": event_id, "start": start, "end": end, "request": request_id})
            tmp = self.events_file.with_suffix(".tmp")
            tmp.write_text(json.dumps(events))
            tmp.replace(self.events_file)
        return {"event": event_id}

    def find(self, event_id: str) -> dict[str, str] | None:
        """The event with this id, if the calendar holds it."""
        return next(({"event": e["id"]} for e in self.events() if e["id"] == event_id), None)


def gated_booking(app: Interlock, calendar: Calendar) -> Action[[str, str, str]]:
    """Register `book_slot` on the app: a tier-1 effect (the calendar dedupes on the event id)."""

    @app.effect(name="book_slot", key=lambda request_id, start, end: f"booking:{request_id}",
                lease=calendar.request_live, facts={"other_events_in_slot": calendar.others_in_slot},
                expect={"other_events_in_slot": []}, tier=1,
                lookup=lambda request_id, start, end: calendar.find(current_effect()))
    def book_slot(request_id: str, start: str, end: str) -> dict[str, str]:
        return calendar.insert(current_effect(), request_id, start, end)

    return book_slot


def run_agent(client: anthropic.Anthropic, app: Interlock, calendar: Calendar, request_id: str, start: str,
              end: str, *, model: str = MODEL, max_turns: int = 3) -> list[Outcome]:
    """Ask the model to book the slot; run each tool call through the gate; stop when it stops calling tools."""
    book_slot = gated_booking(app, calendar)
    seen = calendar.others_in_slot(request_id, start, end)  # what the model is shown: the decision's premise
    messages: list[MessageParam] = [{"role": "user", "content": (
        f"Booking request {request_id} wants {start} to {end}. Events already in that slot: {seen or 'none'}. "
        "Book it with book_slot if the slot is free.")}]
    outcomes: list[Outcome] = []
    for _ in range(max_turns):
        reply = client.messages.create(model=model, max_tokens=512, tools=[BOOK_SLOT], messages=messages)
        uses = [block for block in reply.content if isinstance(block, ToolUseBlock)]
        if not uses:
            break
        messages.append({"role": "assistant", "content": reply.content})
        results: list[ToolResultBlockParam] = []
        for use in uses:
            args = dict(use.input) if isinstance(use.input, dict) else {}
            outcome = book_slot.decided_on({"other_events_in_slot": seen})(
                str(args.get("request_id")), str(args.get("start")), str(args.get("end")))
            outcomes.append(outcome)
            results.append({"type": "tool_result", "tool_use_id": use.id, "is_error": outcome.landed is not True,
                            "content": json.dumps({"status": outcome.status.value, "reason": outcome.reason,
                                                        "evidence": outcome.evidence})})
        messages.append({"role": "user", "content": results})
    return outcomes


def main(argv: list[str]) -> int:
    """Book one slot with a real model; print each tool call's outcome."""
    if len(argv) != 4:
        print("usage: python -m examples.booking_agent DIRECTORY REQUEST_ID START END", file=sys.stderr)
        return 2
    directory, request_id, start, end = argv
    with Interlock(Path(directory) / "journal.jsonl", agent="booking-agent") as app:
        for outcome in run_agent(anthropic.Anthropic(), app, Calendar(Path(directory)), request_id, start, end):
            print(outcome.status.value, json.dumps(outcome.evidence))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
