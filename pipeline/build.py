"""`python -m pipeline build`: re-judge the result files and the shipped published runs, count the explorations
again from their histories, render the pages, and build the static site with mkdocs. Every disagreement between a
stored verdict, count or target and the one derived is printed, and makes the exit status 1 once the site is built;
an exploration with no history beside it to count again makes it 2, as it does for `python -m pipeline judge`."""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .benchmarks import benchmarks
from .chart import Drawing
from .derive import derive
from .load import BadInput
from .model import Disagreement, Scenario, printable
from .published import published_runs
from .reliability import reliability
from .render import render_site

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results"  # its scenarios/, reliability/, bench/; published runs: always results/published/
CONFIG = REPO / "mkdocs.yml"
DEFAULT_OUT = REPO / "build"
# The folders a build writes into its out folder, and the file beside them naming those it made: only these, or
# empty ones, are ever replaced.
FOLDERS = ("docs", "site")
MARKER = ".pipeline-build"


class BuildFailed(Exception):
    """mkdocs refused the generated pages (strict mode turns any warning into this)."""


class NotOurs(Exception):
    """The out folder holds a docs/ or site/ the pipeline did not make, which a build would replace."""


def _when(generated: str) -> datetime | None:
    """A run's `generated` stamp as a time; the published calendar file writes "YYYY-MM-DD HH:MM UTC"."""
    try:
        when = datetime.fromisoformat(generated.replace(" UTC", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def source_date_epoch(scenarios: Sequence[Scenario]) -> int:
    """The newest run's time: the one date mkdocs stamps into the sitemap, so rebuilding the same input changes
    no byte."""
    times = [t for t in (_when(s.provenance.generated) for s in scenarios) if t is not None]
    return int(max(times).timestamp()) if times else 0


def _mkdocs(docs: Path, site: Path, nav: list[dict[str, Any]], epoch: int) -> None:
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    logger = logging.getLogger("mkdocs")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("mkdocs: %(levelname)s %(message)s"))
    handler.setLevel(logging.WARNING)
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    previous = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = str(epoch)
    try:
        config = load_config(str(CONFIG), docs_dir=str(docs), site_dir=str(site), nav=nav, strict=True)
        mkdocs_build(config)
    except MkDocsException as exc:
        raise BuildFailed(str(exc)) from None
    finally:
        logger.removeHandler(handler)
        if previous is None:
            del os.environ["SOURCE_DATE_EPOCH"]
        else:
            os.environ["SOURCE_DATE_EPOCH"] = previous


@dataclass(frozen=True)
class Rendered:
    """What a render judged: our runs then the re-judged published ones, the explorations' stored counts that differ
    from the judge's, the benchmark targets whose stored verdict differs, and the site's navigation."""

    scenarios: list[Scenario]
    recounts: list[Disagreement]
    targets: list[str]
    nav: list[dict[str, Any]]
    unrecounted: tuple[str, ...] = ()  # explorations with no history beside them: their stored counts are shown


def render(files: Sequence[Path], docs: Path, drawing: Drawing | None = None, results: Path = RESULTS) -> Rendered:
    """Judge every file and the published runs, count the explorations again, and write the site's Markdown:
    everything but mkdocs, as benchmarked (charts queued on `drawing` when given, see `render_site`). The
    reliability and benchmark pages read whatever `results`/reliability/ and `results`/bench/ hold."""
    scenarios = [derive(path) for path in files]
    published = published_runs()
    explored = reliability(results / "reliability", _shown(results / "reliability"))
    benched = benchmarks(results / "bench", _shown(results / "bench"))
    nav = render_site(scenarios, published, docs, explored, benched, drawing)
    return Rendered(scenarios + [figures["scenario"] for figures in published.values()], explored.disagreements(),
                    [line for bench in benched for line in bench.disagreements()], nav,
                    tuple(run.source for run in explored.explorations if run.recounted is None))


def _made(out: Path) -> set[str]:
    """The folders of `out` an earlier build made, as its marker names them."""
    marker = out / MARKER
    return set(marker.read_text(encoding="utf-8").split()) if marker.is_file() else set()


def _replaceable(out: Path) -> None:
    """Raise NotOurs unless each folder a build replaces is missing, empty, or made by an earlier build; the
    checkout's own build/ folder (ignored by git, where `make results` builds) is the pipeline's whatever it holds."""
    if os.path.lexists(out) and not out.is_dir():
        raise NotOurs(f"{out}: not a folder, so nothing can be built in it; build with --out elsewhere")
    if out.resolve() == DEFAULT_OUT.resolve():
        return
    made = _made(out)
    for name in FOLDERS:
        folder = out / name
        if name in made or not os.path.lexists(folder) or (folder.is_dir() and not any(folder.iterdir())):
            continue
        raise NotOurs(f"{folder}: not made by `python -m pipeline build` (no {out / MARKER} names it), so it is not "
                      "replaced; move it away or build with --out elsewhere")


def _swap(fresh: Path, out: Path) -> None:
    """Put the freshly built folders in place of the previous ones, which go into `fresh` (removed with it)."""
    (out / MARKER).write_text("\n".join(FOLDERS) + "\n", encoding="utf-8")
    for name in FOLDERS:
        if os.path.lexists(out / name):
            (out / name).rename(fresh / f"previous-{name}")
        (fresh / name).rename(out / name)


def _build(files: Sequence[Path], out: Path, results: Path) -> tuple[Path, Rendered]:
    """Everything is built into a fresh folder beside the previous build, which is replaced only once the build
    succeeded. The charts are drawn while mkdocs builds the pages: mkdocs would only copy them, so they are written
    into the Markdown tree and the built site once it is done."""
    _replaceable(out)
    out.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix="building-", dir=out))
    try:
        docs, site = fresh / "docs", fresh / "site"
        with Drawing() as drawing:
            rendered = render(files, docs, drawing, results)
            _mkdocs(docs, site, rendered.nav, source_date_epoch(rendered.scenarios))
            drawing.write(docs, site)
        _swap(fresh, out)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    return out / "site", rendered


def build(files: Sequence[Path], out: Path, results: Path = RESULTS) -> Path:
    """Judge, render into out/docs, build out/site; returns the site folder."""
    return _build(files, out, results)[0]


def result_files(folder: Path = RESULTS / "scenarios") -> list[Path]:
    """The committed result files, in name order; none is fine (the site then says no local run exists)."""
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def _shown(path: Path) -> str:
    """A path as printed: from the repository's root when it is inside it."""
    return str(path.relative_to(REPO) if path.is_relative_to(REPO) else path)


def main(argv: Sequence[str] | None = None) -> int:
    """Build the site; bad input is one line naming file and JSON path, and exit status 2, as is an exploration that
    cannot be counted again (the site is built, its page showing the counts the file stores)."""
    parser = argparse.ArgumentParser(prog="python -m pipeline build", description=__doc__)
    parser.add_argument("files", nargs="*", type=Path, help="result files (default: results/scenarios/*.json)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="build folder (default: build)")
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="results folder holding scenarios/, reliability/ and bench/ (default: results)")
    args = parser.parse_args(argv)
    if not args.results.is_dir():
        print(f"error: {printable(str(args.results))}: not a folder of results (scenarios/, reliability/, bench/)",
              file=sys.stderr)
        return 2
    files = args.files or result_files(args.results / "scenarios")
    try:
        site, rendered = _build(files, args.out, args.results)
    except (BadInput, NotOurs) as exc:
        print(f"error: {printable(str(exc))}", file=sys.stderr)
        return 2
    except BuildFailed as exc:
        print(f"error: mkdocs: {exc}", file=sys.stderr)
        return 1
    found: list[Disagreement] = [d for s in rendered.scenarios for d in s.disagreements]
    for disagreement in [*found, *rendered.recounts]:
        print(f"disagreement: {disagreement.line()}", file=sys.stderr)
    for line in rendered.targets:
        print(f"disagreement: {printable(line)}", file=sys.stderr)
    for source in rendered.unrecounted:
        print(f"not counted again: {printable(source)} has no history beside it; its page shows the counts it stores",
              file=sys.stderr)
    published = len(rendered.scenarios) - len(files)
    print(f"site built in {_shown(site)}/ from {len(files)} result file(s) and {published} published run(s), "
          f"re-judged; {len(found)} stored verdict(s) disagree with the derived ones, {len(rendered.recounts)} "
          f"stored exploration count(s) with the counts of their histories, {len(rendered.targets)} benchmark "
          "target(s) with their figures")
    if args.out.resolve() == DEFAULT_OUT.resolve():
        print("serve it with `make serve` and open http://127.0.0.1:8000/")
    else:
        print(f"serve it with `python -m http.server --bind 127.0.0.1 --directory {_shown(site)} 8000` and open "
              "http://127.0.0.1:8000/")
    return 2 if rendered.unrecounted else 1 if found or rendered.recounts or rendered.targets else 0


if __name__ == "__main__":
    sys.exit(main())
