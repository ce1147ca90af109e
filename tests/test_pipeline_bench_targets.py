"""Benchmark targets are judged again from the figures beside them, gathered on the methodology page, and a file
whose own verdict disagrees is said loudly: on the page and by `make results`."""

from __future__ import annotations

import html
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.__main__ import targets_said
from bench._results import against
from pipeline.benchmarks import benchmarks
from pipeline.build import build
from pipeline.load import BadInput

REPO = Path(__file__).resolve().parents[1]


def _bench(folder: Path, name: str, targets: dict, cores: int = 2) -> None:
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps({"figure_ms": 1.5, "targets": targets,
                                                     "provenance": {"machine": {"cores": cores}}}))


def test_a_target_is_judged_again_from_its_measured_figure_and_a_stored_verdict_it_contradicts_is_named(tmp_path):
    _bench(tmp_path, "gate", {"scaling": {"measured": 0.94, "target": ">= 1.5", "met": True},
                              "open_seconds": {"measured": 0.005, "target": "< 0.5", "met": True}})
    (bench,) = benchmarks(tmp_path, "results/bench")
    scaling, opening = bench.targets
    assert (scaling.met, scaling.stored_met, scaling.disagrees, scaling.words) == (False, True, True, "at least 1.5×")
    assert (opening.met, opening.disagrees, opening.words) == (True, False, "under 0.5 s")
    assert bench.disagreements() == ["results/bench/gate.json: targets.scaling: stored met true, but 0.94 >= 1.5 "
                                     "does not hold"]
    assert all(table.title != "targets" for table in bench.tables)  # shown judged, never as stored


def test_the_verdict_a_bench_stores_is_the_one_the_pipeline_gives_again(tmp_path):
    stated = {"low": against(0.94, ">=", 1.5), "high": against(2.0, ">=", 1.5), "fast": against(0.2, "<=", 0.2),
              "under": against(9.99, "<", 10.0)}
    _bench(tmp_path, "mixed", stated)
    (bench,) = benchmarks(tmp_path)
    assert [t.met for t in bench.targets] == [False, True, True, True] and not bench.disagreements()


@pytest.mark.parametrize("target, field", [({"measured": 1.0, "target": "about 1.5", "met": True}, "scaling.target"),
                                           ({"measured": "fast", "target": ">= 1.5", "met": True}, "scaling.measured"),
                                           ({"measured": 1.0, "target": ">= 1.5"}, "scaling.met"),
                                           ({"measured": 1.0, "target": ">= 1.5", "met": False, "rounds": [1.0, "x"]},
                                            "scaling.rounds[1]")])
def test_a_target_that_cannot_be_judged_is_bad_input_naming_the_file_and_the_field(tmp_path, target, field):
    _bench(tmp_path, "gate", {"scaling": target})
    with pytest.raises(BadInput) as raised:
        benchmarks(tmp_path)
    assert str(raised.value).startswith(f"{tmp_path / 'gate.json'}: targets.{field}: ")


def test_the_methodology_page_counts_every_target_met_with_the_cores_and_flags_a_disagreeing_file(tmp_path):
    folder = tmp_path / "bench"
    _bench(folder, "gate", {"jsonl_scaling_16_workers": {"measured": 0.94, "target": ">= 1.5", "met": True}})
    _bench(folder, "pg", {"postgresql_vs_jsonl_1_workers": against(0.64, ">=", 0.5)})
    page = html.unescape((build([], tmp_path / "out", results=tmp_path) / "methodology" / "index.html").read_text())
    assert "1 of 2 targets met in the committed runs, measured on a machine with 2 cores" in page
    assert "jsonl scaling 16 workers (×)</td> <td data-label=\"measured\">0.94×</td>" in page
    assert "<td data-label=\"met\">no (the file says yes)</td>" in page
    assert "<td data-label=\"target\">at least 0.5×</td> <td data-label=\"met\">yes</td>" in page


def test_a_target_measured_over_rounds_shows_each_round_and_how_many_met_it_when_they_split(tmp_path):
    folder = tmp_path / "bench"
    _bench(folder, "gate", {"jsonl_scaling_16_workers": against(1.25, ">=", 1.5, rounds=[1.13, 1.58, 1.25]),
                            "verify_entries_per_cpu_second": against(420_000, ">=", 400_000, rounds=[410_000, 430_000])})
    (bench,) = benchmarks(folder)
    scaling, verify = bench.targets
    assert (scaling.rounds, scaling.rounds_met, scaling.split) == ((1.13, 1.58, 1.25), 1, True)
    assert (verify.rounds_met, verify.split) == (2, False)
    page = html.unescape((build([], tmp_path / "out", results=tmp_path) / "methodology" / "index.html").read_text())
    assert ("<td data-label=\"each round\">1.13, 1.58, 1.25×</td> <td data-label=\"nothing shared\"></td> "
            "<td data-label=\"target\">at least 1.5×</td> "
            "<td data-label=\"met\">no (1 of 3 rounds met it)</td>") in page
    assert "<td data-label=\"each round\">410,000, 430,000 per CPU s</td>" in page
    assert "(2 of 2 rounds met it)" not in page


def test_make_results_prints_each_bench_target_whose_stored_verdict_disagrees_and_fails(tmp_path):
    folder = tmp_path / "bench"
    _bench(folder, "gate", {"scaling": {"measured": 0.94, "target": ">= 1.5", "met": True}})
    run = subprocess.run([sys.executable, "-m", "pipeline", "build", "--results", str(tmp_path), "--out",
                          str(tmp_path / "out")], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stderr
    assert f"disagreement: {folder / 'gate.json'}: targets.scaling: stored met true, but 0.94 >= 1.5 does not hold" \
        in run.stderr
    assert "1 benchmark target(s) with their figures" in run.stdout
    assert (tmp_path / "out" / "site" / "methodology" / "index.html").is_file()  # built all the same


def test_make_bench_says_each_target_beside_the_figure_measured_and_the_cores():
    lines = targets_said("gate", {"targets": {"jsonl_scaling_16_workers": against(0.94, ">=", 1.5)}})
    assert len(lines) == 1 and lines[0].startswith("target gate.jsonl_scaling_16_workers: measured 0.94, target "
                                                   ">= 1.5: MISSED (")
    assert lines[0].endswith(" cores)")
    [split] = targets_said("pg", {"targets": {
        "postgresql_scaling_16_workers": against(1.23, ">=", 1.5, rounds=[1.1, 1.6, 1.23])}})
    assert split.startswith("target pg.postgresql_scaling_16_workers: measured 1.23 (rounds 1.1, 1.6, 1.23), target "
                            ">= 1.5: MISSED (")
    [unshared] = targets_said("gate", {"jsonl_scaling_16_workers_own_journals": 1.67, "targets": {
        "jsonl_scaling_16_workers": against(1.17, ">=", 1.5, nothing_shared="jsonl_scaling_16_workers_own_journals")}})
    assert unshared.endswith(" cores); with nothing shared (jsonl_scaling_16_workers_own_journals) 1.67")


def test_a_target_measured_with_nothing_shared_too_shows_that_figure_beside_it(tmp_path):
    folder = tmp_path / "bench"
    folder.mkdir()
    (folder / "pg.json").write_text(json.dumps({
        "postgresql_scaling_16_workers_own_databases": 1.27,
        "targets": {"postgresql_scaling_16_workers": against(
            1.16, ">=", 1.5, rounds=[1.16, 1.33, 1.11], nothing_shared="postgresql_scaling_16_workers_own_databases"),
                    "postgresql_vs_jsonl_1_workers": against(0.49, ">=", 0.5)}}))
    (bench,) = benchmarks(folder)
    scaling, single = bench.targets
    assert scaling.nothing_shared == ("postgresql_scaling_16_workers_own_databases", 1.27)
    assert (scaling.unshared, single.unshared) == ("1.27× (own databases)", "")
    page = html.unescape((build([], tmp_path / "out", results=tmp_path) / "methodology" / "index.html").read_text())
    assert ("<td data-label=\"each round\">1.16, 1.33, 1.11×</td> <td data-label=\"nothing shared\">1.27× (own "
            "databases)</td> <td data-label=\"target\">at least 1.5×</td>") in page
    assert "<td data-label=\"nothing shared\"></td> <td data-label=\"target\">at least 0.5×</td>" in page


@pytest.mark.parametrize("figures, problem", [({}, "names 'scaling_own', a figure the file does not hold"),
                                              ({"scaling_own": "high"}, None)])
def test_a_nothing_shared_figure_the_file_does_not_hold_as_a_number_is_bad_input_naming_the_field(
        tmp_path, figures, problem):
    (tmp_path / "gate.json").write_text(json.dumps({**figures, "targets": {
        "scaling": against(1.17, ">=", 1.5, nothing_shared="scaling_own")}}))
    with pytest.raises(BadInput) as raised:
        benchmarks(tmp_path)
    field = "targets.scaling.nothing_shared" if problem else "scaling_own"
    assert str(raised.value).startswith(f"{tmp_path / 'gate.json'}: {field}: ")
    if problem:
        assert problem in str(raised.value)


def test_a_figure_that_rounds_to_zero_from_below_shows_as_zero_not_minus_zero():
    from pipeline.benchmarks import value

    assert (value(-0.0), value(-0.0001), value(-0.002), value(0.0)) == ("0", "0", "-0.002", "0")
