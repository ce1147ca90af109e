"""One worker process: `python -m experiments.gcp_resource.worker --case DIR --system S --phase decide|restart`.

Phase `decide` acts on the persisted decision (the first worker, which the harness may SIGKILL at a crash point);
phase `restart` is the new worker that takes the job over. Either prints its final status as one line, leaves
outcome_<phase>.json with the time it settled, and exits 0; a send that fails without an answer exits 1 and
leaves the job to the next worker.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from experiments import crash
from experiments.atomic import write_json
from experiments.clients import storage_client
from experiments.gcp_resource.case import CASE_FILE, DECISION_FILE, body, outcome_file, read_json
from experiments.gcp_resource.systems import SYSTEMS
from experiments.phases import PHASES


def run(system: str, phase: str, case_dir: Path) -> str:
    """Act on the case's decision with one system and return the final status."""
    case = read_json(case_dir / CASE_FILE)
    decision = read_json(case_dir / DECISION_FILE)
    client = storage_client()
    config = body(decision["to_version"])
    outcome, ids = SYSTEMS[system](system, phase, case_dir, client, case, decision, config, crash.HOOK)
    write_json(case_dir / outcome_file(phase), {"outcome": outcome, "ids": ids, "settled_at": time.time()})
    return outcome


def main(argv: list[str] | None = None) -> int:
    """Run one phase; exit 1 when the send's answer was lost, so the job stays for the next worker."""
    parser = argparse.ArgumentParser(prog="python -m experiments.gcp_resource.worker")
    parser.add_argument("--case", required=True, type=Path, help="the cell's directory")
    parser.add_argument("--system", required=True, choices=tuple(SYSTEMS))
    parser.add_argument("--phase", required=True, choices=PHASES)
    args = parser.parse_args(argv)
    try:
        outcome = run(args.system, args.phase, args.case)
    except Exception as exc:  # the answer was lost (a cut connection): nothing is marked done
        print(f"send failed without an answer: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(outcome)
    return 0


if __name__ == "__main__":
    sys.exit(main())
