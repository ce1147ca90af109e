"""`python -m experiments.peers.worker --scenario S --system P --phase decide|restart --case DIR`: one peer worker.

The scenario builds the job (its write, crash points included), the peer runs it, and the worker leaves what it
observed: the scenario's outcome file (gcp_resource `outcome_<phase>.json`, calendar `result.json`) with the peer's
own answer, and `peer_record_<phase>.json` with the peer's record as the worker found it and as it left it (DBOS's
system database rows, the Powertools idempotency record in Redis). A send whose answer was lost exits 1 with one
line, leaving the job to the next worker, as the other systems' workers do.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from experiments import crash
from experiments.harness import write_result
from experiments.peers.job import DBOS_STEP, REDIS_URL_ENV, SCENARIOS, SYSTEMS


def run(scenario: str, system: str, phase: str, case_dir: Path) -> tuple[str, dict[str, Any]]:
    """Run the cell's job once with the peer and leave the scenario's outcome file."""
    if scenario == "gcp_resource":
        from experiments.clients import storage_client
        from experiments.peers import gcp_resource

        outcome, ids = gcp_resource.run(system, phase, case_dir, storage_client(), crash.reach)
    else:
        from experiments.booking.job import Job
        from experiments.clients import calendar_service
        from experiments.peers import calendar

        service = calendar_service()
        Job(case_dir, system, phase, service).decision()  # made once by the first worker, persisted for the next
        outcome, ids = calendar.run(system, phase, case_dir, service, crash.reach)
    _finish(scenario, system, phase, case_dir, outcome, ids)
    return outcome, ids


def _finish(scenario: str, system: str, phase: str, case_dir: Path, outcome: str, ids: dict[str, Any]) -> None:
    """The scenario's outcome file, with only what the worker observed."""
    if scenario == "gcp_resource":
        write_result(case_dir / f"outcome_{phase}.json", {"outcome": outcome, "ids": ids, "settled_at": time.time()})
    else:
        write_result(case_dir / "result.json", {"outcome": outcome, "event_id": ids.get("event_id"), "ids": ids,
                                                "system": system, "phase": phase, "pid": os.getpid(),
                                                "finished": time.time()})


def main(argv: list[str] | None = None) -> int:
    """Run one phase; exit 1 when the send's answer was lost, so the job stays for the next worker."""
    parser = argparse.ArgumentParser(prog="python -m experiments.peers.worker")
    parser.add_argument("--scenario", required=True, choices=SCENARIOS)
    parser.add_argument("--system", required=True, choices=SYSTEMS)
    parser.add_argument("--phase", required=True, choices=("decide", "restart"))
    parser.add_argument("--case", required=True, type=Path, help="the cell's directory")
    args = parser.parse_args(argv)
    if not args.case.is_dir():
        parser.error(f"--case {args.case}: not a directory")
    if args.system != DBOS_STEP and not os.environ.get(REDIS_URL_ENV):
        parser.error(f"{REDIS_URL_ENV} is not set: the Powertools peer needs the run's redis-server")
    try:
        outcome, _ = run(args.scenario, args.system, args.phase, args.case)
    except Exception as exc:  # the answer was lost (a cut connection): nothing is marked done
        print(f"send failed without an answer: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(outcome)
    return 0


if __name__ == "__main__":
    sys.exit(main())
