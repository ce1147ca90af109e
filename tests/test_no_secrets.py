"""No credential, token or key ever lands in a committed artifact, a log or a built page."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from pipeline.build import build
from pipeline.credentials import SHAPES
from pipeline.load import BadInput, read

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results"
SECRET_SHAPES = {name: re.compile(shape.pattern.encode()) for name, shape in SHAPES.items()}


def leaks(folder: Path) -> list[str]:
    """Every file under `folder` that holds something shaped like a credential, with what it looked like: in its
    bytes, or once its HTML character references (`&#45;` for a dash) are read back."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        read_back = html.unescape(data.decode("utf-8", "replace")).encode()
        found += [f"{path.relative_to(folder)}: {name}" for name, shape in SECRET_SHAPES.items()
                  if shape.search(data) or shape.search(read_back)]
    return found


def test_the_scan_finds_a_planted_key_of_every_shape(tmp_path):
    planted = {
        "Anthropic API key": "sk-ant-api03-" + "a" * 40,
        "Google API key": "AIza" + "b" * 35,
        "Google OAuth access token": "ya29." + "c" * 40,
        "private key (PEM)": "-----BEGIN PRIVATE KEY-----",
        "service-account key field": '"private_key": "-----not really-----"',
        "password in a database URL": "postgresql://agent:hunter22@127.0.0.1:5432/interlock",
        "password in a connection string": "host=127.0.0.1 password=hunter22",
        "OAuth client secret or refresh token field": '"refresh_token": "not-really-a-token"',
        "Google OAuth client secret": "GOCSPX-" + "f" * 28,
        "Google OAuth refresh token": "1//0" + "g" * 60,
        "GitHub token": "ghp_" + "d" * 36,
        "AWS access key id": "AKIA" + "E" * 16,
    }
    for name, text in planted.items():
        (tmp_path / f"{len(list(tmp_path.iterdir()))}.json").write_text(f'{{"worker_log": "{text}"}}')
    assert {line.split(": ", 1)[1] for line in leaks(tmp_path)} == set(planted)


def test_the_scan_finds_a_key_a_page_wrote_with_character_references(tmp_path):
    (tmp_path / "index.html").write_text("<td>sk&#45;ant&#45;api03&#45;" + "Q" * 40 + "</td>")
    assert leaks(tmp_path) == ["index.html: Anthropic API key"]


def test_committed_results_hold_no_credential():
    assert RESULTS.is_dir()
    assert leaks(RESULTS) == []


def test_the_site_built_from_the_committed_results_holds_no_credential(tmp_path):
    files = sorted((RESULTS / "scenarios").glob("*.json"))
    if not files:
        pytest.skip("no result file is committed")
    site = build(files, tmp_path / "site")
    assert leaks(site) == []


@pytest.mark.parametrize("planted, at", [("sk-ant-api03-" + "a" * 40, "cells[0].reason"),
                                         ("postgresql://agent:hunter22@127.0.0.1:5432/x", "cells[0].reason"),
                                         ("-----BEGIN PRIVATE KEY-----", "cells[0].private_key")])
def test_a_result_file_holding_a_credential_is_refused_naming_where(tmp_path, planted, at):
    key = "private_key" if "PRIVATE" in planted else "reason"
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"scenario": "calendar", "cells": [{"system": "interlock", key: planted}]}))
    with pytest.raises(BadInput) as refused:
        read(path)
    assert refused.value.path == at and "looks like a" in refused.value.problem
    assert planted not in str(refused.value)


@pytest.mark.parametrize("written", [
    '"sk\\u002dant-api03-' + "Q" * 40 + '"',
    '"postgresql:\\/\\/agent:hunter22@127.0.0.1\\/x"',
    '"POSTGRESQL://agent:hunter22@127.0.0.1/x"',
    '"postgresql://agent:hun\\"ter22@127.0.0.1/x"',
    '"\\u002d----BEGIN PRIVATE KEY-----"'], ids=["escaped dash", "escaped slashes", "upper case", "quote", "pem"])
def test_a_credential_written_with_json_escapes_or_odd_case_is_refused_too(tmp_path, written):
    path = tmp_path / "run.json"
    path.write_text('{"scenario": "calendar", "cells": [{"system": "interlock", "reason": ' + written + '}]}')
    with pytest.raises(BadInput) as refused:
        read(path)
    assert refused.value.path == "cells[0].reason" and "looks like a" in refused.value.problem
