"""Which results still stand for the code: each file's commit against the code that decides its runs.

A result file counts what one commit's gate and harness did. After the library or the experiments change, the
file may no longer say what today's code does (a regression hides behind an old file), so before a claim is
made from the site, `python -m experiments.explore --stale` lists every result file whose code moved since it was
run (the explorations, the tamper corpus beside them, the scenario runs in the `scenarios` folder beside that),
and every hazard cell the hazard table declares that has no file yet; then the command that runs each stale file
again as it was run (`make rerun-stale` runs them).

A change counts when it can change what a run does. A Python file whose two versions differ only in comments,
layout, docstrings (any constant standing alone, a module's, a class's or a function's docstring or one under the
name it documents) and typing (the annotations of functions' parameters and returns where the module leaves them
unevaluated, local variables' annotations, imports from `typing`, `if TYPE_CHECKING:` blocks, a `typing.cast` whose
type evaluates) runs the same, so it leaves the results standing; annotations in a class or module body stay
counted, since dataclasses and named tuples build their fields from them.

The code that counts an exploration's stored history (`COUNTING`) decides nothing a run does: a change there leaves
the runs standing, and the file is renewed by counting its history again (`python -m experiments.explore.count_again`),
which records the counting commit in the file's `counted`.
"""

from __future__ import annotations

import ast
import json
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.explore.hazards import ALL, HAZARDS, result_name

CODE = ("interlock", "experiments")  # what decides a run's outcome; results/, bench/, site/ and pipeline/ do not
# Code no run reaches: this listing, counting a stored result again, and the receipts command line with the
# PostgreSQL reading only it imports (runs import `interlock.receipts`, whose package never imports them, and start
# no `python -m interlock.receipts`)
NO_RUN_READS = ("experiments/explore/staleness.py", "experiments/explore/count_again.py",
                "interlock/receipts/__main__.py", "interlock/receipts/_pg.py")
# Code that counts a stored history into its result file, and that runs only print from
COUNTING = ("experiments/explore/tally.py", "experiments/explore/checks.py")
SHARED_JOURNAL_ONLY = "interlock/pg/"  # code only the runs on the PostgreSQL journal reach
TAMPER = "tamper.json"  # its corpus includes journals written by the PostgreSQL backend
SCENARIOS = "scenarios"  # beside the reliability folder: the scenario runs, on the journal each file names
RERUN = "run again: "  # how the listing opens each command that renews a stale file (`make rerun-stale` reads it)
COUNT_AGAIN = "count again: "  # how it opens the command that counts again the files only the counting moved for


@dataclass(frozen=True)
class Standing:
    """One result file: the commit it names, the files of `CODE` its runs reach changed since (None: not known
    here), the counting code changed since it was counted, the command that runs it again as it was run and how long
    that took (None when the file does not say)."""

    name: str
    commit: str | None
    changed: tuple[str, ...] | None
    command: str | None
    seconds: float | None
    unreadable: str | None = None  # why the file could not be read as a result, when it could not
    recount: tuple[str, ...] = ()  # of `COUNTING`, changed since the file was last counted


def standings(out: Path, repo: Path) -> list[Standing]:
    """Every `explore_*.json` and the tamper corpus in `out`, then every scenario run in the `scenarios` folder
    beside it, with the code changed between its commit and the work tree's HEAD that its runs reach (a run on the
    file journal never reaches the PostgreSQL journal's code). Scenario files are named from the results folder."""
    found, changed = [], {}  # many files share a commit: one diff each
    on_postgresql = {result_name(scenario, name, "postgresql") for name in HAZARDS for scenario in ALL} | {TAMPER}
    scenario_runs = sorted((out.parent / SCENARIOS).glob("*.json"))
    for path in [*sorted(out.glob("explore_*.json")), *out.glob(TAMPER), *scenario_runs]:
        stored, unreadable = _stored(path)
        provenance = stored.get("provenance")
        if not isinstance(provenance, dict):
            provenance = {}
        commit = provenance.get("commit") if isinstance(provenance.get("commit"), str) else None
        if commit is not None and commit not in changed:
            changed[commit] = _changed_since(commit, repo)
        moved = changed.get(commit)
        if path.parent == out:
            name, shared = path.name, path.name in on_postgresql
        else:
            name, shared = f"{SCENARIOS}/{path.name}", _on_postgresql(provenance)
        if moved is not None and not shared:
            moved = tuple(f for f in moved if not f.startswith(SHARED_JOURNAL_ONLY))
        recount: tuple[str, ...] = ()
        if moved is not None and commit is not None:
            counted = _counted_commit(stored) or commit
            if counted not in changed:
                changed[counted] = _changed_since(counted, repo)
            counting = changed[counted]
            recount = tuple(f for f in counting or () if f in COUNTING) if _counts(name) else ()
            moved = tuple(f for f in moved if f not in COUNTING) if counting is not None else None
        seconds = stored.get("seconds")
        took = float(seconds) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) else None
        found.append(Standing(name, commit, moved, _command(stored, provenance), took, unreadable, recount))
    return found


def _counts(name: str) -> bool:
    """Whether the result file is an exploration counted from its history (the tamper corpus and scenario runs
    are not)."""
    return name.startswith("explore_")


def _counted_commit(stored: dict[str, Any]) -> str | None:
    """The commit whose counting wrote the file's counts, when it was counted again after its run."""
    counted = stored.get("counted")
    commit = counted.get("commit") if isinstance(counted, dict) else None
    return commit if isinstance(commit, str) else None


def _stored(path: Path) -> tuple[dict[str, Any], str | None]:
    """The file's top-level object, or an empty one and why, when the file cannot be read or holds something else."""
    try:
        stored = json.loads(path.read_text())
    except OSError as exc:
        return {}, exc.strerror or str(exc)
    except (ValueError, RecursionError):
        return {}, "not JSON"
    return (stored, None) if isinstance(stored, dict) else ({}, f"a JSON {type(stored).__name__}, not an object")


def _command(stored: dict[str, Any], provenance: dict[str, Any]) -> str | None:
    """The command that writes this file again with the settings it was written with: an exploration's recorded
    command with its runs at once, else the script that wrote it (on the shared journal, given its address)."""
    command, jobs = stored.get("command"), stored.get("jobs")
    if isinstance(command, str) and isinstance(jobs, int):
        return f"{command} --jobs {jobs}"
    script = provenance.get("script")
    if not isinstance(script, str):
        return None
    return f"{script} --journal postgresql://..." if _on_postgresql(provenance) else script


def _on_postgresql(provenance: dict[str, Any]) -> bool:
    """Whether a scenario run's provenance names the shared PostgreSQL journal as the one it ran on."""
    journal = provenance.get("journal")
    return isinstance(journal, dict) and journal.get("backend") == "postgresql"


def not_run(out: Path) -> list[str]:
    """The result files the hazard table declares (every scenario and journal a hazard runs on) that are missing."""
    declared = [result_name(scenario, hazard.name, journal) for hazard in HAZARDS.values()
                for scenario in ALL if scenario in hazard.scenarios for journal in hazard.journals]
    return [name for name in declared if not (out / name).exists()]


def report(out: Path, repo: Path) -> list[str]:
    """The lines `--stale` prints: one per result file, then the cells not run, then a command per stale file, the
    longest run first (as its file records it; a file that records no time first of all), so that runs side by side
    (`make rerun-stale JOBS=n`) end together rather than behind one long run started last."""
    lines, again = [], []
    found = standings(out, repo)
    for standing in found:
        commit = (standing.commit or "no commit")[:8]
        if standing.unreadable is not None:
            lines.append(f"{standing.name}  unreadable ({standing.unreadable}): it no longer says what ran; "
                         "`make explore` runs it again")
            continue
        if standing.changed is None:
            state = "cannot tell (the commit is not in this clone)"
        elif not standing.changed and standing.recount:
            state = (f"counted by older code: {', '.join(standing.recount)} changed since; counting its history "
                     "again renews it")
        elif not standing.changed:
            state = "up to date"
        else:
            state = f"{len(standing.changed)} file(s) changed since: {', '.join(standing.changed[:4])}" + (
                ", ..." if len(standing.changed) > 4 else "")
        lines.append(f"{standing.name}  {commit}  {state}")
    lines += [f"not run: {name}" for name in not_run(out)]
    for standing in sorted(found, key=_longest_first):
        if standing.changed and standing.command is not None and standing.command not in again:
            again.append(standing.command)
    recount = [shlex.quote(_shown(out / s.name, repo)) for s in found
               if s.recount and not s.changed and s.unreadable is None]
    counting = [f"{COUNT_AGAIN}python -m experiments.explore.count_again {' '.join(recount)}"] if recount else []
    return lines + [f"{RERUN}{command}" for command in again] + counting


def _shown(path: Path, repo: Path) -> str:
    """The path from the repository's root when it lies inside it (the listing's commands run from there)."""
    try:
        return path.relative_to(repo).as_posix()
    except ValueError:
        return str(path)


def _longest_first(standing: Standing) -> float:
    """Sort key: a run that records no time before any that does, then the longest first."""
    return -float("inf") if standing.seconds is None else -standing.seconds


def _changed_since(commit: str, repo: Path) -> tuple[str, ...] | None:
    try:
        done = subprocess.run(["git", "-C", str(repo), "diff", "--name-only", commit, "HEAD", "--", *CODE,
                               *(f":(exclude){path}" for path in NO_RUN_READS)],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return tuple(path for path in done.stdout.splitlines() if path and not _runs_alike(repo, commit, path))


def _runs_alike(repo: Path, commit: str, path: str) -> bool:
    """Whether `path` at `commit` and at HEAD are Python that differ only in what no run executes."""
    if not path.endswith(".py"):
        return False
    sources = []
    for rev in (commit, "HEAD"):
        shown = subprocess.run(["git", "-C", str(repo), "show", f"{rev}:{path}"], capture_output=True, timeout=60)
        if shown.returncode != 0:
            return False  # added or deleted
        sources.append(shown.stdout)
    try:
        before, after = (ast.dump(_AsRun().visit(ast.parse(source))) for source in sources)
    except (SyntaxError, ValueError):
        return False
    return before == after


class _AsRun(ast.NodeTransformer):
    """A module's syntax tree without what no run executes: constants standing alone (docstrings), function
    annotations (in a module that imports `annotations` from `__future__`, which leaves them unevaluated), local
    annotations, imports from `typing`, `if TYPE_CHECKING:` blocks, and `typing.cast(T, x)` read as `x` (unless `T`
    names something imported only for type checking, or puts a string in a union: then evaluating it fails)."""

    def __init__(self) -> None:
        self._in_function = 0
        self._cast_names: set[str] = set()
        self._lazy_annotations = False
        self._checking_only: set[str] = set()

    def visit_Module(self, node: ast.Module) -> ast.AST:
        bound, checking = set(), set()
        for statement in node.body:
            if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
                self._lazy_annotations |= any(alias.name == "annotations" for alias in statement.names)
            if isinstance(statement, ast.ImportFrom) and statement.module == "typing":
                self._cast_names |= {alias.asname or alias.name for alias in statement.names if alias.name == "cast"}
            if _type_checking(statement):
                checking |= {name for inner in ast.walk(statement) for name in _bound_by(inner)}
            else:
                bound |= _bound_by(statement)
        self._checking_only = checking - bound
        return self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return self._function(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        if self._lazy_annotations:
            node.returns = None
            for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg,
                        node.args.kwarg):
                if arg is not None:
                    arg.annotation = None
        self._in_function += 1
        try:
            return self.generic_visit(node)
        finally:
            self._in_function -= 1

    def generic_visit(self, node: ast.AST) -> ast.AST:
        """The node with its children read as run, a body left empty by that holding `pass`."""
        result = super().generic_visit(node)
        if isinstance(getattr(result, "body", None), list) and not result.body:  # type: ignore[attr-defined]
            result.body = [ast.Pass()]  # type: ignore[attr-defined]
        return result

    def visit_Expr(self, node: ast.Expr) -> ast.AST | None:
        """A constant standing alone (a docstring after a name it documents, `...`) does nothing when it runs."""
        return None if isinstance(node.value, ast.Constant) else self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> ast.AST | None:
        return None if all(alias.name == "typing" for alias in node.names) else node

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST | None:
        return None if node.module == "typing" else node

    def visit_If(self, node: ast.If) -> ast.AST | None:
        return None if _type_checking(node) else self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if not self._in_function:
            return self.generic_visit(node)  # a field of a dataclass or named tuple, say: runs as written
        if node.value is None:
            return node  # makes the name local to the function all the same
        assigned: ast.AST = self.visit(ast.Assign(targets=[node.target], value=node.value))
        return assigned

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        is_cast = (isinstance(func, ast.Name) and func.id in self._cast_names) or (
            isinstance(func, ast.Attribute) and func.attr == "cast"
            and isinstance(func.value, ast.Name) and func.value.id == "typing")
        if is_cast and len(node.args) == 2 and not node.keywords and _evaluates(node.args[0], self._checking_only):
            value: ast.AST = self.visit(node.args[1])
            return value
        return self.generic_visit(node)


def _type_checking(statement: ast.stmt) -> bool:
    """Whether `statement` is an `if TYPE_CHECKING:` block with no else: code no run executes."""
    if not isinstance(statement, ast.If) or statement.orelse:
        return False
    test = statement.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        and isinstance(test.value, ast.Name) and test.value.id == "typing")


def _bound_by(statement: ast.AST) -> set[str]:
    """The names a statement binds in its scope: imports, definitions, plain assignments."""
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in statement.names}
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, (ast.Assign, ast.AnnAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return {target.id for target in targets if isinstance(target, ast.Name)}
    return set()


def _evaluates(annotation: ast.expr, checking_only: set[str]) -> bool:
    """Whether a cast's type evaluates at run time as surely as a type checker reads it: a string is never
    evaluated, but a string in a `|` union fails, and so does a name imported only for type checking."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return True
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name) and node.id in checking_only:
            return False
        if isinstance(node, ast.BinOp) and any(isinstance(side, ast.Constant) and isinstance(side.value, str)
                                               for side in (node.left, node.right)):
            return False
    return True
