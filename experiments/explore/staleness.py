"""Which results still stand for the code: each file's commit against the code that decides its runs.

A result file counts what one commit's gate and harness did. After the library or the experiments change, the
file may no longer say what today's code does (a regression hides behind an old file), so before a claim is
made from the site, `python -m experiments.explore --stale` lists every result file whose code moved since it was
run (the explorations, the tamper corpus beside them, the scenario runs in the `scenarios` folder beside that),
and every hazard cell the hazard table declares that has no file yet; then the command that runs each stale file
again as it was run (`make rerun-stale` runs them).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.explore.hazards import ALL, HAZARDS, result_name

CODE = ("interlock", "experiments")  # what decides a run's outcome; results/, bench/, site/ and pipeline/ do not
NO_RUN_READS = ("experiments/explore/staleness.py",)  # this listing: no run's outcome depends on it
SHARED_JOURNAL_ONLY = "interlock/pg/"  # code only the runs on the PostgreSQL journal reach
TAMPER = "tamper.json"  # its corpus includes journals written by the PostgreSQL backend
SCENARIOS = "scenarios"  # beside the reliability folder: the scenario runs, on the journal each file names
RERUN = "run again: "  # how the listing opens each command that renews a stale file (`make rerun-stale` reads it)


@dataclass(frozen=True)
class Standing:
    """One result file: the commit it names, the files of `CODE` changed since (None: not known here), and the
    command that runs it again as it was run (None when the file does not say)."""

    name: str
    commit: str | None
    changed: tuple[str, ...] | None
    command: str | None


def standings(out: Path, repo: Path) -> list[Standing]:
    """Every `explore_*.json` and the tamper corpus in `out`, then every scenario run in the `scenarios` folder
    beside it, with the code changed between its commit and the work tree's HEAD that its runs reach (a run on the
    file journal never reaches the PostgreSQL journal's code). Scenario files are named from the results folder."""
    found, changed = [], {}  # many files share a commit: one diff each
    on_postgresql = {result_name(scenario, name, "postgresql") for name in HAZARDS for scenario in ALL} | {TAMPER}
    scenario_runs = sorted((out.parent / SCENARIOS).glob("*.json"))
    for path in [*sorted(out.glob("explore_*.json")), *out.glob(TAMPER), *scenario_runs]:
        stored = _stored(path)
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
        found.append(Standing(name, commit, moved, _command(stored, provenance)))
    return found


def _stored(path: Path) -> dict[str, Any]:
    """The file's top-level object; empty when the file cannot be read or holds something else."""
    try:
        stored = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return stored if isinstance(stored, dict) else {}


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
    """The lines `--stale` prints: one per result file, then the cells not run, then a command per stale file."""
    lines, again = [], []
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
        if standing.changed and standing.command is not None and standing.command not in again:
            again.append(standing.command)
    lines += [f"not run: {name}" for name in not_run(out)]
    return lines + [f"{RERUN}{command}" for command in again]


def _changed_since(commit: str, repo: Path) -> tuple[str, ...] | None:
    try:
        done = subprocess.run(["git", "-C", str(repo), "diff", "--name-only", commit, "HEAD", "--", *CODE,
                               *(f":(exclude){path}" for path in NO_RUN_READS)],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return tuple(line for line in done.stdout.splitlines() if line)
