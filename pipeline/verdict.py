"""Verdict sentences and "what this run shows" paragraphs, generated from the judged cells, never typed by hand."""

from __future__ import annotations

from statistics import median

from .model import Cell, FaultNote, SystemSummary
from .scenarios import GATE, Spec

_TIME_RATIO = 1.5  # settle times closer than this factor count as a tie on time


def _columns(spec: Spec) -> tuple[tuple[str, str], ...]:
    return (("invariant_held", spec.holds), ("answer_matches", "the reported answer"), ("can_prove", "the record"))


def _about(seconds: float) -> str:
    return f"about {round(seconds)}s" if seconds >= 1.5 else f"about {seconds:.1f}s"


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _ok(cell: Cell, column: str) -> bool:
    return getattr(cell, column) is True


def _rows(faults: list[str], n: int) -> str:
    return "in every fault" if len(faults) == n > 1 else f"on {_join(faults)}"


def _pair_sentence(spec: Spec, gate: str, base: str, pairs: list[tuple[Cell, Cell]]) -> str:
    """How a baseline compares with the gate, column by column and on time, over the faults both ran."""
    n = len(pairs)
    ties, trades, wins, losses = [], [], [], []
    for column, label in _columns(spec):
        g = sum(_ok(gc, column) for gc, _ in pairs)
        b = sum(_ok(bc, column) for _, bc in pairs)
        better = [gc.fault for gc, bc in pairs if _ok(gc, column) and not _ok(bc, column)]
        worse = [gc.fault for gc, bc in pairs if _ok(bc, column) and not _ok(gc, column)]
        if not better and not worse:
            ties.append(f"on {label} ({g}/{n} each)")
        elif g == b:  # as many faults won as lost: neither is ahead on this column
            trades.append(f"on {label} ({g}/{n} each; {gate} better {_rows(better, n)}, worse {_rows(worse, n)})")
        elif g > b:
            wins.append(f"on {label} ({g}/{n} against {b}/{n}; better {_rows(better, n)}"
                        + (f", worse {_rows(worse, n)})" if worse else ")"))
        else:
            losses.append(f"on {label} ({g}/{n} against {b}/{n}; worse {_rows(worse, n)}"
                          + (f", better {_rows(better, n)})" if better else ")"))
    parts = []
    if ties:
        parts.append(f"{base} ties {gate} {_join(ties)}")
    if trades:
        parts.append(f"{gate} and {base} trade faults {_join(trades)}")
    if wins:
        parts.append(f"{gate} beats {base} {_join(wins)}")
    if losses:
        parts.append(f"{gate} is worse than {base} {_join(losses)}")
    g_time = median(gc.seconds_to_settle for gc, _ in pairs)
    b_time = median(bc.seconds_to_settle for _, bc in pairs)
    times = f"{_about(g_time)} from crash to settled against {_about(b_time)}"
    if g_time > b_time * _TIME_RATIO:
        parts.append(f"{gate} is slower: {times}")
    elif b_time > g_time * _TIME_RATIO:
        parts.append(f"{gate} is faster: {times}")
    else:
        # name both: the sentence may open with the baseline, and the figures are the gate's first
        parts.append(f"they tie on time: {gate} {times} for {base}")
    scope = f"On the {n} fault(s) both ran" if n > 1 else f"On the one fault both ran ({pairs[0][0].fault})"
    return f"{scope}, " + "; ".join(parts) + "."


def _system_sentence(spec: Spec, summary: SystemSummary, mine: list[Cell]) -> str:
    violated = [c.fault for c in mine if not c.invariant_held]
    wrong = [c.fault for c in mine if c.answer_matches is False]
    unsure = [c.fault for c in mine if c.answer_matches is None]
    n = len(mine)
    if violated:
        text = f"{summary.system} violated the invariant in {len(violated)} of {n} fault(s) ({_join(violated)})"
    else:
        text = f"{summary.system} held the invariant in every fault it ran ({n})"
    if wrong:
        text += f"; its answer disagreed with {spec.holds} in {_join(wrong)}"
    if unsure:
        text += f"; it could not say whether the effect landed in {_join(unsure)}"
    return text + f"; it can prove what happened in {summary.can_prove}."


def verdict(spec: Spec, cells: tuple[Cell, ...], systems: tuple[str, ...],
            summaries: tuple[SystemSummary, ...]) -> tuple[str, ...]:
    """Sentences comparing every gate configuration with every baseline, then one line per system."""
    runs: dict[tuple[str, str], list[Cell]] = {}
    for cell in cells:
        runs.setdefault((cell.fault, cell.system), []).append(cell)
    faults = list(dict.fromkeys(c.fault for c in cells))
    sentences = []
    gates = [s for s in systems if s.startswith(GATE)]
    for gate in gates:
        for base in (s for s in systems if not s.startswith(GATE)):
            # the k-th run of a fault under one system is set against the k-th run under the other
            pairs = [pair for f in faults for pair in zip(runs.get((f, gate), []), runs.get((f, base), []))]
            if pairs:
                sentences.append(_pair_sentence(spec, gate, base, pairs))
    for summary in summaries:
        sentences.append(_system_sentence(spec, summary, [c for c in cells if c.system == summary.system]))
    return tuple(sentences)


def _state(cell: Cell, spec: Spec) -> str:
    truth = cell.truth
    text = f"{cell.agent_writes} {spec.writes_word} against {cell.want} wanted"
    if truth.live_owner is not None:
        text += f", live generation {truth.live_generation} deployed by {truth.live_owner}"
    if truth.double_booked is not None:
        others = len(truth.other_events)
        text += ", double booked" if truth.double_booked else f", not double booked ({others} other event(s) on the slot)"
    return text


def _record_phrase(cell: Cell) -> str:
    says = cell.record
    if says.writes is None:
        return f"its record cannot say which writes landed ({says.reason})"
    listed = f"its record says {len(says.writes)} write(s)"
    return f"{listed} and proves it" if cell.can_prove else f"{listed}, but no proof: {cell.proof.reason}"


_ANSWER = {True: "answer matches", False: "answer does not match", None: "answer cannot say"}
_NO_KILL = {"network_cut": "no SIGKILL, the connection was cut", "raced": "no SIGKILL, raced"}


def _first_worker(cell: Cell) -> str:
    """What the first worker itself reported in a row with no SIGKILL, and what happened after it."""
    if cell.first_worker_outcome is None:
        said = f"reported nothing (it exited with code {cell.worker_exits[0]})"
    else:
        said = f"reported {cell.first_worker_outcome} ({_ANSWER[cell.first_answer_matches]})"
    after = (f"the restart worker then reported {cell.outcome}" if len(cell.worker_exits) > 1
             else "no restart was needed")
    return f"{cell.system}'s first worker ({_NO_KILL[cell.trigger]}) {said}; {after}"


def _cell_sentence(cell: Cell, spec: Spec) -> str:
    held = "invariant held" if cell.invariant_held else "invariant VIOLATED"
    if cell.trigger in _NO_KILL:
        opening = _first_worker(cell)
    else:
        crash = "" if cell.crash_fired else " (no crash: it finished before the crash point)"
        opening = f"{cell.system} reported {cell.outcome}{crash}"
    return f"{opening}: {_state(cell, spec)}; {held}; {_ANSWER[cell.answer_matches]}; {_record_phrase(cell)}."


def _agreement(row: list[Cell]) -> str:
    """Which systems ended alike on (invariant, answer, proof) in one fault."""
    groups: dict[tuple[bool, bool | None, bool], list[str]] = {}
    for cell in row:
        groups.setdefault((cell.invariant_held, cell.answer_matches, cell.can_prove), []).append(cell.system)
    if len(groups) == 1:
        return "All systems tie on invariant, answer and proof."
    if len(groups) == len(row):
        return "No two systems end alike on invariant, answer and proof."
    parts = [f"{_join(names)} tie" for names in groups.values() if len(names) > 1]
    alone = [names[0] for names in groups.values() if len(names) == 1]
    if alone:
        parts.append(f"{_join(alone)} {'differs' if len(alone) == 1 else 'differ'}")
    return "On invariant, answer and proof " + "; ".join(parts) + "."


def fault_notes(spec: Spec, cells: tuple[Cell, ...], faults: tuple[str, ...],
                systems: tuple[str, ...]) -> tuple[FaultNote, ...]:
    """One paragraph per fault: each system's outcome, the service's state, what its record says, who ties."""
    notes = []
    for fault in faults:
        row = sorted((c for c in cells if c.fault == fault), key=lambda c: systems.index(c.system))
        setting = row[0].setting
        lead = ("The fault: " + "; ".join(setting) + ". ") if setting else ""
        text = lead + " ".join(_cell_sentence(c, spec) for c in row) + " " + _agreement(row)
        notes.append(FaultNote(fault, text))
    return tuple(notes)
