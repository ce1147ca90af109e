"""A gated worker run as a real OS process by the crash tests and the gate benchmark.

`python -m tests.gate_worker DIR --tier {1,1L,2,3} [--mode submit|recover|claim]` submits (or recovers) one
rollback effect against a local function target and prints the outcome as one JSON line. The world lives in DIR:

- `facts.json`  {"generation": "17", "writer": "human-deploy"}: the premise the effect was decided on
- `lease.json`  {"incident": "INC-1", "status": "open"}: the authority; anything but "open" is revoked
- `ledger.jsonl` one line per call the service received, appended under flock by the target itself: the ground
  truth the tests read. {"effect_id", "landed": bool, "payload"}; tier 1 answers a repeated id without landing.

Kill and pause points come from the environment (INTERLOCK_KILL_AT, INTERLOCK_PAUSE_AT) through the experiments'
crash hook, as in the scenarios.
`--mode claim` only takes the effect's claim and prints when it got it: what the claim-release timing measures.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from experiments import crash
from interlock import Effect, FileClaims, FunctionTarget, Gate, Premise
from interlock.backends import open_journal
from interlock.leases import CallableLease

KEY = "rollback:demo-bucket/config/app.json:INC-1"
PAYLOAD = {"body": '{"version": "v41"}', "to_version": "v41"}
TIERS = {"1": (1, False), "1L": (1, True), "2": (2, True), "3": (3, False)}


def write_json(path: Path, value: Any) -> None:
    """Replace a world file atomically, as a person's tool would."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value))
    os.replace(tmp, path)


def setup_world(directory: Path) -> None:
    """The world before the agent decides: generation 17 live, incident open, nothing sent."""
    directory.mkdir(parents=True, exist_ok=True)
    write_json(directory / "facts.json", {"generation": "17", "writer": "human-deploy"})
    write_json(directory / "lease.json", {"incident": "INC-1", "status": "open"})
    (directory / "ledger.jsonl").touch()


def ledger(directory: Path) -> list[dict[str, Any]]:
    """Every call the service received, in order."""
    path = directory / "ledger.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def landed_count(directory: Path, effect_id: str) -> int:
    """How many times the effect landed at the service: the ground truth."""
    return sum(1 for row in ledger(directory) if row["effect_id"] == effect_id and row["landed"])


def build_target(directory: Path, tier: str) -> FunctionTarget:
    """A function target whose service is the ledger file; tier 1 dedupes on the effect id."""
    level, can_lookup = TIERS[tier]
    path = directory / "ledger.jsonl"
    delay = float(os.environ.get("GATE_WORKER_SEND_DELAY", "0"))

    def send(effect_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        time.sleep(delay)
        with open(path, "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.seek(0)
            seen = [json.loads(line) for line in f.read().splitlines() if line.strip()]
            already = level == 1 and any(r["effect_id"] == effect_id and r["landed"] for r in seen)
            row = {"effect_id": effect_id, "landed": not already, "payload": payload, "pid": os.getpid()}
            f.write(json.dumps(row) + "\n")
            f.flush()
            os.fsync(f.fileno())
        return {"call": len(seen) + 1, "already_existed": already}

    def find(effect_id: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        for number, row in enumerate(ledger(directory), 1):
            if row["effect_id"] == effect_id and row["landed"]:
                return {"call": number}
        return None

    # The send appends to the ledger before it returns, so nothing is in flight once the sender is gone.
    return FunctionTarget(f"ledger-tier{tier}", send, tier=level, find=find if can_lookup else None, in_flight=0.0)


def build_effect(directory: Path, payload: dict[str, Any] | None = None) -> Effect:
    """The rollback as decided: premise on the live generation, lease on the open incident."""

    def generation() -> str:
        return json.loads((directory / "facts.json").read_text())["generation"]

    def annotate(now: Any) -> str:
        facts = json.loads((directory / "facts.json").read_text())
        return f" (deployed by {facts['writer']})" if facts.get("generation") == now else ""

    def lease() -> dict[str, Any]:
        return json.loads((directory / "lease.json").read_text())

    premise = Premise("generation", generation, annotate=annotate)
    return Effect(KEY, dict(payload or PAYLOAD), [premise], CallableLease(lambda: lease()["status"] == "open", lease),
                  agent="sre-agent")


def main(argv: list[str] | None = None) -> int:
    """Run one worker; print its outcome as JSON."""
    parser = argparse.ArgumentParser(prog="python -m tests.gate_worker")
    parser.add_argument("dir", type=Path)
    parser.add_argument("--tier", choices=sorted(TIERS), default="2")
    parser.add_argument("--mode", choices=("submit", "recover", "claim"), default="submit")
    parser.add_argument("--claim-wait", type=float, default=10.0)
    parser.add_argument("--payload", help="JSON payload instead of the default rollback")
    parser.add_argument("--journal", help="a journal address (a postgresql:// URL) instead of DIR/journal.jsonl")
    parser.add_argument("--claim-ttl", type=float, default=30.0, help="how long a stopped holder keeps its claim")
    args = parser.parse_args(argv)
    journal = args.dir / "journal.jsonl"
    effect = build_effect(args.dir, json.loads(args.payload) if args.payload else None)
    if args.mode == "claim":
        claims = FileClaims(f"{journal}.claims")
        print(json.dumps({"waiting": time.time()}), flush=True)
        claim = claims.acquire(effect.effect_id, args.claim_wait)
        print(json.dumps({"claimed_at": time.time(), "epoch": claim and claim.epoch}), flush=True)
        return 0 if claim else 1
    opened, claims = open_journal(args.journal or journal, claim_ttl=args.claim_ttl)
    gate = Gate(opened, build_target(args.dir, args.tier), claims=claims, claim_wait=args.claim_wait,
                hooks=crash.HOOK)
    started = time.monotonic()
    outcome = gate.recover(effect) if args.mode == "recover" else gate.submit(effect)
    print(json.dumps({"status": outcome.status, "effect_id": outcome.effect_id, "evidence": outcome.evidence,
                      "rechecked": outcome.rechecked and outcome.rechecked.journaled(), "seconds": time.monotonic() - started}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
