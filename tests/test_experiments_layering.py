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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _library_imports(path: Path, known: set[str]) -> set[str]:
    """The library modules `path` imports, at the top or inside a function, relative imports resolved."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            module = (f"{base}.{node.module}" if node.module else base) if node.level else (node.module or "")
            inner = {f"{module}.{alias.name}" for alias in node.names}  # `from . import hooks` is a module
            found |= inner if inner <= known else inner | {module}
    return found & known - {name}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of two or more modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def _library_graph() -> dict[str, set[str]]:
    sources = sorted(LIBRARY.rglob("*.py"))
    known = {_module_name(path) for path in sources}
    return {_module_name(path): _library_imports(path, known) for path in sources}


def test_no_two_modules_of_the_library_import_each_other_even_round_a_loop():
    graph = _library_graph()
    assert "interlock.journal" in graph["interlock.pg.journal"]  # the graph sees relative imports
    assert "interlock.pg" in graph["interlock.backends"]  # and imports inside a function
    assert _circles(graph) == []


def test_the_loop_check_sees_a_loop_through_three_modules():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
