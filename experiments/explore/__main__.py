"""`python -m experiments.explore [--scenario S] [--hazard H] [--journal jsonl|postgresql] [--schedules N]
[--seed FIRST] [--systems a,b] [--jobs J]` runs seeded schedules of one hazard, stores every run as a history row
and writes results/reliability/explore_<scenario>[_pg][_<hazard>].json counted from that history;
`python -m experiments.explore --scenario S [--hazard H] [--journal J] --replay SEED` runs one schedule again and
shows what happened; `python -m experiments.explore --check HISTORY` counts a stored history again, no service;
`python -m experiments.explore --stale` lists the result files whose code changed since they were run, and the
hazard cells not run yet."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NoReturn

from experiments.atomic import write_json
from experiments.explore.checks import Violation, check
from experiments.explore.hazards import HAZARDS, JOURNALS, claim_ttl, hazard_named, result_name
from experiments.explore.history import HistoryUnreadable, HistoryWriter, read_history
from experiments.explore.processes import Forker
from experiments.explore.runner import run
from experiments.explore.schedules import SCENARIOS, SYSTEMS, schedule_for
from experiments.explore.staleness import report
from experiments.explore.tally import Tally, in_window
from experiments.harness import code_now, load_average, provenance, terminate_as_interrupt

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "results" / "reliability"
WINDOW = ("An action taken while a worker waits between its check and its send (paused at before_send or "
          "recovery_before_resend) is stopped by the service where it has a precondition (GCS refuses a write "
          "whose generation moved) and otherwise only by a system that looks again after the pause: the gate "
          "takes a last look at lease and premises after those points, the baselines do not. The time of that "
          "last read and the request itself is not paused here (the calendar page's raced dispatch measures it). "
          "Violations of those schedules are counted apart (in_window) so they are neither hidden nor mixed with "
          "the rest.")
SERVICES = {
    "gcp_resource": "fake-gcs-server (stand-in for Google Cloud Storage, versioning on) behind the recording proxy",
    "calendar": "the project's Calendar v3 stand-in",
    "ledger": "the project's ledger stand-in (a local HTTP service: lookup by effect id, write delays, and the fence "
              "each schedule draws: none, the claim epoch, the decided version or a dedupe on the effect id)",
}
JOURNAL_BACKENDS = {
    "jsonl": "each run's own JSONL journal file",
    "postgresql": "one journal database on a throwaway local PostgreSQL cluster, shared by every run; each "
                  "run's sessions carry its name",
    "postgresql_alone": "a throwaway local PostgreSQL cluster per concurrent run, each held by one run at a time, so "
                        "restarting its server strikes that run alone; each run's sessions carry its name",
}
# Hazards that strike the database server: each concurrent run gets a cluster of its own.
ALONE = frozenset({"server_restart"})


class _Usage(Exception):
    """A bad command line: one line on stderr, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Usage(message)


@dataclass(frozen=True)
class Plan:
    """One exploration to run: a hazard on one scenario and journal, for some systems, over some seeds."""

    scenario: str
    hazard: str
    journal: str
    systems: tuple[str, ...]
    schedules: int
    jobs: int
    baseline_schedules: int  # the baselines may try fewer seeds than the gate (the first ones of the same range)

    def seeds(self, system: str) -> int:
        """How many schedules this system tries."""
        return self.schedules if system.startswith("interlock") else min(self.schedules, self.baseline_schedules)

    @property
    def name(self) -> str:
        """Its result file's name."""
        return result_name(self.scenario, self.hazard, self.journal)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line, validated; raises _Usage with one line."""
    parser = _Parser(prog="python -m experiments.explore", description=__doc__,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", choices=(*SCENARIOS, "all"), default="all")
    parser.add_argument("--hazard", choices=(*HAZARDS, "all"), default="crash",
                        help="one hazard, or all of them on every scenario and journal each runs on")
    parser.add_argument("--journal", choices=JOURNALS, default=None,
                        help="default: jsonl, or both with --hazard all")
    parser.add_argument("--schedules", type=int, default=50, help="schedules per scenario (default 50)")
    parser.add_argument("--pg-schedules", type=int, default=None,
                        help="schedules per scenario on the postgresql journal (default: --schedules)")
    parser.add_argument("--baseline-schedules", type=int, default=None,
                        help="the baselines try only the first this many of those schedules (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first schedule (default 0)")
    parser.add_argument("--systems", default=None,
                        help="comma-separated (default: all three on jsonl; interlock on postgresql, since the "
                             "baselines keep no journal there for a database hazard to strike)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (default 2)")
    parser.add_argument("--replay", type=int, metavar="SEED", help="run the schedule of this seed and show it")
    parser.add_argument("--check", type=Path, metavar="HISTORY", help="count a stored history again and print it")
    parser.add_argument("--stale", action="store_true",
                        help="list the result files whose code changed since their commit, and the cells not run")
    parser.add_argument("--out", type=Path, default=OUT, help="folder for the result files and history/")
    parser.add_argument("--until", metavar="HH:MM[:SS]", default=None,
                        help="start no run after this UTC time today; the result counts the schedules every "
                             "system finished, from the first seed on")
    parser.add_argument("--replace", action="store_true",
                        help="replace a stored result even when this run covers fewer systems or schedules")
    args = parser.parse_args(argv)
    chosen = None
    if args.systems is not None:
        chosen = tuple(s.strip() for s in args.systems.split(",") if s.strip())
        unknown = [s for s in chosen if s not in SYSTEMS]
        if unknown or not chosen:
            raise _Usage(f"--systems: unknown system {', '.join(unknown) or '(none given)'}; known: "
                         f"{', '.join(SYSTEMS)}")
    pg_schedules = args.schedules if args.pg_schedules is None else args.pg_schedules
    baselines = max(args.schedules, pg_schedules) if args.baseline_schedules is None else args.baseline_schedules
    if args.schedules < 1 or pg_schedules < 1 or args.jobs < 1 or baselines < 1:
        raise _Usage("--schedules, --pg-schedules, --baseline-schedules and --jobs must be at least 1")
    if args.replay is not None and (args.scenario == "all" or args.hazard == "all"):
        raise _Usage("--replay needs --scenario and one --hazard")
    if args.until is not None:
        try:
            hour, minute, second = (int(part) for part in (args.until + ":0").split(":")[:3])
            args.until = datetime.now(timezone.utc).replace(hour=hour, minute=minute, second=second,
                                                            microsecond=0).timestamp()
        except ValueError:
            raise _Usage(f"--until: expected HH:MM[:SS] (UTC), got {args.until!r}") from None
    args.plans = []
    for hazard in HAZARDS.values() if args.hazard == "all" else (hazard_named(args.hazard),):
        journals = hazard.journals if args.journal is None and args.hazard == "all" else (args.journal or "jsonl",)
        if args.hazard != "all" and journals[0] not in hazard.journals:
            raise _Usage(f"--hazard {hazard.name} runs on the {' or '.join(hazard.journals)} journal, not "
                         f"{journals[0]}")
        scenarios = hazard.scenarios if args.scenario == "all" else (args.scenario,)
        if args.hazard != "all" and scenarios[0] not in hazard.scenarios:
            raise _Usage(f"--hazard {hazard.name} runs on {', '.join(hazard.scenarios)}, not {args.scenario}")
        for journal in journals:
            systems = chosen or (SYSTEMS if journal == "jsonl" else ("interlock",))
            count = args.schedules if journal == "jsonl" else pg_schedules
            args.plans += [Plan(s, hazard.name, journal, systems, count, args.jobs,
                                baselines) for s in scenarios if s in hazard.scenarios and journal in hazard.journals]
    if not args.plans:
        raise _Usage(f"--hazard {args.hazard} does not run on {args.scenario} with the {args.journal} journal")
    return args


def explore(plan: Plan, args: argparse.Namespace, forker: Forker) -> dict[str, Any]:
    """Run every schedule for every chosen system into a history, then count the history; return the summary."""
    from experiments.explore.worlds import world

    scenario = plan.scenario
    history_path = args.out / "history" / plan.name.replace(".json", ".jsonl.gz")
    started, load = code_now(), load_average()
    began = time.monotonic()
    lock = threading.Lock()
    rows: dict[tuple[int, str], dict[str, Any]] = {}
    wanted = [(seed, system) for seed in range(args.seed, args.seed + plan.schedules) for system in plan.systems
              if seed < args.seed + plan.seeds(system)]
    with tempfile.TemporaryDirectory(prefix=f"interlock-explore-{scenario}-") as tmp, \
            world(scenario, Path(tmp) / "world", plan.journal, claim_ttl(scenario, plan.hazard),
                  plan.jobs if plan.hazard in ALONE else 0) as chosen:

        def one(seed: int, system: str) -> None:
            if args.until is not None and time.time() >= args.until:
                return  # past the deadline: the run ends with the schedules already complete
            schedule = schedule_for(scenario, seed, plan.hazard, plan.journal)
            row = _run_once_more_on_harness_failure(chosen, forker, schedule, system, Path(tmp) / "runs",
                                                    plan.name)
            found = check(row)
            with lock:
                rows[(seed, system)] = row
                if _gate_broke(system, row, found):
                    print(f"explore: {scenario} {plan.hazard} {system} violated "
                          f"{', '.join(dict.fromkeys(v.kind for v in found))}: {schedule.replay}", file=sys.stderr)
                if len(rows) % 50 == 0 or len(rows) == len(wanted):
                    print(f"explore: {plan.name} {len(rows)}/{len(wanted)} runs "
                          f"({time.monotonic() - began:.0f}s)", file=sys.stderr)

        pool = ThreadPoolExecutor(plan.jobs)
        try:
            futures = [pool.submit(one, seed, system) for seed, system in wanted]
            for future in futures:
                future.result()
        except BaseException:  # interrupted: drop the queued runs and kill the running workers
            pool.shutdown(wait=False, cancel_futures=True)
            forker.stop()
            raise
        finally:
            pool.shutdown(wait=True)
    # The schedules every system finished, from the first seed on without a gap (all of them unless a deadline
    # came first): only those go into the history, so its counts are those of a complete run of that many seeds.
    complete = next((seed - args.seed for seed, system in wanted if (seed, system) not in rows), plan.schedules)
    if complete == 0:
        raise NoCompleteSchedule(f"{plan.name}: no schedule was complete for every system before the deadline")
    per_system = {system: min(complete, plan.seeds(system)) for system in plan.systems}
    if complete < plan.schedules and not args.replace:
        short = _shortfall(args.out / plan.name, per_system, args.seed, "the deadline left")
        if short:
            raise Unreplaceable(short)
    with HistoryWriter(history_path) as history:
        for seed, system in wanted:
            if seed < args.seed + complete:
                history.add(rows[(seed, system)])
        history.complete()
    seconds = time.monotonic() - began
    runs = sum(1 for seed, _ in wanted if seed < args.seed + complete)
    return summarize(history_path, args.out, {
        "command": (f"python -m experiments.explore --scenario {scenario} --hazard {plan.hazard} --journal "
                    f"{plan.journal} --systems {','.join(plan.systems)} --schedules {complete} "
                    f"--baseline-schedules {min(complete, plan.baseline_schedules)} --seed {args.seed}"),
        "provenance": provenance("python -m experiments.explore",
                                 {"service": SERVICES[scenario], "journal": _backend(plan.journal, plan.hazard)},
                                 "offline-scripted (no model)", _claims(scenario, plan.hazard), started, load),
        "seeds": {"first": args.seed, "count": complete, "planned": plan.schedules,
                  "stopped_at_deadline": complete < plan.schedules,
                  "per_system": per_system},
        "seconds": round(seconds, 1),
        "seconds_per_run": round(seconds * plan.jobs / runs, 3),
        "jobs": plan.jobs,
    })


class NoCompleteSchedule(Exception):
    """A deadline came before any schedule was finished by every system: there is nothing to write."""


class Unreplaceable(Exception):
    """A stored result this run would replace with fewer systems or schedules, or cannot read: it is kept."""


class HarnessFailed(Exception):
    """The harness itself (not a worker, not the system) failed the same schedule twice: nothing is written."""


def _run_once_more_on_harness_failure(chosen: Any, forker: Forker, schedule: Any, system: str, root: Path,
                                      name: str) -> dict[str, Any]:
    """Play one schedule; when the harness itself raises (a race between its signals and a worker that has
    already gone), play it once more from the start and record the first failure in the row, which the result
    file then counts; a second failure ends this file's exploration."""
    try:
        return run(chosen, forker, schedule, system, root)
    except Exception as exc:  # the harness's own failure: a system's failures are rows, never exceptions
        first = f"{type(exc).__name__}: {exc}"
    try:
        row = run(chosen, forker, schedule, system, root)
    except Exception as exc:
        raise HarnessFailed(f"{name}: seed {schedule.seed} ({system}): the harness failed twice "
                            f"({first}; then {type(exc).__name__}: {exc})") from exc
    row["harness_retried"] = first[:300]
    return row


def _stored_seeds(path: Path) -> tuple[dict[str, int], int] | None:
    """The schedules a stored result counts per system and its first seed; None when there is no such file."""
    if not path.exists():
        return None
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise Unreplaceable(f"{path}: cannot be read as JSON ({exc})") from None
    seeds = stored.get("seeds") if isinstance(stored, dict) else None
    per_system = seeds.get("per_system") if isinstance(seeds, dict) else None
    first = seeds.get("first") if isinstance(seeds, dict) else None
    if not (isinstance(per_system, dict) and all(isinstance(n, int) for n in per_system.values())
            and isinstance(first, int)):
        raise Unreplaceable(f"{path}: seeds.per_system, seeds.first: missing or not counts")
    return per_system, first


def _shortfall(path: Path, covered: dict[str, int], first: int, this: str) -> str | None:
    """What a stored result holds that these schedules per system from this first seed lack; None when none."""
    stored = _stored_seeds(path)
    if stored is None:
        return None
    held, held_first = stored
    if held_first == first and all(covered.get(system, 0) >= count for system, count in held.items()):
        return None
    return (f"{path}: seeds.per_system holds {_listed(held)} from seed {held_first}; {this} {_listed(covered)} from "
            f"seed {first}")


def _listed(per_system: dict[str, int]) -> str:
    """Schedules per system, as one phrase."""
    return ", ".join(f"{system} {count}" for system, count in per_system.items()) or "no system"


def _refusal(args: argparse.Namespace) -> str | None:
    """Why this run may not start: a stored result it would replace with less, or cannot read; None when none."""
    if args.replace:
        return None
    for plan in args.plans:
        try:
            short = _shortfall(args.out / plan.name, {system: plan.seeds(system) for system in plan.systems},
                               args.seed, "this run would cover")
        except Unreplaceable as exc:
            short = str(exc)
        if short:
            return f"{short}; --replace to replace it"
    return None


def _gate_broke(system: str, row: dict[str, Any], found: list[Violation]) -> bool:
    """The gate broke a rule outside the check-to-send window (what exit status 1 means)."""
    return bool(found) and system == "interlock" and not in_window(row)


def _backend(journal: str, hazard: str) -> str:
    """How the runs kept their journal."""
    return JOURNAL_BACKENDS[f"{journal}_alone" if journal == "postgresql" and hazard in ALONE else journal]


def _claims(scenario: str, hazard: str) -> dict[str, Any]:
    """The claim settings of the scenario's gated workers."""
    from experiments.journals import CLAIM_TTL_SECONDS

    return {"claim_ttl_seconds": claim_ttl(scenario, hazard) or CLAIM_TTL_SECONDS,
            "where": "the explorer's ledger worker" if scenario == "ledger" else "the scenario's own gated worker"}


def summarize(history_path: Path, out: Path, run_facts: dict[str, Any]) -> dict[str, Any]:
    """The result file's content, counted from the stored history alone."""
    rows = list(read_history(history_path))
    if not rows:
        raise HistoryUnreadable(f"{history_path}: no rows")
    first = rows[0]
    scenario, hazard, journal = first["scenario"], first["hazard"], first["journal"]
    present = dict.fromkeys(r["system"] for r in rows)
    tally = Tally([s for s in SYSTEMS if s in present] + [s for s in present if s not in SYSTEMS])
    for number, row in enumerate(rows, 1):
        try:
            tally.add(row)
        except RecursionError:
            raise HistoryUnreadable(f"{history_path}: line {number}: nested too deep to count") from None
    try:
        shown = history_path.resolve().relative_to(REPO).as_posix()
    except ValueError:
        shown = str(history_path.absolute())
    return {
        "scenario": scenario,
        "schema_version": 2,
        "generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **run_facts,
        "hazard": {"name": hazard, "what": HAZARDS[hazard].what, "journal": journal,
                   "journal_backend": _backend(journal, hazard)},
        "history": {"path": shown, "rows": len(rows), "sha256": hashlib.sha256(history_path.read_bytes()).hexdigest(),
                    "check": f"python -m experiments.explore --check {shown}"},
        "services": SERVICES[scenario],
        "decider": "offline-scripted (no model)",
        "workers": ("each worker is its own OS process running the scenario worker's main(), forked from a "
                    "server that preloaded the worker modules; kill points SIGKILL it, held workers are "
                    "stopped with SIGSTOP and continued with SIGCONT"),
        "window": WINDOW,
        **tally.summary(),
    }


def replay(args: argparse.Namespace, forker: Forker) -> int:
    """Run one schedule for each chosen system and print every worker's end and every violation; 1 when the gate
    broke a rule outside the check-to-send window."""
    from experiments.explore.worlds import world

    plan = args.plans[0]
    schedule = schedule_for(plan.scenario, args.replay, plan.hazard, plan.journal)
    print(f"{schedule.replay}\n  {schedule.describe()}")
    failed = False
    with tempfile.TemporaryDirectory(prefix="interlock-replay-") as tmp, \
            world(plan.scenario, Path(tmp) / "world", plan.journal, claim_ttl(plan.scenario, plan.hazard)) \
            as chosen:
        for system in plan.systems:
            row = run(chosen, forker, schedule, system, Path(tmp) / "runs")
            found = check(row)
            failed |= _gate_broke(system, row, found)
            print(f"{system}: {'held' if not found else 'VIOLATED'}" + (f" (action {row['acted']})" if row["acted"]
                                                                          else ""))
            for ran in row["ran"]:
                end = ran["outcome"] or f"exit {ran['exit_code']}"
                print(f"  {ran['stage']} {ran['index']}" + (f" [kill at {ran['kill']}]" if ran["kill"] else "")
                      + f": {end}")
                if ran["exit_code"] not in (0, -9):
                    print("    " + "\n    ".join(ran["stderr"][-3:]))
            for fact in ("interrupt", "in_flight", "journal_cut"):
                if row[fact] is not None:
                    print(f"  {fact}: {row[fact]}")
            print(f"  service: {len(row['truth']['writes'])} agent write(s) committed, {row['truth']['live']} live")
            for violation in found:
                print(f"  - {violation.kind}: {violation.detail}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    """Explore, replay or re-count; exit 1 when the gate broke a rule outside the check-to-send window."""
    try:
        args = parse_args(argv)
        if args.stale:
            print("\n".join(report(args.out, REPO)))
            return 0
        if args.replay is None and args.check is None:
            (args.out / "history").mkdir(parents=True, exist_ok=True)
            refused = _refusal(args)
            if refused:
                raise _Usage(refused)
    except (_Usage, ValueError) as exc:
        print(f"explore: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"explore: {args.out}: cannot create the output folder and its history/: {exc.strerror or exc}",
              file=sys.stderr)
        return 2
    if args.check is not None:
        try:
            result = summarize(args.check, args.out, {})
        except HistoryUnreadable as exc:
            print(f"explore: {exc}", file=sys.stderr)
            return 2
        _print_counts(result)
        return 1 if result["systems"].get("interlock", {}).get("violated") else 0
    forker = Forker()
    try:
        with terminate_as_interrupt():  # SIGTERM too runs every cleanup: stand-ins, workers, temp folders
            if args.replay is not None:
                return replay(args, forker)
            failed = False
            for plan in args.plans:
                try:
                    result = explore(plan, args, forker)
                except (NoCompleteSchedule, HarnessFailed, Unreplaceable) as exc:
                    print(f"explore: {exc}; nothing written", file=sys.stderr)
                    failed = True
                    continue
                path = args.out / plan.name
                write_json(path, result)
                gate = result["systems"].get("interlock")
                failed |= bool(gate and gate["violated"])
                print(f"explore: wrote {path} ({result['history']['rows']} runs of {plan.schedules} schedules in "
                      f"{result['seconds']:.0f}s)", file=sys.stderr)
            return 1 if failed else 0
    except KeyboardInterrupt:
        print("explore: interrupted; no result written for the unfinished scenario", file=sys.stderr)
        return 130
    finally:
        forker.stop()


def _print_counts(result: dict[str, Any]) -> None:
    print(f"{result['scenario']} {result['hazard']['name']} ({result['hazard']['journal']}): "
          f"{result['history']['rows']} rows")
    for system, counts in result["systems"].items():
        kinds = ", ".join(f"{k} {v['count']}" for k, v in counts["violations"].items() if v["count"])
        print(f"  {system}: {counts['schedules']} schedules, {counts['held']} held, {counts['violated']} violated, "
              f"{counts['violated_in_window']} in the check-to-send window" + (f" ({kinds})" if kinds else ""))


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
