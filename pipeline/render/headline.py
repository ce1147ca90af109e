"""The verdict block at the top of a page: one plain sentence per system, the published run beside this run, each
labelled with what ran, and the qualifications that change the reading."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any

from ..model import Cell, Provenance, Scenario
from ..scenarios import GATE

_SLOWER = 1.5  # a gate median this many times a baseline's counts as slower, the rule of the verdict sentences


@dataclass(frozen=True)
class Outcome:
    """The scored columns of one judged cell, all the block needs, so runs of any scenario can be pooled."""

    fault: str
    system: str
    held: bool
    answer: bool | None
    proved: bool
    seconds: float | None
    double_booked: bool


@dataclass(frozen=True)
class Side:
    """One run in the verdict block: what it is, what ran, and its cells' outcomes."""

    title: str  # "published run" | "this run"
    ran: str  # "real services and a model" | "local stand-ins and the scripted decider"
    real: bool  # real services and a real model: its claim TTL, when stated, explains a slow gate
    outcomes: tuple[Outcome, ...]

    def systems(self) -> list[str]:
        return list(dict.fromkeys(o.system for o in self.outcomes))

    def of(self, system: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.system == system]


@dataclass(frozen=True)
class Verdict:
    """What a #verdict block shows: a sentence per system and side, then the qualifications."""

    sides: tuple[Side, ...]
    rows: tuple[tuple[str, tuple[str, ...]], ...]  # (system, one sentence per side)
    qualifications: tuple[str, ...]


def from_cells(cells: Iterable[Cell]) -> tuple[Outcome, ...]:
    """Outcomes of judged cells."""
    return tuple(Outcome(c.fault, c.system, c.invariant_held, c.answer_matches, c.can_prove, c.seconds_to_settle,
                         bool(c.truth.double_booked)) for c in cells)


def ran(provenance: Provenance) -> tuple[str, bool]:
    """What ran, in the words a first-time reader needs: real services or stand-ins, a model or the scripted one."""
    services = [s for s in provenance.services if s.role != "model"]
    model = next((s for s in provenance.services if s.role == "model"), None)
    real = bool(services) and all(s.real for s in services)
    where = "real services" if real else ("local stand-ins" if not any(s.real for s in services)
                                          else "real and stand-in services")
    if model is not None and model.real:
        return f"{where} and a model", real
    return f"{where} and the scripted decider", False


def scenario_side(scenario: Scenario) -> Side:
    """A judged result file as one side; a re-judged published file keeps the published title."""
    what, real = ran(scenario.provenance)
    title = "published run, re-judged" if scenario.provenance.published else "this run"
    return Side(title, what, real, from_cells(scenario.cells))


def _about(seconds: float) -> str:
    return f"about {round(seconds)}\u00a0s" if seconds >= 1.5 else f"about {seconds:.1f}\u00a0s"


def _of(k: int, n: int) -> str:
    return f"all {n}" if k == n and n > 1 else f"{k} of {n}"


def sentence(mine: Sequence[Outcome]) -> str:
    """One system on one side in plain words, short enough for a phone: the invariant, any wrong answer, the
    proof, the time to settle."""
    if not mine:
        return "Not run."
    n = len(mine)
    broke = [o for o in mine if not o.held]
    if broke:
        doubled = sum(o.double_booked for o in broke)
        text = f"Broke in {len(broke)} of {n}" + (f" ({doubled} double booked)" if doubled else "")
    else:
        text = f"Held in {_of(n, n)}"
    wrong = sum(o.answer is False for o in mine)
    unsure = sum(o.answer is None for o in mine)
    text += f", wrong answer in {wrong}" if wrong else ""
    text += f", could not say in {unsure}" if unsure else ""
    proved = sum(o.proved for o in mine)
    text += f"; proves {'none' if not proved else ('all' if proved == n else proved)}"
    times = [o.seconds for o in mine if o.seconds is not None]
    if times:
        text += f"; {_about(median(times)).removeprefix('about ')}"
    return text + "."


def _median(side: Side, system: str) -> float | None:
    times = [o.seconds for o in side.of(system) if o.seconds is not None]
    return median(times) if times else None


def claim_kind(claim: Mapping[str, Any]) -> str | None:
    """How a run's claims free a dead holder, from its provenance (flat, or one entry per system)."""
    if not claim:
        return None
    kind = claim.get("kind")
    if isinstance(kind, str):
        return kind
    return next((v["kind"] for v in claim.values() if isinstance(v, Mapping) and isinstance(v.get("kind"), str)),
                None)


def _pace(side: Side, ttl: float | None, claim: Mapping[str, Any] | None) -> str | None:
    """One side's time to settle: the gate against the fastest other system, and why a slow gate was slow."""
    gate = next((s for s in side.systems() if s == GATE), None)
    timed = [(t, b) for b in side.systems() if not b.startswith(GATE) and (t := _median(side, b)) is not None]
    g = _median(side, gate) if gate else None
    if g is None or not timed:
        return None
    fastest, base = min(timed)
    kind = claim_kind(claim or {})
    # a claim wait explains a slow gate only where claims outlive their holder: a stated TTL, or no claim kind known
    if g > fastest * _SLOWER and (ttl or not kind):
        why = f"a SIGKILLed sender's {ttl:g} s claim TTL" if ttl else "it waited for a dead sender's claim"
        return f"{side.title}, {gate} {_about(g)} against {_about(fastest)} for {base} ({why})"
    how = f" (a dead sender's claim is freed at once: {kind.split(',')[0].split(' (')[0]})" if kind else ""
    control = _median(side, f"{GATE}_ttl")  # the gate with claim liveness off, waiting out a TTL
    waited = f", {GATE}_ttl {_about(control)}" if control is not None else ""
    if _about(g) == _about(fastest):
        return f"{side.title}, {gate} {_about(g)}, as fast as {base}, the fastest other system{how}{waited}"
    return f"{side.title}, {gate} {_about(g)} against {_about(fastest)} for {base}{how}{waited}"


def settle_note(sides: Sequence[tuple[Side, float | None, Mapping[str, Any] | None]]) -> str | None:
    """How long the gate took to settle after a crash on each side, with the claim TTL that explains a gap."""
    paces = [p for side, ttl, claim in sides if (p := _pace(side, ttl, claim))]
    return "Settling after a crash: " + "; ".join(paces) + "." if paces else None


def build(sides: Sequence[Side], qualifications: Sequence[str | None]) -> Verdict:
    """The block: every system of either side, in first-seen order, with one sentence per side; qualifications
    that do not apply (None) are left out."""
    systems = list(dict.fromkeys(s for side in sides for s in side.systems()))
    rows = tuple((system, tuple(sentence(side.of(system)) for side in sides))
                 for system in systems)
    return Verdict(tuple(sides), rows, tuple(q for q in qualifications if q))


def raced_slips(scenario: Scenario) -> str | None:
    """The raced-dispatch tally that qualifies the gate's calendar score: how often a racing event slipped in."""
    if scenario.raced is None:
        return None
    parts = [f"{v.slipped.k} of {v.slipped.n} ({100 * v.slipped.k / v.slipped.n:.1f}%) for {v.name}"  # as the table
             for v in scenario.raced.variants if v.slipped.n]
    if not parts:
        return None
    return ("Raced: a customer event landing between a system's last slot read and its insert slipped in "
            f"{', '.join(parts)}; Calendar has no conditional insert.")


def versioning_off(scenario: Scenario, raw_cells: Sequence[Mapping[str, Any]]) -> str | None:
    """What the faults with object versioning off did to the systems whose lookups read the version listing: a
    wrong answer there counts against versioning only where the same system answered right in the same fault with
    versioning on (the fault named without `_versioning_off`), and is said apart where it did not."""
    off = {scenario.cells[i].fault for i, raw in enumerate(raw_cells)
           if i < len(scenario.cells) and raw.get("object_versioning") is False}
    if not off:
        return None
    cells = [c for c in scenario.cells if c.fault in off]
    right_on = {(c.fault, c.system) for c in scenario.cells if c.fault not in off and c.answer_matches is not False}
    faults = {c.fault for c in scenario.cells}
    misses: dict[str, list[int]] = {}  # system: [wrong because of versioning, wrong with versioning on as well]
    for c in cells:
        if c.answer_matches is False:
            twin = c.fault.removesuffix("_versioning_off")
            blamed = twin == c.fault or twin not in faults or (twin, c.system) in right_on
            misses.setdefault(c.system, [0, 0])[0 if blamed else 1] += 1
    n = len(off)
    lead = (f"Object versioning off ({n} fault{'s' if n != 1 else ''}): a lookup cannot see a write that a later "
            "write replaced")
    versioned = [f"{s} in {m[0]}" for s, m in misses.items() if m[0]]
    anyway = [f"{s} in {m[1]}" for s, m in misses.items() if m[1]]
    if not misses:
        return lead + "; every answer still matched the store."
    text = (lead + f", so a system could answer that its write had not landed when it had: {', '.join(versioned)}."
            if versioned else lead + "; no answer went wrong for that.")
    if anyway:
        text += (f" Wrong in the same faults with versioning on as well, so not for versioning: {', '.join(anyway)}.")
    return text
