"""The reliability runs: the explorer's seeded crash schedules per scenario and the tamper corpus's mutant counts,
read from results/reliability/*.json with every access typed (bad input names the file and JSON path)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .load import Node, read


@dataclass(frozen=True)
class Example:
    """One violating schedule, with the command that runs it again."""

    seed: int
    replay: str
    schedule: str  # the explorer's own description (untrusted text)
    detail: str  # what broke (untrusted text)
    in_window: bool


@dataclass(frozen=True)
class Violations:
    """One violation kind of one system: schedules that broke it, how many inside the check-to-send window."""

    kind: str
    count: int
    in_window: int
    examples: tuple[Example, ...]


@dataclass(frozen=True)
class Explored:
    """One system's schedules in one exploration."""

    system: str
    schedules: int
    held: int
    violated: int
    violated_in_window: int
    violations: tuple[Violations, ...]  # kinds with a count, in the file's kind order


@dataclass(frozen=True)
class Exploration:
    """One explore_<scenario>.json."""

    scenario: str
    source: str
    generated: str
    command: str
    services: str
    decider: str
    window: str
    kinds: tuple[tuple[str, str], ...]  # (kind, what it means), in file order
    systems: tuple[Explored, ...]


@dataclass(frozen=True)
class MutantKind:
    """One kind of journal damage: mutants made, flagged without and with a signature, and missed."""

    kind: str
    what: str
    generated: int
    flagged_unsigned: int
    flagged_signed: int
    undetectable_unsigned: int  # documented as out of reach without a signature
    missed: int


@dataclass(frozen=True)
class Tamper:
    """The tamper corpus summary (tamper.json)."""

    source: str
    generated: str
    covers: str
    kinds: tuple[MutantKind, ...]
    totals: MutantKind
    misses: int
    torn_tail: tuple[tuple[str, int], ...]
    sigkill_mid_append: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Reliability:
    """Every committed reliability file; both parts may be missing."""

    explorations: tuple[Exploration, ...]
    tamper: Tamper | None


def _example(node: Node) -> Example:
    return Example(node.get("seed", "integer"), node.get("replay", "string"), node.opt("schedule", "string", ""),
                   node.opt("detail", "string", ""), node.opt("in_window", "boolean", False))


def _explored(system: str, node: Node) -> Explored:
    kinds = node.at("violations")
    found = []
    for kind in kinds.expect("object"):
        item = kinds.at(kind)
        if item.get("count", "integer"):
            found.append(Violations(kind, item.get("count", "integer"), item.get("in_window", "integer"),
                                    tuple(_example(e) for e in item.at("first").items())))
    return Explored(system, node.get("schedules", "integer"), node.get("held", "integer"),
                    node.get("violated", "integer"), node.get("violated_in_window", "integer"), tuple(found))


def exploration(path: Path, shown: str) -> Exploration:
    """One explorer summary file."""
    top = read(path)
    kinds = top.at("violation_kinds")
    systems = top.at("systems")
    return Exploration(
        scenario=top.get("scenario", "string"), source=shown, generated=top.get("generated", "string"),
        command=top.get("command", "string"), services=top.opt("services", "string", "not recorded"),
        decider=top.opt("decider", "string", "not recorded"), window=top.opt("window", "string", ""),
        kinds=tuple((k, kinds.get(k, "string")) for k in kinds.expect("object")),
        systems=tuple(_explored(s, systems.at(s)) for s in systems.expect("object")),
    )


def _mutants(node: Node, kind: str, what: str) -> MutantKind:
    return MutantKind(kind, what, node.get("generated", "integer"), node.get("flagged_unsigned", "integer"),
                      node.get("flagged_signed", "integer"), node.get("documented_undetectable_unsigned", "integer"),
                      node.get("missed", "integer"))


def _counts(node: Node | None) -> tuple[tuple[str, int], ...]:
    if node is None:
        return ()
    return tuple((key, node.get(key, "integer")) for key in node.expect("object"))


def tamper(path: Path, shown: str) -> Tamper:
    """The tamper corpus summary file."""
    top = read(path)
    kinds = tuple(_mutants(k, k.get("kind", "string"), k.get("what", "string")) for k in top.at("kinds").items())
    return Tamper(
        source=shown, generated=top.get("generated", "string"), covers=top.opt("covers", "string", ""),
        kinds=kinds, totals=_mutants(top.at("totals"), "all", "every kind"), misses=len(top.at("misses").items()),
        torn_tail=_counts(top.opt_node("torn_tail")), sigkill_mid_append=_counts(top.opt_node("sigkill_mid_append")),
    )


def reliability(folder: Path, shown: str = "results/reliability") -> Reliability:
    """The explorer files (explore_<scenario>.json, in name order) and tamper.json found in `folder`."""
    found = sorted(folder.glob("explore_*.json")) if folder.is_dir() else []
    runs = tuple(exploration(path, f"{shown}/{path.name}") for path in found)
    tamper_file = folder / "tamper.json"
    return Reliability(runs, tamper(tamper_file, f"{shown}/tamper.json") if tamper_file.is_file() else None)
