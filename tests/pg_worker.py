"""A gate worker process on a journal (PostgreSQL or JSONL) and a file ledger; plus the throwaway cluster fixtures.

From the repository root, `python -m tests.pg_worker --journal URL --ledger FILE --keys a,b,c` submits each key's
effect through the gate and prints one JSON line per effect. INTERLOCK_KILL_AT / INTERLOCK_PAUSE_AT stop it at a named
point (the experiments' crash hook, experiments.crash). The ledger is the stand-in service and the ground truth:
either a file (`--ledger FILE`: one line per apply, never deduplicated, so a second send shows as a second line)
or the ledger write service over HTTP (`--service URL`, experiments.services.ledger: slow writes that outlive
their sender, an apply count per effect, optionally a fence on the claim epoch).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import random
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from experiments import crash
from interlock import Effect, FunctionTarget, Gate, InterlockError
from interlock.backends import open_journal
from interlock.targets.base import TIER_LOOKUP, Rejected

ROOT = Path(__file__).resolve().parents[1]  # the worker runs as `python -m tests.pg_worker` from here


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
        return FunctionTarget("ledger", self.apply, tier=2, find=self.lookup, in_flight=0.0)  # applied on return


@dataclass
class LedgerTarget:
    """The ledger write service as a tier-2 target: no dedupe, a lookup by effect id.

    `in_flight` is the longest one of its writes can still land after its sender died (its delay, plus slack);
    with `takes_epoch` every write carries the claim epoch, which a service with the epoch fence refuses once a
    higher one was seen.
    """

    endpoint: str
    in_flight: float | None = None
    takes_epoch: bool = False
    name: str = "ledger"
    tier: int = TIER_LOOKUP
    can_lookup: bool = True

    def apply(self, effect_id: str, payload: dict[str, Any], *, epoch: int | None = None) -> dict[str, Any]:
        """PUT the effect; a 409 or 412 is a definite no."""
        headers = {"Content-Type": "application/json", **({"X-Epoch": str(epoch)} if epoch is not None else {})}
        request = urllib.request.Request(f"{self.endpoint}/effects/{effect_id}", data=json.dumps(payload).encode(),
                                         headers=headers, method="PUT")
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return json.load(answer)
        except urllib.error.HTTPError as refused:
            if refused.code in (409, 412):
                raise Rejected(f"ledger {refused.code}: {refused.read().decode()}",
                               precondition=refused.code == 412) from None
            raise

    def lookup(self, effect_id: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        """The applied record, or None on 404."""
        try:
            with urllib.request.urlopen(f"{self.endpoint}/effects/{effect_id}", timeout=30) as answer:
                return json.load(answer)
        except urllib.error.HTTPError as missing:
            if missing.code == 404:
                return None
            raise


def effect_for(key: str) -> Effect:
    """The effect a worker submits for a key: the same key gives the same effect id in every process."""
    return Effect(key, {"key": key, "amount": 1})


def main(argv: list[str] | None = None) -> int:
    """Submit (or recover) every key's effect and print the outcomes."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--journal", required=True)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--ledger", help="a file ledger")
    where.add_argument("--service", help="the ledger write service's base URL")
    parser.add_argument("--in-flight", type=float, help="the service target's in_flight bound in seconds")
    parser.add_argument("--epoch", action="store_true", help="pass the claim epoch to the service")
    parser.add_argument("--keys", required=True, help="comma-separated request keys")
    parser.add_argument("--ttl", type=float, default=30.0, help="claim lease in seconds (PostgreSQL)")
    parser.add_argument("--wait", type=float, default=30.0, help="how long to wait for a held claim")
    parser.add_argument("--shuffle", type=int, help="submit the keys in an order shuffled by this seed")
    args = parser.parse_args(argv)
    journal, claims = open_journal(args.journal, claim_ttl=args.ttl)
    target = (FileLedger(args.ledger).target() if args.ledger else
              LedgerTarget(args.service, in_flight=args.in_flight, takes_epoch=args.epoch))
    gate = Gate(journal, target, claims=claims, claim_wait=args.wait, hooks=crash.HOOK)
    keys = args.keys.split(",")
    if args.shuffle is not None:
        random.Random(args.shuffle).shuffle(keys)
    for key in keys:
        try:
            outcome = gate.submit(effect_for(key))
        except InterlockError as exc:  # what the caller is told: the library's error, and what it knows of the send
            print(json.dumps({"key": key, "status": None, "error": type(exc).__name__,
                              "sent": getattr(exc, "sent", None), "message": str(exc), "pid": os.getpid()}),
                  flush=True)
            continue
        print(json.dumps({"key": key, "effect_id": outcome.effect_id, "status": outcome.status, "pid": os.getpid()}),
              flush=True)
    return 0


def worker_command(journal: str, ledger: Path | str, keys: list[str], **options: Any) -> list[str]:
    """The argv that runs this worker: `ledger` is a file, or the ledger service's http:// base URL."""
    flags: list[str] = []
    for name, value in options.items():
        flag = f"--{name.replace('_', '-')}"
        flags += [flag] if value is True else [flag, str(value)]
    where = ["--service", ledger] if str(ledger).startswith("http://") else ["--ledger", str(ledger)]
    return [sys.executable, "-m", "tests.pg_worker", "--journal", journal, *where, "--keys", ",".join(keys), *flags]


def outcomes(stdout: str) -> list[dict[str, Any]]:
    """The JSON lines a worker printed."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def start(journal: str, ledger: Path | str, keys: list[str], env: dict[str, str] | None = None,
          **options: Any) -> subprocess.Popen:
    """Start a worker process on `journal` and `ledger` (a file or the service's URL)."""
    return subprocess.Popen(worker_command(journal, ledger, keys, **options), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}, cwd=ROOT)


def paused_at(point: str, pause: Path) -> dict[str, str]:
    """The environment that pauses a worker at `point` until `pause` is removed."""
    return {"INTERLOCK_PAUSE_AT": point, "INTERLOCK_PAUSE_FILE": str(pause)}


def wait_for_file(path: Path, proc: subprocess.Popen, timeout: float = 30) -> None:
    """Until the worker wrote `path` (it reached its pause point), failing if it died first."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, f"worker never reached {path.name}"
        time.sleep(0.01)


def wait_for_put(ledger: Any, effect_id: str, proc: subprocess.Popen, timeout: float = 30) -> None:
    """Until the ledger service received the worker's write (it lands only after the service's delay)."""
    deadline = time.monotonic() + timeout
    while not any(e["event"] == "put" and e["id"] == effect_id for e in ledger.log()):
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "the worker's write never reached the service"
        time.sleep(0.01)


def finish(proc: subprocess.Popen, timeout: float = 120) -> list[dict[str, Any]]:
    """The outcomes of a worker that exited cleanly."""
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return outcomes(out)


def statuses(proc: subprocess.Popen) -> list[str]:
    """The statuses a worker reported, in order (an error's name where the caller got an error)."""
    return [o["status"] or o["error"] for o in finish(proc)]


def resolutions(journal: Any, effect_id: str) -> list[dict[str, Any]]:
    """The effect's resolving entries (a LATE_RESULT is not one)."""
    return [e for e in journal.entries(effect_id) if e["kind"] in ("COMMITTED", "REFUSED", "AMBIGUOUS")]


def terminate_sessions(url: str) -> int:
    """End every other session on the database (the workers' claims and journal sessions alike)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as admin:
        return len(admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname ="
                                 " current_database() AND pid <> pg_backend_pid()").fetchall())


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


# On PostgreSQL a holder killed inside a request keeps its claim until its lease runs out (it may be alive, its
# request on its way): tests that kill or stop holders use a short lease, so a successor takes over within its wait.
SHORT_LEASE = 1.0


def fresh_database(cluster: Any, prefix: str = "t") -> str:
    """The address of a new, empty database on `cluster`."""
    return cluster.create_database(f"{prefix}_{uuid.uuid4().hex[:12]}")


@pytest.fixture
def pg_url(pg_cluster) -> str:
    """A fresh, empty database on the session's cluster."""
    return fresh_database(pg_cluster)


if __name__ == "__main__":
    sys.exit(main())
