"""The gate's own costs, each beside its target where it has one: per-effect overhead against a direct call, the
witness's share of it, effects/s through one JSONL journal at 1, 4 and 16 worker processes (and, for the ceiling
this machine sets, 16 processes each on a journal of its own), append cost on a 1,000 vs a 1,000,000-entry journal,
opening that journal from a recent checkpoint, resident memory of a process that opens and recovers it,
whole-journal verify throughput, what the claim files of the settled effects take on disk before and after they
are retired, and how soon a SIGKILLed sender's claim is free.

Every JSONL effect creates its claim's file, so the JSONL rates move with how long the machine takes to create a
file (`file_create_us` in the provenance, taken as the run began). On a filesystem that is slow at it, as ext4
without a journal is in the minutes after many deletions, one worker loses more than sixteen, which overlap the
creations with each other's work, and the 16-worker scaling reads higher than where creating a file is cheap."""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple, cast

from interlock import Effect, FileClaims, FunctionTarget, Gate, Journal, effect_id_for, verify_journal
from interlock.canonical import canonical_bytes, line_hash
from interlock.witness import Mark, Witness

from ._lock_turns import lock_turns
from ._results import against
from ._scratch import scratch
from ._submitters import own_journal_submitter, submitter
from ._throughput import Call, Run, durable_service, each_round, expect, per_round, run_workers

ROOT = Path(__file__).resolve().parents[1]
EFFECTS = 200
APPENDS = 200
BIG = 1_000_000
SMALL = 1_000
CLAIM_RUNS = 20
WORKERS = (1, 4, 16)
ROUNDS = 5  # the scaling is their median: on this shared machine one round can read half or twice another
SHARED_EFFECTS = 1920  # per worker count, split evenly between the workers: 120 each at 16
RECENT = 1_000  # entries appended after the last checkpoint before the timed open
WITNESS_FLUSHES = 2_000
VERIFY_PASSES = 3  # the verify figure is their median: one pass of a few seconds swings with the machine
TARGETS = {
    "jsonl_scaling_16_workers": (">=", 1.5),
    "journal_first_open_seconds_1m_no_index": ("<=", 10.0),
    "open_seconds_1m_with_checkpoint": ("<", 0.5),
    "rss_mb_open_and_recover_1m": ("<", 100),
    "verify_entries_per_cpu_second": (">=", 400_000),
    "receipts_cli_rss_mb_1m": ("<", 100),
}
NOTHING_SHARED = {"jsonl_scaling_16_workers": "jsonl_scaling_16_workers_own_journals"}  # the same, each on its own


def run() -> dict[str, Any]:
    """Every gate number, measured inside this one run so the ratios compare like with like."""
    with scratch("bench-gate-") as folder:
        numbers: dict[str, Any] = {"note": "the journal as shipped: a send (DISPATCHED) is flushed before its request, "
                                           "every other entry rides on the next flush; the service fsyncs every "
                                           "write; the append timings append AUTHORIZED, which is not flushed"}
        numbers.update(_happy_path(folder / "happy"))
        numbers.update(_shared_journal(folder / "shared"))
        numbers.update(_append_and_verify(folder / "scale"))
        numbers.update(_claim_free(folder / "claims"))
    numbers["cores"] = os.cpu_count()
    numbers["targets"] = {name: against(numbers[name], *target, rounds=numbers.get(f"{name}_each_round"),
                                        nothing_shared=NOTHING_SHARED.get(name))
                          for name, target in TARGETS.items()}
    return numbers


def _happy_path(folder: Path) -> dict[str, Any]:
    folder.mkdir(parents=True)
    send = durable_service(folder / "service.jsonl")
    journal = Journal(folder / "journal.jsonl")
    gate = Gate(journal, FunctionTarget("bench", send, tier=3))
    direct, gated = [], []
    for n in range(EFFECTS):  # interleaved, so both see the same disk and the same neighbours
        started = time.perf_counter()
        send(f"direct-{n}", {"n": n})
        direct.append(time.perf_counter() - started)
        started = time.perf_counter()
        outcome = gate.submit(Effect(f"bench:{n}", {"n": n}))
        gated.append(time.perf_counter() - started)
        assert outcome.status == "COMMITTED", outcome
    journal.close()
    appends = len(journal) / EFFECTS
    direct_ms, gated_ms = statistics.median(direct) * 1e3, statistics.median(gated) * 1e3
    flush_ms = _witness_flush_ms(folder / "witness")
    return {
        "witness_ms_per_flush": round(flush_ms, 4),
        "witness_share_of_gated_call": round(appends * flush_ms / gated_ms, 4),
        "happy_path_effects": EFFECTS,
        "journal_appends_per_effect": appends,
        "direct_call_median_ms": round(direct_ms, 3),
        "gated_call_median_ms": round(gated_ms, 3),
        "gate_added_median_ms": round(gated_ms - direct_ms, 3),
        "gated_over_direct_ratio": round(gated_ms / direct_ms, 2),
    }


def _witness_flush_ms(path: Path) -> float:
    """What the witness adds to each append on its own: a shared read, then take it, read the last mark and
    record the next one."""
    witness = Witness(path)
    started = time.perf_counter()
    for n in range(WITNESS_FLUSHES):
        witness.read()
        with witness.flushing() as (_, record):
            record(Mark(n, n * 400, (n + 1) * 400, f"{n:064x}", None))
    elapsed = time.perf_counter() - started
    witness.close()
    return elapsed / WITNESS_FLUSHES * 1e3


def _shared_run(path: Path, workers: int) -> Run:
    """`workers` processes submitting their own effects through one journal, first start to last end."""
    return run_workers(submitter, (str(path),), workers, SHARED_EFFECTS, f"w{workers}")


def _shared_journal(folder: Path) -> dict[str, Any]:
    """Each worker count ROUNDS times, the counts taking turns, so a slow spell of this shared machine falls on
    every count alike; each figure is the median of its rounds, and the scaling the median of each round's own
    ratio to that round's single worker."""
    folder.mkdir(parents=True)
    most = WORKERS[-1]
    rounds, own = [], []
    for r in range(ROUNDS):
        rounds.append({n: _shared_run(folder / f"journal-{r}-{n}.jsonl", n) for n in WORKERS})
        own.append(run_workers(own_journal_submitter, (str(folder / f"own-{r}"),), most, SHARED_EFFECTS, f"own{r}"))
    out: dict[str, Any] = {"shared_journal_effects_per_worker_count": SHARED_EFFECTS, "shared_journal_rounds": ROUNDS}
    singles = [r[1] for r in rounds]
    for n in WORKERS:
        measured = [r[n] for r in rounds]
        out.update(_figures(measured, singles, f"{n}_workers"))
        out[f"jsonl_scaling_{n}_workers_each_round"] = each_round(measured, singles)
        # CPU per effect beside the wall time per effect per core: near 1, the run computed rather than waited,
        # and then more workers than cores can add no more than the cores left idle
        out[f"jsonl_cpu_share_of_cores_{n}_workers"] = round(
            statistics.median(m.cpu_seconds_per_effect for m in measured)
            * statistics.median(m.effects_per_second for m in measured) / min(n, os.cpu_count() or 1), 2)
    # The ceiling: as many processes, each on its own journal. The scaling a shared journal can reach here is at
    # most this one's, and the shared journal's cost is its rate against this one, round by round.
    out.update(_figures(own, singles, f"{most}_workers_own_journals"))
    out[f"jsonl_shared_vs_own_journals_{most}_workers"] = per_round([r[most] for r in rounds], own)
    out.update(_retired(sorted(folder.glob("journal-*.jsonl"))))
    for n in (1, most):  # the lock's turns, from a run of their own: watching them costs a little
        out.update(lock_turns(folder / f"turns-{n}", n, SHARED_EFFECTS))
    return out


def _retired(journals: list[Path]) -> dict[str, Any]:
    """The claim files the shared runs' settled effects left beside their journals (one per effect) and the bytes
    they take on disk against the journals', then what is left once `retire_settled` ran, and its time per file."""
    def on_disk(paths: list[Path]) -> int:
        return sum(p.stat().st_blocks * 512 for p in paths)

    files = [f for j in journals for f in Path(f"{j}.claims").iterdir()]
    share = round(on_disk(files) / on_disk(journals), 2)
    started = time.perf_counter()
    for path in journals:
        with Journal(path) as journal:
            FileClaims(f"{path}.claims").retire_settled(journal)
    seconds = time.perf_counter() - started
    left = [f for j in journals for f in Path(f"{j}.claims").iterdir()]
    return {"claim_files_of_settled_effects": len(files),
            "claim_files_over_journal_on_disk": share,
            "claim_files_left_after_retire": len(left),
            "retire_ms_per_claim_file": round(seconds / max(len(files), 1) * 1000, 3)}


def _figures(runs: list[Run], singles: list[Run], label: str) -> dict[str, Any]:
    """The medians over the rounds of `runs` (one per round): effects/s, the scaling against each round's single
    worker in `singles` (while every worker ran, and over the whole run), the share of the run after the first
    worker's end, CPU per effect, and the times per effect a worker waited (voluntary) or was preempted."""
    return {
        f"jsonl_effects_per_second_{label}": round(statistics.median(r.effects_per_second for r in runs), 1),
        f"jsonl_scaling_{label}": per_round(runs, singles),
        f"jsonl_scaling_{label}_whole_run": per_round(runs, singles, whole_run=True),
        f"jsonl_tail_share_{label}": round(statistics.median(r.tail_share for r in runs), 2),
        f"jsonl_cpu_ms_per_effect_{label}": round(statistics.median(r.cpu_seconds_per_effect for r in runs) * 1e3, 3),
        f"jsonl_context_switches_per_effect_{label}": {
            "voluntary": round(statistics.median(r.voluntary_switches_per_effect for r in runs), 2),
            "involuntary": round(statistics.median(r.involuntary_switches_per_effect for r in runs), 2)},
    }


def _templates() -> list[tuple[str, str]]:
    """One real effect's entries (as the gate writes them) turned into %-templates of their canonical bytes."""
    with scratch("bench-templates-") as tmp:
        journal = Journal(tmp / "journal.jsonl")
        gate = Gate(journal, FunctionTarget("svc", lambda eid, p: {"stored": eid}, tier=3))
        gate.submit(Effect("job:0", {"to_version": "v41", "body": '{"timeout_ms": 800, "version": "v41"}'}))
        sample = journal.entries()
        journal.close()
    fields = {"seq": "\0seq", "ts": "\0ts", "effect_id": "\0eid", "prev": "\0prev", "effect_prev": "\0eprev"}
    out = []
    for entry in sample:
        body = {k: v for k, v in entry.items() if k != "hash"}
        body.update(fields)
        if "key" in body:
            body["key"] = "\0key"
        text = canonical_bytes(body).decode().replace("%", "%%")
        for name in ("seq", "ts", "eid", "prev", "eprev", "key"):
            text = text.replace(f'"\\u0000{name}"', f"%({name})s")
        out.append((entry["kind"], text))
    return out


def write_journal(path: Path, entries: int) -> None:
    """A journal of `entries` entries in the gate's format and hash rule, written without fsync: four entries per
    effect (PROPOSED, AUTHORIZED, DISPATCHED, COMMITTED), every link and hash as Journal.append makes them."""
    templates = _templates()
    lines: list[bytes] = []
    prev = "null"
    ts = 1.8e9
    seq = 0
    while seq < entries:
        key = f"job:{seq}"
        values: dict[str, object] = {"eid": json.dumps(effect_id_for(key)), "key": json.dumps(key), "eprev": "null"}
        for _, template in templates:
            if seq == entries:
                break
            ts += 0.000731
            values.update(seq=seq, ts=repr(ts), prev=prev)
            body = (template % values).encode()
            digest = hashlib.sha256(body).hexdigest()
            lines.append(body[:-1] + b',"hash":"' + digest.encode() + b'"}\n')
            prev = values["eprev"] = f'"{digest}"'
            seq += 1
    path.write_bytes(b"".join(lines))


def _append_times(path: Path) -> tuple[float, float, float]:
    """(open seconds, its CPU seconds, median seconds per append) for a Journal on an existing file."""
    started, cpu = time.perf_counter(), time.process_time()
    journal = Journal(path)
    opened, opened_cpu = time.perf_counter() - started, time.process_time() - cpu
    times = []
    for n in range(APPENDS):
        started = time.perf_counter()
        journal.append("AUTHORIZED", f"{n:012x}", {"lease": {"incident": "INC-1", "status": "open"}})
        times.append(time.perf_counter() - started)
    journal.close()
    return opened, opened_cpu, statistics.median(times)


def _append_and_verify(folder: Path) -> dict[str, Any]:
    folder.mkdir(parents=True)
    small, big = folder / "small.jsonl", folder / "big.jsonl"
    write_journal(small, SMALL)
    started = time.perf_counter()
    write_journal(big, BIG)
    generated = time.perf_counter() - started
    passes = [_verify_pass(big) for _ in range(VERIFY_PASSES)]
    verified = statistics.median(p.seconds for p in passes)
    rates = [round(BIG / p.cpu_seconds) for p in passes]
    cli_seconds, cli_rss = _receipts_cli(big)
    held_seconds, held_rss = _receipts_cli(big, "in_memory")
    _, _, small_append = _append_times(small)
    big_open, big_open_cpu, big_append = _append_times(big)  # the first open builds the index as it reads
    with Journal(big) as journal:
        for n in range(RECENT):
            journal.append("PROPOSED", f"recent-{n}", {"agent": "bench"})
    started = time.perf_counter()
    Journal(big).close()
    reopened = time.perf_counter() - started
    return {
        "open_seconds_1m_with_checkpoint": round(reopened, 3),
        "open_entries_after_checkpoint": RECENT,
        "rss_mb_open_and_recover_1m": _resident_mb(big),
        "big_journal_entries": BIG,
        "big_journal_bytes": big.stat().st_size,
        "big_journal_generate_seconds": round(generated, 2),
        "append_median_ms_1k": round(small_append * 1e3, 3),
        "append_median_ms_1m": round(big_append * 1e3, 3),
        "append_1m_over_1k_ratio": round(big_append / small_append, 2),
        "journal_first_open_seconds_1m_no_index": round(big_open, 2),
        "journal_first_open_cpu_seconds_1m_no_index": round(big_open_cpu, 2),  # steadier on a shared machine
        "verify_passes": VERIFY_PASSES,
        "verify_journal_seconds_1m": round(verified, 2),
        "verify_entries_per_second": round(BIG / verified),
        "verify_entries_per_cpu_second": round(statistics.median(rates)),  # the machine is shared: CPU time is steadier
        "verify_entries_per_cpu_second_each_round": rates,
        "verify_and_read_every_receipt_entries_per_cpu_second": round(statistics.median(
            BIG / (p.cpu_seconds + p.receipts_cpu_seconds) for p in passes)),
        "hash_check_only_entries_per_cpu_second": round(statistics.median(BIG / p.floor_cpu_seconds for p in passes)),
        "verify_cpu_over_hash_check_only": round(statistics.median(p.cpu_seconds / p.floor_cpu_seconds
                                                                   for p in passes), 2),
        "receipts_cli_cpu_seconds_1m": cli_seconds,
        "receipts_cli_rss_mb_1m": cli_rss,
        "receipts_cli_in_memory_cpu_seconds_1m": held_seconds,
        "receipts_cli_in_memory_rss_mb_1m": held_rss,
        "receipts_cli_cpu_over_in_memory_1m": round(cli_seconds / held_seconds, 2),
    }


class VerifyPass(NamedTuple):
    """One whole-journal verify, every receipt read after it, then the hash-check floor, back to back."""

    seconds: float
    cpu_seconds: float
    receipts_cpu_seconds: float
    floor_cpu_seconds: float


def _verify_pass(path: Path) -> VerifyPass:
    """Verify the journal at `path` as `python -m interlock.receipts` reads it (streamed, each line's own bytes
    hashed), read every receipt, then time the floor beside it: a pass of each, so the ratio of the two is taken
    on the same spell of this shared machine."""
    started, cpu = time.perf_counter(), time.process_time()
    with open(path, "rb") as f:
        result = verify_journal(line[:-1] for line in f)
    seconds, verify_cpu = time.perf_counter() - started, time.process_time() - cpu
    assert result["valid"] and result["entries"] == BIG, result["problems"][:3]
    cpu = time.process_time()
    every = sum(receipt["valid"] for receipt in result["effects"].values())  # each made as it is read
    receipts_cpu = time.process_time() - cpu
    assert every == len(result["effects"]) == BIG // 4
    del result
    return VerifyPass(seconds, verify_cpu, receipts_cpu, _hash_only_cpu(path))


def _hash_only_cpu(path: Path) -> float:
    """CPU seconds to read the journal and check each line's hash over its bytes, and nothing else: the floor
    under any full verification in this interpreter, beside which the verify figure reads."""
    started = time.process_time()
    with open(path, "rb") as f:
        if not all(line_hash(line[:-1]) is not None for line in f):
            raise RuntimeError(f"{path}: a generated line does not carry its own hash")
    return time.process_time() - started


RESIDENT = """
import random, sys
from interlock import Journal, effect_id_for
with Journal(sys.argv[1]) as journal:
    journal.open_dispatches()
    ids = [effect_id_for(f"job:{4 * k}") for k in random.Random(1).sample(range(int(sys.argv[2]) // 4), 1000)]
    found = sum(journal.effect(i).resolution is not None for i in ids)
# VmHWM is this process's own peak; getrusage's ru_maxrss would also count the parent's pages it forked from
peak = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(found, peak)
"""


RECEIPTS_CLI = """
import os, resource, sys
from interlock.receipts import __main__ as cli
if sys.argv[2] == "in_memory":
    cli.KEPT = None  # every effect's running check held to the end: what setting checks aside on disk saves and costs
sys.stdout = open(os.devnull, "w")
code = cli.main([sys.argv[1]])
usage = resource.getrusage(resource.RUSAGE_SELF)
peak = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(code, usage.ru_utime + usage.ru_stime, peak, file=sys.__stdout__)
"""


def _receipts_cli(path: Path, held: str = "bounded") -> tuple[float, float]:
    """(CPU seconds, peak resident MB) of `python -m interlock.receipts` verifying the journal and printing every
    effect's receipt, as shipped (`bounded`) or with every effect's check held in memory (`in_memory`)."""
    done = subprocess.run([sys.executable, "-c", RECEIPTS_CLI, str(path), held], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    code, cpu, peak_kb = done.stdout.split()
    if code != "0":
        raise RuntimeError(f"python -m interlock.receipts found the generated journal invalid (exit {code})")
    return round(float(cpu), 1), round(int(peak_kb) / 1024, 1)


def _resident_mb(path: Path) -> float:
    """Peak resident memory (MB) of a fresh process that opens the journal, lists what recovery owes and looks
    1,000 effects up."""
    done = subprocess.run([sys.executable, "-c", RESIDENT, str(path), str(BIG)], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    found, peak_kb = done.stdout.split()
    if found != "1000":
        raise RuntimeError(f"only {found} of 1000 settled effects were found through the index")
    return round(int(peak_kb) / 1024, 1)


def _claim_free(folder: Path) -> dict[str, Any]:
    """Median time from a sender's SIGKILL (its crash marker) to another process holding the effect's claim."""
    gaps = []
    for n in range(CLAIM_RUNS):
        directory = folder / str(n)
        gaps.append(_one_claim_gap(directory))
    return {"claim_free_after_sigkill_median_ms": round(statistics.median(gaps) * 1e3, 2),
            "claim_free_after_sigkill_max_ms": round(max(gaps) * 1e3, 2), "claim_free_runs": CLAIM_RUNS}


def _one_claim_gap(directory: Path) -> float:
    subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; from tests import gate_worker; "
                    "gate_worker.setup_world(Path(sys.argv[1]))", str(directory)], cwd=ROOT, check=True)
    pause, marker = directory / "paused", directory / "crashed_at"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_")}
    armed = {**clean, "INTERLOCK_PAUSE_AT": "before_send", "INTERLOCK_PAUSE_FILE": str(pause),
             "INTERLOCK_KILL_AT": "before_send", "INTERLOCK_KILL_MARKER": str(marker)}
    command = [sys.executable, "-m", "tests.gate_worker", str(directory)]
    sender = subprocess.Popen(command, cwd=ROOT, env=armed, stdout=subprocess.DEVNULL)
    waiter = None
    try:
        while not pause.exists():
            if sender.poll() is not None:
                raise RuntimeError("the sender exited before reaching before_send")
            time.sleep(0.005)
        waiter = subprocess.Popen(command + ["--mode", "claim", "--claim-wait", "30"], cwd=ROOT, env=clean,
                                  stdout=subprocess.PIPE, text=True)
        replies = waiter.stdout
        if replies is None:
            raise RuntimeError("the waiter's stdout is not a pipe")
        replies.readline()  # it is now waiting on the held claim
        time.sleep(0.05)
        pause.unlink()
        sender.wait(30)
        claimed_at = cast(float, json.loads(replies.readline())["claimed_at"])  # the worker's time.time() stamp
        waiter.wait(30)
    finally:
        for proc in (sender, waiter):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    return claimed_at - float(marker.read_text())
