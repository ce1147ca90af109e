"""Benchmark numbers as `make bench` stored them in results/bench/<name>.json, laid out as tables with units.

A small description per file gives its title, why it is measured, figures that pivot into a table (one row per
worker count, say) and the numbers worth a chart; any key the description does not name is still shown, its unit
read from its name (`_ms`, `_seconds`, `_per_second`, `_ratio`, ...). A file with no description is shown the
same way under its own name, so new benchmark files and new keys need no change here.

A file's `targets` (figure name -> measured, target such as ">= 1.5", met) are judged again here from the measured
figure and the stated relation; where the stored `met` says otherwise, the page and `make results` say so."""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .load import Node, quote, read


@dataclass(frozen=True)
class Description:
    """How one benchmark file is introduced and laid out."""

    title: str
    why: str
    pivots: tuple[tuple[str, str, str], ...] = ()  # (table title, key regex with groups `col` and `row`, row word)
    charts: tuple[tuple[str, str], ...] = ()  # (table title, column regex): the columns drawn as bars
    counts: str = ""  # what a nested figure's numeric keys count ("workers"), said after each number
    stated: tuple[tuple[str, str], ...] = ()  # (figure, JSON type): the figures a page states in its prose


DESCRIPTIONS: dict[str, Description] = {
    "gate": Description(
        "The gate's own cost",
        "What gating a call adds over calling the service directly, what a journal append costs as the journal "
        "grows, how many effects per second 1, 4 and 16 workers make through one journal (counted while every "
        "worker runs; the scaling over the whole run and the share of it the last workers' cool-down took stand "
        "beside it), how long opening and verifying a million-entry journal takes, what the claim files of those "
        "runs' settled effects take on disk against their journals before and after `retire_settled` deleted them, "
        "and how soon a SIGKILLed holder's claim is free. Every JSONL effect creates its claim's file, so the JSONL "
        "rates move with how long creating a file took on the machine (provenance machine file create, taken as "
        "the run began): where that is slow, one worker loses more than sixteen, and the scaling reads higher."),
    "append_phases": Description(
        "Where a shared JSONL append spends its CPU",
        "The CPU per gated effect in each phase of the JSONL journal, for one worker, for 16 workers on one journal "
        "and for 16 each on a journal of their own, with how many of other writers' lines a worker skims (passes "
        "over, learning only where the chain ends and which effects they name) and how many lines it checks and "
        "folds one by one, per effect, and the CPU spent taking the journal's lock and the effect's claim: the "
        "difference between the last two set-ups is what sharing one journal costs, phase by phase.",
        pivots=(("by set-up", r"^(?P<row>shared_1|shared_16|own_16)_(?P<col>.+)$", "set-up"),)),
    "pg": Description(
        "PostgreSQL journal and claims beside the JSONL journal",
        "Effects per second as concurrent workers grow, on each journal backend under one durability contract (a "
        "send on disk before its request, every other entry with the next flush), counted while every worker runs "
        "(the scaling over the whole run, the last workers' cool-down included, and the share of the run that "
        "cool-down took stand beside it), the CPU time the workers spend "
        "per effect and, apart, the PostgreSQL server's (every server process over the whole run, its sessions' "
        "start-up and the warm-up effects included), and how soon another worker takes over an effect whose "
        "holder was SIGKILLed or stopped. The renewal cost is the share of 4 workers' effects per second that "
        "claims lasting 1.5 s, renewed every 0.5 s, lose against claims lasting 30 s. The figures of 16 workers "
        "own databases are 16 workers each on a database "
        "of its own on the same server, sharing nothing but the server and the cores: about the most 16 workers "
        "get from this machine, so the ceiling of any shared journal's scaling here. The JSONL rates move with how "
        "long creating a file took on the machine (provenance machine file create, taken as the run began), since "
        "every JSONL effect creates its claim's file: where that is slow, PostgreSQL against JSONL reads higher.",
        pivots=(("by concurrent workers", r"^(?P<col>.+)_(?P<row>\d+)_workers$", "workers"),),
        charts=(("by concurrent workers", r"effects_per_second"),)),
    "peers": Description(
        "Interlock beside DBOS Transact and Powertools idempotency",
        "The same effect through each system on its real local backend, one worker process per concurrent worker: "
        "the time per effect and effects per second. The decorator's figure beside DBOS is the median of all its "
        "one-worker effects over DBOS's, the rounds pooled; each round's own ratio stands beside it, so its median "
        "may differ.",
        charts=(("systems", r"per_second"),), counts="workers"),
    "pipeline_judge": Description(
        "Re-judging cells",
        "How fast the pipeline re-derives every column of a cell from its raw artifacts alone."),
    "settle_ratio": Description(
        "Crash to settled: interlock against hand_check",
        "Median seconds from the crash marker to the settling worker's outcome, per fault, on the offline "
        "stand-ins; the ratio is interlock's median over hand_check's.",
        charts=(("rows", r"_median_s$"),)),
    "unfenced": Description(
        "Where no fence stops a stray request",
        "Seconds from a worker's SIGKILL right before its request to the settled record, where the service has "
        "no fence and recovery must wait out the declared in-flight bound, and the width of the confirm-to-request "
        "window a stopped sender can still send into.",
        stated=(("confirm_to_request_median_ms", "number"), ("confirm_to_request_p99_ms", "number"),
                ("confirm_to_request_samples", "integer"), ("trials", "integer"), ("in_flight_bound_s", "number"),
                ("excess_over_bound_median_s", "number"), ("excess_over_bound_max_s", "number"))),
    "site_build": Description(
        "Building this site",
        "Judging, rendering and mkdocs on the committed results, and on a synthetic set of many scenarios."),
    "standins": Description(
        "The local stand-ins",
        "Round-trip times of the real client libraries against the local stand-ins, which bound how fast an "
        "offline run can be."),
}

# (name regex, unit, how to format): the first that matches a key's last part gives its unit.
_UNITS: tuple[tuple[str, str], ...] = (  # the first that matches: a rate first, whatever setting its name also gives
    (r"per_cpu_second", "per CPU s"),
    (r"per_second", "per s"),
    (r"(^|_)ms($|_)", "ms"),
    (r"(^|_)us($|_)", "µs"),
    (r"(^|_)(seconds|s)($|_)", "s"),
    (r"(^|_)bytes($|_)", "bytes"),
    (r"(^|_)mb($|_)", "MB"),
    (r"ratio|_over_|_vs_|scaling", "×"),
)


@dataclass(frozen=True)
class Table:
    """One table of a benchmark: formatted cells, and the numbers behind the columns worth a chart."""

    title: str
    head: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    chart: Mapping[str, tuple[float | None, ...]]  # column title -> one value per row, for the bars
    chart_unit: str

    @property
    def shown(self) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
        """Head and rows as the page lays them out: a table of many more columns than rows turned, a column per
        row and a row per figure, so that a laptop shows it whole."""
        if len(self.head) - 1 <= 3 * len(self.rows):
            return self.head, self.rows
        head = ("figure",) + tuple(f"{self.head[0]} {row[0]}" for row in self.rows)
        return head, tuple((title,) + tuple(row[n] for row in self.rows) for n, title in enumerate(self.head[1:], 1))


_RELATION = re.compile(r"^(>=|<=|<|>) ?(-?[0-9]+(?:\.[0-9]+)?)$")
_HOLDS = {">=": operator.ge, "<=": operator.le, "<": operator.lt, ">": operator.gt}
_WORDS = {">=": "at least", "<=": "at most", "<": "under", ">": "over"}


@dataclass(frozen=True)
class Target:
    """One target a benchmark file states, judged again from the figure measured beside it."""

    figure: str  # the name of the figure the target is on
    measured: float
    target: str  # the relation and the bound, as stored: ">= 1.5"
    words: str  # the same in words: "at least 1.5"
    met: bool  # judged here
    stored_met: bool  # as the file says
    rounds: tuple[float, ...] = ()  # the figure of each round it was measured over, when the file gives them
    rounds_met: int = 0  # how many of them meet the target
    nothing_shared: tuple[str, float] | None = None  # the figure the run measured with nothing shared, and its value

    @property
    def named(self) -> str:
        """The figure's name in words, as the benchmark's own tables name it ("verify entries per cpu second")."""
        return label(self.figure)

    @property
    def shown(self) -> str:
        """The measured figure as the tables show figures, with the unit its name states."""
        return value(self.measured) + _suffix(self.figure)

    @property
    def disagrees(self) -> bool:
        """The file's own verdict on this target is not the one its figures give."""
        return self.met != self.stored_met

    @property
    def each_round(self) -> str:
        """Each round's figure as the tables show figures, the unit once after the last; empty when there are none."""
        return ", ".join(value(r) for r in self.rounds) + _suffix(self.figure) if self.rounds else ""

    @property
    def unshared(self) -> str:
        """The figure measured with nothing shared, as the tables show figures, with how it was set up in words
        ("1.67× (own journals)"); empty when the run measured none."""
        if self.nothing_shared is None:
            return ""
        name, measured = self.nothing_shared
        how = name.removeprefix(f"{self.figure}_").replace("_", " ")
        return f"{value(measured)}{_suffix(self.figure)} ({how})"

    @property
    def split(self) -> bool:
        """Some rounds meet the target and some do not: the verdict is the run's, not one every round gives."""
        return 0 < self.rounds_met < len(self.rounds)


@dataclass(frozen=True)
class Benchmark:
    """One benchmark file, laid out."""

    name: str
    source: str
    title: str
    why: str
    tables: tuple[Table, ...]
    targets: tuple[Target, ...] = ()
    cores: int | None = None  # of the machine the file was measured on
    stated: Mapping[str, str] = field(default_factory=dict)  # the figures a page states in words, formatted

    def disagreements(self) -> list[str]:
        """One line per target whose stored verdict the measured figure contradicts."""
        return [f"{self.source}: targets.{t.figure}: stored met {str(t.stored_met).lower()}, but {value(t.measured)} "
                f"{t.target} {'holds' if t.met else 'does not hold'}" for t in self.targets if t.disagrees]


def unit(key: str) -> str:
    """The unit a figure's name announces; empty for counts and words."""
    return next((u for pattern, u in _UNITS if re.search(pattern, key)), "")


_UNIT_WORDS = {"ms": {"ms"}, "µs": {"us"}, "s": {"s", "seconds"}, "bytes": {"bytes"}, "MB": {"mb"}}
_MEASURES = {"ms": "time", "µs": "time", "s": "time", "bytes": "size", "MB": "size"}  # a key that is only its unit


def label(key: str) -> str:
    """A key as words, its unit in brackets once ("gated call median (ms)")."""
    found = unit(key)
    words = [w for w in key.replace("_", " ").split(" ") if w not in _UNIT_WORDS.get(found, set())]
    return f"{' '.join(words) or _MEASURES.get(found, key)} ({found})" if found else " ".join(words)


def value(item: Any) -> str:
    """One figure as text: yes/no for flags, thousands grouped, lists joined."""
    if isinstance(item, bool):
        return "yes" if item else "no"
    if isinstance(item, int):
        return f"{item:,}"
    if isinstance(item, float):
        shown = f"{item:,.3f}".rstrip("0").rstrip(".") if abs(item) < 1000 else f"{item:,.0f}"
        return "0" if shown == "-0" else shown
    if item is None:
        return "none"
    if isinstance(item, list):
        return ", ".join(value(i) for i in item)
    return str(item)


def _suffix(key: str) -> str:
    """The unit a figure's name states, as it follows a number: "1.5×", "0.5 s"."""
    found = unit(key)
    return found if found in ("", "×") else f" {found}"


_COUNTED = re.compile(r"[0-9]+")  # a key that counts something, "4" (workers): ASCII digits ("²" is no count)


def _numeric_order(digits: str) -> tuple[int, str]:
    """Where a key of decimal digits sorts: as a number, compared as digits (int() stops at 4,300 of them)."""
    number = digits.lstrip("0") or "0"
    return len(number), number


def _flat(obj: Mapping[str, Any], prefix: str = "", counts: str = "") -> dict[str, Any]:
    """Nested objects as one level, keys joined with a space ("effects_per_second 4"); numeric keys in numeric
    order, each followed by what it counts when that is given ("effects_per_second 4 workers")."""
    out: dict[str, Any] = {}
    numeric = bool(prefix) and all(_COUNTED.fullmatch(key) for key in obj)
    for key, item in sorted(obj.items(), key=lambda pair: _numeric_order(pair[0])) if numeric else obj.items():
        name = f"{prefix}{key} {counts}" if numeric and counts else f"{prefix}{key}"
        if isinstance(item, Mapping):
            out.update(_flat(item, name + " ", counts))
        else:
            out[name] = item
    return out


def _numbers(column: list[Any]) -> tuple[float | None, ...]:
    return tuple(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None for v in column)


def _table(title: str, row_word: str, rows: Sequence[tuple[str, Mapping[str, Any]]], chart: str | None) -> Table:
    """Rows of flat figures as one table: a column per key any row has, in first-seen order."""
    keys = list(dict.fromkeys(k for _, figures in rows for k in figures))
    head = (row_word,) + tuple(label(k) for k in keys)
    body = tuple((name,) + tuple(value(f[k]) if k in f else "" for k in keys) for name, f in rows)
    drawn = [k for k in keys if chart and re.search(chart, k)]
    numbers = {label(k): _numbers([f.get(k) for _, f in rows]) for k in drawn}
    numbers = {k: v for k, v in numbers.items() if any(x is not None for x in v)}
    units = {unit(k) for k in drawn}
    return Table(title, head, body, numbers, units.pop() if len(units) == 1 else "")


def targets(file: Node) -> tuple[Target, ...]:
    """The targets a benchmark file states, each judged again from its measured figure and relation."""
    stated = file.opt_node("targets")
    if stated is None:
        return ()
    found = []
    for figure in stated.expect("object"):
        item = stated.at(figure)
        measured, relation = item.get("measured", "number"), item.get("target", "string")
        if not (match := _RELATION.match(relation)):
            raise item.at("target").bad(f"expected a relation and a number, such as '>= 1.5', got {quote(relation)}")
        sign, bound = match[1], float(match[2])
        each = item.opt_node("rounds")
        rounds = tuple(r.expect("number") for r in each.items()) if each is not None else ()
        found.append(Target(figure, measured, relation, f"{_WORDS[sign]} {value(bound)}{_suffix(figure)}",
                            _HOLDS[sign](measured, bound), item.get("met", "boolean"), rounds,
                            sum(_HOLDS[sign](r, bound) for r in rounds), _nothing_shared(file, item)))
    return tuple(found)


def _nothing_shared(file: Node, item: Node) -> tuple[str, float] | None:
    """The figure a target names as measured with nothing shared, and its value, read from the same file."""
    name = item.opt("nothing_shared", "string")
    if name is None:
        return None
    if not file.has(name):
        raise item.at("nothing_shared").bad(f"names {quote(name)}, a figure the file does not hold")
    return name, file.get(name, "number")


def _about(name: str) -> Description:
    """How a benchmark file is described: its own description, else one from its name."""
    return DESCRIPTIONS.get(name, Description(name.replace("_", " "), "As `make bench` stored it."))


def layout(name: str, data: Mapping[str, Any], source: str, judged: tuple[Target, ...] = (),
           cores: int | None = None, stated: Mapping[str, str] | None = None) -> Benchmark:
    """One benchmark file as tables: pivots first, then each list of rows and object of objects, then every other
    figure in one table of its own; its `judged` targets apart, not as stored, and the figures a page `stated`."""
    data = {k: v for k, v in data.items() if k != "targets"}
    about = _about(name)
    charts = dict(about.charts)
    scalars = {k: v for k, v in data.items() if not isinstance(v, (Mapping, list)) or
               (isinstance(v, list) and not any(isinstance(i, Mapping) for i in v))}
    tables: list[Table] = []
    for title, pattern, word in about.pivots:
        grid: dict[str, dict[str, Any]] = {}
        for key in list(scalars):
            if (match := re.match(pattern, key)):
                grid.setdefault(match["row"], {})[match["col"]] = scalars.pop(key)
        if grid:
            ordered = sorted(grid.items(), key=lambda item: (len(item[0]), item[0]))
            tables.append(_table(title, word, [(row, f) for row, f in ordered], charts.get(title)))
    for key, item in data.items():
        if isinstance(item, list) and any(isinstance(i, Mapping) for i in item):
            rows = [(" · ".join(str(v) for k, v in row.items() if isinstance(v, str)) or str(n), _flat(
                {k: v for k, v in row.items() if not isinstance(v, str)}, counts=about.counts))
                    for n, row in enumerate(item, 1)]
            tables.append(_table(key, "row", rows, charts.get(key)))
        elif isinstance(item, Mapping) and item and all(isinstance(v, Mapping) for v in item.values()):
            tables.append(_table(key, key.rstrip("s") or key, [(k, _flat(v, counts=about.counts))
                                                               for k, v in item.items()],
                                 charts.get(key)))
        elif isinstance(item, Mapping):
            scalars.update(_flat(item, key + " ", about.counts))
    if scalars:
        tables.append(Table("figures", ("figure", "value"), tuple((label(k), value(v)) for k, v in scalars.items()),
                            {}, ""))
    return Benchmark(name, source, about.title, about.why, tuple(tables), judged, cores, stated or {})


def benchmarks(folder: Path, shown: str = "results/bench") -> tuple[Benchmark, ...]:
    """Every results/bench/*.json, in name order; none is fine."""
    files = [(path, read(path)) for path in sorted(folder.glob("*.json"))] if folder.is_dir() else []
    return tuple(layout(path.stem, file.expect("object"), f"{shown}/{path.name}", targets(file), _cores(file),
                        _stated(path.stem, file)) for path, file in files)


def _stated(name: str, file: Node) -> dict[str, str]:
    """The figures a page states from this file in words, formatted; each must be there, of its type."""
    return {figure: value(file.get(figure, kind)) for figure, kind in _about(name).stated}


def _cores(file: Node) -> int | None:
    """The core count of the machine a benchmark file was measured on, as its provenance records it."""
    provenance = file.opt_node("provenance")
    machine = provenance.opt_node("machine") if provenance is not None else None
    cores = machine.opt_node("cores") if machine is not None else None
    return cores.count(1) if cores is not None else None
