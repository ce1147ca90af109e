"""The Jepsen split, checked on the source: the experiments record, the pipeline judges, and the runner never
imports its checker; the library users install holds neither the experiments' vocabulary nor the published
format, which both sides read through `published_format`."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "experiments"
LIBRARY = ROOT / "interlock"
# Words only the published format or the experiments' baselines use: the published kinds this gate never writes,
# the published resend `via`s, the baselines' outcomes.
NOT_THE_LIBRARYS = {"ESCALATED", "DECIDED", "CONFIRMED", "retry-idempotent", "failed-but-landed", "legacy",
                    "WRITTEN", "BOOKED", "ALREADY_APPLIED", "ALREADY_EXISTS_409", "FOUND_BY_LOOKUP",
                    "PRECONDITION_FAILED"}


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


def _strings(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}


def test_the_library_imports_neither_the_experiments_the_pipeline_nor_the_published_format():
    sources = sorted(LIBRARY.rglob("*.py"))
    outside = ("experiments", "pipeline", "published_format")
    offenders = {str(path.relative_to(ROOT)): sorted(m for m in _imported_modules(path) if m.split(".")[0] in outside)
                 for path in sources}
    assert len(sources) > 20
    assert {path: mods for path, mods in offenders.items() if mods} == {}


def test_the_library_holds_no_word_of_the_published_format_or_the_baselines():
    found = {str(path.relative_to(ROOT)): sorted(_strings(path) & NOT_THE_LIBRARYS)
             for path in sorted(LIBRARY.rglob("*.py"))}
    assert {path: words for path, words in found.items() if words} == {}


def test_the_vocabulary_check_sees_a_published_kind_in_a_string(tmp_path):
    source = tmp_path / "kinds.py"
    source.write_text('KNOWN = frozenset({"PROPOSED", "ESCALATED"})\n', encoding="utf-8")

    assert _strings(source) & NOT_THE_LIBRARYS == {"ESCALATED"}
