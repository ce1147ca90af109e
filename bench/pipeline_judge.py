"""Re-judge about 10,000 synthetic cells shaped like the published ones (target: under 10 s)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any, cast

from interlock.canonical import entry_hash
from pipeline import derive

from ._results import against
from ._scratch import scratch

REFERENCE = Path(__file__).resolve().parents[1] / "results" / "published"
CELLS = 10_000
TARGET_SECONDS = 10.0
_GENERATION = re.compile(r'"(\d{16})"')


def _rechain(entries: list[dict[str, Any]]) -> None:
    """Recompute the (published, per-effect) hash chain after the ids inside the entries changed."""
    previous = None
    for entry in entries:
        entry["prev"] = previous
        entry["hash"] = previous = entry_hash(entry)


def _gcp_variant(template: str, n: int) -> dict[str, Any]:
    text = _GENERATION.sub(lambda m: f'"{int(m.group(1)) + n * 7919}"', template)
    cell = cast(dict[str, Any], json.loads(text))  # a copy of a published cell: a JSON object
    _rechain(cell["artifacts"]["journal.jsonl"])
    return cell


def _calendar_variant(template: str, ids: list[str], n: int) -> dict[str, Any]:
    text = template
    for k, old in enumerate(ids):
        text = text.replace(old, f"{old[:2]}{n:06x}{k:02x}{old[10:]}"[:len(old)])
    cell = cast(dict[str, Any], json.loads(text))  # a copy of a published cell: a JSON object
    if cell["evidence"]["receipt_bundle"]:
        _rechain(cell["evidence"]["receipt_bundle"]["entries"])
    return cell


def _calendar_ids(cell: dict[str, Any]) -> list[str]:
    truth = cell["ground_truth"]
    return sorted({cell["request_id"], *truth["agent_events"], *truth["other_events"]}, key=len, reverse=True)


def synthesize(out: Path, cells: int = CELLS) -> tuple[list[Path], list[dict[str, Any]]]:
    """Write result files holding `cells` varied copies of the reference cells (one copy of a scenario's cells per
    file, since a file holds each (fault, system) once), with the template of each judged cell in order."""
    files, expected = [], []
    sources = {name: json.loads((REFERENCE / f"{name}.json").read_text()) for name in ("gcp_resource", "calendar")}
    total = sum(len(s["cells"]) for s in sources.values())
    n = 0
    while n * total < cells:
        for name, data in sources.items():
            made = []
            for i, template in enumerate(data["cells"]):
                text, variant = json.dumps(template), n * len(data["cells"]) + i
                made.append(_gcp_variant(text, variant) if name == "gcp_resource"
                            else _calendar_variant(text, _calendar_ids(template), variant))
                expected.append(template)
            path = out / f"{name}-{n:04d}.json"
            path.write_text(json.dumps({**data, "cells": made}))
            files.append(path)
        n += 1
    return files, expected


def run() -> dict[str, Any]:
    """Time derive() over the synthetic files and check every judged cell against its template's published scores."""
    with scratch("bench-judge-") as tmp:
        files, expected = synthesize(tmp)
        started = time.perf_counter()
        judged = [cell for path in files for cell in derive(path).cells]
        seconds = time.perf_counter() - started
    mismatches = 0
    for cell, template in zip(judged, expected):
        answer = template.get("answer_matches_service", template.get("answer_matches_calendar"))
        stored = (template["invariant_held"], answer, template["can_prove_what_happened"])
        mismatches += (cell.invariant_held, cell.answer_matches, cell.can_prove) != stored
    return {
        "cells": len(judged),
        "seconds": round(seconds, 3),
        "cells_per_second": round(len(judged) / seconds),
        "mismatches_against_template": mismatches,
        "proved": sum(c.can_prove for c in judged),
        "targets": {"seconds": against(round(seconds, 3), "<", TARGET_SECONDS)},
    }
