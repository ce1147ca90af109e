"""Worker processes forked from a server that has already imported the workers, so a start costs milliseconds.

Each worker is still its own OS process, runs the scenario worker's own `main(argv)` and dies by a real SIGKILL
at its kill point; only the ~1 s of imports is paid once, by the fork server, instead of once per worker.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import sys
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import cast

PRELOAD = ["experiments.gcp_resource.worker", "experiments.gcp_resource.gated", "experiments.gcp_resource.baselines",
           "experiments.calendar.worker", "experiments.calendar.systems", "experiments.deciders",
           "experiments.explore.ledger_worker"]
# Variables a worker takes only from its schedule, never from the explorer's own environment.
ARMED = ("INTERLOCK_KILL_AT", "INTERLOCK_KILL_MARKER", "INTERLOCK_PAUSE_AT", "INTERLOCK_PAUSE_FILE", "INTERLOCK_MODEL",
         "INTERLOCK_JOURNAL_URL", "EXPLORE_SEND_RAISES", "EXPLORE_SEND_HOLDS")


def _run(module: str, argv: list[str], env: dict[str, str], stdout: str, stderr: str, status: str) -> None:
    """In the forked process: arm the environment, send output to files, run the worker's main, exit with it.

    The exit code is also written to `status`: the fork server's own report of it is occasionally lost (read as
    255), while a SIGKILLed worker writes nothing, so the file is the worker's word and its absence a kill.
    """
    for name in ARMED:
        os.environ.pop(name, None)
    os.environ.update(env)
    for fd, path in ((1, stdout), (2, stderr)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    try:
        code = importlib.import_module(module).main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - a crashing worker is a finding, reported through its stderr
        traceback.print_exc()
        code = 1
    code = code if isinstance(code, int) else 1
    sys.stdout.flush()
    sys.stderr.flush()
    with open(status, "w") as out:
        out.write(str(code))
    os._exit(code)


@dataclass
class Finished:
    """One worker's end: exit code (-9 for SIGKILL), stdout, stderr, and whether the explorer had to kill it."""

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool

    @property
    def outcome(self) -> str | None:
        """The status line a worker prints last when it settles."""
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        return lines[-1].strip() if self.exit_code == 0 and lines else None


class Worker:
    """A started worker process."""

    def __init__(self, context: multiprocessing.context.ForkServerContext, module: str, argv: list[str],
                 env: dict[str, str], output: Path):
        self._out, self._err, self._status = (output.with_suffix(s) for s in (".out", ".err", ".status"))
        self.process = context.Process(target=_run, args=(module, argv, env, str(self._out), str(self._err),
                                                          str(self._status)))
        self.process.start()
        self.process_open = True

    @property
    def pid(self) -> int:
        """The worker's process id (the target of SIGSTOP and SIGCONT)."""
        return cast(int, self.process.pid)  # set once started, which __init__ did

    def running(self) -> bool:
        """Still running (or paused); the name harness.wait_for_file asks for."""
        return self.process.is_alive()

    def kill(self) -> None:
        """SIGKILL it if it still runs."""
        if self.process_open and self.process.is_alive():
            self.process.kill()

    def wait(self, timeout: float) -> Finished:
        """Wait for the end; after `timeout` seconds SIGKILL it and say so."""
        self.process.join(timeout)
        timed_out = self.process.is_alive()
        if timed_out:
            self.process.kill()
            self.process.join()
        code = self.process.exitcode
        self.process.close()
        self.process_open = False
        said = _text(self._status)
        if said and not timed_out:
            code = int(said)
        return Finished(code if code is not None else -9, _text(self._out), _text(self._err), timed_out)


def _text(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


class Forker:
    """Starts workers from one fork server; the server and every worker go away with the explorer."""

    def __init__(self) -> None:
        self.context = multiprocessing.get_context("forkserver")
        self.context.set_forkserver_preload(PRELOAD)
        self._started: list[Worker] = []
        self._lock = threading.Lock()

    def start(self, module: str, argv: list[str], env: dict[str, str], output: Path) -> Worker:
        """Start `module.main(argv)` in a new process with `env` added to the environment."""
        worker = Worker(self.context, module, argv, env, output)
        with self._lock:
            self._started = [w for w in self._started if w.process_open] + [worker]
        return worker

    def stop(self) -> None:
        """SIGKILL every worker still running (an interrupted exploration leaves none behind)."""
        with self._lock:
            for worker in self._started:
                worker.kill()
