"""The built site in real headless Chromium: it loads cleanly, stays on its own host, and its controls work."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from pipeline.build import build
from site_support import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, REFERENCE, REFERENCE_FILES, pages, reference_site, serve

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


@pytest.fixture(scope="module")
def site():
    return reference_site()


@pytest.fixture
def visit(browser, site):
    """A fresh context on the served reference site: (page, base URL, recorder)."""
    with serve(site) as base:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        recorder = Recorder(context)
        yield context.new_page(), base, recorder
        context.close()


def test_every_page_loads_without_console_errors_or_requests_to_other_hosts(visit, site):
    page, base, recorder = visit
    seen = pages(site)
    assert len(seen) >= 8
    for path in seen:
        response = page.goto(base + path, wait_until="networkidle")
        assert response is not None and response.status == 200, path
    assert recorder.errors == []
    assert recorder.foreign(base) == []
    assert any(url.endswith(".svg") for url in recorder.requests)
    ARTIFACTS.mkdir(exist_ok=True)
    page.goto(base, wait_until="networkidle")
    page.screenshot(path=str(ARTIFACTS / "site-home.png"), full_page=True)
    page.goto(base + "scenarios/gcp_resource/", wait_until="networkidle")
    page.screenshot(path=str(ARTIFACTS / "site-scenario-gcp_resource.png"), full_page=True)


def test_every_link_between_pages_resolves(visit, site):
    page, base, _ = visit
    broken = []
    for path in pages(site):
        page.goto(base + path)
        hrefs = page.eval_on_selector_all("article a[href]", "els => els.map(e => e.href)")
        for href in hrefs:
            parts = urlsplit(href)
            if parts.netloc != urlsplit(base).netloc:
                continue
            target = site / parts.path.lstrip("/")
            if not (target.is_file() or (target / "index.html").is_file()):
                broken.append(f"{path} -> {href}")
    assert broken == []


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


def test_dark_toggle_switches_scheme_and_chart(visit):
    page, base, _ = visit
    page.goto(base + "scenarios/gcp_resource/", wait_until="networkidle")
    body = page.locator("body")
    assert body.get_attribute("data-md-color-scheme") == "default"
    assert page.locator("img.interlock-chart--light").is_visible()
    assert not page.locator("img.interlock-chart--dark").is_visible()
    page.click("label[for='__palette_1']")
    assert body.get_attribute("data-md-color-scheme") == "slate"
    assert page.locator("img.interlock-chart--dark").is_visible()
    assert not page.locator("img.interlock-chart--light").is_visible()
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background != "rgb(255, 255, 255)"


def test_wide_tables_scroll_inside_their_box(browser, site):
    with serve(site) as base:
        context = browser.new_context(viewport={"width": 700, "height": 900})
        page = context.new_page()
        page.goto(base + "scenarios/calendar/", wait_until="networkidle")
        box = page.locator(".interlock-scroll:has(table.interlock-results)")
        widths = box.evaluate("el => [el.scrollWidth, el.clientWidth, getComputedStyle(el).overflowX]")
        page_overflow = page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth")
        context.close()
    scroll_width, client_width, overflow = widths
    assert scroll_width > client_width
    assert overflow == "auto"
    assert page_overflow <= 0


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
