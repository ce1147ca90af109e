"""Which reliability results still stand for the code: each file's commit against the code that decides its runs.

A result file counts what one commit's gate and harness did. After the library or the experiments change, the
file may no longer say what today's code does (a regression hides behind an old file), so before a claim is
made from the reliability page, `python -m experiments.explore --stale` lists every file whose code moved since
it was run, and every hazard cell the hazard table declares that has no file yet.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from experiments.explore.hazards import ALL, HAZARDS, result_name

CODE = ("interlock", "experiments")  # what decides a run's outcome; results/, bench/, site/ and pipeline/ do not
SHARED_JOURNAL_ONLY = "interlock/pg/"  # code only the runs on the PostgreSQL journal reach


@dataclass(frozen=True)
class Standing:
    """One result file: the commit it names, and the files of `CODE` changed since (None: not known here)."""

    name: str
    commit: str | None
    changed: tuple[str, ...] | None


def standings(out: Path, repo: Path) -> list[Standing]:
    """Every `explore_*.json` in `out`, with the code changed between its commit and the work tree's HEAD that its
    runs reach (a file-journal run never reaches the PostgreSQL journal's code)."""
    found, changed = [], {}  # many files share a commit: one diff each
    on_postgresql = {result_name(scenario, name, "postgresql") for name in HAZARDS for scenario in ALL}
    for path in sorted(out.glob("explore_*.json")):
        try:
            commit = json.loads(path.read_text())["provenance"]["commit"]
        except (OSError, ValueError, KeyError, TypeError):
            commit = None
        if isinstance(commit, str) and commit not in changed:
            changed[commit] = _changed_since(commit, repo)
        moved = changed.get(commit)
        if moved is not None and path.name not in on_postgresql:
            moved = tuple(f for f in moved if not f.startswith(SHARED_JOURNAL_ONLY))
        found.append(Standing(path.name, commit, moved))
    return found


def not_run(out: Path) -> list[str]:
    """The result files the hazard table declares (every scenario and journal a hazard runs on) that are missing."""
    declared = [result_name(scenario, hazard.name, journal) for hazard in HAZARDS.values()
                for scenario in ALL if scenario in hazard.scenarios for journal in hazard.journals]
    return [name for name in declared if not (out / name).exists()]


def report(out: Path, repo: Path) -> list[str]:
    """The lines `--stale` prints: one per result file, then the cells not run."""
    lines = []
    for standing in standings(out, repo):
        commit = (standing.commit or "no commit")[:8]
        if standing.changed is None:
            state = "cannot tell (the commit is not in this clone)"
        elif not standing.changed:
            state = "up to date"
        else:
            state = f"{len(standing.changed)} file(s) changed since: {', '.join(standing.changed[:4])}" + (
                ", ..." if len(standing.changed) > 4 else "")
        lines.append(f"{standing.name}  {commit}  {state}")
    lines += [f"not run: {name}" for name in not_run(out)]
    return lines


def _changed_since(commit: str, repo: Path) -> tuple[str, ...] | None:
    try:
        done = subprocess.run(["git", "-C", str(repo), "diff", "--name-only", commit, "HEAD", "--", *CODE],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return tuple(line for line in done.stdout.splitlines() if line)
