"""An exploration counted again by the judge from its stored history: each run's rows (the service's truth, every
worker's answer, the system's own record) held to the rules by the pipeline's own reading, so the reliability page
shows what the runs did (`pipeline.reliability` holds the explorer's stored counts to these).

The rules are the ones the explorer names in its file (`violation_kinds`); their reading here is the judge's. A
receipt is checked with the library's verifier, as any reader of a journal checks it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from interlock import verify
from interlock.kinds import send_open_after

from .load import BadInput, Node, rows, shortened
from .outcomes import UnknownOutcome, landed
from .times import stamp

# The points between a worker's last check and its send: an action that strikes there is inside the window no
# check can close, and is counted apart.
CHECK_TO_SEND = frozenset({"before_send", "before_request", "recovery_before_resend"})
# How the runner's `acted` opens when the action struck while a worker waited at its point; a pause point the
# worker never reached is recorded as an action after it exited, outside the window.
PAUSED = "while worker "
# Actions that move a fact an effect was decided on; every other action ends its authority.
PREMISE_ACTIONS = frozenset({"human_write", "slot_taken", "balance_moved"})
# The first sender and recoverers that ran beside a held worker may leave the effect to the last recoverers.
MAY_DEFER = frozenset({"chain", "concurrent"})
BASELINE_RESULTS = frozenset({"result", "finished"})  # a baseline's log line that settles its job
EXAMPLES = 5  # violating runs shown per kind
DETAIL = 300  # characters of a worker's error or a receipt's problems an example quotes before it says it cut them


@dataclass(frozen=True)
class Broken:
    """One rule a run broke, and what shows it."""

    kind: str
    detail: str


@dataclass
class Tally:
    """How a system's runs ended: no rule broken, or one broken outside or inside the check-to-send window; and how
    many runs broke each kind of rule."""

    schedules: int = 0
    held: int = 0
    violated: int = 0  # the action struck outside the check-to-send window
    violated_in_window: int = 0
    counts: Counter[str] = field(default_factory=Counter)

    def tally(self, found: list[Broken], window: bool) -> None:
        """Count one run by the rules it broke."""
        self.schedules += 1
        if not found:
            self.held += 1
        elif window:
            self.violated_in_window += 1
        else:
            self.violated += 1
        self.counts.update({b.kind for b in found})


@dataclass
class Counted(Tally):
    """One system's runs of an exploration as the judge counts them, with each kind's runs inside the window; each
    example is (seed, replay, schedule, detail, in window) of one of the first violating runs of a kind."""

    in_window: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[tuple[int, str, str, str, bool]]] = field(default_factory=dict)

    def add(self, row: Node, found: list[Broken], window: bool) -> None:
        """Count one run."""
        self.tally(found, window)
        for kind in dict.fromkeys(b.kind for b in found):
            self.in_window[kind] += window
            shown = self.examples.setdefault(kind, [])
            if len(shown) < EXAMPLES:
                shown.append((row.get("seed", "integer"), row.get("replay", "string"),
                              row.opt("describe", "string", ""), "; ".join(b.detail for b in found if b.kind == kind),
                              window))


@dataclass(frozen=True)
class Recount:
    """Every system's counts, what the hazard did (aspect -> "system: what" -> runs), the runs the harness
    played twice as (seed, system, replay, first failure), and, where the service's fence is drawn per schedule,
    each system's runs by that fence (fence -> system -> tally)."""

    history: str
    systems: dict[str, Counted]
    hazard_effects: dict[str, dict[str, int]]
    retried: tuple[tuple[int, str, str, str], ...]
    fences: dict[str, dict[str, Tally]] = field(default_factory=dict)


def history_of(summary: Path) -> Path:
    """Where the explorer stores the history a summary file was counted from."""
    return summary.parent / "history" / f"{summary.stem}.jsonl.gz"


def recount(history: Path, shown: str) -> Recount:
    """Count every row of a stored history."""
    systems: dict[str, Counted] = {}
    effects: dict[str, Counter[str]] = {}
    fences: dict[str, dict[str, Tally]] = {}
    retried = []
    for row in rows(history, shown):
        system = row.get("system", "string")
        found, window = broken(row), in_window(row)
        systems.setdefault(system, Counted()).add(row, found, window)
        fence = row.at("schedule").opt("fence", "string")
        if fence is not None:
            fences.setdefault(fence, {}).setdefault(system, Tally()).tally(found, window)
        for aspect, said in hazard_effects(row):
            effects.setdefault(aspect, Counter())[f"{system}: {said}"] += 1
        failure = row.opt("harness_retried", "string")
        if failure:
            retried.append((row.get("seed", "integer"), system, row.get("replay", "string"), failure))
    if not systems:
        raise BadInput(shown, "$", "holds no rows: a history counts every run of its exploration")
    return Recount(shown, systems, {aspect: dict(sorted(said.items())) for aspect, said in sorted(effects.items())},
                   tuple(retried), {fence: fences[fence] for fence in sorted(fences)})


def in_window(row: Node) -> bool:
    """Whether the run's action struck while a worker waited between its last check and its send."""
    schedule = row.at("schedule")
    held = row.opt_node("interrupt")
    if held is not None:
        point = held.get("point", "string") if held.get("reached", "boolean") else None
    else:
        pause = schedule.opt_node("action_pause")
        point = _pair(pause)[1].expect("string") if pause is not None else None
        if not row.opt("acted", "string", "").startswith(PAUSED):
            point = None  # the worker exited short of its pause point, and the action came after
    return schedule.get("action", "string") != "none" and point in CHECK_TO_SEND


def broken(row: Node) -> list[Broken]:
    """Every rule the run broke, in the order the rules are listed."""
    truth = row.at("truth")
    writes = [(write.value, stamp(at)) for write, at in map(_pair, truth.at("writes").items())]
    live = truth.get("live", "integer")
    at_service = bool(writes) or live > 0
    found = []
    if live > 1 or len(writes) > 1:
        found.append(Broken("duplicate_effect", f"the service holds {live} live, {len(writes)} agent write(s) made"))
    acted = row.opt_node("acted_at")
    if acted is not None:
        acted_at = stamp(acted)
        action = row.at("schedule").get("action", "string")
        late = [w for w, at in writes if at > acted_at]
        if late:
            kind = "after_premise_moved" if action in PREMISE_ACTIONS else "after_lease_ended"
            found.append(Broken(kind, f"write(s) {late} landed after {action} {row.opt('acted', 'string', '')}"))
    if truth.opt("settled", "boolean") is False:
        found.append(Broken("service_unsettled", "a write was still pending when the service was read"))
    ran = row.at("ran").items()
    found += _answers(ran, at_service)
    found += _record(row, ran, at_service)
    for worker in ran:
        failed = worker.get("traceback", "boolean") and not worker.get("refused_journal", "boolean")
        if failed or worker.get("timed_out", "boolean"):
            said = [line.expect("string") for line in worker.at("stderr").items()][-1:] or ["timed out"]
            found.append(Broken("worker_error", f"{_who(worker)}: {shortened(said[0], DETAIL)}"))
    return found


def _pair(node: Node) -> tuple[Node, Node]:
    """The two items of a 2-item array: (write, time) or (worker, pause point)."""
    items = node.items()
    if len(items) != 2:
        raise node.bad(f"expected a 2-item array, got {len(items)} item(s)")
    return items[0], items[1]


def _cut(row: Node) -> Node | None:
    """The journal cut the run made, refused unless it kept between none and all of the file's bytes."""
    cut = row.opt_node("journal_cut")
    if cut is not None and not 0 <= cut.get("kept", "integer") <= cut.get("size", "integer"):
        raise cut.at("kept").bad(f"kept {cut.get('kept', 'integer')} of a {cut.get('size', 'integer')}-byte journal")
    return cut


def _crash_could_leave(cut: Node) -> bool:
    """Whether a crash could have cut the journal so: inside its last line, or past where its witness saw the
    flushed part end (`durable`, when the run recorded it)."""
    durable = cut.opt("durable", "integer")
    return bool(cut.get("inside_last_line", "boolean")) or (durable is not None
                                                            and cut.get("kept", "integer") >= durable)


def _who(worker: Node) -> str:
    return f"{worker.get('stage', 'string')} {worker.get('index', 'integer')}"


def _answers(ran: list[Node], at_service: bool) -> list[Broken]:
    """Each worker's answer held to the service: wrong, missing where one was owed, or outside the vocabulary."""
    found = []
    for worker in ran:
        outcome = worker.get("outcome", "string", nullable=True)
        owed = worker.get("stage", "string") not in MAY_DEFER
        if outcome is None:
            if owed and not worker.get("timed_out", "boolean") and not worker.get("refused_journal", "boolean"):
                found.append(Broken("answer_cannot_say", f"{_who(worker)} exited "
                                    f"{worker.get('exit_code', 'integer', nullable=True)} with no status"))
            continue
        try:
            claim = landed(outcome)
        except UnknownOutcome:
            found.append(Broken("unknown_outcome", f"{_who(worker)} answered {outcome!r}"))
            continue
        if claim is None and owed:
            found.append(Broken("answer_cannot_say", f"{_who(worker)} answered {outcome}"))
        elif claim is not None and claim != at_service:
            found.append(Broken("answer_wrong", f"{_who(worker)} answered {outcome}, the service "
                                f"{'holds' if at_service else 'does not hold'} the effect"))
    return found


def _record(row: Node, ran: list[Node], at_service: bool) -> list[Broken]:
    """The system's own record: a baseline's log of sends and results, or the gate's journal and its receipt."""
    record = row.at("record")
    if not row.get("system", "string").startswith("interlock"):
        events = record.get("events", "array", nullable=True)
        if events is None:
            return []
        said = [e.expect("string") for e in record.at("events").items()]
        sends, results = said.count("send"), sum(e in BASELINE_RESULTS for e in said)
        return [Broken("unresolved_dispatch", f"the log holds {sends} send(s), {results} result(s)")] \
            if sends > results else []
    found = []
    cut = _cut(row)
    damaged = cut is not None and cut.get("kept", "integer") < cut.get("size", "integer")
    crash_leftover = cut is not None and _crash_could_leave(cut)
    if cut is not None and damaged:
        refused = any(w.get("refused_journal", "boolean") for w in ran)
        opened = any(w.get("stage", "string") not in MAY_DEFER and w.get("outcome", "string", nullable=True)
                     is not None for w in ran)
        if opened and not refused and not crash_leftover:
            found.append(Broken("damage_accepted", f"the journal cut to {cut.get('kept', 'integer')} of "
                                f"{cut.get('size', 'integer')} bytes was opened"))
        if refused:  # the harness's damage, refused: nothing more to hold the record to
            return found
    entries = record.get("entries", "array")
    if not entries:
        return found
    pending = False
    for entry in record.at("entries").items():
        kind = entry.opt("kind", "string")
        pending = send_open_after(pending, kind)
    if pending:
        found.append(Broken("unresolved_dispatch", "the journal ends with a send no resolution settled"))
    receipt = verify({"effect_id": row.get("effect_id", "string"), "entries": entries})
    if not receipt["valid"] and (not damaged or crash_leftover):
        found.append(Broken("receipt_invalid", shortened("; ".join(receipt["problems"]), DETAIL)))
    happened = receipt["happened"]
    service = "holds" if at_service else "does not hold"
    if not isinstance(happened, bool):
        found.append(Broken("receipt_cannot_say", f"the receipt says happened={happened!r}, the service {service} it"))
    elif happened != at_service:
        found.append(Broken("receipt_disagrees", f"the receipt says happened={happened}, the service {service} it"))
    return found


def hazard_effects(row: Node) -> list[tuple[str, str]]:
    """What the hazard did in this run, per aspect (a hazard that never struck says so)."""
    seen = []
    held = row.opt_node("interrupt")
    if held is not None:
        struck = "struck" if held.get("reached", "boolean") else "never reached"
        seen.append(("interrupt", f"{held.get('how', 'string')} at {held.get('point', 'string')}: {struck}"))
    flight = row.opt_node("in_flight")
    if flight is not None:
        got = "request held at the service" if flight.get("received", "boolean") else "no request reached the service"
        seen.append(("in_flight", f"{flight.get('how', 'string')}: {got}"))
    cut = _cut(row)
    if cut is not None:
        where = ("nothing cut" if cut.get("kept", "integer") == cut.get("size", "integer") else
                 "inside the last line" if cut.get("inside_last_line", "boolean") else
                 "past what was flushed" if _crash_could_leave(cut) else "before the last line")
        seen.append(("journal_cut", where))
        refused = any(w.get("refused_journal", "boolean") for w in row.at("ran").items())
        seen.append(("journal_cut_refused", "refused to open" if refused else "opened"))
    raises = row.at("schedule").opt("raises", "string")
    if raises is not None:
        seen.append(("raises", raises))
    return seen
