"""No credential, token or key ever lands in a committed artifact, a log or a built page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipeline.build import build

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results"
SECRET_SHAPES = {
    "Anthropic API key": re.compile(rb"sk-ant-[A-Za-z0-9_-]{16,}"),
    "Google API key": re.compile(rb"AIza[0-9A-Za-z_-]{35}"),
    "Google OAuth access token": re.compile(rb"ya29\.[0-9A-Za-z_-]{20,}"),
    "private key (PEM)": re.compile(rb"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    "service-account key field": re.compile(rb'"private_key(_id)?"\s*:\s*"[^"]{8,}'),
    "password in a database URL": re.compile(rb"postgres(?:ql)?://[^/\s:@\"']+:[^@\s\"']+@"),
    "GitHub token": re.compile(rb"gh[pousr]_[A-Za-z0-9]{30,}"),
    "AWS access key id": re.compile(rb"AKIA[0-9A-Z]{16}"),
}


def leaks(folder: Path) -> list[str]:
    """Every file under `folder` that holds something shaped like a credential, with what it looked like."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [f"{path.relative_to(folder)}: {name}" for name, shape in SECRET_SHAPES.items() if shape.search(data)]
    return found


def test_the_scan_finds_a_planted_key_of_every_shape(tmp_path):
    planted = {
        "Anthropic API key": "sk-ant-api03-" + "a" * 40,
        "Google API key": "AIza" + "b" * 35,
        "Google OAuth access token": "ya29." + "c" * 40,
        "private key (PEM)": "-----BEGIN PRIVATE KEY-----",
        "service-account key field": '"private_key": "-----not really-----"',
        "password in a database URL": "postgresql://agent:hunter22@127.0.0.1:5432/interlock",
        "GitHub token": "ghp_" + "d" * 36,
        "AWS access key id": "AKIA" + "E" * 16,
    }
    for name, text in planted.items():
        (tmp_path / f"{len(list(tmp_path.iterdir()))}.json").write_text(f'{{"worker_log": "{text}"}}')
    assert {line.split(": ", 1)[1] for line in leaks(tmp_path)} == set(planted)


def test_committed_results_hold_no_credential():
    assert RESULTS.is_dir()
    assert leaks(RESULTS) == []


def test_the_site_built_from_the_committed_results_holds_no_credential(tmp_path):
    files = sorted((RESULTS / "scenarios").glob("*.json"))
    if not files:
        pytest.skip("no result file is committed")
    site = build(files, tmp_path / "site")
    assert leaks(site) == []
