"""A fresh offline run of the published faults, judged by the pipeline, gives every published cell's five columns
(outcome, agent writes, invariant, answer, proof) exactly as the published real-service run stored them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.calendar.scenario import Calendar
from experiments.gcp_resource.scenario import GcpResource
from experiments.runner import main
from pipeline.derive import derive

PUBLISHED = Path(__file__).resolve().parents[1] / "results" / "published"
SCENARIOS = {"gcp_resource": (GcpResource, []), "calendar": (Calendar, ["--raced-trials", "0"])}


def _stored(cell: dict) -> tuple:
    """The five columns as the published file stores them."""
    if "answer_matches_service" in cell:
        writes, answer = len(cell["ids"]["agent_write_generations"]), cell["answer_matches_service"]
    else:
        writes, answer = len(cell["ground_truth"]["agent_events"]), cell["answer_matches_calendar"]
    return cell["outcome"], writes, cell["invariant_held"], answer, cell["can_prove_what_happened"]


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> dict[str, Path]:
    """Both scenarios on their published faults, offline, every default system."""
    runs = {}
    for name, (scenario, extra) in SCENARIOS.items():
        out = tmp_path_factory.mktemp(name) / f"{name}.json"
        published = ",".join(f.name for f in scenario.faults if f.published)
        systems = ",".join(scenario.systems)  # the control system's 30 s waits add nothing to these columns
        assert main(scenario, ["--faults", published, "--systems", systems, *extra, "--out", str(out)]) == 0
        runs[name] = out
    return runs


def test_a_fresh_offline_run_reproduces_the_five_columns_of_every_published_cell(fresh):
    compared = 0
    for name, path in fresh.items():
        ours = derive(path)
        for cell in json.loads((PUBLISHED / f"{name}.json").read_text())["cells"]:
            mine = ours.cell(cell["fault"], cell["system"])
            assert mine is not None, (name, cell["fault"], cell["system"])
            columns = (mine.outcome, mine.agent_writes, mine.invariant_held, mine.answer_matches, mine.can_prove)
            assert columns == _stored(cell), (name, cell["fault"], cell["system"])
            compared += 1
    assert compared == 31
