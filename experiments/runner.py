"""The one runner of every scenario: it records what happened and judges nothing.

For each (fault, system) cell it seeds a fresh case, runs a first worker until the fault fires (a SIGKILL at a
crash point, a pause while the world acts, a cut connection), acts during the outage, runs a restarted worker,
reads the ground truth from the service and keeps every file the workers wrote. The cell it returns holds only
observations and a `timeline` (epoch seconds, harness clock); the pipeline derives every verdict from them.

A scenario is one module holding a `Scenario` subclass, run as `python -m experiments.<name>` through `main()`:

| member | what the scenario says |
|---|---|
| `name`, `worker`, `roles` | result file stem, the worker module, the `experiments.live` roles it uses |
| `systems`, `extra_systems` | systems run by default (column order), and those run only when named |
| `controls` | control systems run by default on their own rows only: system -> fault names |
| `faults` | its rows (`Fault`s), published first; `offline_only` rows are left out of live runs |
| `open()` | a context manager around the whole run: shared set-up (a bucket, a calendar) and clean-up |
| `seed(case)` | the cell's identifiers and files in `case.directory`, the decision included |
| `arm_cut(case)` | make the stand-in commit the case's next agent write and cut the connection before the answer |
| `act(case, moment)` | what the world does at `BEFORE` (before the first worker), `PAUSED` (while a worker waits at its fault's pause point) or `OUTAGE` (between the two workers); returns a JSON record or None |
| `observe(case)` | the cell's scenario keys: raw ground truth, identifiers, the workers' files |
| `finish(cells)` | the result file's scenario keys, after `open()` closed (the services still run): more trials, clean-up reports |
| `claim_settings()`, `extra_services()` | what the provenance block says about claims and local services |
| `add_arguments(parser)`, `full(args)` | scenario options, and whether they leave the run complete |
| `fault_type`, `worker_args(case, phase)` | its rows' class (the explorer makes one per schedule); a command line |
| `journal_file`, `send_log` | the gate's journal, the baselines' send log (None: they keep none) in a case |
| `actions`, `perform(case, action, when)` | the world's two actions (the premise moves, the authority ends), now |
| `agent_writes(case)` | the agent's committed writes (id, when the service received it), its copies live now |
| `slow_writes(case, s)` | the service lands each agent write of the case `s` seconds after it arrived |
| `held_writes(case)`, `release(case)` | the writes it held so far; drop the slow rule when the case ends |

The crash-schedule explorer (experiments.explore) drives every scenario through this same interface.

A worker is `python -m <worker> --case DIR --system S --phase decide|restart`, armed by its environment
(experiments.crash). Every cell holds `system`, `fault`, the scenario's keys, `worker_exits` (first, restarted) and
`timeline` (`crashed_at`, `first_exit_at`, `outage_done_at`, `restart_exit_at`); a row with a pause point adds
`pause_reached` and `timeline.pause_released_at`.

A new system is one entry in the scenario's table of systems (`experiments/<scenario>/systems.py`: `SYSTEMS`, name
to the function a worker runs); a system not in the scenario's default `systems` runs when `--systems` names it.

The result file is written once, atomically, when the whole run finished; a Ctrl-C or SIGTERM writes nothing and
leaves no worker, stand-in or temp file. A run of part of the faults or systems never replaces the committed full
result file: it needs `--out`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NoReturn

from experiments import crash, harness, journals, live, peers, planted
from experiments.atomic import write_json
from experiments.phases import DECIDE, RESTART

BEFORE, PAUSED, OUTAGE = "before", "paused", "outage"
CRASH_MARKER = "crashed_at"
PAUSE_FILE = "paused"
WORKER_TIMEOUT_SECONDS = 90.0
PAUSE_TIMEOUT_SECONDS = 30.0
RESULTS = harness.ROOT / "results" / "scenarios"


@dataclass(frozen=True)
class Fault:
    """One row: how the first worker is stopped and what the world does meanwhile.

    `kill_at`: the first worker is SIGKILLed at this point. `pause_at` (in the worker of `pause_phase`): the worker
    waits there while the scenario acts (`PAUSED`), then goes on. `cut`: the service commits the first worker's
    write and the connection is cut before the answer. `outage`: the scenario's action between the two workers.
    """

    name: str
    kill_at: str | None = None
    pause_at: str | None = None
    pause_phase: str = DECIDE
    cut: bool = False
    outage: str | None = None
    offline_only: bool = False
    published: bool = False


@dataclass
class Case:
    """One cell while it runs: its directory, what the scenario created, what the harness saw."""

    directory: Path
    fault: Fault
    system: str
    index: int
    ids: dict[str, Any] = field(default_factory=dict)
    actions: dict[str, Any] = field(default_factory=dict)
    first: harness.WorkerRun | None = None
    restart: harness.WorkerRun | None = None
    first_files: dict[str, Any] = field(default_factory=dict)
    timeline: dict[str, float | None] = field(default_factory=dict)

    @property
    def crashed_at(self) -> float | None:
        """When the crash marker says the first worker was killed (None: no crash fired)."""
        return self.timeline.get("crashed_at")


class Scenario:
    """What one scenario tells the runner; see the module docstring. One instance serves one run."""

    name: ClassVar[str]
    worker: ClassVar[str]
    roles: ClassVar[tuple[str, ...]]
    systems: ClassVar[tuple[str, ...]]
    extra_systems: ClassVar[tuple[str, ...]] = ()
    controls: ClassVar[dict[str, tuple[str, ...]]] = {}
    faults: ClassVar[tuple[Fault, ...]]
    fault_type: ClassVar[type[Fault]] = Fault
    journal_file: ClassVar[str] = "journal.jsonl"
    send_log: ClassVar[str | None] = None
    actions: ClassVar[tuple[str, str]]

    def __init__(self, args: argparse.Namespace, services: live.Services, root: Path):
        self.args, self.services, self.root = args, services, root

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """The scenario's own options (none by default)."""

    @classmethod
    def full(cls, args: argparse.Namespace) -> bool:
        """Whether the scenario's options leave the run complete (a reduced run needs --out)."""
        return True

    @contextlib.contextmanager
    def open(self) -> Iterator[None]:
        """Shared set-up and clean-up around every cell of the run."""
        yield

    def seed(self, case: Case) -> None:
        """Create the cell's identifiers and files."""
        raise NotImplementedError

    def arm_cut(self, case: Case) -> None:
        """Cut the connection of the case's next committed agent write."""
        raise NotImplementedError(f"{self.name} has no connection cut")

    def act(self, case: Case, moment: str) -> dict[str, Any] | None:
        """What the world does at `moment`; a JSON record of it, or None when nothing happens."""
        return None

    def observe(self, case: Case) -> dict[str, Any]:
        """The cell's scenario keys, read from the service and the case directory."""
        raise NotImplementedError

    def worker_args(self, case: Case, phase: str) -> list[str]:
        """A worker's command line."""
        return ["--case", str(case.directory), "--system", case.system, "--phase", phase]

    def perform(self, case: Case, action: str, when: str) -> dict[str, Any]:
        """Do one of `actions` now (`when` says when, for the record); a JSON record of it."""
        raise NotImplementedError

    def agent_writes(self, case: Case) -> tuple[list[tuple[str, float]], int]:
        """The agent's writes the service committed, each with the time it received it, and how many agent copies
        it holds now."""
        raise NotImplementedError

    def slow_writes(self, case: Case, seconds: float) -> None:
        """Make the service land each agent write of the case `seconds` after it arrived."""
        raise NotImplementedError(f"{self.name} has no slow service")

    def held_writes(self, case: Case) -> list[dict[str, Any]]:
        """The agent writes the slow service held so far: `{"arrived", "landed"}` each."""
        return []

    def release(self, case: Case) -> None:
        """Drop what `slow_writes` set up for the case."""

    def finish(self, cells: list[dict[str, Any]]) -> dict[str, Any]:
        """The result file's scenario keys."""
        return {}

    def claim_settings(self) -> dict[str, Any]:
        """The gated systems' claim settings, for the provenance block."""
        return {}

    def extra_services(self) -> dict[str, Any]:
        """Services beyond the live roles (a local queue, a booking-request file), for the provenance block."""
        return {}


class UsageError(Exception):
    """A bad command line: one line on stderr, exit 2, nothing run or written."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse would print its usage block too
        raise UsageError(message)


def _names(text: str, known: tuple[str, ...], option: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise UsageError(f"{option}: give at least one name (known: {', '.join(known)})")
    unknown = [name for name in names if name not in known]
    if unknown:
        raise UsageError(f"{option}: unknown {', '.join(map(repr, unknown))} (known: {', '.join(known)})")
    return list(dict.fromkeys(names))


def parse_args(scenario: type[Scenario], argv: list[str]) -> argparse.Namespace:
    """The one command line of every scenario; `--systems a,b` and `--faults f,g` are comma-separated."""
    fault_names = tuple(f.name for f in scenario.faults)
    default = [*scenario.systems, *scenario.controls]
    systems = (*default, *scenario.extra_systems)
    parser = _Parser(prog=f"python -m experiments.{scenario.name}", description=(scenario.__doc__ or "").strip())
    live.add_live_flag(parser)
    parser.add_argument("--systems", metavar="A,B", help=f"from {', '.join(systems)} "
                                                          f"(default: {', '.join(default)}; "
                                                          f"{', '.join(scenario.controls) or 'no control'} only on "
                                                          "its control rows)")
    parser.add_argument("--faults", metavar="F,G", help=f"from {', '.join(fault_names)} (default: every fault "
                                                        "the mode can run)")
    parser.add_argument("--out", type=Path, help=f"result file (default, for a complete run only: "
                                                 f"{RESULTS.relative_to(harness.ROOT)}/{scenario.name}.json)")
    journals.add_journal_flag(parser)
    scenario.add_arguments(parser)
    args = parser.parse_args(argv)
    args.live = live.live_requested(args.live)
    runnable = [f for f in scenario.faults if not (args.live and f.offline_only)]
    args.systems = _names(args.systems, systems, "--systems") if args.systems is not None else default
    if args.faults is None:
        args.faults = runnable
    else:
        chosen = _names(args.faults, fault_names, "--faults")
        offline = [name for name in chosen if name not in {f.name for f in runnable}]
        if offline:
            raise UsageError(f"--faults: {', '.join(offline)} need(s) a local stand-in and cannot run with --live")
        args.faults = [f for f in scenario.faults if f.name in chosen]
    if not plan(scenario, args):
        raise UsageError(f"--faults: {', '.join(args.systems)} run(s) on none of them (a control system runs only on "
                         "its control rows)")
    complete = args.systems == default and args.faults == runnable and scenario.full(args)
    if args.out is None:
        if not complete:
            raise UsageError("--out: a run of part of the faults, systems or trials must name its own result file "
                             f"(the default {scenario.name}.json holds complete runs only)")
        args.out = RESULTS / f"{scenario.name}.json"
    if args.out.is_dir():
        raise UsageError(f"--out: {args.out} is a directory")
    try:
        args.journal_backend = journals.check(args.journal)
    except journals.JournalUnusable as exc:
        raise UsageError(str(exc)) from None
    return args


def plan(scenario: type[Scenario], args: argparse.Namespace) -> list[tuple[Fault, str]]:
    """The run's cells in order, fault by fault: every chosen system, a control system only on its control rows."""
    return [(fault, system) for fault in args.faults for system in args.systems
            if system not in scenario.controls or fault.name in scenario.controls[system]]


def worker_env(journal: str | None, **arm: str | None) -> dict[str, str]:
    """A worker's environment: this process's (the chosen services' endpoints), the run's journal, its armed faults
    and nothing armed by accident (a fault variable inherited from the caller's shell is dropped)."""
    env = {k: v for k, v in os.environ.items() if k not in (*crash.VARIABLES, *planted.VARIABLES)}
    return journals.worker_env({**env, **crash.armed(**arm)}, journal)


def _read_marker(path: Path) -> float | None:
    try:
        return float(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None


def _run_worker(scenario: Scenario, case: Case, phase: str) -> harness.WorkerRun:
    """One worker of the case, armed with the fault's kill point (first worker) and pause point (its phase)."""
    fault = case.fault
    arm: dict[str, str | None] = {}
    if phase == DECIDE and fault.kill_at:
        arm.update(kill_at=fault.kill_at, marker=str(case.directory / CRASH_MARKER))
    pausing = fault.pause_at is not None and fault.pause_phase == phase
    pause = case.directory / PAUSE_FILE
    if pausing:
        arm.update(pause_at=fault.pause_at, pause_file=str(pause))
    args = scenario.worker_args(case, phase)
    with harness.start_worker(scenario.worker, args, worker_env(scenario.args.journal, **arm)) as worker:
        if pausing:
            reached = harness.wait_for_file(pause, worker, PAUSE_TIMEOUT_SECONDS)
            case.actions["pause_reached"] = reached
            if reached:
                case.actions[PAUSED] = scenario.act(case, PAUSED)
                case.timeline["pause_released_at"] = time.time()
                pause.unlink()
        return worker.wait(WORKER_TIMEOUT_SECONDS)


def run_cell(scenario: Scenario, fault: Fault, system: str, index: int) -> dict[str, Any]:
    """One (fault, system) cell end to end; its case directory is gone when this returns."""
    case = Case(harness.case_dir(scenario.root, fault.name, system), fault, system, index)
    try:
        scenario.seed(case)
        case.actions[BEFORE] = scenario.act(case, BEFORE)
        if fault.cut:
            scenario.arm_cut(case)
        case.first = _run_worker(scenario, case, DECIDE)
        case.timeline.update(crashed_at=_read_marker(case.directory / CRASH_MARKER), first_exit_at=case.first.ended)
        case.first_files = harness.collect_artifacts(case.directory)
        case.actions[OUTAGE] = scenario.act(case, OUTAGE)
        case.timeline["outage_done_at"] = time.time() if fault.outage else None
        case.restart = _run_worker(scenario, case, RESTART)
        case.timeline["restart_exit_at"] = case.restart.ended
        reader = (peers.observe_record(case.directory, worker_env(scenario.args.journal), WORKER_TIMEOUT_SECONDS)
                  if system in peers.SYSTEMS else None)
        observed = scenario.observe(case)
    finally:
        harness.stop_unreaped()  # an interrupt just after a worker's start skips the block that stops it
        shutil.rmtree(case.directory, ignore_errors=True)
    cell = {"system": system, "fault": fault.name, **observed,
            "worker_exits": [case.first.exit_code, case.restart.exit_code],
            "timeline": {key: case.timeline.get(key) for key in
                         ("crashed_at", "first_exit_at", "outage_done_at", "restart_exit_at")}}
    if fault.pause_at is not None:
        cell["timeline"]["pause_released_at"] = case.timeline.get("pause_released_at")
        cell["pause_reached"] = case.actions["pause_reached"]
    if reader is not None:  # the harness's own reading of the peer's record, saved as peer_record_after_run.json
        cell["peer_record_reader"] = {"exit_code": reader.exit_code, "output": reader.output}
    timed_out = [f"{run.module} {' '.join(run.args)}" for run in (case.first, case.restart) if run.timed_out]
    if timed_out:
        cell["timed_out"] = timed_out
    return cell


def _summary(cell: dict[str, Any]) -> str:
    """What the progress line says about a finished cell: raw facts only (the pipeline judges)."""
    exits = ",".join(str(code) for code in cell["worker_exits"])
    timeline = cell["timeline"]
    start = timeline["crashed_at"] or timeline["first_exit_at"]
    return f"worker exits {exits}; restart done {timeline['restart_exit_at'] - start:.1f}s after the fault"


def run(scenario_class: type[Scenario], args: argparse.Namespace) -> dict[str, Any]:
    """Every chosen cell and the scenario's own sections; returns the result file's content."""
    cells_planned = plan(scenario_class, args)
    started, load = harness.code_now(), harness.load_average()
    progress = harness.Progress(len(cells_planned))
    cells: list[dict[str, Any]] = []
    systems = {system for _, system in cells_planned}
    with tempfile.TemporaryDirectory(prefix=f"interlock-{scenario_class.name}-") as tmp, \
            live.services(args.live, Path(tmp) / "services", scenario_class.roles) as chosen, \
            peers.peer_services(systems) as peer_backends:
        scenario = scenario_class(args, chosen, Path(tmp) / "cells")
        with scenario.open():
            for index, (fault, system) in enumerate(cells_planned):
                label = f"{fault.name} / {system}"
                progress.start(label)
                cell = run_cell(scenario, fault, system, index)
                progress.step(label, _summary(cell))
                cells.append(cell)
        sections = scenario.finish(cells)
        decider = next((c["decision"]["model"] for c in cells if isinstance(c.get("decision"), dict)), None)
        services = {**chosen.provenance, **peer_backends, **scenario.extra_services()}
        made = harness.provenance(f"python -m experiments.{scenario_class.name}", services, decider,
                                  scenario.claim_settings(), started, load)
    made["journal"] = args.journal_backend
    if systems & set(peers.SYSTEMS):
        made["peers"] = peers.peers_provenance()
    return {"scenario": scenario_class.name, "schema_version": 1, "generated": made["generated"], "model": decider,
            "provenance": made, **sections, "cells": cells}


def main(scenario_class: type[Scenario], argv: list[str] | None = None) -> int:
    """Parse, check credentials, run, and write the result file only once everything was saved and removed."""
    prog = f"experiments.{scenario_class.name}"
    try:
        args = parse_args(scenario_class, sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    live.check_credentials(args.live, scenario_class.roles)
    try:
        with harness.terminate_as_interrupt():
            result = run(scenario_class, args)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; no result written (workers, stand-ins and temp files removed)", file=sys.stderr)
        return 130
    write_json(args.out, result, indent=1)
    print(f"wrote {args.out} ({len(result['cells'])} cells)", file=sys.stderr)
    return 0
