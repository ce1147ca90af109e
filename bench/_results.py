"""Writing one benchmark's numbers: with the date, the commit and the machine they were measured on, atomically."""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


FSYNCS = 20  # timed flushes behind `fsync_ms`


def fsync_ms(directory: str | None = None) -> float:
    """Median milliseconds of one 4 KiB write and fdatasync in `directory` (the temporary directory, where the
    benchmarks keep their journals): what a durable append waits for on this disk."""
    times = []
    with tempfile.NamedTemporaryFile(dir=directory, prefix="interlock-fsync-") as f:
        for _ in range(FSYNCS):
            began = time.perf_counter()
            os.write(f.fileno(), b"\0" * 4096)
            os.fdatasync(f.fileno())
            times.append(time.perf_counter() - began)
    return round(statistics.median(times) * 1000, 3)


def provenance(load_at_start: float | None = None, settled: dict[str, Any] | None = None) -> dict[str, Any]:
    """Where and when the numbers were measured: a figure means little without the machine, the code, how busy
    the shared machine was (the 1-minute load average at the start and the end of the run, and how long the start
    waited for the cores to go quiet, `bench._quiet`) and how long its disk takes to flush, which sets how much
    of a durable append is waiting rather than computing."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "HEAD") or None
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit,
        # the code, not the results: a run of several benchmarks has written the earlier ones' files by now
        "tree_modified": bool(git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results"))
        if commit else None,
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                    "fsync_ms": fsync_ms()},
        "load_average": {"at_start": load_at_start, "at_end": round(os.getloadavg()[0], 2)},
        "settled": settled,
    }


RELATIONS = {">=": float.__ge__, "<=": float.__le__, "<": float.__lt__}


def against(figure: float, relation: str, target: float) -> dict[str, Any]:
    """A figure beside its target, and whether this run met it: every benchmark states its targets this way."""
    return {"measured": figure, "target": f"{relation} {target}", "met": RELATIONS[relation](float(figure), target)}


def write_result(path: Path, numbers: dict[str, Any], *, load_at_start: float | None = None,
                 settled: dict[str, Any] | None = None) -> None:
    """Write `numbers` with their provenance to `path` via a synced temporary file and a rename, so an
    interrupted run leaves the previous result whole, never half of a new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({**numbers, "provenance": provenance(load_at_start, settled)}, indent=2, sort_keys=True) + "\n"
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
