"""The built site in real headless Chromium: it loads cleanly, stays on its own host, its controls work, the
verdict fits the first screen on a laptop and on a phone, in light and dark, and nothing scrolls sideways."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from pipeline.build import build, result_files
from pipeline.derive import derive
from pipeline.render.links import RunLinks, slug
from site_support import (CHROMIUM, CHROMIUM_ARGS, REFERENCE, REFERENCE_FILES, REPO, pages,
                          project_site, serve)

pytestmark = [
    pytest.mark.skipif(not REFERENCE.is_dir(), reason="../shared/reference is not present"),
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium is not installed"),
]
playwright = pytest.importorskip("playwright.sync_api")

HOSTILE = ('<script>window.__pwned = 1</script> **bold** _em_ [click](http://evil.invalid/x) '
           '<img src="http://evil.invalid/i.png" onerror="window.__pwned = 2"> | pipe `code` {: .x} # hash')


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class Recorder:
    """Every request and console error of one browser context."""

    def __init__(self, context):
        self.requests: list[str] = []
        self.errors: list[str] = []
        context.on("request", lambda request: self.requests.append(request.url))
        context.on("console", lambda msg: msg.type == "error" and self.errors.append(msg.text))
        context.on("weberror", lambda error: self.errors.append(str(error.error)))

    def foreign(self, base: str) -> list[str]:
        own = urlsplit(base).netloc
        return [url for url in self.requests if urlsplit(url).netloc != own and not url.startswith(("data:", "blob:"))]


SIZES = {"laptop": (1400, 900), "phone": (390, 844)}
SCHEMES = ("light", "dark")
# An absolute filesystem path in page text: a slash that starts a path of two or more segments, not inside a URL or
# after a word ("fault/system", "1/3" and "https://host/x" do not count).
ABSOLUTE_PATH = re.compile(r"(?<![\w:/.~$-])/(?:[\w.-]+/)+[\w.-]*")
_MEASURE = """() => {
  const v = document.querySelector('#verdict');
  const box = v && v.getBoundingClientRect();
  return {verdict: box && [box.top, box.bottom, box.left, box.right], width: document.documentElement.scrollWidth,
          scheme: document.body.getAttribute('data-md-color-scheme'), text: document.body.innerText,
          links: Array.from(document.querySelectorAll('article a[href]'), a => a.href)};
}"""


@pytest.fixture(scope="module")
def site():
    """The site the project publishes: the committed results under results/scenarios/."""
    return project_site()


def _verdict_pages(site: Path) -> list[str]:
    """Home and every scenario page (a run's results page, or a published-only page)."""
    folders = sorted(p.parent for p in (site / "scenarios").glob("*/index.html"))
    return [""] + [f"{folder.relative_to(site).as_posix()}/" for folder in folders]


@dataclass
class Seen:
    """One page as one browser context saw it."""

    status: int
    width: int
    scheme: str
    verdict: list[float] | None
    text: str
    links: list[str]


@dataclass
class Crawl:
    """Every page of the site at one size and scheme (the others only where the scheme could matter), once."""

    base: str
    pages: dict[tuple[str, str, str], Seen]  # (size, scheme, path)
    requests: list[str]
    errors: list[str]


@pytest.fixture(scope="module")
def crawl(browser, site):
    """Each page once at 1400x900 and at 390x844 in light; home and the scenario pages in dark too. Screenshots
    of home and the first scenario page at both widths and schemes are kept under build/screenshots/."""
    shots = REPO / "build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    verdict_pages, everything = _verdict_pages(site), pages(site)
    seen: dict[tuple[str, str, str], Seen] = {}
    requests: list[str] = []
    errors: list[str] = []
    with serve(site) as base:
        for size, (width, height) in SIZES.items():
            for scheme in SCHEMES:
                context = browser.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
                recorder = Recorder(context)
                page = context.new_page()
                chosen = everything if scheme == "light" else verdict_pages
                for path in chosen:
                    response = page.goto(base + path, wait_until="load")
                    got = page.evaluate(_MEASURE)
                    seen[(size, scheme, path)] = Seen(response.status if response else 0, got["width"],
                                                      got["scheme"], got["verdict"], got["text"], got["links"])
                    if path in verdict_pages[:2]:
                        name = "home" if not path else "scenario-" + path.strip("/").split("/")[-1]
                        page.screenshot(path=str(shots / f"{name}-{width}-{scheme}.png"))
                context.close()
                requests += recorder.requests
                errors += recorder.errors
        yield Crawl(base, seen, requests, errors)


@pytest.fixture
def visit(browser, site):
    """A fresh context on the served site: (page, base URL, recorder)."""
    with serve(site) as base:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        recorder = Recorder(context)
        yield context.new_page(), base, recorder
        context.close()


def test_every_page_loads_without_console_errors_or_requests_to_other_hosts(crawl, site):
    assert len(pages(site)) >= 8
    assert [key for key, page in crawl.pages.items() if page.status != 200] == []
    assert crawl.errors == []
    own = urlsplit(crawl.base).netloc
    assert [u for u in crawl.requests if urlsplit(u).netloc != own and not u.startswith(("data:", "blob:"))] == []
    assert any(url.endswith(".svg") for url in crawl.requests)


def test_every_link_between_pages_resolves(crawl, site):
    own = urlsplit(crawl.base).netloc
    broken = []
    for (size, scheme, path), page in crawl.pages.items():
        if (size, scheme) != ("laptop", "light"):
            continue
        for href in page.links:
            parts = urlsplit(href)
            target = site / parts.path.lstrip("/")
            if parts.netloc == own and not (target.is_file() or (target / "index.html").is_file()):
                broken.append(f"{path} -> {href}")
    assert broken == []


def test_the_verdict_is_wholly_inside_the_first_screen_on_a_laptop_and_a_phone_in_light_and_dark(crawl, site):
    misfits = []
    for path in _verdict_pages(site):
        for size, (width, height) in SIZES.items():
            for scheme in SCHEMES:
                page = crawl.pages[(size, scheme, path)]
                assert page.scheme == ("default" if scheme == "light" else "slate"), (path, scheme)
                box = page.verdict
                if box is None or box[0] < 0 or box[1] > height or box[2] < 0 or box[3] > width:
                    misfits.append(f"{path or 'home'} at {size} {scheme}: {box}")
    assert misfits == []


def test_no_page_is_wider_than_its_viewport(crawl):
    wide = [f"{path or 'home'} at {size} {scheme}: {page.width} px" for (size, scheme, path), page in
            crawl.pages.items() if page.width > SIZES[size][0]]
    assert wide == []


def test_no_page_text_holds_an_absolute_filesystem_path(crawl):
    found = [f"{path}: {match}" for (size, scheme, path), page in crawl.pages.items()
             if (size, scheme) == ("laptop", "light") for match in ABSOLUTE_PATH.findall(page.text)]
    assert found == []


def test_search_for_stale_premise_finds_the_cells_whose_outcome_contains_it(visit):
    page, base, _ = visit
    wanted = set()
    for source in result_files():
        run = derive(source)
        links = RunLinks.of(f"scenarios/{slug(source.stem)}", run.cells)
        wanted |= {f"{links.folder}/cells/#{links.anchor(c)}" for c in run.cells if "stale_premise" in c.outcome}
    if not wanted:
        pytest.skip("no committed cell has a stale_premise outcome")
    page.goto(base, wait_until="networkidle")
    page.focus(".md-search__input")
    page.keyboard.type("stale_premise")
    page.locator(".md-search-result__item").first.wait_for(timeout=10000)
    found = page.eval_on_selector_all(".md-search-result__link", "els => els.map(e => [e.href, e.textContent])")
    snippets = {}
    for href, text in found:
        parts = urlsplit(href)
        snippets[f"{parts.path.lstrip('/')}#{parts.fragment}"] = text
    assert wanted <= set(snippets), sorted(wanted - set(snippets))
    for href in wanted:  # each cell's snippet opens with its outcome line, not with boilerplate
        assert "stale_premise" in snippets[href].split("Raw JSON")[0], snippets[href]


def test_search_finds_a_cells_outcome(visit):
    page, base, recorder = visit
    page.goto(base, wait_until="networkidle")
    page.focus(".md-search__input")
    page.keyboard.type("PRECONDITION_FAILED")
    results = page.locator(".md-search-result__item a")
    results.first.wait_for(timeout=10000)
    hrefs = results.evaluate_all("els => els.map(e => e.getAttribute('href'))")
    assert any("gcp_resource" in href for href in hrefs)
    assert recorder.foreign(base) == []


def test_dark_toggle_switches_scheme_and_chart(visit, site):
    page, base, _ = visit
    scenario = _verdict_pages(site)[1]
    page.goto(base + scenario, wait_until="networkidle")
    body = page.locator("body")
    assert body.get_attribute("data-md-color-scheme") == "default"
    assert page.locator("img.interlock-chart--light").first.is_visible()
    assert not page.locator("img.interlock-chart--dark").first.is_visible()
    page.click("label[for='__palette_1']")
    assert body.get_attribute("data-md-color-scheme") == "slate"
    assert page.locator("img.interlock-chart--dark").first.is_visible()
    assert not page.locator("img.interlock-chart--light").first.is_visible()
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background != "rgb(255, 255, 255)"





def _hostile_result(tmp_path: Path) -> list[Path]:
    gcp = json.loads(REFERENCE_FILES[0].read_text())
    gcp["cells"][0]["decision"]["reason"] = HOSTILE
    calendar = json.loads(REFERENCE_FILES[1].read_text())
    calendar["cells"][0]["decision"]["summary"] = HOSTILE
    paths = [tmp_path / "gcp_resource.json", tmp_path / "calendar.json"]
    paths[0].write_text(json.dumps(gcp))
    paths[1].write_text(json.dumps(calendar))
    return paths


def test_a_hostile_model_reason_renders_as_inert_text(browser, tmp_path):
    site = build(_hostile_result(tmp_path), tmp_path / "build")
    with serve(site) as base:
        context = browser.new_context()
        recorder = Recorder(context)
        page = context.new_page()
        for path in ("scenarios/gcp_resource/", "scenarios/gcp_resource/cells/", "scenarios/calendar/cells/"):
            page.goto(base + path, wait_until="networkidle")
            assert page.evaluate("window.__pwned") is None
            text = page.locator("article").inner_text()
            assert "<script>window.__pwned = 1</script> **bold** _em_ [click](http://evil.invalid/x)" in text
            assert page.locator("article a[href*='evil.invalid']").count() == 0
            assert page.locator("article img[src*='evil.invalid']").count() == 0
            assert page.locator("article strong", has_text="bold").count() == 0
            assert page.locator("article em", has_text="em").count() == 0
        context.close()
    assert recorder.errors == []
    assert recorder.foreign(base) == []


def test_a_hostile_scenario_name_in_an_exploration_is_no_element_on_any_page(browser, tmp_path):
    results = tmp_path / "results"
    (results / "reliability").mkdir(parents=True)
    explored = json.loads((REPO / "results" / "reliability" / "explore_ledger.json").read_text())
    explored["scenario"] = "ledger&lt;/title&gt;<img src=x onerror=\"window.__pwned = 3\">"
    explored.pop("history")  # not counted again: the page still names the scenario from the file
    (results / "reliability" / "explore_ledger.json").write_text(json.dumps(explored))
    site = build(REFERENCE_FILES, tmp_path / "build", results)
    with serve(site) as base:
        context = browser.new_context()
        page = context.new_page()
        for path in ("", "reliability/", f"reliability/{slug(explored['scenario'])}/"):
            page.goto(base + path, wait_until="networkidle")
            assert page.evaluate("window.__pwned") is None, path
            assert page.locator("img[src='x']").count() == 0, path
        context.close()


# Each outcome code of the results tables as the lines the browser laid it out in, one string per line.
_OUTCOME_LINES = """() => Array.from(document.querySelectorAll('.interlock-results .interlock-outcome'), span => {
  const lines = [];
  const walker = document.createTreeWalker(span, NodeFilter.SHOW_TEXT);
  let node, top = null;
  while ((node = walker.nextNode())) {
    for (let i = 0; i < node.length; i++) {
      const range = document.createRange();
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      const rect = range.getClientRects()[0];
      if (!rect) continue;
      if (top === null || Math.abs(rect.top - top) > 2) { lines.push(''); top = rect.top; }
      lines[lines.length - 1] += node.data[i];
    }
  }
  return lines;
})"""


def test_an_outcome_code_in_a_results_table_breaks_only_between_its_words(visit, site):
    page, base, _ = visit
    paths = [f"{p.parent.relative_to(site).as_posix()}/" for p in sorted((site / "scenarios").glob("*/index.html"))]
    assert paths
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        for path in paths:
            page.goto(base + path, wait_until="load")
            laid_out = page.evaluate(_OUTCOME_LINES)
            assert laid_out, path
            split = [lines for lines in laid_out if any(not line.endswith(("_", ":", ", ")) for line in lines[:-1])]
            assert split == [], (width, path, split[:3])


_TARGET_CELLS = """label => [...document.querySelectorAll(`table.interlock-targets td[data-label="${label}"]`)].map(
    cell => [cell.textContent.trim(), getComputedStyle(cell).display])"""


@pytest.mark.parametrize("label", ["each round", "nothing shared"])
def test_a_target_card_on_a_phone_leaves_out_a_line_only_where_its_target_has_nothing_for_it(visit, label):
    page, base, _ = visit
    shown = {}
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(base + "methodology/", wait_until="load")
        shown[width] = page.evaluate(_TARGET_CELLS, label)
    assert {text != "" for text, _ in shown[390]} == {True, False}  # the committed targets have both kinds
    assert all((display == "none") == (text == "") for text, display in shown[390])
    assert all(display == "table-cell" for _, display in shown[1280])


_CUT_TOC_ENTRIES = """() => [...document.querySelectorAll('.md-nav--secondary .md-ellipsis')]
  .filter(entry => entry.getClientRects().length && entry.scrollWidth > entry.clientWidth)
  .map(entry => entry.textContent.trim())"""


def test_no_table_of_contents_entry_is_cut_short_on_a_laptop(visit, site):
    page, base, _ = visit
    page.set_viewport_size({"width": 1400, "height": 900})
    paths = [f"{p.parent.relative_to(site).as_posix()}/" for p in sorted(site.glob("**/cells/index.html"))]
    assert paths
    for path in paths:
        page.goto(base + path, wait_until="load")
        assert page.evaluate(_CUT_TOC_ENTRIES) == [], path
