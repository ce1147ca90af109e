"""Schedules the explorer found breaking one of the gate's rules, each replayed as the smallest run that shows it,
through the same stand-ins and real worker processes."""

from __future__ import annotations

import pytest

from experiments.explore import SAFETY, check, schedule_for
from experiments.explore.processes import Forker
from experiments.explore.runner import run
from experiments.explore.worlds import world


def _replay(tmp_path, scenario: str, hazard: str, seed: int, system: str = "interlock") -> dict:
    forker = Forker()
    try:
        with world(scenario, tmp_path / "world") as explored:
            return run(explored, forker, schedule_for(scenario, seed, hazard), system, tmp_path / "runs")
    finally:
        forker.stop()


# python -m experiments.explore --scenario calendar --hazard slow_service --replay 0 (request cancelled), and
# --scenario gcp_resource --hazard slow_service --replay 9 (incident resolved): the first sender is SIGKILLed while
# the service holds its write for 1.5-1.9 s, the authority ends, one recoverer runs.
@pytest.mark.parametrize(("scenario", "seed"), [("calendar", 0), ("gcp_resource", 9)])
def test_a_write_in_flight_when_its_sender_died_is_never_recorded_as_refused(tmp_path, scenario, seed):
    for attempt in range(3):  # a loaded machine can kill the sender before its request reached the service
        row = _replay(tmp_path / str(attempt), scenario, "slow_service", seed)
        assert [v for v in check(row) if v.kind in SAFETY] == []
        if row["in_flight"]["received"] and row["truth"]["writes"]:
            break
    else:
        pytest.fail("in three replays the request never outlived its sender and landed")
