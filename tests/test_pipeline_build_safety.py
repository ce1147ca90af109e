"""A build that fails or meets odd input loses nothing: the previous site stays, no page takes another's place, a
folder the pipeline did not make is never replaced, any name shows as text on the page and on the terminal, and a
changed published file is refused."""

from __future__ import annotations

import html
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pipeline.build as build_module
import pipeline.published as published_module
from pipeline.build import build
from pipeline.chart import Drawing, Series, settle_charts
from pipeline.load import BadInput
from pipeline.digests import SHA256
from pipeline.published import published_files, published_runs
from pipeline.render import render_site
from site_support import REPO

GCP = REPO / "results" / "scenarios" / "gcp_resource.json"
MATH = "nc<b>$\\frac{x}{$</b>"
HOSTILE_NAME = "evil\n```\n<img src=x onerror=alert(9)>\n\n```\n.json"


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _renamed(system: str) -> dict:
    """The committed gcp_resource run with its first cell's system renamed."""
    data = json.loads(GCP.read_text(encoding="utf-8"))
    data["cells"][0]["system"] = system
    return data


@pytest.fixture(scope="module")
def odd_site(tmp_path_factory) -> Path:
    """One site built from a run named like the published calendar page (a `$` in a system name) and a run whose
    file name holds a newline, a code fence and an <img> tag."""
    folder = tmp_path_factory.mktemp("odd")
    collide = folder / "published-calendar.json"
    collide.write_text(json.dumps(_renamed(MATH)), encoding="utf-8")
    hostile = folder / HOSTILE_NAME
    shutil.copy(GCP, hostile)
    return build([collide, hostile], folder / "out")


def test_a_dollar_in_a_system_name_is_drawn_as_text_not_mathtext():
    charts = settle_charts([Series("this run", {MATH: [1.0, 2.0], "no_check": [0.5]})])
    assert sorted(charts) == ["dark", "light"] and all(svg.startswith("<?xml") for svg in charts.values())


def test_a_failed_build_leaves_the_previous_site_in_place(tmp_path, monkeypatch):
    out = tmp_path / "out"
    (out / "site").mkdir(parents=True)  # an empty folder is replaced as freely as a missing one
    build([GCP], out)
    before = {name: _tree(out / name) for name in ("docs", "site")}
    assert any(name.endswith("settle-light.svg") for name in before["site"])

    def chart_fails(self: Drawing, *roots: Path) -> None:
        raise RuntimeError("a chart worker failed")

    monkeypatch.setattr(Drawing, "write", chart_fails)
    with pytest.raises(RuntimeError, match="a chart worker failed"):
        build([GCP], out)
    assert {name: _tree(out / name) for name in ("docs", "site")} == before
    assert sorted(p.name for p in out.iterdir()) == [build_module.MARKER, "docs", "site"]


def test_a_build_refuses_to_replace_a_docs_folder_it_did_not_make(tmp_path, capsys):
    notes = tmp_path / "out" / "docs" / "notes.md"
    notes.parent.mkdir(parents=True)
    notes.write_text("notes\n")
    assert build_module.main([str(GCP), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {notes.parent}: not made by") and "--out" in err[0]
    assert notes.read_text() == "notes\n" and sorted(p.name for p in (tmp_path / "out").iterdir()) == ["docs"]


def test_a_build_into_a_file_or_from_a_results_folder_that_is_not_one_says_so_in_one_line(tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.write_text("mine\n")
    assert build_module.main([str(GCP), "--out", str(taken)]) == 2
    assert build_module.main(["--results", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"error: {taken}: not a folder, so nothing can be built in it; build with --out elsewhere",
                   f"error: {tmp_path / 'nowhere'}: not a folder of results (scenarios/, reliability/, bench/)"]
    assert taken.read_text() == "mine\n"


def test_a_build_says_which_explorations_it_could_not_count_again_and_exits_2_as_judge_does(tmp_path, capsys):
    (tmp_path / "results" / "reliability").mkdir(parents=True)
    source = REPO / "results" / "reliability" / "explore_ledger.json"
    (tmp_path / "results" / "reliability" / "explore_ledger.json").write_bytes(source.read_bytes())
    assert build_module.main(["--results", str(tmp_path / "results"), "--out", str(tmp_path / "out")]) == 2
    assert (tmp_path / "out" / "site" / "reliability" / "ledger" / "index.html").is_file()  # built all the same
    err = capsys.readouterr().err.splitlines()
    assert err == [f"not counted again: {tmp_path / 'results' / 'reliability' / 'explore_ledger.json'} has no "
                   "history beside it; its page shows the counts it stores"]


def test_a_result_file_named_like_a_published_page_gets_a_page_of_its_own(odd_site):
    scenarios = odd_site / "scenarios"
    published = html.unescape((scenarios / "published-calendar" / "index.html").read_text(encoding="utf-8"))
    assert "calendar: published run only" in published
    ours = html.unescape((scenarios / "published-calendar-2" / "index.html").read_text(encoding="utf-8"))
    assert "gcp_resource: agent rollback" in ours and "published-calendar.json --cell" in ours


def test_a_page_collision_left_after_the_slugs_are_reserved_is_an_error_not_an_overwrite(tmp_path, monkeypatch):
    monkeypatch.setattr("pipeline.render.site.slug", lambda text: "x")  # both published pages in one folder
    with pytest.raises(FileExistsError, match="two pages would be written to .*published-x"):
        render_site([], published_runs(), tmp_path / "docs")


def test_a_result_file_name_shows_as_text_on_its_page(odd_site):
    (page,) = [p for p in (odd_site / "scenarios").glob("evil*/index.html")]
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"<img[^>]*onerror", text) and "onerror=" not in text
    (command,) = re.findall(r"<pre><code>(python -m published_format .*?)</code></pre>", html.unescape(text), re.S)
    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "published_format"] and argv[3].endswith("/" + HOSTILE_NAME)
    assert argv[4:] == ["--cell", "2"]


def test_control_characters_in_a_judged_file_print_escaped_one_line_each(tmp_path):
    data = json.loads((published_module.PUBLISHED / "gcp_resource.json").read_text(encoding="utf-8"))
    data["cells"][0]["system"] = "no_check\n\x1b[2J\x1b[31mFAKE OK"
    data["cells"][0]["invariant_held"] = True
    data["cells"][2]["artifacts"]["outcome_restart.json"]["outcome"] = "REFUSED:\nfoo"
    path = tmp_path / "gcp_resource.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "pipeline", "judge", str(path)], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 1 and "\x1b" not in run.stdout + run.stderr
    errors = run.stderr.splitlines()
    assert errors and all(line.startswith("disagreement: ") for line in errors)
    assert any("/ no_check\\n\\x1b[2J\\x1b[31mFAKE OK: invariant_held: stored true" in line for line in errors)
    assert not any(line.startswith("FAKE OK") or line.startswith("foo") for line in run.stdout.splitlines())
    assert "REFUSED:\\nfoo" in run.stdout


def test_a_bidirectional_or_invisible_character_in_a_judged_file_prints_as_its_escape(tmp_path):
    data = json.loads((published_module.PUBLISHED / "gcp_resource.json").read_text(encoding="utf-8"))
    data["cells"][0]["system"] = "no_check\u202e\u2066KO\u200b\ufeff"
    data["cells"][0]["invariant_held"] = True
    path = tmp_path / "gcp_resource.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "pipeline", "judge", str(path)], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 1 and not re.search("[\u200b\u202e\u2066\ufeff]", run.stdout + run.stderr)
    assert "/ no_check\\u202e\\u2066KO\\u200b\\ufeff: invariant_held: stored true" in run.stderr
    assert "no_check\\u202e\\u2066KO\\u200b\\ufeff" in run.stdout


def test_an_edited_published_file_stops_the_build_naming_both_digests(tmp_path, monkeypatch, capsys):
    shipped = tmp_path / "published"
    shipped.mkdir()
    for path in published_files():
        shutil.copy(path, shipped / path.name)
    data = json.loads((shipped / "calendar.json").read_text(encoding="utf-8"))
    data["cells"][0]["can_prove_what_happened"] = True
    (shipped / "calendar.json").write_text(json.dumps(data), encoding="utf-8")
    digest = published_module.sha256(shipped / "calendar.json")
    monkeypatch.setattr(published_module, "PUBLISHED", shipped)
    with pytest.raises(BadInput, match=f"sha256: {digest}, but the published digest is {SHA256['calendar.json']}"):
        published_runs()
    assert build_module.main([str(GCP), "--out", str(tmp_path / "out")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (f"error: {shipped / 'calendar.json'}: sha256: {digest}, but the published digest is "
                    f"{SHA256['calendar.json']}: this is not the published run")
    assert not (tmp_path / "out" / "site").exists()


def test_judging_an_edited_file_in_the_published_folder_names_both_digests(tmp_path, monkeypatch, capsys):
    import pipeline.cli as cli

    shipped = tmp_path / "published"
    shipped.mkdir()
    edited = shipped / "calendar.json"
    edited.write_bytes(next(p for p in published_files() if p.name == "calendar.json").read_bytes() + b"\n")
    monkeypatch.setattr(cli, "PUBLISHED", shipped)
    assert cli.judge_main([str(edited)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (f"{edited}: sha256: {published_module.sha256(edited)}, but the published digest is "
                    f"{SHA256['calendar.json']}: this is not the published run")
    monkeypatch.setattr(cli, "PUBLISHED", tmp_path / "elsewhere")  # a copy outside it is judged as it is
    assert cli.judge_main([str(edited)]) == 0
