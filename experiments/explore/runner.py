"""Run one schedule for one system and record what happened as one history row: the crash chain, the outage
action, the cut answer, the hazard (a held, stopped or cut-off sender, a request left in flight, a cut journal)
and the recoverers; then what the service holds and what the system's own record says. Nothing is judged here.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

from interlock.witness import witnessed

from experiments.explore.processes import Finished, Forker, Worker
from experiments.explore.schedules import Schedule
from experiments.harness import wait_for_file

WORKER_TIMEOUT_SECONDS = 60.0
PAUSE_TIMEOUT_SECONDS = 30.0
IN_FLIGHT_TIMEOUT_SECONDS = 10.0
POLL_SECONDS = 0.002
STDERR_LINES = 4
STOP_SEEN_SECONDS = 1.0
# The crash and pause points a worker reads from its environment (experiments' crash hook).
KILL_AT, KILL_MARKER, PAUSE_AT, PAUSE_FILE = ("INTERLOCK_KILL_AT", "INTERLOCK_KILL_MARKER", "INTERLOCK_PAUSE_AT",
                                              "INTERLOCK_PAUSE_FILE")
# A worker that refused to open a damaged journal names the library's error on its stderr.
REFUSED_JOURNAL = "JournalCorrupt"
# The last line of a worker that died because its own code could not be loaded (the interpreter's packages changed
# or went away under a running exploration): the machine's failure, never the system's.
CANNOT_LOAD = ("ModuleNotFoundError:", "ImportError:")


class WorkerCannotLoad(RuntimeError):
    """A worker died loading its own code: the run says nothing of the system, so it is the harness's failure."""


class Run:
    """One schedule under way; `row()` is what the history keeps of it."""

    def __init__(self, world: Any, forker: Forker, schedule: Schedule, system: str, directory: Path):
        self.world, self.forker, self.schedule, self.system, self.directory = world, forker, schedule, system, directory
        with world.lock:  # the world's clients are shared by the explorer's threads
            self.case = world.setup(directory, schedule, system)
        self.ran: list[dict[str, Any]] = []
        self.acted: str | None = None
        self.acted_at: float | None = None
        self.interrupt: dict[str, Any] | None = None
        self.in_flight: dict[str, Any] | None = None
        self.journal_cut: dict[str, Any] | None = None
        self.workers: list[Worker] = []  # every worker this run started, killed if the harness fails it

    def play(self) -> dict[str, Any]:
        """Play the schedule to its end and return its history row."""
        schedule = self.schedule
        if schedule.cut:
            self.world.arm_cut(self.case)
        for index, kill in enumerate(schedule.kills):
            if schedule.action_before == index:
                self._act(f"before worker {index}")
            self._chain_worker(index, kill)
        if schedule.action_before == len(schedule.kills):
            self._act("before the recoverers")
        if schedule.journal_cut is not None:
            self._cut_journal(schedule.journal_cut)
        if not any(r["stage"] == "concurrent" for r in self.ran):
            self._finish(self._start_recoverers("recoverer", schedule.recoverers))
        else:  # the concurrent recoverers may rightly have left the job to a later worker: one more settles it
            self._finish([("settler", 0, self._start("restart", self.directory / "settler"))])
        settled = self.world.settle(self.case)  # the service's truth is read once nothing is left in flight
        with self.world.lock:
            truth = self.world.truth(self.case)
        record = self._record_file()
        return {
            "scenario": schedule.scenario, "hazard": schedule.hazard, "journal": schedule.journal,
            "seed": schedule.seed, "system": self.system, "replay": schedule.replay,
            "schedule": schedule.row(), "describe": schedule.describe(), "effect_id": self.case.ids.get("effect_id"),
            "ran": self.ran, "acted": self.acted, "acted_at": self.acted_at, "interrupt": self.interrupt,
            "in_flight": self.in_flight, "journal_cut": self.journal_cut,
            "truth": {"writes": [list(w) for w in truth.writes], "live": truth.live, "settled": settled},
            "record": _record(record, self.case.ids.get("effect_id"), self.system),
        }

    def _start(self, phase: str, output: Path, extra: dict[str, str] | None = None) -> Worker:
        env = {**self.world.env, **self.world.worker_env(self.case), **(extra or {})}
        worker = self.forker.start(self.world.module, self.world.argv(self.case, phase), env, output)
        self.workers.append(worker)
        return worker

    def _start_recoverers(self, stage: str, count: int) -> list[tuple[str, int, Worker]]:
        return [(stage, i, self._start("restart", self.directory / f"{stage}{i}")) for i in range(count)]

    def _finish(self, workers: list[tuple[str, int, Worker]], kill: str | None = None) -> None:
        for stage, index, worker in workers:
            self.ran.append(_ran(stage, index, kill, worker.wait(WORKER_TIMEOUT_SECONDS)))

    def _chain_worker(self, index: int, kill: str | None) -> None:
        schedule, directory = self.schedule, self.directory
        env: dict[str, str] = {}
        if kill is not None:
            env.update({KILL_AT: kill, KILL_MARKER: str(directory / f"killed{index}")})
        pause = schedule.action_pause if schedule.action_pause and schedule.action_pause[0] == index else None
        held = schedule.interrupt if schedule.interrupt and schedule.interrupt.worker == index else None
        pause_file = directory / f"paused{index}"
        point = held.point if held else pause[1] if pause else None
        if point is not None:
            env.update({PAUSE_AT: point, PAUSE_FILE: str(pause_file)})
        if index == 0:
            env.update(self.world.plant(schedule.raises, schedule.hold))
        worker = self._start("decide" if index == 0 else "restart", directory / f"worker{index}", env)
        concurrent: list[tuple[str, int, Worker]] = []
        if point is not None and wait_for_file(pause_file, worker, PAUSE_TIMEOUT_SECONDS):
            if held is None:
                self._act(f"while worker {index} was paused at {point}")
                pause_file.unlink()
            else:
                concurrent = self._hold(worker, held, pause_file)
        elif index == 0 and schedule.in_flight is not None:
            concurrent = self._in_flight(worker)
        if point is not None and held is not None and self.interrupt is None:
            self.interrupt = {"reached": False, "how": held.how, "point": held.point}
        if self.in_flight is not None and self.in_flight["how"] == "kill" and self.in_flight["killed_at"]:
            kill = "in_flight"
        self.ran.append(_ran("chain", index, kill, worker.wait(WORKER_TIMEOUT_SECONDS)))
        self._finish(concurrent)
        if point is not None and self.acted is None:
            self._act(f"after worker {index} exited (it never reached {point})")

    def _hold(self, worker: Worker, held: Any, pause_file: Path) -> list[tuple[str, int, Worker]]:
        """The worker waits at its point: strike, act, let recoverers run for up to `held.seconds`, let it go."""
        began, stopped = time.time(), None
        if held.how == "sigstop":
            os.kill(worker.pid, signal.SIGSTOP)
            stopped = _seen_stopped(worker.pid)
            pause_file.unlink()  # it goes on at once when continued
        else:
            self.world.strike(self.case, held.how)
        self._act(f"while worker {held.worker} was held at {held.point}")
        concurrent = self._start_recoverers("concurrent", self.schedule.recoverers)
        deadline = time.monotonic() + held.seconds
        while time.monotonic() < deadline and any(w.running() for _, _, w in concurrent):
            time.sleep(POLL_SECONDS)
        if held.how == "sigstop":
            with contextlib.suppress(ProcessLookupError):  # it exited before the stop took (seen_stopped says so)
                os.kill(worker.pid, signal.SIGCONT)
        else:
            pause_file.unlink()
        self.interrupt = {"reached": True, "how": held.how, "point": held.point, "at": began,
                          "released_at": time.time(), "seen_stopped": stopped}
        return concurrent

    def _in_flight(self, worker: Worker) -> list[tuple[str, int, Worker]]:
        """Wait until the service holds the first request, then kill its sender or start the recoverers."""
        how = self.schedule.in_flight
        deadline = time.monotonic() + IN_FLIGHT_TIMEOUT_SECONDS
        while time.monotonic() < deadline and worker.running() and not self.world.received(self.case):
            time.sleep(POLL_SECONDS)
        received = self.world.received(self.case)
        self.in_flight = {"how": how, "received": received, "killed_at": None}
        if not received:
            return []
        if how == "kill":
            worker.kill()
            self.in_flight["killed_at"] = time.time()
            return []
        return self._start_recoverers("concurrent", self.schedule.recoverers)

    def _cut_journal(self, fraction: float) -> None:
        """Keep the first `fraction` of the system's record, as a restore or a lost copy would; `durable` is where
        the journal's witness saw its flushed part end (None: no witness, or a record that is no journal)."""
        path = self._record_file()
        if path is None or not path.exists():  # this system keeps no record file to cut, or wrote none
            self.journal_cut = {"file": None if path is None else path.name, "size": 0, "kept": 0, "lines": 0,
                                "lines_kept": 0, "inside_last_line": False, "durable": None}
            return
        mark = witnessed(path)
        data = path.read_bytes()
        kept = int(len(data) * fraction)
        last_line = data.rfind(b"\n", 0, max(len(data) - 1, 0)) + 1
        with open(path, "r+b") as out:
            out.truncate(kept)
            out.flush()
            os.fsync(out.fileno())
        self.journal_cut = {"file": path.name, "size": len(data), "kept": kept,
                            "lines": data.count(b"\n"), "lines_kept": data[:kept].count(b"\n"),
                            "inside_last_line": last_line < kept < len(data),
                            "durable": None if mark is None else mark.end}

    def _record_file(self) -> Path | None:
        """The system's own record: the gate's journal, or the baseline's send log (None: it keeps none)."""
        name = self.world.journal if self.system.startswith("interlock") else self.world.log
        return None if name is None else self.directory / name

    def _act(self, when: str) -> None:
        if self.schedule.action == "none":
            return
        with self.world.lock:
            self.world.act(self.case, self.schedule.action, when)
        self.acted_at, self.acted = time.time(), when


def run(world: Any, forker: Forker, schedule: Schedule, system: str, root: Path) -> dict[str, Any]:
    """Play the schedule against the world with one system; the case directory is gone afterwards."""
    directory = root / f"{schedule.seed}-{system}"
    directory.mkdir(parents=True)
    played = None
    try:
        played = Run(world, forker, schedule, system, directory)
        return played.play()
    except BaseException:  # the harness failed the run: none of its workers is left to act on a later one
        for worker in played.workers if played is not None else ():
            worker.kill()
        raise
    finally:
        if played is not None:
            world.finish(played.case)
        shutil.rmtree(directory, ignore_errors=True)


def _seen_stopped(pid: int) -> bool:
    """Whether the kernel shows the process stopped (state T in /proc/<pid>/stat) within a moment of SIGSTOP."""
    deadline = time.monotonic() + STOP_SEEN_SECONDS
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            return False
        if state in ("T", "t"):
            return True
        time.sleep(POLL_SECONDS)
    return False


def _ran(stage: str, index: int, kill: str | None, finished: Finished) -> dict[str, Any]:
    lines = finished.stderr.strip().splitlines()
    if lines and lines[-1].startswith(CANNOT_LOAD):
        raise WorkerCannotLoad(f"{stage} {index} could not load its code: {lines[-1][:200]}")
    return {"stage": stage, "index": index, "kill": kill, "exit_code": finished.exit_code,
            "outcome": finished.outcome, "timed_out": finished.timed_out,
            "traceback": "Traceback" in finished.stderr, "refused_journal": REFUSED_JOURNAL in finished.stderr,
            "stderr": lines[-STDERR_LINES:]}


def _record(path: Path | None, effect_id: str | None, system: str) -> dict[str, Any]:
    """The system's own record: the gate's journal entries for the effect, or the baseline's log events (None
    when the baseline keeps no send log)."""
    if path is None:
        return {"events": None}
    lines = _lines(path)
    if system.startswith("interlock"):
        return {"entries": [e for e in lines if e.get("effect_id") == effect_id]}
    return {"events": [line.get("event") for line in lines]}


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            parsed = json.loads(line)
        except ValueError:
            continue  # a torn last line: the journal sets it aside itself; a log line is only the baseline's record
        if isinstance(parsed, dict):
            out.append(parsed)
    return out
