"""`python -m pipeline judge FILE... [--json]`: re-judge result files from their artifacts alone.

A scenario file is judged cell by cell (a shipped published run only while its bytes are the published ones); an
exploration (`results/reliability/explore_*.json`) is counted again from the history stored beside it. Exit 0 when
every verdict and count a file stores equals the derived one (or it stores none), 1 when any differs (each
difference is one line on stderr), 2 when a file cannot be read as artifacts (one line naming file and field) or an
exploration cannot be counted again (no history beside it). Every file that can be judged is judged and printed,
whatever another file holds.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .derive import judged
from .load import BadInput, read
from .model import Scenario, printable
from .published import PUBLISHED, shipped
from .reliability import Exploration, explored
from .tables import as_text, exploration_text


def judge_file(path: str) -> Scenario | Exploration:
    """A scenario file judged, or an exploration counted again from its stored history; a file of
    results/published/ is judged only while it holds the published bytes, and only a file holding them (wherever
    it lies) is judged as a published real-service run."""
    top, where = read(path), Path(path).resolve()
    if where.parent == PUBLISHED:
        shipped(where)
    if top.has("violation_kinds"):
        return explored(top, Path(path), path)
    if not top.has("cells"):  # a tamper corpus or a benchmark file: `make results` reads those, there is no verdict
        raise BadInput(top.file, "cells", "missing: not a scenario run (cells) nor an exploration (violation_kinds), "
                                          "the files this command re-judges")
    return judged(top, path)


def judge_main(argv: list[str]) -> int:
    """Print a table per scenario (or every cell and disagreement as JSON), then every disagreement, loudly."""
    parser = argparse.ArgumentParser(prog="python -m pipeline judge", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", metavar="FILE", help="result file (results/*/*.json)")
    parser.add_argument("--json", action="store_true", help="print {cells, explorations, disagreements} as one JSON object")
    args = parser.parse_args(argv)
    files: list[Scenario | Exploration] = []
    unreadable = []
    for path in args.files:
        try:
            files.append(judge_file(path))
        except BadInput as exc:
            unreadable.append(printable(str(exc)))
    scenarios = [f for f in files if isinstance(f, Scenario)]
    explorations = [f for f in files if isinstance(f, Exploration)]
    found = [d for f in files for d in f.disagreements]
    if args.json and files:
        print(json.dumps({"cells": [{"file": s.source, **cell.as_json()} for s in scenarios for cell in s.cells],
                          "explorations": [_counts(run) for run in explorations],
                          "disagreements": [d.as_json() for d in found]}, indent=1))
    elif files:
        print("\n\n".join(as_text(f) if isinstance(f, Scenario) else exploration_text(f) for f in files))
    for disagreement in found:
        print(f"disagreement: {disagreement.line()}", file=sys.stderr)
    uncounted = [run for run in explorations if run.recounted is None]
    for run in uncounted:
        print(f"not counted again: {printable(run.source)} has no history beside it", file=sys.stderr)
    for line in unreadable:
        print(line, file=sys.stderr)
    return 2 if unreadable or uncounted else 1 if found else 0


def _counts(run: Exploration) -> dict[str, object]:
    """The `judge --json` object of an exploration: its counts per system and violation kind."""
    return {"file": run.source, "scenario": run.scenario, "hazard": run.hazard, "journal": run.journal,
            "counted_from": run.recounted,
            "systems": {s.system: {"schedules": s.schedules, "held": s.held, "violated": s.violated,
                                   "violated_in_window": s.violated_in_window,
                                   "violations": {v.kind: {"count": v.count, "in_window": v.in_window}
                                                  for v in s.violations}} for s in run.systems}}
