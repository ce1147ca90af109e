"""Judged runs in, the Markdown tree mkdocs builds out: pages, charts and each cell's raw JSON."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import shutil
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import jinja2
from markupsafe import Markup

from ..chart import Drawing, Series
from ..compare import COLUMNS, compare_published
from ..benchmarks import Benchmark
from ..load import read
from ..model import INVISIBLE, Difference, Scenario, SystemSummary
from ..reliability import Exploration, Reliability
from . import findings, headline
from .env import REPO, TEMPLATES, environment, repo_path
from .headline import Verdict
from .links import RunLinks, slug, unique

ASSETS = REPO / "site" / "assets"
PUBLISHED_PAGES = REPO / "site" / "data" / "published_pages.json"
# The library's public surface for the API page: the package root, then modules whose names are a concept of
# their own, when this checkout has them.
API_MODULES = ("interlock", "interlock.errors", "interlock.hooks", "interlock.app", "interlock.targets.gcs",
               "interlock.targets.calendar", "interlock.pg")
BASELINES = ("no_check", "hand_check")


@dataclass(frozen=True)
class Run:
    """One judged result file, where its pages live, and the published figures of the same scenario."""

    scenario: Scenario
    slug: str
    links: RunLinks
    published: Mapping[str, Any] | None
    differences: tuple[Difference, ...]
    top: Mapping[str, Any]  # the result file as stored
    verdict: Verdict

    @property
    def raw_cells(self) -> list[Mapping[str, Any]]:
        return cast(list[Mapping[str, Any]], self.top["cells"])  # derive() read each cell as a JSON object

    @property
    def summaries(self) -> tuple[SystemSummary, ...]:
        return self.scenario.summaries

    @property
    def title(self) -> str:
        return self.scenario.title

    @property
    def kind(self) -> str:
        return "published real-service run" if self.scenario.provenance.published else "this project's run"

    @property
    def services(self) -> str:
        return ", ".join(f"{s.role.replace('_', ' ')} {'real' if s.real else 'stand-in'}"
                         for s in self.scenario.provenance.services)


@dataclass(frozen=True)
class PublishedOnly:
    """A scenario with published figures and no result file in this build."""

    name: str
    slug: str
    links: RunLinks
    figures: Mapping[str, Any]
    summaries: tuple[SystemSummary, ...]
    title: str
    verdict: Verdict
    kind: str = "published figures only (no local run)"
    services: str = "real services (published)"


def _template_for(name: str) -> str:
    """A scenario's own page template when one is written for it, else the generic one."""
    specific = f"scenarios/{name}.md.j2"
    return specific if (TEMPLATES / specific).exists() else "scenario.md.j2"


def _source(template: str) -> Markup:
    """The repository path of a page's template, for the footer's "Improve this page" link."""
    return Markup(f"site/templates/{template}")


def _page_facts(name: str) -> Mapping[str, Any]:
    """What the published page of a scenario states that its artifact file does not (site/data)."""
    pages = json.loads(PUBLISHED_PAGES.read_text(encoding="utf-8"))
    return cast(Mapping[str, Any], pages["scenarios"].get(name, {}))  # site/data's file: one object per scenario


def _published_side(figures: Mapping[str, Any] | None) -> headline.Side | None:
    """The published run of a scenario, re-judged from its shipped file (pipeline.published)."""
    if not figures:
        return None
    return dataclasses.replace(headline.scenario_side(figures["scenario"]), title="published run")


def published_facts(name: str, figures: Mapping[str, Any] | None) -> dict[str, Any]:
    """Facts of a scenario's published run the pages state in words: its claim TTL and what it deleted after the
    run, from its own file where the file holds them, else from what its page states."""
    facts = dict(_page_facts(name))
    judged: Scenario | None = figures["scenario"] if figures else None
    if judged is not None:
        if isinstance(judged.provenance.extra.get("claim_ttl"), (int, float)):
            facts["claim_ttl_seconds"] = judged.provenance.extra["claim_ttl"]
        cleanup = read(judged.source).value.get("cleanup")
        if isinstance(cleanup, list) and cleanup:
            facts["cleanup"] = {"seen": len(cleanup),
                                "deleted": sum(bool(c.get("deleted")) for c in cleanup if isinstance(c, Mapping)),
                                "cancelled": sum(c.get("status_after_delete") == "cancelled" for c in cleanup
                                                 if isinstance(c, Mapping))}
    return facts


def _scenario_verdict(scenario: Scenario, figures: Mapping[str, Any] | None,
                      raw_cells: Sequence[Mapping[str, Any]]) -> Verdict:
    """A scenario page's verdict block: the published run (when one exists) beside this file's run."""
    ours = headline.scenario_side(scenario)
    theirs = _published_side(figures)
    sides = [s for s in (theirs, ours) if s is not None]
    ttl = published_facts(scenario.name, figures).get("claim_ttl_seconds")
    settle = headline.settle_note([(side, ttl if side is theirs or scenario.provenance.published else None,
                                    None if side is theirs else scenario.provenance.claim) for side in sides])
    return headline.build(sides, [settle, headline.raced_slips(scenario),
                                  headline.versioning_off(scenario, raw_cells)])


def _published_slug(name: str) -> str:
    """The folder of a scenario's published-only page."""
    return f"published-{slug(name)}"


def _runs(scenarios: Sequence[Scenario], published: Mapping[str, Any]) -> list[Run]:
    """Each result file gets its own folder, named after the file so two runs of one scenario never collide, nor
    take a published page's folder; the shown source path is relative to the repository."""
    runs, taken = [], {_published_slug(name) for name in published}
    for scenario in sorted(scenarios, key=lambda s: (Path(s.source).name, s.source)):
        name = unique(slug(Path(scenario.source).stem), taken)
        top = read(scenario.source).value
        shown = dataclasses.replace(scenario, source=repo_path(scenario.source))
        figures = published.get(scenario.name)
        differences = compare_published(shown, published) if figures else ()
        runs.append(Run(shown, name, RunLinks.of(f"scenarios/{name}", shown.cells), figures, differences, top,
                        _scenario_verdict(shown, figures, top["cells"])))
    return runs


def _home_verdict(runs: Sequence[Run], published: Mapping[str, Any]) -> Verdict:
    """Home's verdict block: every system over every scenario, the published runs beside the project's own."""
    local = [run for run in runs if not run.scenario.provenance.published]
    rejudged = [run for run in runs if run.scenario.provenance.published]
    sides = []
    theirs = [side for name in sorted(published) if (side := _published_side(published[name]))]
    if theirs:
        sides.append(headline.Side("published runs", theirs[0].ran, True,
                                   tuple(o for side in theirs for o in side.outcomes)))
    mine = local or rejudged
    if mine:
        what = sorted({headline.ran(run.scenario.provenance)[0] for run in mine})
        title = "this run" if local else "published runs, re-judged"
        sides.append(headline.Side(title, "; ".join(what), False,
                                   tuple(o for run in mine for o in headline.from_cells(run.scenario.cells))))
    ttl = max((published_facts(name, figures).get("claim_ttl_seconds") or 0 for name, figures in published.items()),
              default=0) or None
    claim = mine[0].scenario.provenance.claim if mine else None
    notes = [headline.settle_note([(side, ttl if side.real else None, None if side.real else claim)
                                   for side in sides])]
    for run in mine:
        notes += [headline.raced_slips(run.scenario), headline.versioning_off(run.scenario, run.raw_cells)]
    return headline.build(sides, notes)


def _comparison_columns(run: Run) -> list[str]:
    """The compared columns, those where the runs differ first (most differences first), then the rest in order."""
    counts = {column: sum(1 for d in run.differences if d.column == column and d.kind == "value")
              for column in COLUMNS}
    return sorted(COLUMNS, key=lambda column: (-counts[column], COLUMNS.index(column)))


def _comparison_keys(run: Run) -> list[tuple[str, str]]:
    """The compared cells in the table's order: the published run's, then those only this run has."""
    published = [(c["fault"], c["system"]) for c in (run.published or {}).get("cells", [])]
    return published + [(c.fault, c.system) for c in run.scenario.cells if (c.fault, c.system) not in published]


def _reading_order(run: Run, columns: Sequence[str]) -> list[Difference]:
    """The differences in the order the table shows them, row by row and column by column (a whole cell that only
    one run has first in its row), so that their numbers count up down the page."""
    rows = {key: n for n, key in enumerate(_comparison_keys(run))}
    places = {"cell": -1, **{column: n for n, column in enumerate(columns)}}
    return sorted(run.differences, key=lambda d: (rows.get((d.fault, d.system), len(rows)),
                                                  places.get(d.column, len(places))))


def _comparison_rows(run: Run, columns: Sequence[str], differences: Sequence[Difference]) -> list[dict[str, Any]]:
    """One row per cell of either run, each column marked where the pipeline found a difference, with the number
    it has in `differences`."""
    notes = {(d.fault, d.system, d.column): index for index, d in enumerate(differences, 1)}
    kinds = {(d.fault, d.system, d.column): d.kind for d in differences}
    published_cells = {(c["fault"], c["system"]): c for c in (run.published or {}).get("cells", [])}
    rows = []
    for fault, system in _comparison_keys(run):
        theirs = published_cells.get((fault, system), {})
        cell = run.scenario.cell(fault, system)
        ours = cell.as_json() if cell else {}
        values = []
        for column in columns:
            key = (fault, system, column)
            values.append({
                "column": column,
                "published": theirs.get(column, "not run"), "ours": ours.get(column, "not run"),
                "differs": kinds.get(key) == "value",
                "note": notes.get(key),
            })
        # a cell only one run has: its row says so once, and shows that run's values
        alone = None if (fault, system, "cell") not in notes else "this run" if cell else "the published run"
        rows.append({"fault": fault, "system": system, "shown": values, "alone": alone,
                     "alone_note": notes.get((fault, system, "cell"))})
    return rows


def _write(path: Path, text: str) -> None:
    """Each file is written once: a second page at the same path is an error, never an overwrite."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with path.open("x", encoding="utf-8") as file:
            file.write(text)
    except FileExistsError:
        raise FileExistsError(f"two pages would be written to {path}; the site keeps each page once") from None


def _page(env: jinja2.Environment, template: str, path: Path, **context: Any) -> None:
    text = env.get_template(template).render(source_template=_source(template), **context)
    _write(path, _CELL_AFTER_CELL.sub(r"\1 \2", text))


# Adjacent table cells with nothing between them, as the templates write them: a space between each two changes
# nothing on the page, and keeps the site search's text of a row from running its numbers together ("500 500 0",
# not "5005000").
_CELL_AFTER_CELL = re.compile(r"(</t[dh]>)(<t[dh][ >])")


# A cell's raw JSON keeps its text as stored but for the invisible characters, written as the escapes JSON has for
# them ("\u202e"), so the file reads back the same and a browser showing it shows them.
_JSON_ESCAPES = {ord(char): f"\\u{ord(char):04x}" for char in INVISIBLE}


def _write_run(env: jinja2.Environment, run: Run, docs: Path) -> None:
    folder = docs / run.links.folder
    scenario = run.scenario
    context = {"run": scenario, "links": run.links}
    facts = {
        "receipts": findings.receipts(scenario), "failed_rechecks": findings.failed_rechecks(scenario),
        "retry_commits": findings.retry_commits(scenario), "cuts": findings.cuts(scenario),
        "ties": findings.ties_with_hand_check(scenario), "lookups": findings.lookups(scenario),
        "change_only": findings.change_only(scenario), "expected": findings.expected_premises(scenario),
        "evidence": findings.evidence(scenario, run.top, scenario.source),
        "claim_kind": headline.claim_kind(scenario.provenance.claim),
    }
    _page(env, _template_for(scenario.name), folder / "index.md", published=run.published, verdict=run.verdict,
          facts=facts, published_facts=published_facts(scenario.name, run.published),
          disagreements=getattr(scenario, "disagreements", None), **context)
    _page(env, "cells.md.j2", folder / "cells.md", **context)
    if run.published:
        columns = _comparison_columns(run)
        differences = _reading_order(run, columns)
        _page(env, "published.md.j2", folder / "published.md", published=run.published, columns=columns,
              rows=_comparison_rows(run, columns, differences), differences=differences,
              disagreements=run.published.get("disagreements"), **context)
    for cell in scenario.cells:
        raw = json.dumps(run.raw_cells[cell.index], indent=1, ensure_ascii=False).translate(_JSON_ESCAPES) + "\n"
        _write(folder / str(run.links.raw(cell)), raw)


def _settle_series(run: Run) -> list[Series]:
    """The settle chart's bars: crash-to-settled seconds per system, one series per side of the verdict."""
    return [Series(side.title, {system: [o.seconds for o in side.of(system) if o.seconds is not None]
                                for system in side.systems()}) for side in run.verdict.sides]


def _only_verdict(name: str, figures: Mapping[str, Any]) -> Verdict:
    """The verdict block of a scenario with published figures and no run of this project."""
    side = _published_side(figures)
    assert side is not None
    return headline.build([side], [headline.settle_note([(side, published_facts(name, figures).get(
        "claim_ttl_seconds"), None)])])


def _write_published_only(env: jinja2.Environment, only: PublishedOnly, docs: Path) -> None:
    cells = only.figures["cells"]
    grid = {(c["fault"], c["system"]): c for c in cells}
    _page(env, "published_only.md.j2", docs / only.links.folder / "index.md", name=only.name, figures=only.figures,
          verdict=only.verdict,
          grid=grid, faults=list(dict.fromkeys(c["fault"] for c in cells)),
          systems=list(dict.fromkeys(c["system"] for c in cells)))


def _bench_charts(benchmarks: Sequence[Benchmark], drawing: Drawing) -> dict[tuple[str, int], dict[str, Markup]]:
    """One chart per benchmark table that has columns worth drawing, queued on `drawing`; returns their image paths
    by (file, table's place in it). Each image is named after its file and table, numbered where another's name
    already folds to the same slug, so no chart overwrites another."""
    images: dict[tuple[str, int], dict[str, Markup]] = {}
    taken: set[str] = set()
    for bench in benchmarks:
        for index, table in enumerate(bench.tables):
            if not table.chart:
                continue
            series = [Series(column, {row[0]: [v] if v is not None else [] for row, v in zip(table.rows, values)})
                      for column, values in table.chart.items()]
            name = unique(f"bench-{slug(bench.name)}-{slug(table.title)}", taken)
            drawing.bars(f"assets/charts/{name}", series, table.chart_unit or "value", table.chart_unit)
            images[(bench.name, index)] = {scheme: Markup(f"../assets/charts/{name}-{scheme}.svg")
                                           for scheme in ("light", "dark")}
    return images


@dataclass(frozen=True)
class ApiModule:
    """One module of the API page, and the members it documents: all of them (None), or only those the package
    root does not already document, so no object is shown twice."""

    name: str
    members: tuple[str, ...] | None


def _module_file(module: str) -> Path | None:
    """The source file of a module of this checkout, if it has one."""
    path = REPO.joinpath(*module.split("."))
    found = [p for p in (path.with_suffix(".py"), path / "__init__.py") if p.is_file()]
    return found[0] if found else None


def _exported(source: Path) -> set[str]:
    """The names a package's `__all__` lists, read without importing it."""
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return {str(name) for name in ast.literal_eval(node.value)}
    return set()


def _defined(source: Path) -> list[str]:
    """The public classes and functions a module defines, in source order."""
    kinds = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return [n.name for n in ast.parse(source.read_text(encoding="utf-8")).body
            if isinstance(n, kinds) and not n.name.startswith("_")]


def _api_modules() -> list[ApiModule]:
    """The API page's modules that exist in this checkout: the package root with every member, then each other
    module with its docstring and only the members the root does not show (a package's: those its `__all__`
    lists)."""
    found = [(m, f) for m in API_MODULES if (f := _module_file(m)) is not None]
    root = {name for m, f in found if m == API_MODULES[0] for name in _exported(f)}
    return [ApiModule(m, None if m == API_MODULES[0] else tuple(
        n for n in (sorted(_exported(f)) if f.name == "__init__.py" else _defined(f)) if n not in root))
        for m, f in found]


def _peer_cells(runs: Sequence[Run]) -> list[tuple[Run, list[Any]]]:
    """Every cell of a system that is neither a baseline nor a gate configuration, per run that has one."""
    found = []
    for run in runs:
        cells = [c for c in run.scenario.cells if c.system not in BASELINES and not c.system.startswith("interlock")]
        if cells:
            found.append((run, cells))
    return found


def _reliability_pages(reliability: Reliability) -> list[tuple[str, Markup, list[Exploration]]]:
    """(scenario, page name, explorations) of each scenario's reliability page, beside the overview's `index`; the
    name is a slug, so it goes into links as it is."""
    taken = {"index"}
    return [(scenario, Markup(unique(slug(scenario), taken)), runs) for scenario, runs in reliability.by_scenario()]


def render_site(scenarios: Sequence[Scenario], published: Mapping[str, Any], docs: Path,
                reliability: Reliability = Reliability((), None),
                benchmarks: Sequence[Benchmark] = (), drawing: Drawing | None = None) -> list[dict[str, Any]]:
    """Write every page of the site into `docs`, a new folder (an existing one is never emptied), and return the
    mkdocs nav for them; a build with no reliability or benchmark files says so on those pages. The charts are
    written into `docs` before this returns, unless they are queued on the caller's `drawing`, which lets them be
    drawn while mkdocs runs."""
    docs.mkdir(parents=True)
    shutil.copytree(ASSETS, docs / "assets")
    env = environment()
    runs = _runs(scenarios, published)
    judged = {run.scenario.name for run in runs}
    only = [PublishedOnly(name, _published_slug(name), RunLinks(f"scenarios/{_published_slug(name)}"), figures,
                          figures["scenario"].summaries, figures["page"],
                          _only_verdict(name, figures))
            for name, figures in sorted(published.items()) if name not in judged]
    with nullcontext(drawing) if drawing else Drawing() as charts:
        for run in runs:
            charts.settle(f"{run.links.folder}/settle", _settle_series(run))
        bench_charts = _bench_charts(benchmarks, charts)
        for run in runs:
            _write_run(env, run, docs)
        for item in only:
            _write_published_only(env, item, docs)
        local = [run for run in runs if not run.scenario.provenance.published]
        _page(env, "home.md.j2", docs / "index.md", runs=runs, only=only, rows=runs + only, local=local,
              verdict=_home_verdict(runs, published))
        _page(env, "methodology.md.j2", docs / "methodology.md", runs=runs, benchmarks=benchmarks,
              bench_charts=bench_charts)
        by_scenario = _reliability_pages(reliability)
        _page(env, "reliability.md.j2", docs / "reliability" / "index.md", reliability=reliability,
              pages=by_scenario)
        raced = next((Markup(f"../{run.links.folder}/index.md#raced-dispatch") for run in runs
                      if run.scenario.raced), None)
        for scenario, page, explored in by_scenario:
            _page(env, "reliability_scenario.md.j2", docs / "reliability" / f"{page}.md", scenario=scenario,
                  runs=explored, raced=raced)
        _page(env, "peers.md.j2", docs / "peers.md", peers=_peer_cells(runs),
              peer_bench=next((b for b in benchmarks if b.name == "peers"), None))
        _page(env, "api.md.j2", docs / "api.md", modules=_api_modules())
        if drawing is None:
            charts.write(docs)
    nav: list[dict[str, Any]] = [{"Home": "index.md"}]
    for run in runs:
        pages = [{f"{run.slug}: results": f"{run.links.folder}/index.md"}]
        if run.published:
            pages.append({f"{run.slug}: published beside it": f"{run.links.folder}/published.md"})
        pages.append({f"{run.slug}: every cell": f"{run.links.folder}/cells.md"})
        nav.append({run.slug: pages})
    for item in only:
        nav.append({f"{item.name} (published only)": f"{item.links.folder}/index.md"})
    nav.append({"Reliability": [{"Reliability: overview": "reliability/index.md"},
                                *({f"Reliability: {page}": f"reliability/{page}.md"}  # the slug: the theme
                                  for _, page, _ in by_scenario)]})  # prints a title as HTML, and unescapes one
    nav.append({"Peers: DBOS, Powertools, Temporal": "peers.md"})
    nav.append({"Methodology, limits and benchmarks": "methodology.md"})
    nav.append({"API reference": "api.md"})
    return nav
