"""Real worker processes SIGKILLed at every kill point, against tier 1, 2 and 3 targets whose ledger is the truth.

Each case: a worker is killed (twice for the recovery points: a first crash, then a recovery that is itself
killed), the world changes during the outage (nothing, the premise moves, the lease is revoked), and a restarted
worker settles the effect. The ledger the target function appends to is compared with the gate's answer and with
the receipt that `verify` derives from the journal alone.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from interlock import Status, bundle, effect_id_for, verify
from interlock.backends import open_journal
from interlock.gate import Gate
from tests import gate_worker
from pg_worker import SHORT_LEASE, fresh_database, pg_cluster  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[1]
EID = effect_id_for(gate_worker.KEY)
POINTS = ("after_proposed", "before_send", "after_commit", "recovery_before_resend", "recovery_after_resend")
CHANGES = ("none", "premise_moved", "lease_revoked")
TIERS = ("1", "1L", "2", "3")
KILLED = -signal.SIGKILL


def run_worker(directory: Path, tier: str, *, kill: str | None = None, mode: str = "submit",
               extra: dict[str, str] | None = None, claim_wait: float = 10.0,
               journal: str | None = None) -> tuple[int, dict | None]:
    """One worker process to completion (or to its SIGKILL); its exit code and printed outcome. `journal`: a
    postgresql:// URL instead of the directory's JSONL journal."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_")}
    if kill:
        env.update(INTERLOCK_KILL_AT=kill, INTERLOCK_KILL_MARKER=str(directory / "crashed_at"))
    env.update(extra or {})
    done = subprocess.run([sys.executable, "-m", "tests.gate_worker", str(directory), "--tier", tier, "--mode", mode,
                           "--claim-wait", str(claim_wait),
                           *(["--journal", journal, "--claim-ttl", str(SHORT_LEASE)] if journal else [])],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode in (0, KILLED), done.stderr
    return done.returncode, json.loads(lines[-1]) if lines else None


def change_world(directory: Path, change: str) -> None:
    """What a person does while the worker is down."""
    if change == "premise_moved":
        gate_worker.write_json(directory / "facts.json", {"generation": "18", "writer": "human-redeploy"})
    elif change == "lease_revoked":
        gate_worker.write_json(directory / "lease.json", {"incident": "INC-1", "status": "resolved"})


@pytest.fixture(scope="module", params=["jsonl", "postgresql"])
def matrix(request, tmp_path_factory):
    """Every (tier, kill point, world change) played once on each journal, four cases at a time; on PostgreSQL
    each case has a database of its own."""
    cases = list(itertools.product(TIERS, POINTS, CHANGES))
    cluster = request.getfixturevalue("pg_cluster") if request.param == "postgresql" else None

    def one(case):
        tier, point, change = case
        directory = tmp_path_factory.mktemp(f"{request.param}-t{tier}-{point}-{change}")
        journal = fresh_database(cluster, "m") if cluster else None
        gate_worker.setup_world(directory)
        exits = []
        if point.startswith("recovery_"):
            exits.append(run_worker(directory, tier, kill="before_send", journal=journal)[0])
        code, _ = run_worker(directory, tier, kill=point, journal=journal)
        exits.append(code)
        landed_before = gate_worker.landed_count(directory, EID)
        change_world(directory, change)
        code, final = run_worker(directory, tier, journal=journal)
        exits.append(code)
        return case, {"dir": directory, "journal": journal, "exits": exits, "final": final,
                      "landed_before_change": landed_before}

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(pool.map(one, cases))


# Where the truth cannot be known: a blind target (tier 3) after a send may have fired, and a tier-1 target without
# lookup whose re-check failed after a send may have fired (a resend would decide it, but is no longer allowed).
def truth_unknowable(tier: str, point: str, change: str) -> bool:
    sent_maybe = point != "after_proposed"
    return sent_maybe and (tier == "3" or (tier == "1" and change != "none"))


@pytest.mark.parametrize("tier,point,change", list(itertools.product(TIERS, POINTS, CHANGES)))
def test_a_crashed_effect_lands_at_most_once_and_the_receipt_says_so(matrix, tier, point, change):
    played = matrix[(tier, point, change)]
    directory, final = played["dir"], played["final"]
    if point.startswith("recovery_"):  # a blind target is never resent, so its recovery point is never reached
        assert played["exits"][:-1] == [KILLED, 0 if tier == "3" else KILLED], played["exits"]
    else:
        assert played["exits"][:-1] == [KILLED], played["exits"]
    assert played["exits"][-1] == 0 and final is not None
    truth = gate_worker.landed_count(directory, EID)

    assert truth <= 1, "the effect landed twice"
    if change != "none" and played["landed_before_change"] == 0:
        assert truth == 0, f"the effect landed after the world changed ({change}): {final}"

    journal, _ = open_journal(played["journal"] or directory / "journal.jsonl")
    with journal:
        assert not journal.effect(EID).open_dispatch, "a settled effect left its dispatch open"
        receipt = verify(bundle(journal, EID))
    assert receipt["valid"], receipt["problems"]
    assert receipt["happened_once"] is True
    claimed = Status(final["status"]).landed
    if truth_unknowable(tier, point, change):
        assert claimed in (None, truth == 1), final
        assert receipt["happened"] in ("unknown", truth == 1)
    else:
        assert claimed is (truth == 1), (final, truth)
        assert receipt["happened"] is (truth == 1), (receipt, truth)
    if claimed is None:
        assert final["status"] == "AMBIGUOUS" and receipt["happened"] == "unknown"
    if receipt["happened"] is True:
        assert receipt["authorized_when_fired"] is True and receipt["assumptions_held"] is True


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("point", POINTS)
def test_submitting_a_settled_effect_again_sends_nothing(matrix, tier, point):
    directory = matrix[(tier, point, "premise_moved")]["dir"]
    calls = len(gate_worker.ledger(directory))
    first = matrix[(tier, point, "premise_moved")]["final"]["status"]
    journal, claims = open_journal(matrix[(tier, point, "premise_moved")]["journal"] or directory / "journal.jsonl")
    with journal:
        gate = Gate(journal, gate_worker.build_target(directory, tier), claims=claims)
        again = gate.submit(gate_worker.build_effect(directory))
        getattr(claims, "close", lambda: None)()  # a database's claims stop renewing
    assert len(gate_worker.ledger(directory)) == calls
    expected = "DUPLICATE_IGNORED" if Status(first).landed else first
    assert again.status == expected


@pytest.mark.parametrize("tier,point,change,status", [
    ("2", "before_send", "none", "REAPPLIED_AFTER_QUERY"),
    ("2", "before_send", "premise_moved", "REFUSED:stale_premise_at_recovery"),
    ("2", "before_send", "lease_revoked", "REFUSED:lease_at_recovery"),
    ("2", "after_commit", "premise_moved", "COMMITTED_ON_QUERY"),
    ("2", "after_commit", "lease_revoked", "COMMITTED_ON_QUERY"),
    ("1", "after_commit", "none", "COMMITTED_BY_RETRY"),
    ("1L", "before_send", "premise_moved", "REFUSED:stale_premise_at_recovery"),
    ("1L", "after_commit", "lease_revoked", "COMMITTED_ON_QUERY"),
    ("1", "after_commit", "lease_revoked", "AMBIGUOUS"),
    ("3", "after_commit", "none", "AMBIGUOUS"),
    ("3", "before_send", "lease_revoked", "AMBIGUOUS"),
    ("2", "after_proposed", "premise_moved", "REFUSED:stale_premise"),
    ("2", "after_proposed", "lease_revoked", "REFUSED:lease"),
    ("2", "recovery_after_resend", "premise_moved", "COMMITTED_ON_QUERY"),
    ("1", "recovery_before_resend", "none", "COMMITTED_BY_RETRY"),
])
def test_recovery_reports_the_outcome_the_service_supports(matrix, tier, point, change, status):
    assert matrix[(tier, point, change)]["final"]["status"] == status


def test_a_moved_premise_is_journaled_readably(matrix):
    final = matrix[("2", "before_send", "premise_moved")]["final"]
    assert final["rechecked"]["violations"] == ["generation: was 17, now 18 (deployed by human-redeploy)"]


def test_a_killed_senders_claim_is_free_within_milliseconds(tmp_path):
    gate_worker.setup_world(tmp_path)
    pause = tmp_path / "paused"
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_")}
    env.update(INTERLOCK_PAUSE_AT="before_send", INTERLOCK_PAUSE_FILE=str(pause), INTERLOCK_KILL_AT="before_send",
               INTERLOCK_KILL_MARKER=str(tmp_path / "crashed_at"))
    command = [sys.executable, "-m", "tests.gate_worker", str(tmp_path)]
    sender = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    waiter = None
    try:
        deadline = time.monotonic() + 20
        while not pause.exists():
            assert time.monotonic() < deadline and sender.poll() is None, "the sender never reached before_send"
            time.sleep(0.005)
        clean = {k: v for k, v in env.items() if not k.startswith("INTERLOCK_")}
        waiter = subprocess.Popen(command + ["--mode", "claim", "--claim-wait", "30"], cwd=ROOT, env=clean,
                                  stdout=subprocess.PIPE, text=True)
        assert "waiting" in json.loads(waiter.stdout.readline())
        time.sleep(0.05)  # the waiter is now polling a claim a live sender holds
        assert waiter.poll() is None, "the claim was granted while its owner was alive"
        pause.unlink()
        assert sender.wait(20) == KILLED
        claimed_at = json.loads(waiter.stdout.readline())["claimed_at"]
        assert waiter.wait(20) == 0
    finally:
        for proc in (sender, waiter):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    killed_at = float((tmp_path / "crashed_at").read_text())
    assert claimed_at - killed_at < 0.5, f"claim freed {claimed_at - killed_at:.3f}s after the SIGKILL"


@pytest.mark.parametrize("tier", ["1", "2"])
@pytest.mark.parametrize("recoverers", [2, 8])
def test_concurrent_recoverers_send_once_and_the_rest_report_it(tmp_path, tier, recoverers):
    gate_worker.setup_world(tmp_path)
    assert run_worker(tmp_path, tier, kill="before_send")[0] == KILLED
    calls_before = len(gate_worker.ledger(tmp_path))
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_")}
    env["GATE_WORKER_SEND_DELAY"] = "0.3"
    command = [sys.executable, "-m", "tests.gate_worker", str(tmp_path), "--tier", tier, "--mode", "recover"]
    procs = [subprocess.Popen(command + ["--claim-wait", "0.1" if i % 2 else "10"], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, text=True) for i in range(recoverers)]
    results = []
    for i, proc in enumerate(procs):
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0
        results.append((0.1 if i % 2 else 10.0, json.loads(out.splitlines()[-1])))
    sends = [row for row in gate_worker.ledger(tmp_path)[calls_before:]]
    assert len(sends) == 1, f"{len(sends)} recoverers sent"
    assert gate_worker.landed_count(tmp_path, EID) == 1
    settled = {"COMMITTED_BY_RETRY" if tier == "1" else "REAPPLIED_AFTER_QUERY"}
    statuses = [r["status"] for _, r in results]
    assert sum(s in settled for s in statuses) == 1, statuses
    for wait, result in results:
        if result["status"] in settled:
            continue
        assert result["status"] in ("DUPLICATE_IGNORED", "IN_FLIGHT"), result
        if wait == 10.0:
            assert result["status"] == "DUPLICATE_IGNORED", result  # the winner finished well within its wait
        else:
            assert result["seconds"] < wait + 0.5, result
