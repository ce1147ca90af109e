"""A benchmark's scratch folder goes when the benchmark is done with it, except inside a bench run, which keeps
every one until it ends, so no benchmark's clean-up falls on the next one's figures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench._scratch import kept_to_the_end, scratch


def test_a_scratch_folder_outside_a_bench_run_goes_when_its_benchmark_is_done():
    with scratch("bench-test-") as folder:
        (folder / "claim.lock").write_text("")
        assert folder.is_dir()
    assert not folder.exists()


def test_a_bench_run_keeps_every_scratch_folder_until_it_ends():
    with kept_to_the_end():
        with scratch("bench-test-") as first:
            (first / "claim.lock").write_text("")
        with scratch("bench-test-") as second:
            pass
        assert (first / "claim.lock").exists() and second.is_dir()
    assert not first.exists() and not second.exists()
    with scratch("bench-test-") as after:  # the run over, folders go at once again
        pass
    assert not after.exists()


def test_a_bench_run_that_fails_still_removes_its_scratch_folders():
    try:
        with kept_to_the_end():
            with scratch("bench-test-") as folder:
                raise RuntimeError("a benchmark failed")
    except RuntimeError:
        pass
    assert not folder.exists()


def test_the_bench_command_answers_help_with_its_benchmarks_and_runs_none():
    done = subprocess.run([sys.executable, "-m", "bench", "--help"], cwd=Path(__file__).resolve().parents[1],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("usage: python -m bench [NAME ...]")
    assert "benchmarks: append_phases, gate," in done.stdout
