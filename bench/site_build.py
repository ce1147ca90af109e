"""Site build time: judging, writing the pages, mkdocs and the wait for the charts drawn beside them, on the real
inputs and on 100 synthetic scenarios; with the processor time the build used, which the machine's load does not
stretch as it stretches the wall clock.

Synthetic scenarios are copies of real result files (the published reference files beside the repository, else
the project's own results) under distinct file names, so every page, chart and raw cell file is built 100 times.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from pipeline.build import REPO, _mkdocs, result_files, source_date_epoch
from pipeline.chart import Drawing
from pipeline.derive import derive
from pipeline.published import published_runs
from pipeline.render import render_site

from ._scratch import scratch

REFERENCE = REPO.parent / "shared" / "reference"
SYNTHETIC = 100


def _shapes() -> list[Path]:
    shapes = sorted(REFERENCE.glob("*.json")) if REFERENCE.is_dir() else []
    shapes = shapes or result_files()
    if not shapes:
        raise SystemExit("bench site_build: no result file to take shapes from (../shared/reference or results/)")
    return shapes


def _synthetic(shapes: list[Path], folder: Path) -> list[Path]:
    texts = [path.read_text(encoding="utf-8") for path in shapes]
    files = []
    for index in range(SYNTHETIC):
        path = folder / f"synthetic_{index:03d}.json"
        path.write_text(texts[index % len(texts)], encoding="utf-8")
        files.append(path)
    return files


def _cpu() -> float:
    """Processor seconds of this process and of its children that have ended (the chart workers, once joined)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _timed_build(files: list[Path], out: Path) -> dict[str, float]:
    """As `pipeline build` does it: the charts are drawn beside the page writing and mkdocs; whatever of them is
    not done when mkdocs is counts as chart_wait_seconds."""
    started, cpu = time.perf_counter(), _cpu()
    with Drawing() as drawing:
        scenarios = [derive(path) for path in files]
        judged = time.perf_counter()
        nav = render_site(scenarios, published_runs(), out / "docs", drawing=drawing)
        rendered = time.perf_counter()
        _mkdocs(out / "docs", out / "site", nav, source_date_epoch(scenarios))
        mkdocs_done = time.perf_counter()
        drawing.write(out / "docs", out / "site")
    built = time.perf_counter()
    return {
        "judge_seconds": round(judged - started, 2),
        "render_seconds": round(rendered - judged, 2),
        "mkdocs_seconds": round(mkdocs_done - rendered, 2),
        "chart_wait_seconds": round(built - mkdocs_done, 2),
        "full_build_seconds": round(built - started, 2),
        "cpu_seconds": round(_cpu() - cpu, 2),
        "pages": sum(1 for _ in (out / "site").rglob("*.html")),
    }


def run() -> dict[str, Any]:
    """Time both inputs; the 100-scenario full build must stay under a minute."""
    shapes = _shapes()
    with scratch("interlock-bench-site-") as tmp_path:
        real = _timed_build(shapes, tmp_path / "real")
        inputs = tmp_path / "synthetic-input"
        inputs.mkdir()
        synthetic = _timed_build(_synthetic(shapes, inputs), tmp_path / "synthetic")
    return {
        "input_files": [path.name for path in shapes],
        "real": real,
        "synthetic_scenarios": SYNTHETIC,
        "synthetic": synthetic,
        "synthetic_under_a_minute": synthetic["full_build_seconds"] < 60,
        "synthetic_per_scenario_seconds": round(synthetic["full_build_seconds"] / SYNTHETIC, 3),
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
