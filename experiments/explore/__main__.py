"""`python -m experiments.explore [--scenario S] [--schedules N] [--seed FIRST] [--systems a,b] [--jobs J]`
runs seeded crash schedules and writes results/reliability/explore_<scenario>.json;
`python -m experiments.explore --scenario S --replay SEED` runs one schedule again and shows what happened."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from experiments.explore.checks import VIOLATIONS, Violation, check
from experiments.harness import terminate_as_interrupt
from experiments.explore.processes import Forker
from experiments.explore.runner import Observation, run
from experiments.explore.schedules import SCENARIOS, SYSTEMS, Schedule, schedule_for

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "results" / "reliability"
FIRST_SHOWN = 5
WINDOW = ("An action taken while a worker waits between its check and its send (paused at before_send or "
          "recovery_before_resend) is stopped by the service where it has a precondition (GCS refuses a write "
          "whose generation moved) and otherwise only by a system that looks again after the pause: the gate "
          "takes a last look at lease and premises after those points, the baselines do not. The time of that "
          "last read and the request itself is not paused here (the calendar page's raced dispatch measures it). "
          "Violations of those schedules are counted apart (in_window) so they are neither hidden nor mixed with "
          "the rest.")


class _Usage(Exception):
    """A bad command line: one line on stderr, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:
        raise _Usage(message)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line, validated; raises _Usage with one line."""
    parser = _Parser(prog="python -m experiments.explore", description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", choices=(*SCENARIOS, "all"), default="all")
    parser.add_argument("--schedules", type=int, default=50, help="schedules per scenario (default 50)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first schedule (default 0)")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated (default: all three)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (default 2)")
    parser.add_argument("--replay", type=int, metavar="SEED", help="run the schedule of this seed and show it")
    parser.add_argument("--out", type=Path, default=OUT, help="folder for explore_<scenario>.json")
    args = parser.parse_args(argv)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in args.systems if s not in SYSTEMS]
    if unknown or not args.systems:
        raise _Usage(f"--systems: unknown system {', '.join(unknown) or '(none given)'}; known: {', '.join(SYSTEMS)}")
    if args.schedules < 1 or args.jobs < 1:
        raise _Usage("--schedules and --jobs must be at least 1")
    if args.replay is not None and args.scenario == "all":
        raise _Usage("--replay needs --scenario (gcp_resource or calendar)")
    return args


class Tally:
    """Counts per system and violation kind, keeping the first few replayable examples; safe across threads."""

    def __init__(self, scenario: str, systems: list[str]):
        self.scenario = scenario
        self.lock = threading.Lock()
        self.systems = {s: {"schedules": 0, "held": 0, "violated": 0, "violated_in_window": 0,
                            "violations": {k: {"count": 0, "in_window": 0, "first": []} for k in VIOLATIONS}}
                        for s in systems}
        self.dimensions: dict[str, Counter] = {k: Counter() for k in
                                               ("first_kill", "crashes_in_a_row", "action", "action_timing",
                                                "network_cut", "recoverers")}

    def add(self, seen: Observation, found: list[Violation]) -> None:
        """Count one run."""
        schedule, window = seen.schedule, seen.schedule.in_check_to_send_window
        with self.lock:
            row = self.systems[seen.system]
            row["schedules"] += 1
            if not found:
                row["held"] += 1
            else:
                row["violated_in_window" if window else "violated"] += 1
            for kind in dict.fromkeys(v.kind for v in found):
                cell = row["violations"][kind]
                cell["count"] += 1
                cell["in_window"] += window
                if len(cell["first"]) < FIRST_SHOWN:
                    detail = "; ".join(v.detail for v in found if v.kind == kind)
                    cell["first"].append({"seed": schedule.seed, "replay": schedule.replay, "in_window": window,
                                          "schedule": schedule.describe(), "acted": seen.acted, "detail": detail})
            if seen.system == next(iter(self.systems)):  # count each schedule's shape once
                self._shape(schedule, seen)

    def _shape(self, schedule: Schedule, seen: Observation) -> None:
        d = self.dimensions
        d["first_kill"][schedule.kills[0] or "none"] += 1
        d["crashes_in_a_row"][str(sum(k is not None for k in schedule.kills))] += 1
        d["action"][schedule.action] += 1
        if schedule.action != "none":
            timing = ("inside the check-to-send window" if schedule.in_check_to_send_window else
                      "at a pause point" if schedule.action_pause else "between processes")
            d["action_timing"][timing] += 1
        d["network_cut"][str(schedule.cut).lower()] += 1
        d["recoverers"][str(schedule.recoverers)] += 1

    def summary(self, args: argparse.Namespace, seconds: float) -> dict[str, Any]:
        """The published file's content."""
        return {
            "scenario": self.scenario,
            "schema_version": 1,
            "generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "command": (f"python -m experiments.explore --scenario {self.scenario} --schedules {args.schedules} "
                        f"--seed {args.seed}"),
            "seeds": {"first": args.seed, "count": args.schedules},
            "seconds": round(seconds, 1),
            "jobs": args.jobs,
            "services": SERVICES[self.scenario],
            "decider": "offline-scripted (no model)",
            "workers": ("each worker is its own OS process running the scenario worker's main(), forked from a "
                        "server that preloaded the worker modules; kill points SIGKILL it"),
            "violation_kinds": VIOLATIONS,
            "window": WINDOW,
            "dimensions": {k: dict(sorted(v.items())) for k, v in self.dimensions.items()},
            "systems": self.systems,
        }


SERVICES = {
    "gcp_resource": "fake-gcs-server (stand-in for Google Cloud Storage, versioning on) behind the recording proxy",
    "calendar": "the project's Calendar v3 stand-in",
}


def explore(scenario: str, args: argparse.Namespace, forker: Forker) -> dict[str, Any]:
    """Run every schedule for every chosen system; return the summary."""
    from experiments.explore.worlds import world

    tally = Tally(scenario, args.systems)
    began = time.monotonic()
    done = [0]
    total = args.schedules * len(args.systems)
    with tempfile.TemporaryDirectory(prefix=f"interlock-explore-{scenario}-") as tmp, \
            world(scenario, Path(tmp) / "services") as chosen:

        def one(seed: int, system: str) -> None:
            schedule = schedule_for(scenario, seed)
            seen = run(chosen, forker, schedule, system, Path(tmp) / "runs")
            found = check(seen)
            tally.add(seen, found)
            with tally.lock:
                done[0] += 1
                if found and system == "interlock" and not schedule.in_check_to_send_window:
                    print(f"explore: {scenario} {system} violated {', '.join(dict.fromkeys(v.kind for v in found))}: "
                          f"{schedule.replay}", file=sys.stderr)
                if done[0] % 50 == 0 or done[0] == total:
                    print(f"explore: {scenario} {done[0]}/{total} runs ({time.monotonic() - began:.0f}s)",
                          file=sys.stderr)

        pool = ThreadPoolExecutor(args.jobs)
        try:
            futures = [pool.submit(one, seed, system) for seed in range(args.seed, args.seed + args.schedules)
                       for system in args.systems]
            for future in futures:
                future.result()
        except BaseException:  # interrupted: drop the queued runs and kill the running workers
            pool.shutdown(wait=False, cancel_futures=True)
            forker.stop()
            raise
        finally:
            pool.shutdown(wait=True)
    return tally.summary(args, time.monotonic() - began)


def replay(args: argparse.Namespace, forker: Forker) -> int:
    """Run one schedule for each chosen system and print every worker's end and every violation."""
    from experiments.explore.worlds import world

    schedule = schedule_for(args.scenario, args.replay)
    print(f"{schedule.replay}\n  {schedule.describe()}")
    violated = False
    with tempfile.TemporaryDirectory(prefix="interlock-replay-") as tmp, \
            world(args.scenario, Path(tmp) / "services") as chosen:
        for system in args.systems:
            seen = run(chosen, forker, schedule, system, Path(tmp) / "runs")
            found = check(seen)
            violated |= bool(found)
            print(f"{system}: {'held' if not found else 'VIOLATED'}" + (f" (action {seen.acted})" if seen.acted else ""))
            for ran in seen.ran:
                end = ran.finished.outcome or f"exit {ran.finished.exit_code}"
                print(f"  {ran.stage} {ran.index}" + (f" [kill at {ran.kill}]" if ran.kill else "") + f": {end}")
                if ran.finished.exit_code not in (0, -9):
                    print("    " + "\n    ".join(ran.finished.stderr.strip().splitlines()[-3:]))
            assert seen.truth is not None
            print(f"  service: {len(seen.truth.writes)} agent write(s) committed, {seen.truth.live} live")
            for violation in found:
                print(f"  - {violation.kind}: {violation.detail}")
    return 1 if violated else 0


def main(argv: list[str] | None = None) -> int:
    """Explore (or replay); exit 1 when the gate broke a rule outside the check-to-send window."""
    try:
        args = parse_args(argv)
        if args.replay is None:
            args.out.mkdir(parents=True, exist_ok=True)
    except _Usage as exc:
        print(f"explore: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{args.out}: cannot create the output folder: {exc.strerror or exc}", file=sys.stderr)
        return 2
    forker = Forker()
    try:
        with terminate_as_interrupt():  # SIGTERM too runs every cleanup: stand-ins, workers, temp folders
            if args.replay is not None:
                return replay(args, forker)
            failed = False
            for scenario in SCENARIOS if args.scenario == "all" else (args.scenario,):
                result = explore(scenario, args, forker)
                path = args.out / f"explore_{scenario}.json"
                _write(path, result)
                gate = result["systems"].get("interlock")
                failed |= bool(gate and gate["violated"])
                print(f"explore: wrote {path} ({args.schedules} schedules x {len(args.systems)} systems in "
                      f"{result['seconds']:.0f}s)", file=sys.stderr)
            return 1 if failed else 0
    except KeyboardInterrupt:
        print("explore: interrupted; no result written for the unfinished scenario", file=sys.stderr)
        return 130
    finally:
        forker.stop()


def _write(path: Path, obj: Any) -> None:
    import json

    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1) + "\n")
    os.replace(tmp, path)


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
