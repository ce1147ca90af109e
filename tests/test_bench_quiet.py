"""A benchmark starts once the machine's cores have gone quiet, or says in its result that they never did."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from bench._quiet import busy_share, wait_for_quiet
from bench._results import write_result


def test_a_benchmark_waits_while_every_core_is_busy_and_records_that_it_gave_up():
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        settled = wait_for_quiet(busy_at_most=0.5, most=1.5, window=0.5)
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    assert settled.quiet is False and settled.waited_seconds >= 1.5 and settled.busy_share > 0.5


def test_a_machine_under_the_bound_starts_the_benchmark_after_one_window():
    settled = wait_for_quiet(busy_at_most=1.0, most=10, window=0.2)
    assert settled.quiet is True and settled.waited_seconds < 1.0 and 0 <= settled.busy_share <= 1.0
    assert 0 <= busy_share(0.1) <= 1.0


def test_a_result_file_records_how_its_start_settled(tmp_path):
    path = tmp_path / "gate.json"
    write_result(path, {"figure": 1}, settled=wait_for_quiet(busy_at_most=1.0, window=0.1).as_dict())
    settled = json.loads(path.read_text())["provenance"]["settled"]
    assert settled["quiet"] is True and set(settled) == {"waited_seconds", "busy_share", "quiet"}
