"""One worker process of the scenario: `python -m experiments.gcp_resource.worker <system> <phase> <case_dir>`.

Phase `decide` acts on the persisted decision (the first worker, which the harness may SIGKILL at a crash point);
phase `restart` is the new worker that takes the job over. Either prints its final status as one line, leaves
outcome_<phase>.json with the time it settled, and exits 0; a send that fails without an answer exits 1 and
leaves the job to the next worker.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from experiments.clients import storage_client
from experiments.gcp_resource.case import CASE_FILE, DECISION_FILE, body, outcome_file, read_json
from experiments.harness import write_result

SYSTEMS = ("no_check", "hand_check", "interlock", "interlock_ttl")
PHASES = ("decide", "restart")
USAGE = f"usage: python -m experiments.gcp_resource.worker {{{','.join(SYSTEMS)}}} {{{','.join(PHASES)}}} CASE_DIR"


def run(system: str, phase: str, case_dir: Path) -> str:
    """Act on the case's decision with one system and return the final status."""
    case = read_json(case_dir / CASE_FILE)
    decision = read_json(case_dir / DECISION_FILE)
    client = storage_client()
    config = body(decision["to_version"])
    if system.startswith("interlock"):
        from experiments.gcp_resource import gated

        outcome, ids = gated.submit(system, phase, case_dir, client, case, decision, config)
    else:
        from experiments.gcp_resource import baselines

        if phase == "decide":
            baselines.enqueue(case_dir, case, decision, config)
        outcome, ids = baselines.run_job(system, phase, case_dir, client)
    write_result(case_dir / outcome_file(phase), {"outcome": outcome, "ids": ids, "settled_at": time.time()})
    return outcome


def main(argv: list[str]) -> int:
    """Run one phase; exit 1 when the send's answer was lost, so the job stays for the next worker."""
    if len(argv) != 3 or argv[0] not in SYSTEMS or argv[1] not in PHASES or not Path(argv[2]).is_dir():
        print(USAGE, file=sys.stderr)
        return 2
    try:
        outcome = run(argv[0], argv[1], Path(argv[2]))
    except Exception as exc:  # the answer was lost (a cut connection): nothing is marked done
        print(f"send failed without an answer: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(outcome)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
