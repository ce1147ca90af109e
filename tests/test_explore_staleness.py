"""`--stale`: which result files (explorations, tamper corpus, scenario runs) still stand for the code, read from a
real git history; and `make explore`, the one command that runs each exploration again as it was run."""

from __future__ import annotations

import ast
import json
import re
import shlex
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from experiments.explore.__main__ import main, parse_args
from experiments.explore.staleness import COUNT_AGAIN, COUNTING, NO_RUN_READS, RERUN, not_run, report


def _git(repo, *args):
    done = subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _result(out, name, commit, journal=None, **stored):
    (out / name).write_text(json.dumps({"provenance": {"commit": commit, "journal": journal}, **stored}))


def _history(repo, path, changed_to, first="A = 1\n"):
    """A repository whose second commit changes `path` from `first`; returns the first commit."""
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(first)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "first")
    first = _git(repo, "rev-parse", "HEAD")
    (repo / path).write_text(changed_to)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "second")
    return first


def test_a_result_whose_library_changed_since_its_commit_is_listed_with_the_files(tmp_path):
    repo, out = tmp_path, tmp_path / "results" / "reliability"
    out.mkdir(parents=True)
    (repo / "interlock").mkdir()
    (repo / "interlock" / "recovery.py").write_text("A = 1\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "first")
    first = _git(repo, "rev-parse", "HEAD")
    (repo / "interlock" / "recovery.py").write_text("A = 2\n")
    (repo / "README.md").write_text("not code a run depends on\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "second")
    _result(out, "explore_ledger_send_raises.json", first)
    _result(out, "explore_ledger_sigstop.json", _git(repo, "rev-parse", "HEAD"))
    _result(out, "explore_ledger_journal_cut.json", "0" * 40)
    lines = report(out, repo)
    assert f"explore_ledger_send_raises.json  {first[:8]}  1 file(s) changed since: interlock/recovery.py" in lines
    assert any(line.startswith("explore_ledger_sigstop.json") and line.endswith("  up to date") for line in lines)
    assert any(line.startswith("explore_ledger_journal_cut.json") and "cannot tell" in line for line in lines)


def test_a_result_file_that_cannot_be_read_is_named_unreadable_not_passed_over(tmp_path):
    repo, out = tmp_path, tmp_path / "results" / "reliability"
    out.mkdir(parents=True)
    _history(repo, "interlock/recovery.py", "A = 2\n")
    (out / "explore_calendar.json").write_text('{"provenance": {"comm')
    (out / "explore_ledger.json").write_text("[]")
    lines = report(out, repo)
    assert "explore_calendar.json  unreadable (not JSON): it no longer says what ran; `make explore` runs it again" in lines
    assert any(line.startswith("explore_ledger.json  unreadable (a JSON list, not an object)") for line in lines)


def test_a_change_to_the_postgresql_journal_stales_only_the_postgresql_results(tmp_path):
    repo, out = tmp_path, tmp_path / "results" / "reliability"
    out.mkdir(parents=True)
    first = _history(repo, "interlock/pg/journal.py", "A = 2\n")
    _result(out, "explore_ledger_sigstop.json", first)
    _result(out, "explore_ledger_pg_paused_past_ttl.json", first)
    lines = report(out, repo)
    assert f"explore_ledger_sigstop.json  {first[:8]}  up to date" in lines
    assert f"explore_ledger_pg_paused_past_ttl.json  {first[:8]}  1 file(s) changed since: interlock/pg/journal.py" in lines


def test_the_scenario_runs_and_the_tamper_corpus_are_held_to_the_code_their_runs_reach(tmp_path):
    repo, out, scenarios = tmp_path, tmp_path / "results" / "reliability", tmp_path / "results" / "scenarios"
    out.mkdir(parents=True)
    scenarios.mkdir()
    first = _history(repo, "interlock/pg/journal.py", "A = 2\n")
    _result(out, "tamper.json", first)
    _result(scenarios, "calendar.json", first, {"backend": "jsonl", "where": "each cell's own journal.jsonl"})
    _result(scenarios, "gcp_resource.json", first, {"backend": "postgresql", "where": "postgresql://x@h/db"})
    lines = report(out, repo)
    assert f"tamper.json  {first[:8]}  1 file(s) changed since: interlock/pg/journal.py" in lines
    assert f"scenarios/calendar.json  {first[:8]}  up to date" in lines
    assert f"scenarios/gcp_resource.json  {first[:8]}  1 file(s) changed since: interlock/pg/journal.py" in lines


def test_a_change_to_this_listing_alone_leaves_every_result_standing(tmp_path):
    repo, out = tmp_path, tmp_path / "results" / "reliability"
    out.mkdir(parents=True)
    first = _history(repo, "experiments/explore/staleness.py", "A = 2\n")
    _result(out, "explore_ledger.json", first)
    assert report(out, repo) == [f"explore_ledger.json  {first[:8]}  up to date"] + [
        f"not run: {name}" for name in not_run(out)]


@pytest.mark.parametrize("path", ["interlock/receipts/__main__.py", "interlock/receipts/_pg.py"])
def test_a_change_to_the_receipts_command_line_alone_leaves_every_result_standing(tmp_path, path):
    repo, out = tmp_path, tmp_path / "results" / "reliability"
    out.mkdir(parents=True)
    first = _history(repo, path, "A = 2\n")
    _result(out, "explore_ledger.json", first)
    assert f"explore_ledger.json  {first[:8]}  up to date" in report(out, repo)


PASSED_OVER_MODULES = ("interlock.receipts.__main__", "interlock.receipts._pg", "experiments.explore.count_again")


def _imported(root: Path, source: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The absolute names an import statement in `source` binds or reads, a relative one resolved."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    package = list(source.relative_to(root).with_suffix("").parts)[:-1]  # a module's package, or __init__'s own
    base = ".".join(package[:len(package) - node.level + 1] if node.level else [])
    module = ".".join(part for part in (base, node.module or "") if part)
    return [module] + [f"{module}.{alias.name}" for alias in node.names]


def test_no_run_reaches_the_code_the_listing_passes_over():
    """What makes the receipts command line and counting again safe to pass over: no module of the library or the
    experiments imports them, relatively or not, and none holds a string that would import or start them (docstrings
    may name them)."""
    root = Path(__file__).resolve().parents[1]
    passed_over = {root / path for path in NO_RUN_READS}
    for source in [*root.glob("experiments/**/*.py"), *root.glob("interlock/**/*.py")]:
        if source in passed_over:
            continue
        tree = ast.parse(source.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                named = _imported(root, source, node)
                assert not any(n.startswith(PASSED_OVER_MODULES) for n in named), (source, named)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                assert node.value != "interlock.receipts" and "-m interlock.receipts" not in node.value, source
                assert not any(name in node.value for name in PASSED_OVER_MODULES), source


def test_the_import_reading_resolves_relative_imports_to_the_modules_they_name():
    root = Path(__file__).resolve().parents[1]
    source = root / "interlock" / "receipts" / "_check.py"
    package = root / "interlock" / "receipts" / "__init__.py"
    read = {text: _imported(root, path, ast.parse(text).body[0])
            for text, path in [("from . import _pg", source), ("from .__main__ import main", source),
                               ("import interlock.receipts._pg", source), ("from ._pg import x", package),
                               ("from ..journal import Journal", source)]}
    assert read == {"from . import _pg": ["interlock.receipts", "interlock.receipts._pg"],
                    "from .__main__ import main": ["interlock.receipts.__main__", "interlock.receipts.__main__.main"],
                    "import interlock.receipts._pg": ["interlock.receipts._pg"],
                    "from ._pg import x": ["interlock.receipts._pg", "interlock.receipts._pg.x"],
                    "from ..journal import Journal": ["interlock.journal", "interlock.journal.Journal"]}


_PLAIN = '''"""A harness module."""
from __future__ import annotations

import json


def settle(record, wait=1.0):
    """Settle one record."""
    found = json.loads(record)  # what the worker wrote
    return found["id"], wait
'''

_TYPED = '''"""A harness module, typed."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from pathlib import Path


def settle(record: str, wait: float = 1.0) -> tuple[str, float]:
    """Settle one record, as its worker wrote it."""
    found: dict[str, Any] = cast(dict[str, Any], json.loads(record))
    return found["id"], wait
'''


def _standing(tmp_path, first, changed_to):
    repo, out = tmp_path, tmp_path / "results" / "reliability"
    out.mkdir(parents=True)
    commit = _history(repo, "experiments/harness_part.py", changed_to, first=first)
    _result(out, "explore_ledger.json", commit)
    return report(out, repo)[0]


def test_a_change_of_comments_docstrings_and_typing_alone_leaves_every_result_standing(tmp_path):
    assert _standing(tmp_path, _PLAIN, _TYPED).endswith("  up to date")


def test_a_docstring_under_a_constant_leaves_every_result_standing(tmp_path):
    first = "DEDUPE = 'dedupe'\nLEASE = 'lease'\n"
    changed = "DEDUPE = 'dedupe'\n\"\"\"The fence that dedupes by effect id.\"\"\"\nLEASE = 'lease'\n"
    assert _standing(tmp_path, first, changed).endswith("  up to date")


def test_a_changed_default_in_a_typed_function_makes_its_results_stale(tmp_path):
    changed = _TYPED.replace("wait: float = 1.0", "wait: float = 2.0")
    assert _standing(tmp_path, _PLAIN, changed).endswith("1 file(s) changed since: experiments/harness_part.py")


def test_a_changed_field_annotation_in_a_class_makes_its_results_stale(tmp_path):
    first = "from dataclasses import dataclass\n\n\n@dataclass\nclass Plan:\n    runs: int = 1\n"
    changed = first.replace("runs: int = 1", "runs: ClassVar[int] = 1")  # no longer a field
    assert "1 file(s) changed since" in _standing(tmp_path, first, changed)


def test_a_cast_not_imported_from_typing_is_a_call_like_any_other(tmp_path):
    first = "def f(x):\n    return x\n"
    changed = "from .units import cast\n\n\ndef f(x):\n    return cast(int, x)\n"
    assert "1 file(s) changed since" in _standing(tmp_path, first, changed)


def test_an_annotation_a_module_evaluates_at_definition_makes_its_results_stale(tmp_path):
    first = _PLAIN.replace("from __future__ import annotations\n", "")
    changed = first.replace("def settle(record, wait=1.0):", "def settle(record: Record, wait=1.0):")  # NameError
    assert "1 file(s) changed since" in _standing(tmp_path, first, changed)


def test_a_cast_to_a_type_imported_only_for_type_checking_makes_its_results_stale(tmp_path):
    changed = _TYPED.replace("cast(dict[str, Any], json.loads(record))", "cast(Path, json.loads(record))")
    assert "1 file(s) changed since" in _standing(tmp_path, _PLAIN, changed)  # Path is not defined when it runs


def test_no_run_reads_the_listing_only_the_stale_flag_does():
    root = Path(__file__).parents[1]
    importers = []
    for path in sorted((root / "experiments").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("staleness"):
                importers.append(path.relative_to(root).as_posix())
    assert importers == ["experiments/explore/__main__.py"]
    main_source = (root / "experiments" / "explore" / "__main__.py").read_text()
    assert main_source.count("report(") == 1 and "if args.stale:" in main_source


def test_every_declared_cell_without_a_file_is_named_not_run(tmp_path):
    _result(tmp_path, "explore_ledger.json", None)
    missing = not_run(tmp_path)
    assert "explore_ledger.json" not in missing
    assert "explore_calendar_pg_slow_service.json" in missing and "explore_gcp_resource_sigstop.json" in missing
    assert "explore_gcp_resource_pg_sigstop.json" not in missing  # sigstop runs on the file journal only


def test_the_stale_flag_prints_the_report_and_exits_zero(tmp_path, capsys):
    assert main(["--stale", "--out", str(tmp_path)]) == 0
    assert "not run: explore_calendar.json" in capsys.readouterr().out


def test_make_explore_runs_every_committed_exploration_as_its_file_records_it():
    root = Path(__file__).parents[1]
    dry = subprocess.run(["make", "-n", "explore"], cwd=root, capture_output=True, text=True, check=True).stdout
    planned = {}
    for hazards, command in re.findall(r"for hazard in ([\w ]+); do (.*?) \|\|", re.sub(r"\s*\\\n\s*", " ", dry)):
        for hazard in hazards.split():
            argv = shlex.split(command.replace("$hazard", hazard))[3:]  # past `<python> -m experiments.explore`
            planned.update({plan.name: plan for plan in parse_args(argv).plans})
    committed = sorted((root / "results" / "reliability").glob("explore_*.json"))
    assert committed and set(planned) == {path.name for path in committed}
    for path in committed:
        stored = json.loads(path.read_text())
        [recorded] = parse_args(shlex.split(stored["command"])[3:]).plans
        assert planned[path.name] == replace(recorded, jobs=stored["jobs"]), path.name


def test_each_stale_file_is_followed_by_the_command_that_runs_it_again_as_it_was_run(tmp_path):
    repo, out, scenarios = tmp_path, tmp_path / "results" / "reliability", tmp_path / "results" / "scenarios"
    out.mkdir(parents=True)
    scenarios.mkdir()
    first = _history(repo, "interlock/recovery.py", "A = 2\n")
    head = _git(repo, "rev-parse", "HEAD")
    command = ("python -m experiments.explore --scenario ledger --hazard crash --journal postgresql --systems interlock"
               " --schedules 300 --baseline-schedules 300 --seed 0")
    _result(out, "explore_ledger_pg.json", first, command=command, jobs=8)
    _result(out, "explore_ledger_sigstop.json", head, command="python -m experiments.explore --hazard sigstop", jobs=2)
    (out / "tamper.json").write_text(json.dumps({"provenance": {
        "commit": first, "script": "python -m experiments.tamper"}}))
    (scenarios / "calendar.json").write_text(json.dumps({"provenance": {
        "commit": first, "script": "python -m experiments.calendar", "journal": {"backend": "jsonl"}}}))
    (scenarios / "gcp_resource.json").write_text(json.dumps({"provenance": {
        "commit": first, "script": "python -m experiments.gcp_resource", "journal": {"backend": "postgresql"}}}))
    again = [line for line in report(out, repo) if line.startswith(RERUN)]
    assert again == [f"{RERUN}{command} --jobs 8", f"{RERUN}python -m experiments.tamper",
                     f"{RERUN}python -m experiments.calendar",
                     f"{RERUN}python -m experiments.gcp_resource --journal postgresql://..."]


def test_the_stale_files_are_run_again_longest_first_and_those_of_unknown_length_before_them(tmp_path):
    repo, out = tmp_path, tmp_path / "results" / "reliability"
    out.mkdir(parents=True)
    first = _history(repo, "interlock/recovery.py", "A = 2\n")
    for name, seconds in (("explore_ledger.json", 10.0), ("explore_ledger_sigstop.json", 700.5),
                          ("explore_ledger_journal_cut.json", None), ("explore_ledger_send_raises.json", 120)):
        took = {} if seconds is None else {"seconds": seconds}
        _result(out, name, first, command=f"python -m experiments.explore --file {name}", jobs=2, **took)
    again = [line.split("--file ")[1].split(" ")[0] for line in report(out, repo) if line.startswith(RERUN)]
    assert again == ["explore_ledger_journal_cut.json", "explore_ledger_sigstop.json",
                     "explore_ledger_send_raises.json", "explore_ledger.json"]


def test_a_stale_file_that_records_no_command_is_listed_without_one(tmp_path):
    repo, out = tmp_path, tmp_path / "results" / "reliability"
    out.mkdir(parents=True)
    first = _history(repo, "interlock/recovery.py", "A = 2\n")
    _result(out, "explore_ledger.json", first)
    lines = report(out, repo)
    assert f"explore_ledger.json  {first[:8]}  1 file(s) changed since: interlock/recovery.py" in lines
    assert not [line for line in lines if line.startswith(RERUN)]


def test_make_rerun_stale_runs_the_commands_the_listing_gives_with_the_projects_python():
    root = Path(__file__).parents[1]
    dry = subprocess.run(["make", "-n", "--no-print-directory", "rerun-stale", "JOBS=3"], cwd=root,
                         capture_output=True, text=True, check=True).stdout
    [recipe] = [line for line in dry.splitlines() if " --stale | " in line and "xargs" in line]
    listing, pick, run = recipe.split(" | ")
    assert listing == ".venv/bin/python -m experiments.explore --stale"
    line = f"{RERUN}python -m experiments.tamper"
    picked = subprocess.run(shlex.split(pick), input=f"explore_ledger.json  0123abcd  up to date\n{line}\n",
                            capture_output=True, text=True, check=True).stdout
    assert picked == ".venv/bin/python -m experiments.tamper\n"
    assert run.startswith("xargs -r -P 3 ")


def test_make_rerun_stale_first_counts_again_what_the_listing_says_only_the_counting_moved_for():
    root = Path(__file__).parents[1]
    dry = subprocess.run(["make", "-n", "--no-print-directory", "rerun-stale"], cwd=root,
                         capture_output=True, text=True, check=True).stdout
    recipes = [line for line in dry.splitlines() if " --stale | " in line]
    assert "xargs" in recipes[1] and len(recipes) == 2  # counting again first: seconds, and no run can stop it
    _, pick, run = recipes[0].split(" | ")
    line = f"{COUNT_AGAIN}python -m experiments.explore.count_again results/reliability/explore_ledger.json"
    picked = subprocess.run(shlex.split(pick), input=f"{RERUN}python -m experiments.tamper\n{line}\n",
                            capture_output=True, text=True, check=True).stdout
    assert picked == ".venv/bin/python -m experiments.explore.count_again results/reliability/explore_ledger.json\n"
    assert run == "sh -e"


def test_a_change_to_the_counting_alone_leaves_the_runs_standing_and_asks_to_count_the_explorations_again(tmp_path):
    repo, out, scenarios = tmp_path, tmp_path / "results" / "reliability", tmp_path / "results" / "scenarios"
    out.mkdir(parents=True)
    scenarios.mkdir()
    first = _history(repo, "experiments/explore/tally.py", "A = 2\n")
    _result(out, "explore_ledger.json", first, command="python -m experiments.explore --hazard crash", jobs=2)
    _result(out, "tamper.json", first)
    _result(scenarios, "calendar.json", first, {"backend": "jsonl"})
    lines = report(out, repo)
    assert (f"explore_ledger.json  {first[:8]}  counted by older code: experiments/explore/tally.py changed since; "
            "counting its history again renews it") in lines
    assert f"tamper.json  {first[:8]}  up to date" in lines
    assert f"scenarios/calendar.json  {first[:8]}  up to date" in lines
    assert not [line for line in lines if line.startswith(RERUN)]
    assert lines[-1] == (f"{COUNT_AGAIN}python -m experiments.explore.count_again "
                         "results/reliability/explore_ledger.json")


def test_a_file_counted_again_since_the_counting_changed_is_up_to_date(tmp_path):
    repo, out = tmp_path, tmp_path / "results" / "reliability"
    out.mkdir(parents=True)
    first = _history(repo, "experiments/explore/checks.py", "A = 2\n")
    _result(out, "explore_ledger.json", first, counted={"commit": _git(repo, "rev-parse", "HEAD")})
    lines = report(out, repo)
    assert f"explore_ledger.json  {first[:8]}  up to date" in lines
    assert not [line for line in lines if line.startswith(COUNT_AGAIN)]


def test_a_file_whose_runs_code_moved_too_is_run_again_not_counted_again(tmp_path):
    repo, out = tmp_path, tmp_path / "results" / "reliability"
    out.mkdir(parents=True)
    first = _history(repo, "experiments/explore/tally.py", "A = 2\n")
    (repo / "interlock").mkdir()
    (repo / "interlock" / "recovery.py").write_text("A = 1\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "third")
    _result(out, "explore_ledger.json", first, command="python -m experiments.explore --hazard crash", jobs=2)
    lines = report(out, repo)
    assert f"explore_ledger.json  {first[:8]}  1 file(s) changed since: interlock/recovery.py" in lines
    assert lines[-1] == f"{RERUN}python -m experiments.explore --hazard crash --jobs 2"


def test_a_file_counted_at_a_commit_this_clone_lacks_cannot_be_told_up_to_date(tmp_path):
    repo, out = tmp_path, tmp_path / "results" / "reliability"
    out.mkdir(parents=True)
    first = _history(repo, "experiments/explore/tally.py", "A = 2\n")
    _result(out, "explore_ledger.json", first, counted={"commit": "f" * 40})
    assert f"explore_ledger.json  {first[:8]}  cannot tell (the commit is not in this clone)" in report(out, repo)


def test_the_counting_code_holds_only_definitions_so_a_run_executes_none_of_it_but_to_count():
    """What makes a change to the counting safe to leave the runs standing: every process of a run imports these
    modules (the package re-exports them), so their bodies hold imports, constants and definitions alone, and
    only the code that counts or prints calls into them."""
    root = Path(__file__).resolve().parents[1]
    for path in COUNTING:
        for node in ast.parse((root / path).read_text()).body:
            assert isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign,
                                     ast.AnnAssign, ast.Expr)), (path, ast.dump(node)[:80])
            if isinstance(node, ast.Expr):
                assert isinstance(node.value, ast.Constant), path  # a docstring, never a call
    modules = {"experiments.explore." + Path(path).stem for path in COUNTING}
    package = root / "experiments" / "explore" / "__init__.py"
    reexported = {f"experiments.explore.{alias.asname or alias.name}" for node in ast.parse(package.read_text()).body
                  if isinstance(node, ast.ImportFrom) and node.module in modules for alias in node.names}
    explorer = root / "experiments" / "explore"
    for source in root.glob("experiments/**/*.py"):
        if source in (explorer / "__main__.py", package, explorer / "count_again.py") or \
                source.relative_to(root).as_posix() in COUNTING:
            continue
        imported = {name for node in ast.walk(ast.parse(source.read_text()))
                    if isinstance(node, (ast.Import, ast.ImportFrom)) for name in _imported(root, source, node)}
        assert not {n for n in imported if n in reexported or n.startswith(tuple(modules))}, source
