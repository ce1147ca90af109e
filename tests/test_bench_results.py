"""Benchmark results carry the date, the commit and the machine, and replace the previous file whole or not at all."""

from __future__ import annotations

import json
import os
import platform

import pytest

from bench._results import write_result


def test_a_result_names_its_date_commit_cores_and_python(tmp_path):
    path = tmp_path / "gate.json"
    write_result(path, {"verify_entries_per_second": 1})
    stored = json.loads(path.read_text())
    made = stored["provenance"]
    assert stored["verify_entries_per_second"] == 1
    assert made["machine"]["cores"] == os.cpu_count() and made["machine"]["python"] == platform.python_version()
    assert len(made["commit"]) == 40 and made["date"].endswith("+00:00")


def test_a_result_that_cannot_be_written_leaves_the_previous_one_whole(tmp_path):
    path = tmp_path / "gate.json"
    write_result(path, {"figure": 1})
    before = path.read_bytes()
    with pytest.raises(TypeError):
        write_result(path, {"figure": object()})
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["gate.json"]
