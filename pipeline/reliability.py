"""The reliability runs: the explorer's seeded schedules per scenario and hazard, and the tamper corpus's mutant
counts, read from results/reliability/*.json with every access typed (bad input names the file and JSON path).

Violation kinds are shown in groups named for what they count: wrong data at the service is one thing, a wrong
report another, and an unresolved send in a system's own record (a record-keeping finding) a third."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from .commits import moved_to
from .load import Node, quote, read
from .machine import cores_said, load_said
from .model import Disagreement
from .recount import Counted, Recount, Tally, history_of, recount


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
    violated: int  # schedules that broke a rule, the action outside the check-to-send window
    violated_in_window: int  # schedules that broke a rule, the action inside that window
    violations: tuple[Violations, ...]  # every kind of the file, in the file's kind order, zero counts included

    def of(self, kind: str) -> Violations | None:
        """This system's count of one violation kind."""
        return next((v for v in self.violations if v.kind == kind), None)


_NOT_IN_ID = re.compile(r"[^a-z0-9_]+")

# (group title, kinds, column title per kind): each column named for what it counts.
KIND_GROUPS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("wrong data at the service", (("duplicate_effect", "landed more than once"),
                                   ("after_premise_moved", "landed after its fact changed"),
                                   ("after_lease_ended", "landed after its authority ended"))),
    ("wrong report", (("answer_wrong", "reported the wrong answer"),
                      ("receipt_disagrees", "receipt disagrees with the service"),
                      ("answer_cannot_say", "ended with no definite answer"),
                      ("unknown_outcome", "status outside the vocabulary"))),
    ("record-keeping", (("unresolved_dispatch", "send left unresolved in its own record"),
                        ("receipt_invalid", "receipt does not verify"),
                        ("receipt_cannot_say", "receipt cannot say whether it happened"),
                        ("damage_accepted", "opened a journal cut into what it had flushed"))),
    # a worker of the system under test that dies of an error or hangs leaves its job without an answer: the
    # system's failure (a failure of the harness itself is played again, `harness_retried`, and never counted)
    ("the worker itself", (("worker_error", "died of an error or timed out"),)),
    ("measurement", (("service_unsettled", "a write still in flight when the service was read"),)),
)


@dataclass(frozen=True)
class Retried:
    """One run the harness played once more after failing itself: its first failure (untrusted text)."""

    seed: int
    system: str
    replay: str
    first_failure: str


@dataclass(frozen=True)
class RunAt:
    """The code a result file was made by and the claims its workers held, as its provenance records them."""

    commit: str
    dirty: bool  # the work tree had changes the commit does not hold
    claim_ttl_seconds: float | None = None
    claim_where: str = ""  # whose claims those are (untrusted text)
    moved_to: str | None = None  # the code at the end of a run that started on other code (untrusted text)
    load: tuple[float, float] | None = None  # the machine's load average at the run's start and end
    cores: int | None = None  # the machine's cores, beside which the load reads

    @property
    def short(self) -> str:
        """The commit as git abbreviates it."""
        return self.commit[:8]


# What a run the hazard's aspect did not touch went through, in the words of that aspect.
UNTOUCHED = {"in_flight": "no kill or recoverer while its request waited", "interrupt": "no worker held",
             "journal_cut": "no cut drawn"}


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
    hazard: str = "crash"  # the one hazard every schedule of the file draws
    hazard_what: str = ""
    journal: str = "jsonl"
    history_check: str | None = None  # the command that re-counts the file from its stored history
    # what the hazard did, per aspect: ("system: what happened", runs), e.g. a held worker reached or not
    hazard_effects: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = ()
    planned: int | None = None  # the schedules the run set out to try, when it stopped at a deadline before them
    retried: tuple[Retried, ...] = ()  # runs the harness played twice because it failed itself the first time
    run_at: RunAt | None = None  # the code and claim settings it ran with, when its provenance records them
    counted_at: RunAt | None = None  # the code whose explorer counted the stored figures again after the run
    recounted: str | None = None  # the history the judge counted the figures from; None: the stored ones are shown
    # where the service's fence is drawn per schedule: per fence (in words), each system's tally, in system order
    fences: tuple[tuple[str, tuple[tuple[str, Tally], ...]], ...] = ()
    disagreements: tuple[Disagreement, ...] = ()  # stored counts that differ from the judge's

    @property
    def anchor(self) -> str:
        """The id of this file's section on the reliability page, made of its scenario, hazard and journal."""
        return "explore_" + _NOT_IN_ID.sub("_", f"{self.scenario}_{self.hazard}_{self.journal}".lower()).strip("_")

    def groups(self) -> list[tuple[str, list[tuple[str, str, str]]]]:
        """The file's kinds in the page's groups, as (group, [(kind, column title, what it means)]); a kind this
        module does not know goes in a last group under its own name."""
        meaning = dict(self.kinds)
        known = {kind for _, kinds in KIND_GROUPS for kind, _ in kinds}
        shown = [(group, [(k, title, meaning[k]) for k, title in kinds if k in meaning])
                 for group, kinds in KIND_GROUPS]
        other = [(k, k.replace("_", " "), meaning[k]) for k in meaning if k not in known]
        return [(g, ks) for g, ks in shown + [("other", other)] if ks]

    def hazard_effects_in_full(self) -> tuple[tuple[str, tuple[tuple[str, int], ...]], ...]:
        """What the hazard did, per aspect, with each system's runs the aspect did not touch counted too (a slow
        write whose schedule killed no one while it waited), so that every system's counts add up to its runs."""
        runs = {s.system: s.schedules for s in self.systems}
        shown = []
        for aspect, counts in self.hazard_effects:
            touched: Counter[str] = Counter()
            for what, n in counts:
                touched[what.split(": ", 1)[0]] += n
            rest = [(f"{system}: {UNTOUCHED.get(aspect, 'not struck')}", runs[system] - touched[system])
                    for system in runs if runs[system] > touched[system]]
            shown.append((aspect, tuple(sorted([*counts, *rest]))))
        return tuple(shown)


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
    run_at: RunAt | None = None


@dataclass(frozen=True)
class Reliability:
    """Every committed reliability file; both parts may be missing."""

    explorations: tuple[Exploration, ...]
    tamper: Tamper | None

    def disagreements(self) -> list[Disagreement]:
        """Every stored count of every exploration that differs from the judge's count of its history."""
        return [d for run in self.explorations for d in run.disagreements]

    def by_scenario(self) -> list[tuple[str, list[Exploration]]]:
        """The explorations grouped by scenario, in file order: one overview table per scenario, a column per
        hazard and journal, the file journal's first and the plain crash schedules first on each journal."""
        grouped: dict[str, list[Exploration]] = {}
        for run in self.explorations:
            grouped.setdefault(run.scenario, []).append(run)
        return [(scenario, sorted(runs, key=lambda r: (r.journal != "jsonl", r.hazard != "crash")))
                for scenario, runs in grouped.items()]


def _example(node: Node) -> Example:
    return Example(node.get("seed", "integer"), node.get("replay", "string"), node.opt("schedule", "string", ""),
                   node.opt("detail", "string", ""), node.opt("in_window", "boolean", False))


def _explored(system: str, node: Node) -> Explored:
    """One system's stored counts, refused unless one tally of its runs could give them: each schedule held or broke
    a rule outside or inside the check-to-send window, and a kind counts some of those schedules."""
    schedules, held = node.at("schedules").count(), node.at("held").count()
    violated, in_window = node.at("violated").count(), node.at("violated_in_window").count()
    if held + violated + in_window != schedules:
        raise node.at("schedules").bad(f"{quote(schedules)} schedules, but held {quote(held)}, violated "
                                       f"{quote(violated)} and violated_in_window {quote(in_window)} add up to "
                                       f"{quote(held + violated + in_window)}")
    kinds = node.at("violations")
    found = []
    for kind in kinds.expect("object"):
        item = kinds.at(kind)
        counts = {field: item.at(field).count() for field in ("count", "in_window")}
        for field, count in counts.items():
            if count > schedules:
                raise item.at(field).bad(f"{quote(count)} schedules, more than the {quote(schedules)} run")
        found.append(Violations(kind, counts["count"], counts["in_window"],
                                tuple(_example(e) for e in item.at("first").items())))
    return Explored(system, schedules, held, violated, in_window, tuple(found))


def _effects(node: Node | None) -> tuple[tuple[str, tuple[tuple[str, int], ...]], ...]:
    if node is None:
        return ()
    return tuple((aspect, _counts(node.at(aspect))) for aspect in node.expect("object"))


def exploration(path: Path, shown: str) -> Exploration:
    """One explorer summary file, its figures counted again from its stored history when the history is there."""
    return explored(read(path), path, shown)


def explored(top: Node, path: Path, shown: str) -> Exploration:
    """`exploration` of a summary file already read."""
    kinds = top.at("violation_kinds")
    systems = top.at("systems")
    hazard = top.at("hazard")  # which fault the schedules drew, on which journal: the page's heading for the counts
    history = top.opt_node("history")
    seeds = top.opt_node("seeds")
    stopped = seeds is not None and seeds.opt("stopped_at_deadline", "boolean", False)
    run = Exploration(
        scenario=top.get("scenario", "string"), source=shown, generated=top.get("generated", "string"),
        command=top.get("command", "string"), services=top.opt("services", "string", "not recorded"),
        decider=top.opt("decider", "string", "not recorded"), window=top.opt("window", "string", ""),
        kinds=tuple((k, kinds.get(k, "string")) for k in kinds.expect("object")),
        systems=tuple(_explored(s, systems.at(s)) for s in systems.expect("object")),
        hazard=hazard.get("name", "string"), hazard_what=hazard.opt("what", "string", ""),
        journal=hazard.get("journal", "string"),
        history_check=history.opt("check", "string") if history else None,
        hazard_effects=_effects(top.opt_node("hazard_effects")),
        planned=seeds.at("planned").count() if seeds is not None and stopped else None,
        retried=_retried(top.opt_node("harness_retried")),
        run_at=run_at(top.opt_node("provenance")),
        counted_at=_counted_at(top.opt_node("counted")),
    )
    stored_history = history_of(path)
    if not stored_history.is_file():
        return run
    if history is not None and history.opt("sha256", "string") is not None and \
            hashlib.sha256(stored_history.read_bytes()).hexdigest() != history.get("sha256", "string"):
        raise history.at("sha256").bad(f"the history beside the file, {stored_history.name}, is not the one it was "
                                       "counted from (its sha256 differs)")
    counted = recount(stored_history, str(Path(shown).parent / "history" / stored_history.name))
    return replace(run, systems=_counted_systems(run, counted), retried=tuple(Retried(*r) for r in counted.retried),
                   hazard_effects=tuple((aspect, tuple(said.items())) for aspect, said in
                                        counted.hazard_effects.items()),
                   recounted=counted.history, disagreements=_differences(run, counted),
                   fences=_by_fence(run, counted))


# The fences a schedule of the ledger draws, in words and in the order the page lists them.
FENCES = {"none": "no fence", "epoch": "the claim epoch",
          "version": "the decided version", "dedupe": "a dedupe on the effect id"}


def _by_fence(run: Exploration, counted: Recount) -> tuple[tuple[str, tuple[tuple[str, Tally], ...]], ...]:
    """Each system's runs by the fence its schedules drew, in the file's order of systems; empty where the
    schedules draw none."""
    drawn = {name for tallies in counted.fences.values() for name in tallies}
    names = [name for name in dict.fromkeys([*(s.system for s in run.systems), *counted.systems]) if name in drawn]
    order = sorted(counted.fences, key=lambda fence: (list(FENCES).index(fence) if fence in FENCES else len(FENCES),
                                                       fence))
    return tuple((FENCES.get(fence, fence), tuple((name, counted.fences[fence].get(name, Tally())) for name in names))
                 for fence in order)


def _differences(stored: Exploration, counted: Recount) -> tuple[Disagreement, ...]:
    """Every count the file stores (per system, per violation kind, per hazard aspect, the runs the harness played
    twice) that differs from the judge's count of its history; a count the file lacks is stored as 0."""
    why, cell = f"counted again from {counted.history}", f"{stored.hazard} ({stored.journal} journal)"
    pairs: list[tuple[str, str, object, object]] = []  # (system, column, stored, derived)
    theirs_by = {s.system: s for s in stored.systems}
    for name in dict.fromkeys([*theirs_by, *counted.systems]):
        mine, theirs = counted.systems.get(name, Counted()), theirs_by.get(name)
        pairs += [(name, column, getattr(theirs, column) if theirs else 0, getattr(mine, column))
                  for column in ("schedules", "held", "violated", "violated_in_window")]
        said = {v.kind: v for v in theirs.violations} if theirs else {}
        for kind in dict.fromkeys([*said, *mine.counts]):
            pairs += [(name, f"violations.{kind}.count", said[kind].count if kind in said else 0, mine.counts[kind]),
                      (name, f"violations.{kind}.in_window", said[kind].in_window if kind in said else 0,
                       mine.in_window[kind])]
    pairs.append(("harness", "harness_retried (seed, system)", sorted((r.seed, r.system) for r in stored.retried),
                  sorted((seed, system) for seed, system, _, _ in counted.retried)))
    effects = {aspect: dict(counts) for aspect, counts in stored.hazard_effects}
    for aspect in dict.fromkeys([*effects, *counted.hazard_effects]):
        theirs_said, mine_said = effects.get(aspect, {}), counted.hazard_effects.get(aspect, {})
        pairs += [("hazard", f"hazard_effects.{aspect}[{what!r}]", theirs_said.get(what, 0), mine_said.get(what, 0))
                  for what in dict.fromkeys([*theirs_said, *mine_said])]
    return tuple(Disagreement(stored.source, cell, system, column, said, derived, why)
                 for system, column, said, derived in pairs if said != derived)


def _counted_systems(run: Exploration, counted: Recount) -> tuple[Explored, ...]:
    """The judge's counts per system, in the file's order of systems and of kinds (every kind, zero included)."""
    names = dict.fromkeys([*(s.system for s in run.systems), *counted.systems])
    kinds = list(dict.fromkeys([*(k for k, _ in run.kinds), *(k for c in counted.systems.values() for k in c.counts)]))
    systems = []
    for name in names:
        mine = counted.systems.get(name)
        if mine is None:
            continue
        found = tuple(Violations(kind, mine.counts[kind], mine.in_window[kind],
                                 tuple(Example(seed, replay, schedule, detail, window)
                                       for seed, replay, schedule, detail, window in mine.examples.get(kind, [])))
                      for kind in kinds)
        systems.append(Explored(name, mine.schedules, mine.held, mine.violated, mine.violated_in_window, found))
    return tuple(systems)


def run_at(provenance: Node | None) -> RunAt | None:
    """The commit and claim settings a result file's provenance records; None when it names no commit."""
    if provenance is None or (commit := provenance.opt("commit", "string")) is None:
        return None
    claim = provenance.opt_node("claim")
    return RunAt(commit, provenance.opt("commit_dirty", "boolean", False),
                 claim.opt("claim_ttl_seconds", "number") if claim is not None else None,
                 claim.opt("where", "string", "") if claim is not None else "", moved_to(provenance),
                 load_said(provenance), cores_said(provenance))


def _counted_at(counted: Node | None) -> RunAt | None:
    """The code whose explorer counted the file's history again after its run, when it says."""
    commit = counted.opt("commit", "string") if counted is not None else None
    return None if counted is None or commit is None else RunAt(commit, counted.opt("dirty", "boolean", False))


def _retried(node: Node | None) -> tuple[Retried, ...]:
    if node is None:
        return ()
    return tuple(Retried(r.get("seed", "integer"), r.get("system", "string"), r.get("replay", "string"),
                         r.get("first_failure", "string")) for r in node.items())


# Each count of a kind as tamper.json names it, and as MutantKind does.
_MUTANT_COUNTS = (("generated", "generated"), ("flagged_unsigned", "flagged_unsigned"),
                  ("flagged_signed", "flagged_signed"),
                  ("documented_undetectable_unsigned", "undetectable_unsigned"), ("missed", "missed"))


def _mutants(node: Node, kind: str, what: str) -> MutantKind:
    """One kind's counts (or the totals), refused unless each is a count of at most the mutants made."""
    counts = {attribute: node.at(field).count() for field, attribute in _MUTANT_COUNTS}
    for field, attribute in _MUTANT_COUNTS[1:]:
        if counts[attribute] > counts["generated"]:
            raise node.at(field).bad(f"{quote(counts[attribute])} mutants, more than the {quote(counts['generated'])} "
                                     "made")
    return MutantKind(kind, what, **counts)


def _counts(node: Node | None) -> tuple[tuple[str, int], ...]:
    if node is None:
        return ()
    return tuple((key, node.at(key).count()) for key in node.expect("object"))


def _adds_up(node: Node, kind: MutantKind) -> None:
    """Refuse a kind's counts that no corpus run could give: every mutant is flagged unsigned, documented out of
    reach unsigned, or missed, and one the signed check did not flag is missed."""
    if kind.flagged_unsigned + kind.undetectable_unsigned > kind.generated:
        raise node.bad(f"{kind.flagged_unsigned} flagged unsigned and {kind.undetectable_unsigned} documented out "
                       f"of reach add up to more than the {kind.generated} mutants made")
    if kind.missed < max(kind.generated - kind.flagged_unsigned - kind.undetectable_unsigned,
                         kind.generated - kind.flagged_signed):
        raise node.bad(f"missed {kind.missed} does not fit {kind.generated} mutants made, {kind.flagged_unsigned} "
                       f"flagged unsigned, {kind.undetectable_unsigned} documented, {kind.flagged_signed} flagged "
                       "signed")


def tamper(path: Path, shown: str) -> Tamper:
    """The tamper corpus summary file, refused unless each kind's counts fit together and the totals are their
    sums."""
    top = read(path)
    kinds = tuple(_mutants(k, k.get("kind", "string"), k.get("what", "string")) for k in top.at("kinds").items())
    for node, kind in zip(top.at("kinds").items(), kinds):
        _adds_up(node, kind)
    totals = _mutants(top.at("totals"), "all", "every kind")
    for field, attribute in _MUTANT_COUNTS:
        summed = sum(getattr(kind, attribute) for kind in kinds)
        if (total := getattr(totals, attribute)) != summed:
            raise top.at("totals").at(field).bad(f"{quote(total)} is not the kinds' sum, {summed}")
    listed = len(top.at("misses").items())
    if listed > totals.missed or (listed == 0) != (totals.missed == 0):
        raise top.at("misses").bad(f"{listed} miss(es) listed where {totals.missed} mutant(s) were missed: the file "
                                   "lists the first of its misses, so some when any was missed, and never more")
    return Tamper(
        source=shown, generated=top.get("generated", "string"), covers=top.opt("covers", "string", ""),
        kinds=kinds, totals=totals, misses=listed,
        torn_tail=_counts(top.opt_node("torn_tail")), sigkill_mid_append=_counts(top.opt_node("sigkill_mid_append")),
        run_at=run_at(top.opt_node("provenance")),
    )


def reliability(folder: Path, shown: str = "results/reliability") -> Reliability:
    """The explorer files (explore_<scenario>.json, in name order) and tamper.json found in `folder`."""
    found = sorted(folder.glob("explore_*.json")) if folder.is_dir() else []
    runs = tuple(exploration(path, f"{shown}/{path.name}") for path in found)
    tamper_file = folder / "tamper.json"
    return Reliability(runs, tamper(tamper_file, f"{shown}/tamper.json") if tamper_file.is_file() else None)
