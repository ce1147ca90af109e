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

from ._scratch import scratch

ROOT = Path(__file__).resolve().parents[1]


FSYNCS = 20  # timed flushes behind `fsync_ms`
CREATES = 200  # timed file creations behind `file_create_us`


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


def file_create_us() -> float:
    """Median microseconds to create and open a new file in a new scratch folder (`bench._scratch`), as a JSONL
    journal's claims do once per effect. In the minutes after many files were deleted it can take a hundred times
    longer (ext4 without a journal passes over the inodes freed lately), and every JSONL figure pays it."""
    times = []
    with scratch("interlock-create-") as folder:
        for n in range(CREATES):
            began = time.perf_counter()
            os.close(os.open(folder / f"{n}.lock", os.O_RDWR | os.O_CREAT, 0o644))
            times.append(time.perf_counter() - began)
    return round(statistics.median(times) * 1e6, 1)


def machine() -> dict[str, Any]:
    """The machine as a benchmark found it: cores, Python, platform, how long its disk takes to flush, which sets
    how much of a durable append is waiting rather than computing, and to create a file, which a JSONL claim does.
    Taken before a benchmark runs, since its own clean-up deletes files by the thousand."""
    return {"cores": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
            "fsync_ms": fsync_ms(), "file_create_us": file_create_us()}


def provenance(load_at_start: float | None = None, settled: dict[str, Any] | None = None,
               machine_at_start: dict[str, Any] | None = None) -> dict[str, Any]:
    """Where and when the numbers were measured: a figure means little without the machine (`machine`, as the run
    found it, else as it is now), the code, and how busy the shared machine was (the 1-minute load average at the
    start and the end of the run, and how long the start waited for the cores to go quiet, `bench._quiet`)."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "HEAD") or None
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit,
        # the code the figures come from, not the results (a run of several benchmarks has written the earlier
        # ones' files by now), the tests or the prose
        "tree_modified": bool(git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results",
                                  ":(exclude)tests", ":(exclude)*.md"))
        if commit else None,
        "machine": machine_at_start or machine(),
        "load_average": {"at_start": load_at_start, "at_end": round(os.getloadavg()[0], 2)},
        "settled": settled,
    }


RELATIONS = {">=": float.__ge__, "<=": float.__le__, "<": float.__lt__}


def against(figure: float, relation: str, target: float, rounds: list[float] | None = None,
            nothing_shared: str | None = None) -> dict[str, Any]:
    """A figure beside its target, and whether this run met it: every benchmark states its targets this way. A
    figure measured over rounds carries each round's own, so a reader sees whether they fall on both sides of it;
    one the run also measured with nothing shared names that figure, in the same file: about the most this machine
    gives, so whether a miss is the design's or the machine's."""
    stated: dict[str, Any] = {"measured": figure, "target": f"{relation} {target}",
                              "met": RELATIONS[relation](float(figure), target)}
    if rounds is not None:
        stated["rounds"] = rounds
    if nothing_shared is not None:
        stated["nothing_shared"] = nothing_shared
    return stated


def write_result(path: Path, numbers: dict[str, Any], *, load_at_start: float | None = None,
                 settled: dict[str, Any] | None = None, machine_at_start: dict[str, Any] | None = None) -> None:
    """Write `numbers` with their provenance to `path` via a synced temporary file and a rename, so an
    interrupted run leaves the previous result whole, never half of a new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    made = provenance(load_at_start, settled, machine_at_start)
    text = json.dumps({**numbers, "provenance": made}, indent=2, sort_keys=True) + "\n"
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
