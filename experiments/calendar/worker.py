"""`python -m experiments.calendar.worker --case DIR --system S --phase decide|restart`: run one booking job.

The worker reads the request, gets the job's decision (made once, persisted), sends the booking with the chosen
system, writes result.json and prints the outcome. Its fault points are armed by the harness (experiments.crash);
a lost answer from Calendar ends the worker with exit 1 and one line, leaving the job for the next worker.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from experiments import crash
from experiments.calendar.job import Job
from experiments.calendar.systems import LOST_ANSWER, SYSTEMS
from experiments.clients import calendar_service
from experiments.phases import PHASES


def main(argv: list[str] | None = None) -> int:
    """Run the job once and print its outcome."""
    parser = argparse.ArgumentParser(prog="python -m experiments.calendar.worker")
    parser.add_argument("--case", required=True, type=Path, help="the cell's directory")
    parser.add_argument("--system", required=True, choices=tuple(SYSTEMS))
    parser.add_argument("--phase", required=True, choices=PHASES)
    args = parser.parse_args(argv)
    job = Job(args.case, args.system, args.phase, calendar_service())
    try:
        result = SYSTEMS[args.system](job, job.decision(), crash.HOOK)
    except LOST_ANSWER as exc:
        job.note(f"{args.phase} worker: Calendar's answer was lost ({type(exc).__name__}: {exc})")
        print(f"worker: Calendar's answer was lost ({type(exc).__name__}); the job stays queued", file=sys.stderr)
        return 1
    job.finish(result)
    print(result["outcome"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
