"""Building the site: deterministic output, every cell's raw JSON, the empty-results case, bad input, no remote
assets, no checkout path, and the layout of the verdict, reliability and benchmark tables."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.benchmarks import Benchmark, Table, layout
from pipeline.build import build
from pipeline.chart import Series, settle_charts
from pipeline.render import inert, render_site
from site_support import (REFERENCE, REFERENCE_FILES, REPO, REPO_URL, SITE_URL, addressed_site, project_site,
                          reference_site)

needs_reference = pytest.mark.skipif(not REFERENCE.is_dir(), reason="../shared/reference is not present")


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@needs_reference
def test_two_builds_of_the_same_results_are_byte_identical(tmp_path):
    first, second = _tree(reference_site()), _tree(build(REFERENCE_FILES, tmp_path))
    assert sorted(first) == sorted(second)
    assert [name for name in first if first[name] != second[name]] == []
    assert "sitemap.xml.gz" in first and "search/search_index.json" in first


def test_the_chart_is_identical_across_draws_and_carries_no_date():
    series = [Series("published run", {"no_check": [2.0, 0.4], "interlock": [30.9]}),
              Series("this run", {"no_check": [0.2], "interlock": [0.2], "peer": []})]
    charts = settle_charts(series)
    light, dark = charts["light"], charts["dark"]
    assert charts == settle_charts(series)
    assert light != dark and "#ffffff" in light and "#ffffff" not in dark
    assert "<dc:date>" not in light
    assert "<text" not in light  # glyphs are paths: no font is needed where the page is viewed


def test_the_chart_height_is_capped_however_many_systems_run():
    many = [Series(run, {f"system_{n}": [0.2] for n in range(40)}) for run in ("published run", "this run")]
    height = float(re.search(r'<svg[^>]*height="([\d.]+)pt"', settle_charts(many)["light"]).group(1))
    assert height <= 8.5 * 72  # 8 in, and the legend above it


@needs_reference
def test_every_cell_raw_json_is_in_the_site_and_equals_the_stored_cell():
    site = reference_site()
    for source in REFERENCE_FILES:
        cells = json.loads(source.read_text())["cells"]
        copied = sorted((site / "scenarios" / source.stem / "cells").glob("*.json"))
        assert [json.loads(p.read_text()) for p in copied] == cells


@needs_reference
def test_each_page_footer_opens_the_template_it_came_from():
    site = addressed_site()
    for page, template in [("index.html", "site/templates/home.md.j2"),
                           ("scenarios/gcp_resource/index.html", "site/templates/scenarios/gcp_resource.md.j2"),
                           ("scenarios/calendar/cells/index.html", "site/templates/cells.md.j2"),
                           ("scenarios/calendar/published/index.html", "site/templates/published.md.j2")]:
        html = (site / page).read_text()
        link = re.search(r'<a href="([^"]+)" class="interlock-improve">Improve this page.</a>', html)
        assert link and link.group(1) == f"{REPO_URL}/edit/main/{template}", page
        assert (REPO / template).is_file()
        assert "This site is open source." in html


@needs_reference
def test_no_page_loads_anything_from_another_host():
    site = reference_site()
    loads = re.compile(r'<(?:script|img|link|iframe|source)\b[^>]*\b(?:src|href)="(https?:)?//[^>]*>', re.I)
    for page in site.rglob("*.html"):
        html = page.read_text()
        # the canonical link names the published address; a browser loads nothing from it
        assert [m.group(0) for m in loads.finditer(html) if 'rel="canonical"' not in m.group(0)] == [], page
        assert 'data-md-component="source"' not in html, page  # would ask the repository host's API for stars


def test_with_no_result_files_the_site_shows_the_published_runs_and_says_no_local_run(tmp_path):
    site = build([], tmp_path)
    home = (site / "index.html").read_text()
    assert "No local run is committed" in home
    for name in ("gcp_resource", "calendar"):
        page = (site / "scenarios" / f"published-{name}" / "index.html").read_text()
        assert "No local run is committed" in page
    gcp = html.unescape((site / "scenarios" / "published-gcp_resource" / "index.html").read_text())
    assert "REFUSED:stale_premise_at_recovery" in gcp.replace("<wbr>", "")  # an outcome breaks only at its <wbr>s


@needs_reference
def test_a_bad_result_file_stops_the_build_with_one_line_and_exit_2(tmp_path):
    data = json.loads(REFERENCE_FILES[0].read_text())
    del data["cells"][4]["artifacts"]["outcome_restart.json"]["outcome"]
    bad = tmp_path / "gcp_resource.json"
    bad.write_text(json.dumps(data))
    run = subprocess.run([sys.executable, "-m", "pipeline", "build", str(bad), "--out", str(tmp_path / "out")],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and "cells[4].artifacts[\"outcome_restart.json\"].outcome" in lines[0]
    assert not (tmp_path / "out" / "site").exists()


def test_inert_text_keeps_no_markdown_or_html_character_and_reads_back_unchanged():
    hostile = "<script>x</script> **b** _i_ [l](u) `c` | p {: .k} # h\n\n    code & ~~s~~ ==m== 1. !"
    escaped = str(inert(hostile))
    bare = re.sub(r"&#\d+;", "", escaped)
    assert re.fullmatch(r"[A-Za-z0-9 .,;:?/@%()]*", bare)
    assert html.unescape(escaped) == hostile


def test_without_reliability_or_bench_files_the_pages_say_no_run_is_committed(tmp_path):
    site = build([], tmp_path / "out", results=tmp_path / "no-results")
    reliability = (site / "reliability" / "index.html").read_text()
    assert "No exploration run is committed" in reliability and "No tamper run is committed" in reliability
    assert "No benchmark run is committed" in (site / "methodology" / "index.html").read_text()


def test_the_calendar_raced_dispatch_section_counts_the_files_trials(tmp_path):
    calendar = REPO / "results" / "scenarios" / "calendar.json"
    if not calendar.is_file():
        pytest.skip("no committed calendar run")
    data = json.loads(calendar.read_text())
    unforced = [t for t in data["raced_dispatch"]["trials"] if t["kind"] == "unforced" and t["system"] == "interlock"]

    def landed(insert: dict | None) -> bool:
        return insert is not None and insert["status"] == 200

    slipped = sum(landed(t["agent_insert"]) and landed(t["customer_insert"])
                  and t["customer_insert"]["seq"] < t["agent_insert"]["seq"] for t in unforced)
    page = html.unescape((build([calendar], tmp_path) / "scenarios" / "calendar" / "index.html").read_text())
    assert f"{slipped}/{len(unforced)}" in page[page.index("Raced dispatch"):]


def _texts(site: Path) -> dict[str, str]:
    return {p.relative_to(site).as_posix(): p.read_text(encoding="utf-8", errors="replace")
            for p in site.rglob("*") if p.suffix in (".html", ".json", ".xml", ".svg", ".md", ".inv")}


def test_no_built_file_names_the_checkout_or_the_build_folder():
    site = project_site()
    leaks = [name for name, text in _texts(site).items()
             if str(REPO) in text or str(site.parent) in text or str(REFERENCE) in text]
    assert leaks == []


@needs_reference
def test_the_sitemap_lists_every_page_under_the_publishers_address():
    site = addressed_site()
    listed = set(re.findall(r"<loc>([^<]+)</loc>", (site / "sitemap.xml").read_text()))
    expected = {SITE_URL + str(p.parent.relative_to(site)).strip(".") + ("/" if p.parent != site else "")
                for p in site.rglob("index.html")}
    assert expected == listed and len(listed) >= 8
    home = (site / "index.html").read_text()
    assert f'<link rel="canonical" href="{SITE_URL}">' in home


@needs_reference
def test_a_build_not_given_the_addresses_names_no_repository_and_no_site_address():
    site = reference_site()
    assert "<loc>" not in (site / "sitemap.xml").read_text()
    for page in site.rglob("*.html"):
        text = page.read_text()
        assert "interlock-improve" not in text and "md-source" not in text, page
        assert 'rel="canonical"' not in text and "This site is open source." not in text, page


def test_search_splits_fault_names_outcome_codes_and_paths_into_their_parts():
    index = json.loads((project_site() / "search" / "search_index.json").read_text())
    separator = re.compile(index["config"]["separator"])
    for term, parts in [("stale_premise", ["stale", "premise"]), ("versioning_off", ["versioning", "off"]),
                        ("REFUSED:stale_premise_at_recovery", ["REFUSED", "stale", "premise", "at", "recovery"]),
                        ("before_send/slot_busy", ["before", "send", "slot", "busy"])]:
        assert [p for p in separator.split(term) if p] == parts
    cells = [d for d in index["docs"] if "/cells/#" in d["location"]]
    # a snippet opens with the block that matched: the cell's name and outcome line come first in each section
    assert cells and all(re.match(r"<p>\S+ / \S+: [A-Z_:a-z0-9]+ ", d["text"]) for d in cells), cells[0]["text"]


def test_the_stand_in_note_keeps_its_text_inside_its_box():
    page = (project_site() / "scenarios" / "calendar" / "index.html").read_text()
    note = re.search(r'<div class="admonition note">\s*<p class="admonition-title">Stand-ins in this run</p>\s*'
                     r'<p>(.*?)</p>\s*</div>', page, re.S)
    assert note and "local stand-ins" in note.group(1)


def test_the_reliability_page_counts_each_violation_kind_in_its_own_row_apart_from_record_keeping():
    page = html.unescape((project_site() / "reliability" / "calendar" / "index.html").read_text())
    for row in ("landed more than once", "landed after its fact changed", "landed after its authority ended",
                "send left unresolved in its own record", "broke a rule, the action outside the check-to-send window",
                "broke a rule, the action inside it"):
        assert re.search(rf"<tr><th[^>]*>{re.escape(row)}</th>", page), row
    assert page.index('<tr class="interlock-group"><th colspan="4">wrong data at the service</th>') < page.index(
        '<tr class="interlock-group"><th colspan="4">record-keeping</th>')


def test_a_benchmark_file_with_new_keys_is_laid_out_with_units_and_nothing_dropped():
    data = {"effects_per_run": 320, "note": "one worker per process",
            "systems": {"dbos_sqlite": {"median_ms": 2.5, "effects_per_second": {"1": 400.0, "4": 900.5}},
                        "interlock_decorator_jsonl": {"median_ms": 1.25, "effects_per_second": {"1": 600.0}}},
            "brand_new_seconds": 1.5, "file_create_us": 7.6, "rows": [{"fault": "a", "x_median_s": 0.2}]}
    bench = layout("peers", data, "results/bench/peers.json")
    tables = {t.title: t for t in bench.tables}
    systems = tables["systems"]
    assert systems.head == ("system", "median (ms)", "effects per second 1 workers (per s)",
                            "effects per second 4 workers (per s)")
    assert systems.rows == (("dbos_sqlite", "2.5", "400", "900.5"), ("interlock_decorator_jsonl", "1.25", "600", ""))
    assert systems.chart["effects per second 1 workers (per s)"] == (400.0, 600.0)  # rates only: one unit per chart
    figures = dict(tables["figures"].rows)
    assert figures == {"effects per run": "320", "note": "one worker per process", "brand new (s)": "1.5",
                       "file create (µs)": "7.6"}
    assert tables["rows"].rows == (("a", "0.2"),)


def test_a_rate_measured_under_a_setting_in_seconds_reads_per_second():
    data = {"postgresql_effects_per_second_4_workers_ttl_1.5_s": 984.3, "lease_ttl_seconds": 1.0}
    figures = dict(next(t for t in layout("pg", data, "results/bench/pg.json").tables if t.title == "figures").rows)
    assert figures["postgresql effects per second 4 workers ttl 1.5 s (per s)"] == "984.3"
    assert figures["lease ttl (s)"] == "1"


def test_benchmark_charts_whose_names_fold_to_one_slug_each_get_an_image_of_their_own(tmp_path):
    """'a-b' + 'c' and 'a' + 'b-c' make one slug, as do two tables of one file titled 'rows' and 'Rows'."""
    def table(title: str, ms: float) -> Table:
        return Table(title, ("row", "x (ms)"), (("r", str(ms)),), {"x (ms)": (ms,)}, "ms")

    benches = [Benchmark("a-b", "results/bench/a-b.json", "AB", "", (table("c", 1.0),)),
               Benchmark("a", "results/bench/a.json", "A", "", (table("b-c", 2.0), table("rows", 3.0),
                                                                 table("Rows", 4.0)))]
    docs = tmp_path / "docs"
    render_site([], {}, docs, benchmarks=benches)
    page = (docs / "methodology.md").read_text()
    light = re.findall(r'class="interlock-chart interlock-chart--light" src="\.\./([^"]+)"', page)
    assert light == [f"assets/charts/bench-{name}-light.svg" for name in ("a-b-c", "a-b-c-2", "a-rows", "a-rows-2")]
    assert len({(docs / src).read_text() for src in light}) == 4  # each chart its own values, none written over


def test_each_hazard_file_gets_its_own_row_and_section(tmp_path):
    source = REPO / "results" / "reliability" / "explore_calendar.json"
    if not source.is_file():
        pytest.skip("no committed calendar exploration")
    folder = tmp_path / "reliability"
    folder.mkdir()
    data = json.loads(source.read_text())
    (folder / "explore_calendar.json").write_text(json.dumps(data))
    data.update(hazard={"name": "sigstop", "what": "a sender is stopped at a kill point", "journal": "jsonl"},
                history={"check": "python -m experiments.explore --check history.jsonl"},
                hazard_effects={"interrupt": {"interlock: SIGSTOP at before_send: struck": 7}})
    data["violation_kinds"]["brand_new_kind"] = "a kind this page has no column title for"
    for system in data["systems"].values():
        system["violations"]["brand_new_kind"] = {"count": 3, "in_window": 0, "first": []}
    (folder / "explore_calendar_sigstop.json").write_text(json.dumps(data))
    site = build([], tmp_path / "out", results=tmp_path)
    overview = html.unescape((site / "reliability" / "index.html").read_text())
    assert '<a href="calendar/#explore_calendar_crash_jsonl">crash (jsonl journal)</a></th>' in overview
    assert '<a href="calendar/#explore_calendar_sigstop_jsonl">sigstop (jsonl journal)</a></th>' in overview
    assert "The counts below are the ones the files store, since none has its history beside it" in overview
    page = html.unescape((site / "reliability" / "calendar" / "index.html").read_text())
    assert '<a href="#explore_calendar_sigstop_jsonl">sigstop (jsonl journal)</a></th>' in page
    assert '<h2 id="explore_calendar_sigstop_jsonl">sigstop, jsonl journal' in page
    assert "python -m experiments.explore --check history.jsonl" in page
    assert "interlock: SIGSTOP at before_send: struck (7)" in page
    assert ">brand new kind</th>" in page  # an unknown kind still gets a column, under "other"


def test_the_methodology_page_states_the_remaining_window_with_the_figures_of_the_bench_file(tmp_path):
    folder = tmp_path / "bench"
    folder.mkdir()
    (folder / "unfenced.json").write_text(json.dumps({
        "confirm_to_request_median_ms": 1.375, "confirm_to_request_p99_ms": 19.5, "confirm_to_request_samples": 300,
        "trials": 12, "in_flight_bound_s": 2.5, "excess_over_bound_median_s": 0.031,
        "excess_over_bound_max_s": 0.088,
        "targets": {"excess_over_bound_max_s": {"measured": 0.088, "target": "<= 0.2", "met": True}}}))
    page = html.unescape((build([], tmp_path / "out", results=tmp_path) / "methodology" / "index.html").read_text())
    assert "The window that remains." in page
    assert "median 1.375 ms, 99th percentile 19.5 ms, over 300 requests" in page
    assert "bound of 2.5 s plus 0.031 s (median) and at most 0.088 s (target: at most 0.2 s)" in page
    page = (build([], tmp_path / "out2", results=tmp_path / "no-results") / "methodology" / "index.html").read_text()
    assert "The window is not measured in this build" in page


_MARKDOWN_EXTENSIONS = ["tables", "attr_list", "md_in_html", "admonition", {"toc": {"permalink": "¶"}}]


def _markdown(text: str) -> str:
    import markdown

    names = [e if isinstance(e, str) else next(iter(e)) for e in _MARKDOWN_EXTENSIONS]
    configs = {k: v for e in _MARKDOWN_EXTENSIONS if isinstance(e, dict) for k, v in e.items()}
    return markdown.Markdown(extensions=names, extension_configs=configs).convert(text)


def _through_html_blocks(text: str) -> tuple[str, set[str], str]:
    """The page as the hooks pass it: stand-ins into Markdown, blocks back into its HTML."""
    from types import SimpleNamespace

    from pipeline.render import html_blocks

    page = SimpleNamespace(file=SimpleNamespace(src_uri="page.md"), present_anchor_ids=set())
    standing_in = html_blocks.on_page_markdown(text, page)
    return html_blocks.on_page_content(_markdown(standing_in), page), page.present_anchor_ids, standing_in


def test_html_blocks_set_aside_from_markdown_come_back_exactly_where_markdown_puts_them():
    page = "\n".join([
        "# title", "", "A paragraph right above a block.", '<div id="verdict" class="x">', "<table>",
        "<tr><td>a &#45; b</td></tr>", "</table>", "</div>", "", "<details>", "<summary>s</summary>",
        '<pre class="t">line one', "", "line &#42;two&#42;</pre>", "</details>", "", "<div>second of a run</div>",
        "", "", "<div>third, two blank lines up</div>", "", "**bold** text", "", '<p class="t">title</p>',
        "<div>right under a raw paragraph</div>", "", "- item", "", "<div>\tkept by Markdown: a tab</div>", "",
        "    <div>indented: code</div>", "", "```", "<div>in a fence</div>", "```", "", "## h {#anchor}", "",
        '<a name="named"></a>', "", "<div>text right under me</div>", "text under a block", "",
        "<ol><li>a list</li></ol>", "<div>\tunder it, kept by Markdown</div>", "", "<div>last</div>", "",
    ])
    passed, anchors, markdown_saw = _through_html_blocks(page)
    assert passed == _markdown(page)
    for edge in ("<div>a page that opens with a block</div>\n\ntext", "<p>only a block</p>", "<p>a</p>\n<p>b</p>\n"):
        assert _through_html_blocks(edge)[0] == _markdown(edge)
    assert anchors == {"verdict"}  # mkdocs' own scan sees the <a name> that stayed in the Markdown
    assert "<table>" not in markdown_saw and "<summary>" not in markdown_saw and "second of a run" not in markdown_saw
    assert "a tab" in markdown_saw and "indented: code" in markdown_saw and "in a fence" in markdown_saw


def test_a_stand_in_markdown_did_not_give_back_fails_the_build():
    from types import SimpleNamespace

    from pipeline.render import html_blocks

    page = SimpleNamespace(file=SimpleNamespace(src_uri="page.md"), present_anchor_ids=set())
    html_blocks.on_page_markdown("text\n\n<div>\n<p>x</p>\n</div>\n\n", page)
    with pytest.raises(ValueError, match="page.md: 1 HTML block"):
        html_blocks.on_page_content("<p>text</p>", page)


def test_a_chart_drawn_in_a_worker_process_equals_one_drawn_in_this_one(tmp_path):
    from pipeline.chart import Drawing

    series = [Series("published run", {"no_check": [2.0, 0.4], "interlock": [30.9]}),
              Series("this run", {"no_check": [0.2], "interlock": [0.2], "peer": []})]
    with Drawing() as drawing:
        drawing.settle("scenarios/x/settle", series)
        drawing.write(tmp_path / "a", tmp_path / "b")
    here = settle_charts(series)
    for root in ("a", "b"):
        for scheme in ("light", "dark"):
            assert (tmp_path / root / "scenarios" / "x" / f"settle-{scheme}.svg").read_text() == here[scheme]


@needs_reference
def test_the_build_is_byte_for_byte_what_mkdocs_and_the_theme_build_without_its_shortcuts(tmp_path, monkeypatch):
    """The HTML block hooks, the reused navigation items and the charts drawn beside mkdocs change no byte."""
    import shutil

    import yaml
    from mkdocs.utils.yaml import yaml_load

    import pipeline.build as build_module

    fast = build(REFERENCE_FILES, tmp_path / "fast")
    rendered = build_module.render(REFERENCE_FILES, tmp_path / "plain" / "docs")
    overrides = tmp_path / "overrides"
    shutil.copytree(REPO / "site" / "overrides", overrides)
    (overrides / "partials" / "nav.html").unlink()
    # its `!ENV` addresses read as mkdocs reads them
    config = yaml_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    del config["hooks"]
    config["theme"]["custom_dir"] = str(overrides)
    config["plugins"][1]["mkdocstrings"]["handlers"]["python"]["paths"] = [str(REPO)]
    plain_config = tmp_path / "mkdocs.yml"
    plain_config.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    monkeypatch.setattr(build_module, "CONFIG", plain_config)
    build_module._mkdocs(tmp_path / "plain" / "docs", tmp_path / "plain" / "site", rendered.nav,
                         build_module.source_date_epoch(rendered.scenarios))
    built, plain = _tree(fast), _tree(tmp_path / "plain" / "site")
    assert sorted(built) == sorted(plain)
    assert [name for name in built if built[name] != plain[name]] == []


def test_a_value_that_would_open_a_list_or_a_code_block_renders_as_its_own_text():
    for value in ("1986. MARK1 the first item", "2) second", "        eight spaces", "3."):
        rendered = _markdown(f"{inert(value)}\n")
        assert not re.search(r"<(ol|li|pre|code)\b", rendered), rendered
        assert html.unescape(re.sub(r"</?p>", "", rendered)).strip() == value.strip()
        assert _markdown(f"- {inert(value)}\n").count("<li>") == 1  # the value after a bullet opens no inner list
    assert str(inert("1.5 s")) == "1.5 s" and str(inert("a 1. b")) == "a 1. b"  # ordinary text stays readable


def test_a_hostile_number_or_indent_at_the_start_of_a_line_of_any_page_opens_no_block(tmp_path):
    """An exploration's hazard text and window, and a run's service role, each begin a line of a page."""
    folder = tmp_path / "results" / "reliability"
    folder.mkdir(parents=True)
    data = json.loads((REPO / "results" / "reliability" / "explore_ledger_pg_slow_service.json").read_text())
    del data["history"]  # not counted again: the page shows the file's own counts
    data["hazard"]["what"], data["window"] = "1986. XWHAT is no list", "2. XWINDOW is no list"
    (folder / "explore_ledger.json").write_text(json.dumps(data))
    data["hazard"].update(name="sigstop", what="        XCODE is no code")
    (folder / "explore_ledger_sigstop.json").write_text(json.dumps(data))
    run = json.loads((REPO / "results" / "scenarios" / "gcp_resource.json").read_text())
    run["provenance"]["services"] = {"1. ROLEX": {"real": False, "name": "a stand-in"}, **run["provenance"]["services"]}
    (tmp_path / "gcp_resource.json").write_text(json.dumps(run))
    site = build([tmp_path / "gcp_resource.json"], tmp_path / "out", results=tmp_path / "results")
    pages = [site / "reliability" / "ledger" / "index.html", site / "scenarios" / "gcp_resource" / "index.html"]
    raw = "".join(page.read_text() for page in pages)
    for marker in ("XWHAT", "XWINDOW", "XCODE", "ROLEX"):
        assert not re.search(rf"<ol>\s*<li>[^<]*{marker}|<code>[^<]*{marker}", raw), marker
    text = html.unescape(raw)
    assert "1986. XWHAT is no list" in text and "2. XWINDOW is no list" in text and "1. ROLEX: a local stand-in" in text
    assert "<p>1. ROLEX, object store, " in text  # the stand-ins note's body, which opens with the roles


def test_a_gate_journal_entry_with_no_kind_is_shown_with_its_cell_not_a_traceback(tmp_path):
    from pipeline.derive import derive

    data = json.loads((REPO / "results" / "scenarios" / "gcp_resource.json").read_text())
    cell = next(c for c in data["cells"] if c["system"] == "interlock")
    del cell["artifacts"]["journal.jsonl"][1]["kind"]
    path = tmp_path / "gcp_resource.json"
    path.write_text(json.dumps(data))
    render_site([derive(path)], {}, tmp_path / "docs")
    page = html.unescape((tmp_path / "docs" / "scenarios" / "gcp_resource" / "cells.md").read_text())
    kinds = [e.get("kind", "") for e in cell["artifacts"]["journal.jsonl"]]
    assert f"({', '.join(kinds)})</summary>" in page and "<tr><td>2</td> <td></td>" in page


BIG = "1" + "0" * 5000


@pytest.mark.parametrize("keys,order", [(["²", "10", "9"], ["²", "10", "9"]), ([BIG, "10", "9"], ["9", "10", BIG])],
                         ids=["a superscript digit, no count: kept in file order", "a count too long for int()"])
def test_a_nested_benchmark_key_that_int_cannot_read_is_laid_out_not_a_traceback(keys, order):
    figures = {key: float(n) for n, key in enumerate(keys)}
    bench = layout("odd", {"scaling": {"run": {"workers": figures}}}, "results/bench/odd.json")
    [table] = [t for t in bench.tables if t.title == "scaling"]
    assert table.head == ("scaling", *(f"workers {key}" for key in order))


def test_two_cells_whose_systems_fold_to_one_slug_get_an_anchor_each(tmp_path):
    from pipeline.derive import derive

    data = json.loads((REPO / "results" / "scenarios" / "gcp_resource.json").read_text())
    fault = data["cells"][0]["fault"]
    first, second = [c for c in data["cells"] if c["fault"] == fault][:2]
    first["system"], second["system"] = "no check", "No-Check"
    path = tmp_path / "gcp_resource.json"
    path.write_text(json.dumps(data))
    render_site([derive(path)], {}, tmp_path / "docs")
    folder = tmp_path / "docs" / "scenarios" / "gcp_resource"
    ids = re.findall(r"\{#([^}]+)\}", (folder / "cells.md").read_text())
    assert len(ids) == len(data["cells"]) == len(set(ids))
    linked = re.findall(r'href="cells/#([^"]+)"', (folder / "index.md").read_text())
    assert set(linked) == set(ids)


def test_a_bidirectional_or_invisible_character_shows_as_its_escape_on_a_page_and_in_the_raw_json(tmp_path):
    from pipeline.derive import derive

    shown = html.unescape(str(inert("ok\u202etxt.exe\u200b\u2066\ufeff\u061c")))
    assert shown == "ok\\u202etxt.exe\\u200b\\u2066\\ufeff\\u061c"
    data = json.loads((REPO / "results" / "scenarios" / "gcp_resource.json").read_text())
    data["cells"][0]["decision"]["reason"] = "approved\u202e by nobody"
    path = tmp_path / "gcp_resource.json"
    path.write_text(json.dumps(data))
    render_site([derive(path)], {}, tmp_path / "docs")
    folder = tmp_path / "docs" / "scenarios" / "gcp_resource"
    written = [(folder / "cells.md").read_text(), *(p.read_text() for p in (folder / "cells").glob("*.json"))]
    assert not [text for text in written if "\u202e" in text]
    assert "approved&#92;u202e by nobody" in written[0]
    [raw] = (folder / "cells").glob("000-*.json")
    assert json.loads(raw.read_text()) == data["cells"][0] and "approved\\u202e by nobody" in raw.read_text()
