"""Judged runs in, the Markdown tree mkdocs builds out: pages, charts and each cell's raw JSON."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup

from ..chart import Bar, settle_chart
from ..load import read
from ..model import Scenario
from .env import REPO, TEMPLATES, environment
from .links import RunLinks, slug

ASSETS = REPO / "site" / "assets"


@dataclass(frozen=True)
class Run:
    """One judged result file and where its pages live."""

    scenario: Scenario
    slug: str
    links: RunLinks
    published: Any  # the published figures of the same scenario, or None


def _template_for(env, name: str) -> str:
    """A scenario's own page template when one is written for it, else the generic one."""
    specific = f"scenarios/{name}.md.j2"
    return specific if (TEMPLATES / specific).exists() else "scenario.md.j2"


def _source(template: str) -> Markup:
    """The repository path of a page's template, for the footer's "Improve this page" link."""
    return Markup(f"site/templates/{template}")


def _runs(scenarios: Sequence[Scenario]) -> list[Run]:
    """Each result file gets its own folder, named after the file so two runs of one scenario never collide."""
    runs, taken = [], set()
    for scenario in sorted(scenarios, key=lambda s: (Path(s.source).name, s.source)):
        base = slug(Path(scenario.source).stem)
        name, n = base, 2
        while name in taken:
            name, n = f"{base}-{n}", n + 1
        taken.add(name)
        runs.append(Run(scenario, name, RunLinks(f"scenarios/{name}"), None))
    return runs


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _write_run(env, run: Run, docs: Path) -> None:
    folder = docs / run.links.folder
    scenario = run.scenario
    template = _template_for(env, scenario.name)
    context = {"run": scenario, "links": run.links, "published": run.published}
    _write(folder / "index.md", env.get_template(template).render(source_template=_source(template), **context))
    _write(folder / "cells.md", env.get_template("cells.md.j2").render(source_template=_source("cells.md.j2"),
                                                                          **context))
    bars = [Bar(c.fault, c.system, c.seconds_to_settle) for c in scenario.cells]
    for scheme in ("light", "dark"):
        _write(folder / f"settle-{scheme}.svg", settle_chart(bars, scheme))
    raw_cells = read(scenario.source).value["cells"]
    for cell in scenario.cells:
        raw = json.dumps(raw_cells[cell.index], indent=1, ensure_ascii=False) + "\n"
        _write(folder / str(run.links.raw(cell)), raw)


def render_site(scenarios: Sequence[Scenario], docs: Path) -> list[dict[str, Any]]:
    """Write every page of the site into `docs` (emptied first) and return the mkdocs nav for them."""
    if docs.exists():
        shutil.rmtree(docs)
    docs.mkdir(parents=True)
    shutil.copytree(ASSETS, docs / "assets")
    env = environment()
    runs = _runs(scenarios)
    for run in runs:
        _write_run(env, run, docs)
    _write(docs / "index.md", env.get_template("home.md.j2").render(source_template=_source("home.md.j2"),
                                                                     runs=runs))
    _write(docs / "methodology.md", env.get_template("methodology.md.j2").render(
        source_template=_source("methodology.md.j2"), runs=runs))
    nav: list[dict[str, Any]] = [{"Home": "index.md"}]
    for run in runs:
        nav.append({run.slug: [
            {f"{run.slug}: results": f"{run.links.folder}/index.md"},
            {f"{run.slug}: every cell": f"{run.links.folder}/cells.md"},
        ]})
    nav.append({"Methodology and limits": "methodology.md"})
    return nav
