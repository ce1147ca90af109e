"""Where no fence stops a stray request: how long recovery takes past its in-flight bound, and how wide the window
is that a stopped sender can still send into.

Crash to settled: a real worker (the explorer's ledger worker, the ledger stand-in with no fence, the worker's
declared in-flight bound) is SIGKILLed by its own crash hook right before its request, after DISPATCHED is
durable; a restarted worker recovers at once. Recovery cannot know the request never left, so it may not resend
before DISPATCHED plus the bound: the target is the bound plus at most 0.2 s from the crash marker to the
resolution's journal entry. The excess is that time minus the bound.

Confirm to request: the only window the gate leaves where the service has no fence is a sender stopped after its
claim confirm and before its request for longer than the claim's lifetime. Its width in normal operation is the
time from the gate's `before_request` point (reached right after the confirm) to the request's arrival at the
ledger, over plain HTTP on loopback, measured in this process for many effects.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from experiments.atomic import write_json
from experiments.explore.ledger_worker import CLAIM_TTL_ENV, IN_FLIGHT_SECONDS
from experiments.services.ledger import ledger_service
from interlock import FileClaims, FunctionTarget, Gate, effect_id_for, hooks
from interlock.effects import Effect

from ._results import against
from ._scratch import scratch

ROOT = Path(__file__).resolve().parents[1]
TRIALS = 12
TARGET_MAX_EXCESS_SECONDS = 0.2
GAP_SAMPLES = 300
WORKER_TIMEOUT_SECONDS = 60.0


def _worker(phase: str, case: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "experiments.explore.ledger_worker", "interlock", phase, str(case)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=WORKER_TIMEOUT_SECONDS)


def _trial(root: Path, index: int) -> dict[str, float]:
    """One SIGKILL before the request and one recovery; seconds from the crash marker to the resolution."""
    case = root / f"case{index}"
    case.mkdir()
    with ledger_service(root / f"ledger{index}.jsonl") as ledger:
        key = f"ledger:bench:{index}"
        write_json(case / "case.json", {"endpoint": ledger.endpoint, "resource": f"account-{index}", "amount": 1,
                                        "key": key, "effect_id": effect_id_for(key), "decided_version": 0,
                                        "fence": "none"})
        write_json(case / "lease.json", {"status": "live"})
        env = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_")}
        env.update({CLAIM_TTL_ENV: "30", "PYTHONPATH": str(ROOT)})
        killed = _worker("decide", case, {**env, "INTERLOCK_KILL_AT": hooks.BEFORE_REQUEST,
                                          "INTERLOCK_KILL_MARKER": str(case / "killed")})
        if killed.returncode != -9:
            raise RuntimeError(f"the first worker was not SIGKILLed (exit {killed.returncode}): {killed.stderr}")
        recovered = _worker("restart", case, env)
        if recovered.stdout.strip() != "REAPPLIED_AFTER_QUERY" or ledger.applies(effect_id_for(key)) != 1:
            raise RuntimeError(f"recovery answered {recovered.stdout.strip()!r}: {recovered.stderr}")
    crashed_at = float((case / "killed").read_text())
    entries = [json.loads(line) for line in (case / "journal.jsonl").read_text().splitlines()]
    dispatched = next(e["ts"] for e in entries if e["kind"] == "DISPATCHED")
    settled = next(e["ts"] for e in entries if e["kind"] == "COMMITTED")
    return {"crash_to_settled": settled - crashed_at, "past_decide_at": settled - (dispatched + IN_FLIGHT_SECONDS)}


class _Arrivals:
    """The gate's hook: the time each effect reached `before_request`, right after its claim confirm."""

    def __init__(self) -> None:
        self.at: list[float] = []

    def reach(self, point: str) -> None:
        if point == hooks.BEFORE_REQUEST:
            self.at.append(time.time())


def _gaps(root: Path) -> list[float]:
    """Milliseconds from `before_request` to the request's arrival at the ledger, one per effect."""
    import urllib.request

    with ledger_service(root / "gap-ledger.jsonl") as ledger:
        def send(effect_id: str, payload: dict[str, Any]) -> Any:
            request = urllib.request.Request(f"{ledger.endpoint}/effects/{effect_id}", data=b"{}", method="PUT",
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=10) as answer:
                return json.loads(answer.read())

        reached = _Arrivals()
        journal = root / "gap-journal.jsonl"
        gate = Gate(journal, FunctionTarget("ledger", send, tier=3), claims=FileClaims(f"{journal}.claims"),
                    hooks=reached)
        for n in range(GAP_SAMPLES):
            gate.submit(Effect(f"gap:{n}", {"n": n}))
        arrived = [e["at"] for e in ledger.log() if e["event"] == "put"]
    return [(a - r) * 1000 for r, a in zip(reached.at, arrived, strict=True)]


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def run() -> dict[str, Any]:
    """Crash to settled past the bound over TRIALS SIGKILLed workers, and the confirm-to-request gap."""
    with scratch("bench-unfenced-") as tmp:
        trials = [_trial(tmp, i) for i in range(TRIALS)]
        gaps = _gaps(tmp)
    excess = [t["crash_to_settled"] - IN_FLIGHT_SECONDS for t in trials]
    return {
        "note": ("crash to settled: the explorer's ledger worker SIGKILLed at before_request on the ledger stand-in "
                 "with no fence, a restarted worker recovering at once, crash marker to the COMMITTED entry; "
                 "confirm to request: the gate's before_request point to the ledger's arrival stamp, one process, "
                 "plain HTTP on loopback"),
        "in_flight_bound_s": IN_FLIGHT_SECONDS,
        "trials": TRIALS,
        "crash_to_settled_median_s": round(statistics.median(t["crash_to_settled"] for t in trials), 3),
        "crash_to_settled_max_s": round(max(t["crash_to_settled"] for t in trials), 3),
        "excess_over_bound_median_s": round(statistics.median(excess), 3),
        "excess_over_bound_max_s": round(max(excess), 3),
        "settled_past_decide_at_max_s": round(max(t["past_decide_at"] for t in trials), 3),
        "confirm_to_request_samples": len(gaps),
        "confirm_to_request_median_ms": round(statistics.median(gaps), 3),
        "confirm_to_request_p99_ms": round(_percentile(gaps, 0.99), 3),
        "confirm_to_request_max_ms": round(max(gaps), 3),
        "targets": {"excess_over_bound_max_s": against(round(max(excess), 3), "<=", TARGET_MAX_EXCESS_SECONDS)},
    }
