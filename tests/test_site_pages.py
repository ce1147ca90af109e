"""What the published pages say, read as a reader would: commands that run, rules that name every outcome the
tables hold, counts that add up, and no section that describes data its file does not have."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from pipeline.build import build
from pipeline.compare import compare_published
from pipeline.outcomes import CANNOT_SAY, LANDED, NOT_LANDED
from site_support import REPO, project_site

SCENARIOS = REPO / "results" / "scenarios"


def _text(page: Path) -> str:
    """A built page as plain text: tags dropped (a <wbr> is not a word break), entities read back."""
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8"))))


def _section(text: str, title: str, after: str | None = None) -> str:
    """The text from a heading (its title then the permalink mark) to the next heading's mark."""
    start = text.index(title + "¶")
    end = text.find("¶", start + len(title) + 1)
    section = text[start:end if end > 0 else len(text)]
    return section if after is None else section[section.index(after):]


def _scenario_pages() -> list[Path]:
    site = project_site()
    return sorted(p for p in (site / "scenarios").glob("*/index.html"))


def _module_exists(module: str) -> bool:
    path = REPO.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__main__.py").is_file()


def test_every_re_run_command_on_a_scenario_page_names_a_module_that_exists(tmp_path):
    published_only = sorted((build([], tmp_path / "out") / "scenarios").glob("*/index.html"))
    pages = _scenario_pages() + published_only
    assert pages and published_only
    for page in pages:
        rerun = _text(page)[_text(page).index("Re-run¶"):]
        modules = re.findall(r"python3? -m ([\w.]+)", rerun)
        assert modules, page
        assert [m for m in modules if not _module_exists(m)] == [], page


def test_the_answer_rule_names_every_outcome_the_judge_reads_with_what_it_claims():
    for page in _scenario_pages():
        rule = _section(_text(page), "How each column is scored", "answer:")
        rule = rule[:rule.index("proof:")]
        for word in LANDED | NOT_LANDED | CANNOT_SAY:
            assert re.search(rf"(?<![\w:]){re.escape(word)}(?![\w])", rule), (page, word)
        cannot_say = rule[rule.index("not landed;"):]
        assert all(word in cannot_say for word in CANNOT_SAY)


def test_the_raced_dispatch_section_describes_only_the_variants_and_columns_its_file_holds():
    page = project_site() / "scenarios" / "calendar" / "index.html"
    if not (SCENARIOS / "calendar.json").is_file():
        pytest.skip("no committed calendar run")
    raw = html.unescape(page.read_text(encoding="utf-8"))
    table = raw[raw.index('<table class="interlock-raced'):]
    table = table[:table.index("</table>")]
    variants = re.findall(r"<code>([^<]+)</code>", table)
    section = _section(_text(page), "Raced dispatch")
    if "gate+send_recheck" not in variants:
        assert "gate+send_recheck" not in section and "the gate as shipped" not in section
    # a column only where some variant has a figure for it: a forced trial, or a slipped trial re-read after it
    forced = re.findall(r'data-label="forced trial">(.*?)</td>', table)
    if forced:
        assert any(cell != "not run" for cell in forced)
    else:
        assert not re.search(r"(?<!un)forced trial", section)
    assert "0/0 of the slipped" not in section


def test_the_published_comparison_counts_cells_only_in_this_run_apart_from_values_that_differ():
    from pipeline.derive import derive
    from pipeline.published import published_runs

    for page in _scenario_pages():
        name = page.parent.name
        source = SCENARIOS / f"{name}.json"
        comparison = page.parent / "published" / "index.html"
        if not source.is_file() or not comparison.is_file():
            continue
        differences = compare_published(derive(source), published_runs())
        values = sum(d.kind == "value" and d.column != "cell" for d in differences)
        ours_only = sum(d.column == "cell" and d.ours == "present" for d in differences)
        text = _text(comparison)
        assert f"{values} value(s) differ in the cells both runs have" in text
        assert f"{ours_only} cell(s) are in this run only" in text
        assert ", cell (value differs)" not in text


def test_the_limits_name_each_service_by_its_role_in_words():
    for page in _scenario_pages():
        limits = _section(_text(page), "Limits")
        assert not re.search(r"\b[a-z]+_[a-z_]+ (was|were)\b", limits), limits[:300]
    calendar = _section(_text(project_site() / "scenarios" / "calendar" / "index.html"), "Limits")
    assert "Idempotency store: the real service (redis-server" in calendar


def test_an_explicit_null_check_reads_as_a_send_made_with_no_check_on_the_cells_page():
    for cells in sorted(project_site().glob("scenarios/*/cells/index.html")):
        raw = html.unescape(cells.read_text(encoding="utf-8"))
        rows = re.findall(r"<th>checks</th> <td>(.*?)</td>", raw, re.S)
        assert rows, cells
        assert not [row for row in rows if re.search(r"(^|<br ?/?>)null($|<br)", row)], cells


def test_the_calendar_want_column_names_events_as_its_cells_do():
    raw = (project_site() / "scenarios" / "calendar" / "index.html").read_text(encoding="utf-8")
    wants = re.findall(r'data-label="want">([^<]+)</td>', raw)
    assert wants and all("agent event" in html.unescape(w) for w in wants), wants


def test_each_system_of_a_results_table_is_described_under_the_systems():
    for page in _scenario_pages():
        raw = html.unescape(page.read_text(encoding="utf-8"))
        table = raw[raw.index('<table class="interlock-results'):]
        systems = re.findall(r"<th>([\w]+)</th>", table[:table.index("</thead>")])[2:]
        described = _section(_text(page), "The systems")
        assert systems
        assert [s for s in systems if not re.search(rf"(?<!\w){s}(?!\w)", described)] == [], page


def test_a_runs_provenance_line_names_each_service_after_its_role():
    home = _text(project_site() / "index.html")
    if not (SCENARIOS / "calendar.json").is_file():
        pytest.skip("no committed calendar run")
    assert "calendar: interlock Calendar v3 stand-in (stand-in); model: offline-scripted" in home
    assert "idempotency store: redis-server" in home


def test_the_reliability_overview_has_a_row_per_hazard_file_linked_to_its_section_on_its_scenarios_page():
    folder = project_site() / "reliability"
    raw = html.unescape((folder / "index.html").read_text(encoding="utf-8"))
    files = sorted((REPO / "results" / "reliability").glob("explore_*.json"))
    if not files:
        pytest.skip("no committed exploration")
    tables = re.findall(r'<table class="interlock-explore-overview[^>]*>(.*?)</table>', raw, re.S)
    assert tables
    rows = 0
    for table in tables:
        head = re.findall(r"<th>([^<]+)</th>", table[:table.index("</thead>")])
        assert head[0] == "hazard" and "interlock" in head[1:] and all(" journal)" not in h for h in head), head
        linked = re.findall(r'<tr><th><a href="([a-z0-9_-]+)/#([a-z0-9_]+)">[^<]+ \((?:jsonl|postgresql) journal\)</a>'
                            r'</th>', table)
        assert [(page, anchor) for page, anchor in linked
                if f'id="{anchor}"' not in (folder / page / "index.html").read_text(encoding="utf-8")] == []
        rows += len(linked)
    assert rows == len(files)


def test_the_calendar_limits_time_settling_between_the_points_the_pipeline_measures():
    from pipeline.derive import derive

    source = SCENARIOS / "calendar.json"
    if not source.is_file():
        pytest.skip("no committed calendar run")
    bases = {cell.seconds_basis for cell in derive(source).cells}
    limits = _section(_text(project_site() / "scenarios" / "calendar" / "index.html"), "Limits")
    assert any("to the restart worker's exit" in basis for basis in bases)
    assert "restart worker's exit" in limits and "recorded its result" not in limits


def test_the_published_comparison_numbers_its_differences_down_the_page_in_one_style():
    pages = [page.parent / "published" / "index.html" for page in _scenario_pages()]
    assert [page for page in pages if page.is_file()]
    for page in filter(Path.is_file, pages):
        table = page.read_text(encoding="utf-8").split('<ol class="interlock-differences">')[0]
        links = re.findall(r'<a href="#difference-(\d+)">([^<]*)</a>', table)
        assert links, page
        numbers = list(dict.fromkeys(int(n) for n, _ in links))
        assert numbers == list(range(1, len(numbers) + 1)), page
        assert [text for n, text in links
                if not re.fullmatch(rf"(value differs|scored differently|only in (this|the published) run) \({n}\)",
                                    text)] == []
