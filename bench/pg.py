"""Effects per second through the gate with 1, 4 and 16 worker processes, PostgreSQL beside JSONL in the same run;
how long a takeover takes after a SIGKILL or a SIGSTOP, and by which path; what the claims' renewals cost.

Every worker submits its own effects (tier 1, a send that only returns its evidence), so the figures measure the
journal and the claims: per effect one claim, four entries (PROPOSED, AUTHORIZED, DISPATCHED, COMMITTED), a confirm
of the claim right before the send and a release; on PostgreSQL, four round trips (the claim with PROPOSED,
AUTHORIZED with DISPATCHED, the confirm, COMMITTED with the release), all on the worker's claims session. Both
backends keep one durability contract: the send's entry is on disk before its request (fsync; on PostgreSQL the
confirm's synchronous commit, whose flush covers the DISPATCHED written before it), every other entry with the next
flush. Beside each rate stands the CPU time the workers spent per effect and, apart, the database server's: every
server process, counted over the whole run, so the warm-up effects it served are divided in and its sessions'
start-up is in it. Worker counts are interleaved between the backends, round after round, and each rate is the
median of REPEATS rounds, since the machine is shared; each ratio (a scaling, PostgreSQL against JSONL) is the
median of the ratios within a round, so drift between rounds falls on both sides of it alike; the load average at
the start and the end says how busy it was. Each round also runs 16 workers each on a database of its own on the
same server: sharing nothing but the server and the cores, they show about the most 16 workers get from this
machine, so the scaling a shared journal can reach here. Beside the CPU per effect (workers' and server's together)
at 16 workers stands the most it could be for both targets to be met on this machine's cores with this run's
single-worker rates: where 16 workers keep the cores busy, their rate is the cores over that CPU per effect.

A takeover is timed from the signal to the holder until another process holds the claim. A holder killed outside
a request (its DISPATCHED durable, no request started) is provably unable to send, so its claim is free as soon as
its session's lock is: the `holder_gone` path. A holder killed inside a request (after its confirm) may have a
request on its way, and a lost session is not a dead holder, so the claim waits for its lease to expire: the
`expired` path, as does a paused (SIGSTOP) holder, which stops renewing: each takeover says its path, and an
expiry also how far past the lease it came. On the happy path the claims cost one confirm per effect (timed alone)
and a renewal statement per ttl/3 for everything held (timed alone, and as the throughput lost with a 1.5 s lease
against a 30 s one). The benchmark starts and deletes its own PostgreSQL cluster.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from interlock import Effect, FunctionTarget, Gate
from interlock.backends import open_journal

from ._results import against
from ._scratch import scratch
from ._throughput import WARMUP, Call, Run, each_round, expect, per_round, run_workers

WORKERS = (1, 4, 16)
EFFECTS = 1920  # per run, split evenly between the workers: 120 each at 16, as in the gate benchmark
REPEATS = 5  # each ratio is their median: on this shared machine one round can read half or twice another
TAKEOVERS = 5
LEASE_TTL = 1.0  # seconds: the lease of the holders killed in a request or paused
RENEWING_TTL = 1.5  # seconds: each worker renews what it holds every 0.5 s, to price the renewals
TARGETS = {"postgresql_scaling_16_workers": 1.5, "postgresql_vs_jsonl_1_workers": 0.5}
NOTHING_SHARED = {"postgresql_scaling_16_workers": "postgresql_scaling_16_workers_own_databases"}  # each on its own


def submitter(address: str, ttl: float, worker: int) -> Call:
    """One worker's call: submit an effect through the backend at `address`, its claims living `ttl` seconds."""
    journal, claims = open_journal(address, claim_ttl=ttl)
    gate = Gate(journal, FunctionTarget("bench", lambda eid, payload: {"id": eid}, tier=1), claims=claims)
    return lambda key: expect(gate.submit(Effect(key, {"key": key})).status, "COMMITTED")


def own_database_submitter(addresses: tuple[str, ...], ttl: float, worker: int) -> Call:
    """`submitter` on a database of the worker's own on the same server: sharing nothing but the server and the
    cores, what such workers do together is about the most this machine gives them, whatever the journal does."""
    return submitter(addresses[worker], ttl, worker)


def _throughput(address: str, workers: int, run: str, ttl: float = 30.0) -> float:
    return _run(address, workers, run, ttl).effects_per_second


def _run(address: str, workers: int, run: str, ttl: float = 30.0) -> Run:
    return run_workers(submitter, (address, ttl), workers, EFFECTS, run)


def server_cpu_seconds(data: Path) -> float:
    """CPU seconds spent so far by the PostgreSQL server whose data folder is `data`: the postmaster's own, every
    process it started that still runs, and (in the postmaster's children's totals) every one that ended."""
    postmaster = int((data / "postmaster.pid").read_text().split()[0])
    ticks = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended while the folder was read
            continue
        if int(entry.name) == postmaster:
            ticks += sum(int(f) for f in fields[11:15])  # utime, stime, and its waited-for children's
        elif int(fields[1]) == postmaster:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def _ceiling(owned: list[Run], served: list[float], runs: dict[tuple[str, int], list[Run]],
             most: int) -> dict[str, Any]:
    """The figures of `most` workers each on a database of its own, beside the shared journal's: the scaling a
    shared journal can reach on this machine is about theirs at most."""
    label = f"{most}_workers_own_databases"
    return {
        f"postgresql_effects_per_second_{label}": round(statistics.median(r.effects_per_second for r in owned), 1),
        f"postgresql_scaling_{label}": per_round(owned, runs["postgresql", 1]),
        f"postgresql_worker_cpu_ms_per_effect_{label}": round(
            statistics.median(r.cpu_seconds_per_effect for r in owned) * 1000, 3),
        f"postgresql_server_cpu_ms_per_effect_{label}": round(statistics.median(served) * 1000, 3),
        f"postgresql_shared_vs_own_databases_{most}_workers": per_round(runs["postgresql", most], owned),
    }


def _cpu_budget(out: dict[str, Any], most: int) -> dict[str, float]:
    """The CPU time (workers' and server's) per effect at each worker count, and the most it could be at `most`
    workers for their rate to meet both targets on this machine's cores, given this run's single-worker rates:
    1.5 times the higher of the single worker's rate and half the JSONL single worker's."""
    spent = {f"postgresql_cpu_ms_per_effect_{n}_workers": round(
        out[f"postgresql_server_cpu_ms_per_effect_{n}_workers"]
        + out[f"postgresql_worker_cpu_ms_per_effect_{n}_workers"], 3) for n in WORKERS}
    single = max(out["postgresql_effects_per_second_1_workers"],
                 TARGETS["postgresql_vs_jsonl_1_workers"] * out["jsonl_effects_per_second_1_workers"])
    needed = TARGETS["postgresql_scaling_16_workers"] * single
    return {**spent, f"postgresql_cpu_ms_per_effect_{most}_workers_that_meets_both_targets": round(
        (os.cpu_count() or 1) / needed * 1000, 3)}


def _holder(address: str, effect_id: str, in_request: bool, ttl: float, ready: str) -> None:
    """Take the claim, journal a dispatch, confirm it too when `in_request`, say so, and wait to be signalled."""
    journal, claims = open_journal(address, claim_ttl=ttl)
    claim = claims.acquire(effect_id, wait=10)
    if claim is None:
        raise RuntimeError(f"{effect_id}: the holder never got its claim")
    journal.append("PROPOSED", effect_id, {"payload_hash": "bench"})
    journal.append("DISPATCHED", effect_id, {"epoch": claim.epoch})
    if in_request and not claim.confirm():
        raise RuntimeError(f"{effect_id}: the holder could not confirm its claim")
    Path(ready).write_text(str(os.getpid()))
    signal.pause()  # until the harness's signal


def _takeover(address: str, effect_id: str, sig: signal.Signals, in_request: bool, claims: Any) -> tuple[float, str]:
    """Seconds from the signal until `claims` holds the effect, and how it was taken."""
    ready = Path(tempfile.mkdtemp(prefix="interlock-bench-")) / "ready"
    holder = multiprocessing.get_context("spawn").Process(
        target=_holder, args=(address, effect_id, in_request, LEASE_TTL, str(ready)), daemon=True)
    holder.start()
    pid = holder.pid
    if pid is None:
        raise RuntimeError(f"the holder of {effect_id} has no process id once started")
    deadline = time.monotonic() + 60
    while not ready.exists():
        if time.monotonic() > deadline or not holder.is_alive():
            raise RuntimeError(f"the holder of {effect_id} never got ready")
        time.sleep(0.005)
    signalled = time.perf_counter()
    os.kill(pid, sig)
    claim = claims.acquire(effect_id, wait=60)
    seconds = time.perf_counter() - signalled
    if claim is None:
        raise RuntimeError(f"no takeover of {effect_id} within 60 s")
    how = getattr(claim, "taken", "flock")
    claim.release()
    if sig != signal.SIGKILL:
        os.kill(pid, signal.SIGKILL)
    holder.join()
    ready.unlink()
    ready.parent.rmdir()
    return seconds, how


def _takeovers(address: str, label: str, sig: signal.Signals, in_request: bool) -> dict[str, Any]:
    """The takeover times of TAKEOVERS holders and the path each took: `holder_gone` (free once the dead holder's
    session is, milliseconds), `expired` (the lease ran out: LEASE_TTL past the holder's last renewal or confirm,
    so up to a lease after the signal) or `flock` (the file journal's lock, dropped by the kernel)."""
    _, claims = open_journal(address, claim_ttl=LEASE_TTL)
    timed = [_takeover(address, f"{label}-{i}", sig, in_request, claims) for i in range(TAKEOVERS)]
    ms = [t * 1000 for t, _ in timed]
    paths = sorted({how for _, how in timed})
    out: dict[str, Any] = {"n": len(ms), "median_ms": round(statistics.median(ms), 1), "max_ms": round(max(ms), 1),
                           "path": paths}
    if paths == ["expired"]:  # at most a lease after the signal: the holder last renewed (or confirmed) before it
        out["lease_ms"] = LEASE_TTL * 1000
    return out


def _confirm_ms(address: str) -> float:
    """Median round trip of the confirm made right before every request: the one claims statement per effect on
    the happy path, and the one that extends the lease over the request."""
    from interlock.pg import PgClaims, PgJournal

    claims = PgClaims(PgJournal(address), ttl=30.0)
    claim = claims.acquire("confirm-timing", wait=1)
    if claim is None:
        raise RuntimeError("the confirm benchmark never got its claim")
    times = []
    for _ in range(50):
        began = time.perf_counter()
        if not claim.confirm():
            raise RuntimeError("a held claim did not confirm")
        times.append(time.perf_counter() - began)
    claim.release()
    claims.close()
    return round(statistics.median(times) * 1000, 3)


def _renewal_ms(address: str, held: int) -> float:
    """Median time of one renewal statement extending `held` leases (what the renewer runs every ttl/3)."""
    from interlock.pg import PgClaims, PgJournal

    claims = PgClaims(PgJournal(address), ttl=30.0)
    claims_held = [claims.acquire(f"renew-{held}-{i}", wait=1) for i in range(held)]
    times = []
    for _ in range(50):
        began = time.perf_counter()
        claims._renew()
        times.append(time.perf_counter() - began)
    for claim in claims_held:
        if claim is not None:
            claim.release()
    claims.close()
    return round(statistics.median(times) * 1000, 3)


def run() -> dict[str, Any]:
    """Throughput per backend and worker count, scaling, takeover times and paths, renewal costs, and the targets."""
    from experiments.services.postgres import TempCluster

    out: dict[str, Any] = {"effects_per_run": EFFECTS, "repeats": REPEATS, "cpus": os.cpu_count(),
                           "lease_ttl_seconds": LEASE_TTL, "load_average_at_start": os.getloadavg()[0]}
    with TempCluster() as cluster, scratch("interlock-bench-") as tmp:
        backends = {"postgresql": cluster.create_database("bench"), "jsonl": str(tmp / "journal.jsonl")}
        most = WORKERS[-1]
        own = tuple(cluster.create_database(f"own_{w}") for w in range(most))
        runs: dict[tuple[str, int], list[Run]] = {(b, n): [] for b in backends for n in WORKERS}
        owned: list[Run] = []
        served: dict[int | str, list[float]] = {n: [] for n in (*WORKERS, "own")}  # server CPU s per effect served
        for i in range(REPEATS):  # every worker count and backend once per round, so drift falls on all alike
            for n in WORKERS:
                for backend, address in backends.items():
                    before = server_cpu_seconds(cluster.data)
                    runs[backend, n].append(_run(address, n, f"{backend}-{n}-{i}"))
                    if backend == "postgresql":
                        served[n].append((server_cpu_seconds(cluster.data) - before) / (EFFECTS + WARMUP * n))
            before = server_cpu_seconds(cluster.data)
            owned.append(run_workers(own_database_submitter, (own, 30.0), most, EFFECTS, f"own-{i}"))
            served["own"].append((server_cpu_seconds(cluster.data) - before) / (EFFECTS + WARMUP * most))
        rates = {b: {n: round(statistics.median(r.effects_per_second for r in runs[b, n]), 1) for n in WORKERS}
                 for b in backends}
        for backend in backends:
            for n in WORKERS:
                out[f"{backend}_effects_per_second_{n}_workers"] = rates[backend][n]
                out[f"{backend}_worker_cpu_ms_per_effect_{n}_workers"] = round(
                    statistics.median(r.cpu_seconds_per_effect for r in runs[backend, n]) * 1000, 3)
                out[f"{backend}_scaling_{n}_workers"] = per_round(runs[backend, n], runs[backend, 1])
                out[f"{backend}_scaling_{n}_workers_whole_run"] = per_round(runs[backend, n], runs[backend, 1],
                                                                            whole_run=True)
                out[f"{backend}_tail_share_{n}_workers"] = round(
                    statistics.median(r.tail_share for r in runs[backend, n]), 2)
        for n in WORKERS:  # warm-up effects and the sessions' start included: the server serves those too
            out[f"postgresql_server_cpu_ms_per_effect_{n}_workers"] = round(statistics.median(served[n]) * 1000, 3)
        for n in WORKERS:
            out[f"postgresql_vs_jsonl_{n}_workers"] = per_round(runs["postgresql", n], runs["jsonl", n])
        # the rounds behind each target's figure
        out[f"postgresql_scaling_{most}_workers_each_round"] = each_round(runs["postgresql", most],
                                                                         runs["postgresql", 1])
        out["postgresql_vs_jsonl_1_workers_each_round"] = each_round(runs["postgresql", 1], runs["jsonl", 1])
        out.update(_ceiling(owned, served["own"], runs, most))
        out.update(_cpu_budget(out, most))
        pg = backends["postgresql"]
        out["jsonl_takeover_after_sigkill"] = _takeovers(backends["jsonl"], "jsonl-killed", signal.SIGKILL, False)
        out["postgresql_takeover_after_sigkill_outside_a_request"] = _takeovers(pg, "killed", signal.SIGKILL, False)
        out["postgresql_takeover_after_sigkill_in_a_request"] = _takeovers(pg, "killed-sending", signal.SIGKILL, True)
        out["postgresql_takeover_after_sigstop"] = _takeovers(pg, "stopped", signal.SIGSTOP, False)
        paired = [(_throughput(pg, 4, f"plain-{i}"), _throughput(pg, 4, f"renewing-{i}", ttl=RENEWING_TTL))
                  for i in range(REPEATS)]  # side by side, so the machine's drift falls on both alike
        plain, renewing = (round(statistics.median(rates), 1) for rates in zip(*paired))
        out["postgresql_effects_per_second_4_workers_ttl_30_s"] = plain
        out["postgresql_effects_per_second_4_workers_ttl_1.5_s"] = renewing
        out["postgresql_renewal_cost_4_workers"] = round(1 - renewing / plain, 3)
        out["postgresql_renewal_statement_ms_1_claim"] = _renewal_ms(pg, 1)
        out["postgresql_renewal_statement_ms_100_claims"] = _renewal_ms(pg, 100)
        out["postgresql_confirm_ms"] = _confirm_ms(pg)
    out["load_average_at_end"] = os.getloadavg()[0]  # the machine is shared: how busy it was says how noisy
    out["targets"] = {name: against(out[name], ">=", target, rounds=out[f"{name}_each_round"],
                                    nothing_shared=NOTHING_SHARED.get(name))
                      for name, target in TARGETS.items()}
    return out
