"""Ground truth from the service's own state alone: the version listing and live object, the proxy's write log,
or the events on the calendar slot."""

from __future__ import annotations

import re
from datetime import datetime

from .load import Node, quote
from .model import GroundTruth
from .faults import Fault

AGENT = "agent"


def _writer(obj: Node) -> str:
    """The `writer` metadata a write carries; a write without one is nobody's we know."""
    metadata = obj.opt_node("metadata")
    return (metadata.opt("writer", "string") if metadata else None) or "unknown"


_DIGITS = re.compile(r"[0-9]+")


def _generation_order(generation: Node) -> tuple[int, str]:
    """Where a generation sorts: it must be a decimal number, compared as digits (int() stops at 4,300 of them)."""
    text = generation.expect("string")
    if not _DIGITS.fullmatch(text):
        raise generation.bad(f"not a generation number: {quote(text)}")
    digits = text.lstrip("0") or "0"
    return len(digits), digits


def _gcp_writes_from_versions(artifacts: Node) -> list[tuple[str, str]]:
    versions = [(v.at("generation"), _writer(v)) for v in artifacts.at("gcs_versions_raw").items()]
    ordered = sorted(versions, key=lambda pair: _generation_order(pair[0]))
    return [(generation.value, writer) for generation, writer in ordered]


# Requests that create a generation (uploads, inserts, copies); the proxy also logs reads and listings.
_WRITE_METHODS = frozenset({"POST", "PUT"})


def _gcp_writes_from_write_log(artifacts: Node, object_name: str | None) -> list[tuple[str, str]]:
    """Writes the service committed, as the recording proxy saw them: answered 200, or cut after committing."""
    writes: dict[str, tuple[int, str]] = {}
    for entry in artifacts.at("write_log").items():
        generation = entry.opt("generation", "string")
        status = entry.get("status", "integer", nullable=True)
        committed = generation is not None and (status == 200 or entry.opt("cut", "boolean", False))
        if not committed or entry.get("method", "string") not in _WRITE_METHODS or generation in writes:
            continue
        if object_name is None or entry.opt("object", "string", object_name) == object_name:
            writes[generation] = (entry.get("seq", "integer"), _writer(entry))
    ordered = sorted(writes.items(), key=lambda item: item[1][0])
    return [(generation, writer) for generation, (_, writer) in ordered]


def judge_gcp(cell: Node, fault: Fault) -> GroundTruth:
    """Agent writes and live owner of the cell's object, against the catalogue's wanted count and owner."""
    artifacts = cell.at("artifacts")
    source = cell.opt("ground_truth_source", "string", "versions")
    if source == "versions":
        writes = _gcp_writes_from_versions(artifacts)
    elif source == "write_log":
        ids = cell.opt_node("ids")
        writes = _gcp_writes_from_write_log(artifacts, ids.opt("object", "string") if ids else None)
    else:
        raise cell.at("ground_truth_source").bad(f"unknown ground truth source {quote(source)} for gcp_resource")
    live = artifacts.opt_node("gcs_live_raw")
    if live is not None:
        live_generation, live_owner = live.get("generation", "string"), _writer(live)
    elif writes:
        live_generation, live_owner = writes[-1]
    else:
        live_generation, live_owner = None, None
    want, want_owner = fault.want, fault.owner
    agent = tuple(generation for generation, writer in writes if writer == AGENT)
    return GroundTruth(
        source=source, agent_writes=agent, want=want, want_owner=want_owner, live_generation=live_generation,
        live_owner=live_owner, writes=tuple(writes), other_events=(), events_on_slot_before=(), double_booked=None,
        invariant_held=len(agent) == want and live_owner == want_owner,
    )


def _when(moment: Node) -> datetime:
    """An event start or end: an RFC 3339 dateTime, which carries its UTC offset, or an all-day date (UTC)."""
    all_day = not moment.has("dateTime")
    if all_day and not moment.has("date"):
        raise moment.bad("missing: neither dateTime nor date")
    node = moment.at("date" if all_day else "dateTime")
    text = node.expect("string")
    try:
        when = datetime.fromisoformat(text + "T00:00:00+00:00" if all_day else text.replace("Z", "+00:00"))
    except ValueError:
        raise node.bad(f"not an RFC 3339 {'date' if all_day else 'time'}: {quote(text)}") from None
    if when.tzinfo is None:
        raise node.bad(f"not an RFC 3339 time: {quote(text)} has no UTC offset")
    return when


def _span(event: Node) -> tuple[datetime, datetime]:
    return _when(event.at("start")), _when(event.at("end"))


def _booking_request(event: Node) -> str | None:
    props = event.opt_node("extendedProperties")
    private = props.opt_node("private") if props else None
    return private.opt("booking_request", "string") if private else None


def judge_calendar(cell: Node, fault: Fault) -> GroundTruth:
    """The request's live agent events on the slot, and whether one went on top of an event already there."""
    request_id = cell.get("request_id", "string")
    events = cell.at("ground_truth").at("events_list").items()
    live = [e for e in events if e.opt("status", "string") != "cancelled"]
    ours = [e for e in live if _booking_request(e) == request_id]
    others = [e for e in live if _booking_request(e) != request_id]
    outage = cell.opt_node("outage")
    before = outage.opt_node("events_on_slot_before") if outage else None
    already = tuple(item.expect("string") for item in before.items()) if before else ()
    # every live event's times are read, so a bad one is refused even where the overlap test would not need it
    theirs = [_span(e) for e in others]
    mine = [_span(e) for e in ours]
    fresh = [span for e, span in zip(ours, mine) if e.get("id", "string") not in already]
    double = any(s < end and start < e for start, end in fresh for s, e in theirs)
    agent = tuple(e.get("id", "string") for e in ours)
    want = fault.want
    return GroundTruth(
        source="events_list", agent_writes=agent, want=want, want_owner=None, live_generation=None, live_owner=None,
        writes=tuple((e.get("id", "string"), "agent" if e in ours else "other") for e in live),
        other_events=tuple(e.get("id", "string") for e in others), events_on_slot_before=already,
        double_booked=double, invariant_held=len(agent) == want and not double,
    )
