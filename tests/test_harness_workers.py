"""The harness leaves no worker behind: one an interrupt caught between its start and the block that stops it is
stopped by the cell's cleanup, and a worker the harness reaped is no longer one it would signal."""

from __future__ import annotations

import os
import signal

import pytest

from experiments import harness

SLEEPER = ["-n", "1", "-r", "1", "import time; time.sleep(60)"]  # `python -m timeit` running one long statement


def _gone(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_worker_started_just_before_an_interrupt_is_stopped_by_stop_unreaped():
    worker = harness.start_worker("timeit", SLEEPER, dict(os.environ))  # its `with` block never began
    try:
        assert worker.running()
        harness.stop_unreaped()
        assert not worker.running() and _gone(worker.pid)
        assert worker.process.returncode == -signal.SIGKILL
    finally:
        worker.stop()


def test_an_interrupt_while_a_worker_starts_stops_it_before_the_start_returns(monkeypatch):
    pids: list[int] = []
    original = harness.subprocess.Popen

    def started_then_interrupted(*args, **kwargs):
        process = original(*args, **kwargs)
        pids.append(process.pid)
        os.kill(os.getpid(), signal.SIGINT)  # held until the start is done, then raised
        return process

    monkeypatch.setattr(harness.subprocess, "Popen", started_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        harness.start_worker("timeit", SLEEPER, dict(os.environ))
    assert pids and _gone(pids[0])
    harness.stop_unreaped()  # nothing left to stop


def test_a_worker_run_to_its_end_leaves_nothing_for_stop_unreaped():
    run = harness.run_worker("timeit", ["-n", "1", "-r", "1", "pass"], dict(os.environ), timeout=60)
    assert run.exit_code == 0
    assert harness._UNREAPED == set()
