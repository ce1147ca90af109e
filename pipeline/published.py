"""The published real-service runs, shipped byte for byte in results/published/ and re-judged like any other run.

Their figures for the published-beside-ours pages come from judging those files here, never from a transcription
of the published pages; every verdict the files store is compared with the derived one on the way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .derive import derive
from .digests import SHA256, sha256
from .load import BadInput
from .model import Scenario

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = REPO / "results" / "published"

# How the published pages scored proof (a fact about those pages, shown beside them); this pipeline applies one
# rule to both scenarios: actor named, checks recorded, and the record's list equals the service's.
PROOF_RULE = {
    "gcp_resource": "actor named, checks recorded, and the record's list of agent generations equals the "
                    "store's list (the rule this pipeline applies to every scenario)",
    "calendar": "a valid receipt exists; the record was not compared with the calendar",
}


def published_files(folder: Path = PUBLISHED) -> list[Path]:
    """The shipped published result files, in name order."""
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def figures(scenario: Scenario) -> dict[str, Any]:
    """A judged published run as the figures its comparison page shows, with the judged scenario beside them."""
    return {
        "page": scenario.title,
        "generated": scenario.provenance.generated,
        "model": scenario.provenance.decider,
        "proof_rule": PROOF_RULE[scenario.name],
        "cells": [{k: v for k, v in c.as_json().items() if k != "scenario"} for c in scenario.cells],
        "scenario": scenario,
        "disagreements": scenario.disagreements,
    }


def shipped(path: Path) -> Path:
    """A file of results/published/ whose bytes are the published artifact's; BadInput naming both digests if not."""
    digest, stated = sha256(path), SHA256.get(path.name)
    if digest == stated:
        return path
    shown = str(path.relative_to(REPO) if path.is_relative_to(REPO) else path)
    said = f"the published digest is {stated}" if stated else "results/published/README.md states no digest for it"
    raise BadInput(shown, "sha256", f"{digest}, but {said}: this is not the published run")


def published_runs(folder: Path | None = None) -> dict[str, dict[str, Any]]:
    """Every shipped published run, re-judged from its artifacts, by scenario name: each file of results/published/
    must have its published digest; the files of a folder given instead (a test's edited copies) are judged as
    they are."""
    files = published_files(folder) if folder is not None else [shipped(path) for path in published_files(PUBLISHED)]
    return {scenario.name: figures(scenario) for scenario in map(derive, files)}
