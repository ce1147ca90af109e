"""One worker of the explorer's ledger scenario: `python -m experiments.explore.ledger_worker <system> <phase>
<case_dir>`.

The agent posts one entry to an account on the ledger stand-in (a tier-2 service: lookup by effect id, no
dedupe, writes that may land seconds after they arrived), decided while the account stood at a version and while
its authorization (the case's lease.json) was live. Phase `decide` sends it; phase `restart` takes the job over.
The worker prints its final status as one line and exits 0; a send that failed without an answer exits 1.

The send function is the caller's code, where the explorer may plant a bug or a late request
(`experiments.planted`).
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, cast

from experiments import crash, planted
from experiments.atomic import write_json
from experiments.journals import JOURNAL_URL_ENV

SYSTEMS = ("no_check", "hand_check", "interlock")
PHASES = ("decide", "restart")
USAGE = f"usage: python -m experiments.explore.ledger_worker {{{','.join(SYSTEMS)}}} {{{','.join(PHASES)}}} CASE_DIR"
CASE_FILE, LEASE_FILE, JOB_FILE, LOG_FILE, JOURNAL_FILE = "case.json", "lease.json", "job.json", "log.jsonl", \
    "journal.jsonl"
CLAIM_TTL_ENV = "EXPLORE_CLAIM_TTL"
CLAIM_WAIT_SECONDS = 10.0
REQUEST_TIMEOUT_SECONDS = 10.0
AGENT = "ledger-agent"
PREMISE = "account_version"
# The longest a request the ledger holds can still land: its largest write delay, with room for the exchange.
IN_FLIGHT_SECONDS = 2.5


def _call(method: str, url: str, body: dict[str, Any] | None = None,
          headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_SECONDS) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read() or b"{}")


class Ledger:
    """The agent's client for the case's ledger and account."""

    def __init__(self, case: dict[str, Any]):
        self.endpoint, self.resource, self.amount = case["endpoint"], case["resource"], case["amount"]

    def version(self) -> int:
        """The account's version now (every applied write bumps it)."""
        return cast(int, _call("GET", f"{self.endpoint}/resources/{self.resource}")[1]["version"])

    def writer(self) -> str | None:
        """Who wrote the account last."""
        return cast(str | None, _call("GET", f"{self.endpoint}/resources/{self.resource}")[1]["writer"])

    def put(self, effect_id: str, epoch: int | None = None, if_match: int | None = None) -> dict[str, Any]:
        """Post the entry; the service's record of it (a dedupe's refusal carries the record already there).
        Any other refusal is the service's definite no."""
        from interlock import Rejected

        headers = {"X-Epoch": str(epoch)} if epoch is not None else {}
        if if_match is not None:
            headers["If-Match"] = str(if_match)
        status, answer = _call("PUT", f"{self.endpoint}/effects/{effect_id}",
                               {"resource": self.resource, "amount": self.amount, "agent": AGENT}, headers)
        if status == 409 and isinstance(answer.get("record"), dict):
            return cast(dict[str, Any], answer["record"])
        if status != 200:
            raise Rejected(f"ledger answered {status}: {answer.get('error')}", precondition=status == 412)
        return answer

    def find(self, effect_id: str) -> dict[str, Any] | None:
        """The service's record of the effect, or None."""
        status, answer = _call("GET", f"{self.endpoint}/effects/{effect_id}")
        return answer if status == 200 else None

    def fence(self, effect_id: str, epoch: int) -> None:
        """Raise the effect's epoch at the ledger: a write of an older epoch still in flight is refused."""
        status, answer = _call("POST", f"{self.endpoint}/fences/{effect_id}", {}, {"X-Epoch": str(epoch)})
        if status != 200:
            raise RuntimeError(f"ledger answered {status} to the fence: {answer.get('error')}")


def lease_live(case_dir: Path) -> bool:
    """The authorization stands while lease.json says live."""
    return cast(bool, json.loads((case_dir / LEASE_FILE).read_text())["status"] == "live")


def gated(phase: str, case_dir: Path, case: dict[str, Any], ledger: Ledger) -> str:
    """The gate: the account's version as premise, lease.json as lease, the ledger as a tier-2 target (tier 1
    with the dedupe) that declares what its fence covers, and an in-flight bound for what it does not."""
    from interlock import (DEDUPE, EPOCH, CallableLease, Effect, FileClaims, FunctionTarget, Gate, Journal, Premise,
                           open_journal)
    from interlock.claims import DEFAULT_TTL
    from interlock.targets import TIER_DEDUPE, TIER_LOOKUP

    fence = case["fence"]

    def send(effect_id: str, payload: dict[str, Any], epoch: int | None = None) -> dict[str, Any]:
        planted.strike(planted.BEFORE_REQUEST)
        record = ledger.put(effect_id, epoch, case["decided_version"] if fence == "version" else None)
        planted.strike(planted.AFTER_APPLY)
        return record

    def find(effect_id: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        return ledger.find(effect_id)

    def shut(effect_id: str, payload: dict[str, Any], epoch: int) -> None:
        ledger.fence(effect_id, epoch)

    tier = TIER_DEDUPE if fence == "dedupe" else TIER_LOOKUP
    # The version precondition refuses a stray write once the account moved, and a second write (the first moved
    # it); the dedupe refuses a second write only; the epoch fence refuses every write of an older epoch once
    # recovery raised it (`shut`). What no fence covers waits out the bound.
    fences = {"version": (PREMISE, DEDUPE), "dedupe": (DEDUPE,), "epoch": (EPOCH,)}.get(fence, ())
    target = FunctionTarget("ledger", send, tier=tier, find=find, fences=fences, in_flight=IN_FLIGHT_SECONDS,
                            takes_epoch=fence == "epoch", shut=shut if fence == "epoch" else None)
    premise = Premise(PREMISE, ledger.version, decided=case["decided_version"],
                      own_write=lambda now, was, effect_id: now == was + 1 and ledger.writer() == effect_id)
    lease = CallableLease(lambda: lease_live(case_dir), lambda: json.loads((case_dir / LEASE_FILE).read_text()))
    effect = Effect(case["key"], {"resource": case["resource"], "amount": case["amount"]}, [premise], lease, AGENT)
    ttl = float(os.environ.get(CLAIM_TTL_ENV, str(DEFAULT_TTL)))
    url = os.environ.get(JOURNAL_URL_ENV)
    if url:
        journal, claims = open_journal(url, claim_ttl=ttl)
    else:
        journal = Journal(case_dir / JOURNAL_FILE)
        claims = FileClaims(f"{journal.path}.claims", ttl=ttl)
    outcome = Gate(journal, target, claims=claims, claim_wait=CLAIM_WAIT_SECONDS, hooks=crash.HOOK).submit(effect)
    if url:  # the checker reads the effect's entries from the case's journal file
        from experiments.journals import case_bundle

        case_bundle(journal, effect.effect_id, case_dir / JOURNAL_FILE)
    return str(outcome.status)


def baseline(system: str, phase: str, case_dir: Path, case: dict[str, Any], ledger: Ledger) -> str:
    """A queued job (job.json), sent plainly (no_check) or after a look at the lease, the account's version and
    the service's record of the job (hand_check); each logs its send before sending and its result after."""
    job_path = case_dir / JOB_FILE
    if phase == "decide" and not job_path.exists():
        write_json(job_path, {"effect_id": case["effect_id"], "decided_version": case["decided_version"]})
    job = json.loads(job_path.read_text())
    if "done" in job:
        return cast(str, job["done"])
    if system == "hand_check":
        if ledger.find(job["effect_id"]) is not None:
            return _done(case_dir, system, phase, job, "ALREADY_APPLIED")
        if not lease_live(case_dir):
            return _done(case_dir, system, phase, job, "REFUSED:lease")
        if ledger.version() != job["decided_version"]:
            return _done(case_dir, system, phase, job, "REFUSED:stale_premise")
    _log(case_dir, system, phase, event="send")
    crash.reach(crash.BEFORE_SEND if phase == "decide" else crash.RECOVERY_BEFORE_RESEND)
    crash.reach(crash.BEFORE_REQUEST)
    planted.strike(planted.BEFORE_REQUEST)
    ledger.put(job["effect_id"])
    crash.reach(crash.AFTER_COMMIT if phase == "decide" else crash.RECOVERY_AFTER_RESEND)
    planted.strike(planted.AFTER_APPLY)
    return _done(case_dir, system, phase, job, "WRITTEN")


def _done(case_dir: Path, system: str, phase: str, job: dict[str, Any], outcome: str) -> str:
    _log(case_dir, system, phase, event="result", outcome=outcome)
    write_json(case_dir / JOB_FILE, {**job, "done": outcome})
    return outcome


def _log(case_dir: Path, system: str, phase: str, **fields: Any) -> None:
    with open(case_dir / LOG_FILE, "a", encoding="utf-8") as out:
        out.write(json.dumps({"ts": time.time(), "system": system, "phase": phase, **fields}) + "\n")


def main(argv: list[str]) -> int:
    """Run one phase; exit 1 when the send ended without an answer, so the job stays for the next worker."""
    if len(argv) != 3 or argv[0] not in SYSTEMS or argv[1] not in PHASES or not Path(argv[2]).is_dir():
        print(USAGE, file=sys.stderr)
        return 2
    system, phase, case_dir = argv[0], argv[1], Path(argv[2])
    case = json.loads((case_dir / CASE_FILE).read_text())
    ledger = Ledger(case)
    if system == "interlock":
        outcome = gated(phase, case_dir, case, ledger)
    else:
        try:
            outcome = baseline(system, phase, case_dir, case, ledger)
        except OSError as exc:  # the answer was lost: nothing is marked done
            print(f"send failed without an answer: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
    print(outcome)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
