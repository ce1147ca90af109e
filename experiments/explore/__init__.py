"""The crash-schedule explorer: seeded schedules of one hazard each (SIGKILLs, outage actions, network cuts,
concurrent recoverers, slow services, stopped senders, cut journals, raising sends, lost database sessions), run
over the real stand-ins and real worker processes, stored as history rows and checked from those rows alone.

`python -m experiments.explore --scenario gcp_resource --hazard sigstop --schedules 1000` writes results/
reliability/explore_gcp_resource_sigstop.json and its history; a violation prints the one command that replays
its schedule.
"""

from experiments.explore.checks import SAFETY, VIOLATIONS, Violation, check
from experiments.explore.hazards import HAZARDS, Hazard, result_name
from experiments.explore.schedules import SCENARIOS, Interrupt, Schedule, schedule_for

__all__ = ["HAZARDS", "Hazard", "Interrupt", "SAFETY", "SCENARIOS", "Schedule", "VIOLATIONS", "Violation", "check",
           "result_name", "schedule_for"]
