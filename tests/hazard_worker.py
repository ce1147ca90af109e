"""A gated worker over the ledger service (`experiments.services.ledger`), run as a real process by the hazard tests.

`python -m tests.hazard_worker DIR ENDPOINT [--mode submit|recover] [--fence none|version|epoch|dedupe]
[--in-flight S] [--ttl S] [--claim-wait S] [--bug] [--hang S] [--go FILE]`
submits (or recovers) one write and prints its outcome as one JSON line; with `--go` it starts, writes
`FILE.waiting`, and waits for FILE before it opens the journal, so a test can have it ready the moment another
worker dies. The target declares what the fence covers: the version premise and a second write (`version`), a second
write (`dedupe`, tier 1), a superseded epoch, which recovery raises at the ledger first (`epoch`). The lease is
`DIR/lease.json` ({"status": "open"}; anything else is revoked); the premise is the ledger resource's version, whose
own write (the ledger names the writer) is not a change. Kill and pause points come from the environment through the
experiments' crash hook. `--bug` makes the send raise KeyError before it sends anything: the caller's own error.
`--hang S` holds the send S seconds before its request, as a client does that retries a first attempt the service
never got.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from experiments import crash
from interlock import DEDUPE, EPOCH, CallableLease, Effect, FunctionTarget, Gate, Premise, Rejected
from interlock.backends import open_journal

KEY = "write:ledger/default:INC-7"


def http(method: str, url: str, body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """One exchange with the ledger; the status and the JSON answer."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def build_target(endpoint: str, fence: str, in_flight: float | None, bug: bool, hang: float) -> FunctionTarget:
    """The ledger as a tier-2 target; `fence` says what the service refuses."""

    def send(effect_id: str, payload: dict[str, Any], **epoch: int) -> Any:
        if bug:
            return payload["no such field"]
        time.sleep(hang)
        headers = {"Content-Type": "application/json"}
        if fence == "version":
            headers["If-Match"] = str(payload["if_match"])
        if epoch:
            headers["X-Epoch"] = str(epoch["epoch"])
        status, answer = http("PUT", f"{endpoint}/effects/{effect_id}", payload, headers)
        if status == 409 and isinstance(answer.get("record"), dict):  # the dedupe: the first write is there
            return {"version": answer["record"]["version"]}
        if status in (409, 412):
            raise Rejected(f"{status} {answer.get('error')}", precondition=status == 412)
        return {"version": answer["version"]}

    def find(effect_id: str, payload: dict[str, Any]) -> Any:
        status, answer = http("GET", f"{endpoint}/effects/{effect_id}")
        return {"version": answer["version"]} if status == 200 else None

    def shut(effect_id: str, payload: dict[str, Any], epoch: int) -> None:
        assert http("POST", f"{endpoint}/fences/{effect_id}", {}, {"X-Epoch": str(epoch)})[0] == 200

    fences = {"version": ("version", DEDUPE), "dedupe": (DEDUPE,), "epoch": (EPOCH,)}.get(fence, ())
    return FunctionTarget("ledger", send, tier=1 if fence == "dedupe" else 2, find=find, fences=fences,
                          in_flight=in_flight, takes_epoch=fence == "epoch", shut=shut if fence == "epoch" else None)


def build_effect(directory: Path, endpoint: str) -> Effect:
    """The write as decided: on the resource version the worker reads first, under the lease file."""

    def version() -> int:
        return http("GET", f"{endpoint}/resources/default")[1]["version"]

    def own_write(now: Any, was: Any, effect_id: str) -> bool:
        state = http("GET", f"{endpoint}/resources/default")[1]
        return state["version"] == now and state["writer"] == effect_id and now == was + 1

    def lease() -> dict[str, Any]:
        return json.loads((directory / "lease.json").read_text())

    decided = version()
    premise = Premise("version", version, decided=decided, own_write=own_write)
    return Effect(KEY, {"value": "v41", "if_match": decided}, [premise],
                  CallableLease(lambda: lease()["status"] == "open", lease), agent="hazard-agent")


def journal_address(directory: Path) -> str:
    """The world's journal: the database named in `journal.address` when there is one, else `journal.jsonl`."""
    named = directory / "journal.address"
    return named.read_text() if named.exists() else str(directory / "journal.jsonl")


GO_WAIT_SECONDS = 120  # a test that failed before its race never makes the file: the worker then gives up


def wait_for(go: Path) -> None:
    """Say this worker is up, then wait until `go` exists (exits after GO_WAIT_SECONDS without it)."""
    Path(f"{go}.waiting").touch()
    deadline = time.monotonic() + GO_WAIT_SECONDS
    while not go.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"{go} did not appear within {GO_WAIT_SECONDS} s")
        time.sleep(0.002)


def main(argv: list[str] | None = None) -> int:
    """Run one worker; print its outcome as JSON."""
    parser = argparse.ArgumentParser(prog="python -m tests.hazard_worker")
    parser.add_argument("dir", type=Path)
    parser.add_argument("endpoint")
    parser.add_argument("--mode", choices=("submit", "recover"), default="submit")
    parser.add_argument("--fence", choices=("none", "version", "epoch", "dedupe"), default="none")
    parser.add_argument("--in-flight", type=float, default=None)
    parser.add_argument("--ttl", type=float, default=30.0)
    parser.add_argument("--claim-wait", type=float, default=10.0)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--hang", type=float, default=0.0)
    parser.add_argument("--go", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.go is not None:
        wait_for(args.go)
    journal, claims = open_journal(journal_address(args.dir), claim_ttl=args.ttl)
    gate = Gate(journal, build_target(args.endpoint, args.fence, args.in_flight, args.bug, args.hang), claims=claims,
                claim_wait=args.claim_wait, hooks=crash.HOOK)
    effect = build_effect(args.dir, args.endpoint)
    if args.mode == "recover":
        effect = Effect(effect.key, gate.journal.entries(effect.effect_id)[0]["effect"], effect.premises,
                        effect.lease, effect.agent)
    outcome = gate.recover(effect) if args.mode == "recover" else gate.submit(effect)
    print(json.dumps({"status": outcome.status, "effect_id": outcome.effect_id, "evidence": outcome.evidence,
                      "error": outcome.error, "decide_at": outcome.decide_at}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
