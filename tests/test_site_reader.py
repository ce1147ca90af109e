"""The methodology, peers and API pages and the README, read as a reader would: each object documented once, charts
of one unit whose labels keep close values apart, figures named in words, tables that fit a laptop and a phone."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from pipeline import chart
from pipeline.benchmarks import DESCRIPTIONS, benchmarks, label, layout, unit
from site_support import CHROMIUM, CHROMIUM_ARGS, REPO, project_site, serve


def _page(path: str) -> str:
    return (project_site() / path).read_text(encoding="utf-8")


def test_the_api_reference_documents_each_object_once():
    page = _page("api/index.html")
    objects = re.findall(r'<h3 id="([\w.]+)"', page)  # a module's classes and functions
    names = [ident.rsplit(".", 1)[1] for ident in objects]
    assert sorted({n for n in names if names.count(n) > 1}) == []
    assert "interlock.hooks.NoHooks" in objects  # what only a module beside the root defines stays documented
    for module in ("interlock.errors", "interlock.hooks", "interlock.app"):
        assert f'<h2 id="{module}"' in page  # each with its docstring


def test_the_api_reference_documents_every_constant_the_package_exports():
    import interlock

    constants = [name for name in interlock.__all__ if name.isupper()]
    page = _page("api/index.html")
    assert constants and [name for name in constants if f'<h3 id="interlock.{name}"' not in page] == []


def test_the_api_reference_documents_the_cloud_targets_and_the_postgresql_backend():
    page = _page("api/index.html")
    for name in ("interlock.targets.gcs.GcsObjectTarget", "interlock.targets.gcs.generation_premise",
                 "interlock.targets.calendar.CalendarEventTarget", "interlock.targets.calendar.slot_premise",
                 "interlock.pg.PgJournal", "interlock.pg.PgClaims", "interlock.pg.Row", "interlock.pg.row_premise"):
        assert f'<h3 id="{name}"' in page, name


def test_the_error_hierarchy_reads_as_a_tree_on_the_api_page():
    text = html.unescape(_page("api/index.html"))
    tree = re.search(r"<pre[^>]*>(?:(?!</pre>).)*InterlockError\n.*?</pre>", text, re.S)
    assert tree is not None and "├── ConfigurationError" in re.sub(r"<[^>]+>", "", tree.group(0))


def test_the_api_page_names_every_flag_of_the_receipts_command():
    source = (REPO / "interlock" / "receipts" / "__main__.py").read_text(encoding="utf-8")
    flags = re.findall(r'add_argument\("(--[\w-]+)"', source)
    text = html.unescape(_page("api/index.html"))
    assert flags and [flag for flag in flags if f"<code>{flag}" not in text] == []


def test_every_benchmark_chart_draws_figures_of_one_unit():
    drawn = [(bench.name, table.title, table.chart_unit) for bench in benchmarks(REPO / "results" / "bench")
             for table in bench.tables if table.chart]
    assert drawn and [d for d in drawn if not d[2]] == []


def test_figures_keyed_by_a_count_read_in_numeric_order_with_what_they_count():
    data = {"systems": {"direct": {"median_ms": 0.2, "effects_per_second": {"1": 10.0, "16": 30.0, "4": 20.0}}}}
    (systems,) = [t for t in layout("peers", data, "results/bench/peers.json").tables if t.title == "systems"]
    assert systems.head == ("system", "median (ms)", "effects per second 1 workers (per s)",
                            "effects per second 4 workers (per s)", "effects per second 16 workers (per s)")
    assert systems.rows == (("direct", "0.2", "10", "20", "30"),)
    assert list(systems.chart) == list(systems.head[2:]) and systems.chart_unit == "per s"


def test_a_bar_label_keeps_values_under_one_apart_and_small_bars_fill_the_chart():
    assert chart._label([0.25], "s") == "0.25 s" and chart._label([0.253], "s") == "0.253 s"
    assert chart._label([3.72], "s") == "3.7 s" and chart._label([1041.0], "per s") == "1,041 per s"
    assert chart._top([chart.Series("x", {"a": [0.25], "b": [0.2]})]) == 0.25
    assert chart._top([chart.Series("x", {"a": []})]) == 1.0


def test_a_rate_per_cpu_second_reads_per_cpu_second():
    assert unit("verify_entries_per_cpu_second") == "per CPU s"
    assert unit("jsonl_effects_per_second_16_workers") == "per s"
    assert label("seconds") == "time (s)"  # a key that is only its unit still says what it measures


def test_every_target_names_its_figure_in_the_words_of_the_figures_tables():
    page = _page("methodology/index.html")
    summary = page[page.index('class="interlock-bench interlock-cards interlock-targets"'):]
    summary = summary[:summary.index("</table>")]
    named = [html.unescape(n) for n in re.findall(r'<td data-label="figure">(.*?)</td>', summary)]
    targets = [t for bench in benchmarks(REPO / "results" / "bench") for t in bench.targets]
    assert named == [label(t.figure) for t in targets]
    assert [n for n in named if "_" in n or "<code>" in n] == []


def test_the_benchmark_descriptions_name_figures_in_words_and_say_what_the_renewal_cost_is():
    systems = {"hand_check", "no_check"}
    for name, about in DESCRIPTIONS.items():
        prose = re.sub(r"`[^`]*`", "", about.why)
        assert [w for w in re.findall(r"\w+_\w+", prose) if w not in systems] == [], name
    assert "The renewal cost is the share of 4 workers' effects per second" in DESCRIPTIONS["pg"].why


def test_the_peers_table_says_what_its_answer_and_seconds_columns_measure():
    page = html.unescape(_page("peers/index.html"))
    head = re.search(r'<table class="interlock-peers[^"]*">\s*<thead>(.*?)</thead>', page, re.S)
    assert head and "<th>reported answer</th>" in head.group(1)
    assert "<th>seconds, crash to settled</th>" in head.group(1)


def test_the_readme_layout_says_what_each_folder_of_site_holds():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    row = next(line for line in readme.splitlines() if line.startswith("| `site/` |"))
    folders = sorted(p.name for p in (REPO / "site").iterdir() if p.is_dir())
    assert [f for f in folders if f"`{f}/`" not in row] == []
    assert "hand-written" not in row


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium is not installed")
def test_no_methodology_peers_or_api_table_is_wider_than_its_box_on_a_laptop_or_a_phone():
    playwright = pytest.importorskip("playwright.sync_api")
    measure = """() => Array.from(document.querySelectorAll('article table'), (t, i) => {
        const box = (t.closest('.interlock-scroll, .md-typeset__scrollwrap') || t.parentElement);
        return [i, t.querySelector('tr').innerText.slice(0, 40), Math.round(t.getBoundingClientRect().width),
                Math.round(box.getBoundingClientRect().width)]; }).filter(x => x[2] > x[3] + 1)"""
    wide = []
    with serve(project_site()) as base, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for width, height in ((1280, 900), (390, 844)):
            page = browser.new_page(viewport={"width": width, "height": height})
            for path in ("methodology/", "peers/", "api/"):
                page.goto(base + path, wait_until="load")
                wide += [(width, path, *found) for found in page.evaluate(measure)]
            page.close()
        browser.close()
    assert wide == []
