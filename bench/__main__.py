"""Run every benchmark module (or those named on the command line) and write results/bench/<name>.json, each
started on a machine that has settled from the one before it; their scratch folders go when the last one ends."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import sys
import time
from pathlib import Path
from typing import Any

import bench
from bench._quiet import wait_for_quiet
from bench._results import machine, write_result
from bench._scratch import kept_to_the_end

OUT = Path(__file__).resolve().parents[1] / "results" / "bench"


def main(names: list[str]) -> int:
    """Run the named benchmarks (all when none are named), print and store their numbers."""
    available = sorted(m.name for m in pkgutil.iter_modules(bench.__path__) if not m.name.startswith("_"))
    if {"-h", "--help"} & set(names):
        print(f"usage: python -m bench [NAME ...]\n\n{__doc__}\nbenchmarks: {', '.join(available)}")
        return 0
    unknown = sorted(set(names) - set(available))
    if unknown:
        print(f"bench: unknown benchmark(s) {', '.join(unknown)}; available: {', '.join(available)}", file=sys.stderr)
        return 2
    with kept_to_the_end():
        for name in names or available:
            run_one(name)
    return 0


def run_one(name: str) -> None:
    """Run one benchmark on a settled machine, print and store its numbers and say how each target fared."""
    settled = wait_for_quiet()
    if settled.quiet is False:  # None: this system does not say how busy it is
        print(f"bench: {name} starts on a busy machine ({settled.busy_share} of its cores busy after "
              f"{settled.waited_seconds}s); its result file says so", file=sys.stderr)
    found = machine()
    started, load = time.perf_counter(), round(os.getloadavg()[0], 2)
    numbers = importlib.import_module(f"bench.{name}").run()
    numbers["wall_seconds"] = round(time.perf_counter() - started, 2)
    write_result(OUT / f"{name}.json", numbers, load_at_start=load, settled=settled.as_dict(),
                 machine_at_start=found)
    print(f"{name}: {json.dumps(numbers, sort_keys=True)}")
    for line in targets_said(name, numbers):
        print(line)


def targets_said(name: str, numbers: dict[str, Any]) -> list[str]:
    """One line per target of a benchmark's `numbers`: the figure measured in this run (and in each of its rounds)
    beside it, on this many cores, and the same figure measured with nothing shared where the run has one."""
    return [f"target {name}.{figure}: measured {t['measured']}"
            + (f" (rounds {', '.join(str(r) for r in t['rounds'])})" if "rounds" in t else "")
            + f", target {t['target']}: {'met' if t['met'] else 'MISSED'} ({os.cpu_count()} cores)"
            + (f"; with nothing shared ({t['nothing_shared']}) {numbers[t['nothing_shared']]}"
               if "nothing_shared" in t else "")
            for figure, t in numbers.get("targets", {}).items()]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
