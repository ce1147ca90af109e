"""Helpers for the site tests: build a site once per session, serve it on loopback, drive headless Chromium."""

from __future__ import annotations

import functools
import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from pipeline.build import build, result_files

REPO = Path(__file__).resolve().parents[1]


def _reference() -> Path:
    """The published runs' artifacts: the repository's own copy, else the nearest `shared/reference` beside a
    parent folder (CI has it at ../shared, a worktree a level further up)."""
    own = REPO / "results" / "published"
    if (own / "gcp_resource.json").is_file():
        return own
    for parent in REPO.parents:
        if (parent / "shared" / "reference").is_dir():
            return parent / "shared" / "reference"
    return REPO.parent / "shared" / "reference"


REFERENCE = _reference()
REFERENCE_FILES = [REFERENCE / "gcp_resource.json", REFERENCE / "calendar.json"]
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@functools.cache
def reference_site() -> Path:
    """The site built from the two published result files, once per test process."""
    out = Path(tempfile.mkdtemp(prefix="interlock-site-"))
    return build(REFERENCE_FILES, out)


SITE_URL = "https://results.interlock.test/"  # a publisher's addresses, for the builds that are given them
REPO_URL = "https://code.interlock.test/interlock"


@contextmanager
def _addressed() -> Iterator[None]:
    """The environment of a publisher's build: the site's address and the repository's set, as mkdocs.yml reads
    them."""
    before = {name: os.environ.get(name) for name in ("INTERLOCK_SITE_URL", "INTERLOCK_REPO_URL")}
    os.environ.update(INTERLOCK_SITE_URL=SITE_URL, INTERLOCK_REPO_URL=REPO_URL)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


@functools.cache
def addressed_site() -> Path:
    """The site built from the two published result files by a publisher who names both addresses."""
    out = Path(tempfile.mkdtemp(prefix="interlock-addressed-site-"))
    with _addressed():
        return build(REFERENCE_FILES, out)


@functools.cache
def project_site() -> Path:
    """The site `python -m pipeline build` publishes: the committed result files, built once per test process."""
    out = Path(tempfile.mkdtemp(prefix="interlock-project-site-"))
    return build(result_files(), out)


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        pass


@contextmanager
def serve(folder: Path):
    """Serve a built site from a thread on 127.0.0.1; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def pages(site: Path) -> list[str]:
    """Every HTML page of a built site as a URL path (directory URLs), in a stable order."""
    paths = []
    for page in sorted(site.rglob("*.html")):
        rel = page.relative_to(site).as_posix()
        paths.append(rel[: -len("index.html")] if rel.endswith("index.html") else rel)
    return paths
