"""Where a JSONL append's CPU goes when workers share the journal: each phase of `Journal.append` timed in CPU
time inside every worker, for 16 workers on one journal against 16 each on a journal of their own (and one worker
alone), so the cost of sharing shows phase by phase.

The phases are the journal's own methods, wrapped in each worker process: `_read_ahead` (other writers' lines,
checked before the lock), `_behind` (under the lock: what landed while this worker waited), `_check_behind` (after
the lock: those lines checked), `_make_durable` (the flush before a send) and the rest of `append`. `_take_lines`
is counted too: how many of other writers' lines a worker checks per effect it makes. Each wrapper adds about a
microsecond per call, on every run alike.

A fourth set-up prices what is left of sharing once reading costs nothing: `unread_16` runs the 16 workers on one
journal with `_take_lines` replaced, in those worker processes only, by a step that moves the head past other
writers' lines without parsing, checking or folding them. That is unsafe (a damaged line would go unseen) and is
never what the journal does; it is the ceiling of any design that reads each line once instead of once per
writer. Each set-up's effects per second, and its ratio to one worker in the same round, stand beside its phases.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from ._throughput import Call, run_workers
from .gate import SHARED_EFFECTS, submitter

ROUNDS = 3
WORKERS = 16
PHASES = ("_read_ahead", "_behind", "_check_behind", "_make_durable")
FOREIGN = ("_read_ahead", "_behind", "_check_behind")  # the phases that read other writers' lines
SETUPS = (("shared_1", 1, False, False), ("shared_16", WORKERS, False, False), ("unread_16", WORKERS, False, True),
          ("own_16", WORKERS, True, False))  # (name, workers, a journal each, other writers' lines left unread)


def run() -> dict[str, Any]:
    """The set-ups taking turns for ROUNDS rounds; each figure the median of its rounds."""
    with tempfile.TemporaryDirectory(prefix="bench-phases-") as tmp:
        folder = Path(tmp)
        runs: dict[str, list[dict[str, float]]] = {name: [] for name, *_ in SETUPS}
        for r in range(ROUNDS):
            for name, workers, own, unread in SETUPS:
                runs[name].append(phases(folder / f"{name}-{r}", workers, own, SHARED_EFFECTS, unread=unread))
    out: dict[str, Any] = {"append_phase_rounds": ROUNDS, "append_phase_effects_per_run": SHARED_EFFECTS}
    medians = {name: {k: statistics.median(m[k] for m in measured) for k in measured[0]}
               for name, measured in runs.items()}
    for name, figures in medians.items():
        for key, value in figures.items():
            out[f"{name}_{key}"] = round(value, 4 if key.endswith("_ms") else 2)
    shared, own = medians["shared_16"], medians["own_16"]
    extra = shared["append_cpu_ms"] - own["append_cpu_ms"]
    foreign = sum(shared[f"{p[1:]}_cpu_ms"] - own[f"{p[1:]}_cpu_ms"] for p in FOREIGN)
    out["sharing_extra_append_cpu_ms_16_workers"] = round(extra, 4)
    out["sharing_extra_in_reading_other_writers_ms_16_workers"] = round(foreign, 4)
    out["reading_share_of_sharing_cost_16_workers"] = round(foreign / extra, 2) if extra > 0 else None
    for name, *_ in SETUPS[1:]:  # each round's ratio to that round's single worker, so drift falls on both alike
        out[f"{name}_vs_one_worker"] = round(statistics.median(
            m["effects_per_second"] / one["effects_per_second"] for m, one in zip(runs[name], runs["shared_1"])), 2)
    out["unread_16_vs_own_16"] = round(statistics.median(
        u["effects_per_second"] / o["effects_per_second"] for u, o in zip(runs["unread_16"], runs["own_16"])), 2)
    return out


def phases(folder: Path, workers: int, own: bool, effects: int, *, unread: bool = False) -> dict[str, float]:
    """One run of `effects` effects: effects per second, CPU ms per effect in each phase (summed over the
    workers), and how many of other writers' lines a worker checked per effect; with `unread`, other writers'
    lines are moved past unread (see the module's note)."""
    folder.mkdir(parents=True)
    share = effects // workers
    run = run_workers(phased_submitter, (str(folder), own, share, unread), workers, share * workers, folder.name)
    reports = [json.loads(p.read_text()) for p in sorted(folder.glob("phases-*.json"))]
    if len(reports) != workers:
        raise RuntimeError(f"{folder.name}: {len(reports)} of {workers} workers reported their phases")
    effects = share * workers
    totals = {k: sum(r[k] for r in reports) for k in reports[0]}
    figures = {f"{k.lstrip('_')}_cpu_ms": totals[k] / effects * 1e3 for k in ("append", *PHASES)}
    figures["append_rest_cpu_ms"] = figures["append_cpu_ms"] - sum(figures[f"{p[1:]}_cpu_ms"] for p in PHASES)
    figures["other_writers_lines_checked_per_effect"] = totals["lines"] / effects
    figures["effects_per_second"] = run.effects_per_second
    return figures


def phased_submitter(folder: str, own: bool, share: int, unread: bool, worker: int) -> Call:
    """`submitter` with the journal's phases timed: the totals restart with the first timed effect and are
    written to `phases-<worker>.json` after the worker's last."""
    from interlock.journal import Journal

    totals = {name: 0.0 for name in ("append", *PHASES)} | {"lines": 0}
    take_lines = Journal._take_lines
    for name in ("append", *PHASES):
        setattr(Journal, name, _timed(getattr(Journal, name), name, totals))

    def counted(journal: Journal, batch: list[bytes], witnessed: Any) -> int:
        if unread and witnessed is None:
            return _moved_past(journal, batch)
        taken = take_lines(journal, batch, witnessed)
        totals["lines"] += taken
        return taken

    Journal._take_lines = counted  # type: ignore[method-assign]
    path = Path(folder) / (f"journal-{worker}.jsonl" if own else "journal.jsonl")
    call = submitter(str(path), worker)
    done = 0

    def phased(key: str) -> None:
        nonlocal done
        if "-warmup-" not in key and done == 0:
            totals.update(dict.fromkeys(totals, 0))
        call(key)
        if "-warmup-" not in key:
            done += 1
            if done == share:
                (Path(folder) / f"phases-{worker}.json").write_text(json.dumps(totals))

    return phased


def _moved_past(journal: Any, batch: list[bytes]) -> int:
    """The `unread` stand-in for `Journal._take_lines`: move the head past each line, taking its seq and hash from
    where the journal lays them out, with nothing parsed, checked or folded. Only the lines of other writers come
    here (a writer folds its own line itself), and never at open (`witnessed` is then given)."""
    for raw in batch:
        journal._tip_start, journal._tip_prev = journal._offset, journal._last
        journal._last = raw[-66:-2].decode()
        journal._seq += 1
        journal._offset += len(raw) + 1
        journal._line += 1
        journal._tail_entries += 1
    return len(batch)


def _timed(method: Callable[..., Any], name: str, totals: dict[str, float]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return method(*args, **kwargs)
        finally:
            totals[name] += time.thread_time() - started

    return timed
