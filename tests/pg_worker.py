"""A gate worker process on a journal (PostgreSQL or JSONL) and a file ledger; plus the throwaway cluster fixtures.

Run as a script: `python tests/pg_worker.py --journal URL --ledger FILE --keys a,b,c` submits each key's effect
through the gate and prints one JSON line per effect. INTERLOCK_KILL_AT / INTERLOCK_PAUSE_AT stop it at a named
point (the experiments' crash hook, experiments.crash). The ledger is the stand-in service and the ground truth: one line per apply,
never deduplicated, so a second send of an effect shows as a second line.
"""

from __future__ import annotations

import argparse
import fcntl
import itertools
import json
import os
import random
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from experiments import crash
from interlock import Effect, FunctionTarget, Gate
from interlock.backends import open_journal

WORKER = Path(__file__).resolve()


class FileLedger:
    """The stand-in service: applying an effect appends a line; lookup finds it by effect id."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)

    def apply(self, effect_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Append the effect (no dedupe: a resend is a second line)."""
        with open(self.path, "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.write(json.dumps({"effect_id": effect_id, "pid": os.getpid(), "payload": payload}) + "\n")
            f.flush()
            os.fsync(f.fileno())
        return {"ledger": effect_id, "pid": os.getpid()}

    def lookup(self, effect_id: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        """The first line for this effect, or None."""
        return next((line for line in self.lines() if line["effect_id"] == effect_id), None)

    def lines(self) -> list[dict[str, Any]]:
        """Every applied effect, in order."""
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line]

    def counts(self) -> Counter[str]:
        """How many times each effect was applied."""
        return Counter(line["effect_id"] for line in self.lines())

    def target(self) -> FunctionTarget:
        """The ledger as a tier-2 target: no dedupe, lookup by effect id."""
        return FunctionTarget("ledger", self.apply, tier=2, find=self.lookup, in_flight=0.0)  # applied before it returns


def effect_for(key: str) -> Effect:
    """The effect a worker submits for a key: the same key gives the same effect id in every process."""
    return Effect(key, {"key": key, "amount": 1})


def main(argv: list[str] | None = None) -> int:
    """Submit (or recover) every key's effect and print the outcomes."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--journal", required=True)
    parser.add_argument("--ledger", required=True)
    parser.add_argument("--keys", required=True, help="comma-separated request keys")
    parser.add_argument("--ttl", type=float, default=30.0, help="claim lease in seconds (PostgreSQL)")
    parser.add_argument("--wait", type=float, default=30.0, help="how long to wait for a held claim")
    parser.add_argument("--shuffle", type=int, help="submit the keys in an order shuffled by this seed")
    args = parser.parse_args(argv)
    journal, claims = open_journal(args.journal, claim_ttl=args.ttl)
    gate = Gate(journal, FileLedger(args.ledger).target(), claims=claims, claim_wait=args.wait, hooks=crash.HOOK)
    keys = args.keys.split(",")
    if args.shuffle is not None:
        random.Random(args.shuffle).shuffle(keys)
    for key in keys:
        outcome = gate.submit(effect_for(key))
        print(json.dumps({"key": key, "effect_id": outcome.effect_id, "status": outcome.status, "pid": os.getpid()}),
              flush=True)
    return 0


def worker_command(journal: str, ledger: Path, keys: list[str], **options: Any) -> list[str]:
    """The argv that runs this worker."""
    extra = list(itertools.chain.from_iterable((f"--{k}", str(v)) for k, v in options.items()))
    return [sys.executable, str(WORKER), "--journal", journal, "--ledger", str(ledger), "--keys", ",".join(keys),
            *extra]


def outcomes(stdout: str) -> list[dict[str, Any]]:
    """The JSON lines a worker printed."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


@pytest.fixture(scope="session")
def pg_cluster():
    """A private PostgreSQL cluster for the whole session, deleted afterwards."""
    pytest.importorskip("psycopg")
    from experiments.services.postgres import PgBinariesMissing, TempCluster

    try:
        cluster = TempCluster()
    except PgBinariesMissing as missing:
        pytest.skip(str(missing))
    yield cluster
    cluster.stop()


@pytest.fixture
def pg_url(pg_cluster) -> str:
    """A fresh, empty database on the session's cluster."""
    return pg_cluster.create_database(f"t_{uuid.uuid4().hex[:12]}")


if __name__ == "__main__":
    sys.exit(main())
