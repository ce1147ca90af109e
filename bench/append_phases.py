"""Where a JSONL append's CPU goes when workers share the journal: each phase of `Journal.append` timed in CPU
time inside every worker, for 16 workers on one journal against 16 each on a journal of their own (and one worker
alone), so the cost of sharing shows phase by phase.

The phases are the journal's own methods, wrapped in each worker process: `_skim_to` (other writers' lines passed
over: where the chain ends and which effects they name), `_fold_locked` and `_fold_all` (lines checked and folded
one by one: an effect they name was asked for, or the index came due) and `_make_durable` (the flush before a
send); beside them, the journal's lock taken (`interlock.journal._take`: the tries, the yields and the sleep on it)
and the effect's claim taken and given back (`FileClaims.acquire`, `FileClaims._release`), and the rest of a gated
effect's CPU (laying entries out, the writes, the claim's confirms). Two counts
stand beside them too: how many of other writers' lines a worker skims per effect
it makes, and how many lines of any writer it checks and folds. Each wrapper adds about a microsecond per call, on
every run alike.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any, Callable

from ._scratch import scratch
from ._submitters import submitter
from ._throughput import Call, run_workers
from .gate import SHARED_EFFECTS

ROUNDS = 3
WORKERS = 16
PHASES = ("_skim_to", "_fold_locked", "_fold_all", "_make_durable")
FOREIGN = ("_skim_to", "_fold_locked", "_fold_all")  # the phases that read other writers' lines
TAKEN = ("lock", "claim")  # the journal's lock taken (`_take`); the effect's claim taken and given back
SETUPS = (("shared_1", 1, False), ("shared_16", WORKERS, False), ("own_16", WORKERS, True))  # (name, workers, own)


def run() -> dict[str, Any]:
    """The set-ups taking turns for ROUNDS rounds; each figure the median of its rounds."""
    with scratch("bench-phases-") as folder:
        runs: dict[str, list[dict[str, float]]] = {name: [] for name, *_ in SETUPS}
        for r in range(ROUNDS):
            for name, workers, own in SETUPS:
                runs[name].append(phases(folder / f"{name}-{r}", workers, own, SHARED_EFFECTS))
    out: dict[str, Any] = {"append_phase_rounds": ROUNDS, "append_phase_effects_per_run": SHARED_EFFECTS}
    medians = {name: {k: statistics.median(m[k] for m in measured) for k in measured[0]}
               for name, measured in runs.items()}
    for name, figures in medians.items():
        for key, value in figures.items():
            out[f"{name}_{key}"] = round(value, 4 if key.endswith("_ms") else 2)
    shared, apart = medians["shared_16"], medians["own_16"]
    extra = shared["effect_cpu_ms"] - apart["effect_cpu_ms"]
    foreign = sum(shared[f"{p[1:]}_cpu_ms"] - apart[f"{p[1:]}_cpu_ms"] for p in FOREIGN)
    out["sharing_extra_effect_cpu_ms_16_workers"] = round(extra, 4)
    out["sharing_extra_in_reading_other_writers_ms_16_workers"] = round(foreign, 4)
    out["reading_share_of_sharing_cost_16_workers"] = round(foreign / extra, 2) if extra > 0 else None
    for name in TAKEN:
        more = shared[f"{name}_cpu_ms"] - apart[f"{name}_cpu_ms"]
        out[f"sharing_extra_in_taking_the_{name}_ms_16_workers"] = round(more, 4)
        out[f"{name}_share_of_sharing_cost_16_workers"] = round(more / extra, 2) if extra > 0 else None
    for name, *_ in SETUPS[1:]:  # each round's ratio to that round's single worker, so drift falls on both alike
        out[f"{name}_vs_one_worker"] = round(statistics.median(
            m["effects_per_second"] / one["effects_per_second"] for m, one in zip(runs[name], runs["shared_1"])), 2)
    out["shared_16_vs_own_16"] = round(statistics.median(
        s["effects_per_second"] / o["effects_per_second"] for s, o in zip(runs["shared_16"], runs["own_16"])), 2)
    return out


def phases(folder: Path, workers: int, own: bool, effects: int) -> dict[str, float]:
    """One run of `effects` effects: effects per second, CPU ms per effect in each phase (summed over the
    workers), and how many lines a worker skimmed and folded per effect."""
    folder.mkdir(parents=True)
    share = effects // workers
    run = run_workers(phased_submitter, (str(folder), own, share), workers, share * workers, folder.name)
    reports = [json.loads(p.read_text()) for p in sorted(folder.glob("phases-*.json"))]
    if len(reports) != workers:
        raise RuntimeError(f"{folder.name}: {len(reports)} of {workers} workers reported their phases")
    effects = share * workers
    totals = {k: sum(r[k] for r in reports) for k in reports[0]}
    figures = {f"{k.lstrip('_')}_cpu_ms": totals[k] / effects * 1e3 for k in ("effect", *PHASES, *TAKEN)}
    timed = sum(figures[f"{p.lstrip('_')}_cpu_ms"] for p in (*PHASES, *TAKEN))
    figures["rest_cpu_ms"] = figures["effect_cpu_ms"] - timed
    figures["other_writers_lines_skimmed_per_effect"] = totals["skimmed"] / effects
    figures["lines_folded_per_effect"] = totals["folded"] / effects
    figures["effects_per_second"] = run.effects_per_second
    return figures


def phased_submitter(folder: str, own: bool, share: int, worker: int) -> Call:
    """`submitter` with the journal's phases timed: the totals restart with the first timed effect and are
    written to `phases-<worker>.json` after the worker's last."""
    import interlock.journal
    from interlock.claims import FileClaims
    from interlock.journal import Journal

    totals = {name: 0.0 for name in ("effect", *PHASES, *TAKEN)} | {"skimmed": 0, "folded": 0}
    inside = [0]
    for name in PHASES:
        setattr(Journal, name, _timed(getattr(Journal, name), name, totals, inside))
    setattr(interlock.journal, "_take", _timed(getattr(interlock.journal, "_take"), "lock", totals, inside))
    for method in ("acquire", "_release"):
        setattr(FileClaims, method, _timed(getattr(FileClaims, method), "claim", totals, inside))
    # The journal module's own `skim` import, wrapped in this worker process (not part of its typed surface).
    take_lines, skim = Journal._take_lines, getattr(interlock.journal, "skim")

    def folding(journal: Journal, batch: list[bytes], witnessed: Any) -> int:
        taken = take_lines(journal, batch, witnessed)
        totals["folded"] += taken
        return taken

    def skimming(block: bytes, seq: int, head: Any) -> Any:
        found = skim(block, seq, head)
        if found is not None:
            totals["skimmed"] += found.lines
        return found

    setattr(Journal, "_take_lines", folding)
    setattr(interlock.journal, "skim", skimming)
    path = Path(folder) / (f"journal-{worker}.jsonl" if own else "journal.jsonl")
    call = submitter(str(path), worker)
    done = 0

    def phased(key: str) -> None:
        nonlocal done
        if "-warmup-" not in key and done == 0:
            totals.update(dict.fromkeys(totals, 0))
        started = time.thread_time()
        call(key)
        totals["effect"] += time.thread_time() - started
        if "-warmup-" not in key:
            done += 1
            if done == share:
                (Path(folder) / f"phases-{worker}.json").write_text(json.dumps(totals))

    return phased


def _timed(method: Callable[..., Any], name: str, totals: dict[str, float], inside: list[int]) -> Callable[..., Any]:
    """`method` with its CPU time added to `totals[name]`, unless it runs inside another timed phase (the lock
    taken by a fold is the fold's): `inside` counts the timed calls under way, shared by every wrapper."""

    def timed(*args: Any, **kwargs: Any) -> Any:
        inside[0] += 1
        started = time.thread_time()
        try:
            return method(*args, **kwargs)
        finally:
            inside[0] -= 1
            if not inside[0]:
                totals[name] += time.thread_time() - started

    return timed
