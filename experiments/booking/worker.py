"""`python -m experiments.booking.worker --case DIR --system S --phase decide|restart`: run one booking job.

The worker reads the request, gets the job's decision (made once, persisted), sends the booking with the chosen
system, writes result.json and prints the outcome. Kill and pause points come from the environment
(INTERLOCK_KILL_AT, INTERLOCK_PAUSE_AT); a lost answer from Calendar ends the worker with exit 1 and one line,
leaving the job for the next worker.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from experiments.booking.faults import SYSTEMS
from experiments.booking.job import Job
from experiments.booking.systems import LOST_ANSWER, SYSTEM_RUNS
from experiments.clients import calendar_service


def main(argv: list[str] | None = None) -> int:
    """Run the job once and print its outcome."""
    parser = argparse.ArgumentParser(prog="python -m experiments.booking.worker")
    parser.add_argument("--case", required=True, type=Path, help="the cell's directory")
    parser.add_argument("--system", required=True, choices=SYSTEMS)
    parser.add_argument("--phase", required=True, choices=("decide", "restart"))
    args = parser.parse_args(argv)
    job = Job(args.case, args.system, args.phase, calendar_service())
    try:
        result = SYSTEM_RUNS[args.system](job, job.decision())
    except LOST_ANSWER as exc:
        job.log("error", error=f"{type(exc).__name__}: {exc}")
        print(f"worker: Calendar's answer was lost ({type(exc).__name__}); the job stays queued", file=sys.stderr)
        return 1
    job.finish(result)
    print(result["outcome"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
