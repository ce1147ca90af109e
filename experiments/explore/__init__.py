"""The crash-schedule explorer: seeded schedules of SIGKILLs, outage actions, network cuts and concurrent
recoverers, run over the real stand-ins and the scenarios' real worker processes, checked against the service.

`python -m experiments.explore --scenario gcp_resource --schedules 1000` writes results/reliability/
explore_<scenario>.json; a violation prints the one command that replays its schedule.
"""

from experiments.explore.checks import VIOLATIONS, Violation, check
from experiments.explore.schedules import SCENARIOS, Schedule, schedule_for

__all__ = ["SCENARIOS", "Schedule", "VIOLATIONS", "Violation", "check", "schedule_for"]
