"""The Jepsen split, checked on the source: the experiments record, the pipeline judges, and the runner never
imports its checker."""

from __future__ import annotations

import ast
from pathlib import Path

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            found.add(str(node.args[0].value))
    return found


def test_no_module_of_the_experiments_imports_the_pipeline():
    sources = sorted(EXPERIMENTS.rglob("*.py"))
    offenders = {str(path.relative_to(EXPERIMENTS.parent)): sorted(m for m in _imported_modules(path)
                                                                  if m == "pipeline" or m.startswith("pipeline."))
                 for path in sources}
    assert len(sources) > 40
    assert {path: mods for path, mods in offenders.items() if mods} == {}


def test_the_layering_check_sees_an_import_of_the_pipeline(tmp_path):
    source = tmp_path / "judging_runner.py"
    source.write_text("import json\nfrom pipeline.derive import derive_cell\n", encoding="utf-8")

    assert "pipeline.derive" in _imported_modules(source)
