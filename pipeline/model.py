"""The derived data model: what the pipeline establishes about one result file, ready for tables and pages.

Everything here is computed from the artifacts by `pipeline.derive`; nothing is typed by hand. Texts marked
untrusted (a model's reason, an event summary, a worker log) come from the run and must be escaped when shown.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

# Characters that change how text around them reads without showing themselves: the bidirectional marks, embeddings,
# overrides and isolates (after U+202E the text shows reversed), zero-width spaces and joiners, the byte order mark.
INVISIBLE = "".join(map(chr, [0x061C, *range(0x200B, 0x2010), *range(0x202A, 0x202F), *range(0x2066, 0x206A),
                              0xFEFF]))
# Characters that move a terminal's cursor or start a new line (C0 and C1 controls, DEL, the Unicode separators), and
# the invisible ones.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029" + INVISIBLE + "]")


def printable(text: str) -> str:
    """Text for one terminal line: each control or invisible character shown as its escape (a newline as \\n, ESC
    as \\x1b, a right-to-left override as \\u202e)."""
    return _CONTROL.sub(lambda found: repr(found.group())[1:-1], text)


@dataclass(frozen=True)
class Service:
    """One service a run talked to, and whether it was the real one or a local stand-in."""

    role: str  # "object_store" | "calendar" | "model"
    real: bool
    name: str
    version: str | None = None


@dataclass(frozen=True)
class Provenance:
    """Where a result file came from: the published real-service run, or one of the project's own runs."""

    published: bool  # True for the published real-service reference files
    summary: str  # one line for a page header, e.g. "published real-service run: Google Cloud Storage JSON API ..."
    generated: str
    script: str | None
    services: tuple[Service, ...]
    decider: str | None = None  # as stored (a model name or a description of the scripted decider)
    versions: Mapping[str, Any] = field(default_factory=dict)
    commit: str | None = None
    claim: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)  # other top-level facts (bucket, project, calendar, ...)
    peers: Mapping[str, Any] = field(default_factory=dict)  # per peer: versions, configuration, documentation cited
    load: tuple[float, float] | None = None  # the machine's load average at the run's start and end
    cores: int | None = None


@dataclass(frozen=True)
class Decision:
    """The decision the first worker persisted; `reason` and `summary` are untrusted model text."""

    model: str | None
    reason: str | None  # gcp: the model's stated reason for the rollback
    summary: str | None  # calendar: the event summary the model chose
    raw: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RecordSays:
    """What a system's own record establishes, read without looking at the service."""

    source: str  # JSON path of the record inside the cell, e.g. "artifacts.log.jsonl"
    actor: str | None  # who acted, as the record names it (None: the record names nobody)
    checks: tuple[str | None, ...]  # one item per recorded check; an explicit null check counts as recorded
    sends: int  # sends the record shows
    unchecked_sends: int  # sends recorded with no check at all (not even an explicit null)
    writes: tuple[str, ...] | None  # generations / event ids the record establishes; None = unknown
    unresolved_sends: int  # sends with no result and nothing later covering them
    chain_valid: bool | None  # the gate's hash chain verified (None: the record has no chain)
    reason: str | None  # why `writes` is unknown, or None when the record establishes a list
    shown: tuple[tuple[str, str], ...] = ()  # a peer's record as read, (field, value), for its cell page


@dataclass(frozen=True)
class GroundTruth:
    """What the service itself holds after the run, read from the stored listing, event list or write log."""

    source: str  # "versions" | "write_log" | "events_list"
    agent_writes: tuple[str, ...]  # agent generations (gcp) or the request's live agent event ids (calendar)
    want: int  # agent writes wanted by the fault
    want_owner: str | None  # gcp: who should own the live object; calendar: None
    live_generation: str | None  # gcp only
    live_owner: str | None  # gcp only: writer metadata of the live object
    writes: tuple[tuple[str, str], ...]  # gcp: (generation, writer) in order; calendar: (event id, "agent"|"other")
    other_events: tuple[str, ...]  # calendar: live events on the slot not made for this request
    events_on_slot_before: tuple[str, ...]  # calendar: what was on the slot when the customer event went in
    double_booked: bool | None  # calendar only
    invariant_held: bool


@dataclass(frozen=True)
class Proof:
    """The one proof rule: actor named, checks recorded, record's write list equals the service's list."""

    ok: bool
    reason: str  # one line saying why (yes or no)


@dataclass(frozen=True)
class Disagreement:
    """A verdict the file stores that differs from the one the pipeline derives from the same file's artifacts."""

    file: str
    fault: str
    system: str
    column: str  # the stored key, e.g. "invariant_held", "ground_truth.agent_events", "record_says.checks"
    stored: Any
    derived: Any
    why: str  # what the derived value rests on, one phrase

    def line(self) -> str:
        """The one line `judge` prints for it."""
        return printable(f"{self.file}: {self.fault} / {self.system}: {self.column}: stored "
                         f"{json.dumps(self.stored)}, derived {json.dumps(self.derived)} ({self.why})")

    def as_json(self) -> dict[str, Any]:
        """The `judge --json` object of this disagreement."""
        return {"file": self.file, "fault": self.fault, "system": self.system, "column": self.column,
                "stored": self.stored, "derived": self.derived, "why": self.why}


@dataclass(frozen=True)
class Cell:
    """One (fault, system) run, judged."""

    index: int  # position in the file's `cells` list
    scenario: str
    fault: str
    system: str
    outcome: str
    outcome_source: str  # JSON path of the worker's own outcome file the outcome was read from
    landed: bool | None  # the outcome read through pipeline.outcomes.landed
    agent_writes: int
    want: int  # from the fault catalogue (pipeline.faults), never from the cell
    wants: str  # what the fault wants, in words
    invariant_held: bool
    answer_matches: bool | None  # None when the outcome cannot say
    can_prove: bool
    seconds_to_settle: float
    seconds_basis: str  # what the seconds were measured between, or that they are shown as stored
    seconds_derived: bool  # False: the file's stored figure (the published calendar file keeps no timeline)
    truth: GroundTruth
    record: RecordSays
    proof: Proof
    receipt: Mapping[str, Any] | None  # published_format.verify_record() result for the gate's effect
    journal: tuple[Mapping[str, Any], ...]  # the gate's full journal entries (empty for baselines)
    worker_log: Any  # gcp: parsed log.jsonl lines; calendar: the worker log text (untrusted)
    ids: Any  # as stored in the cell (gcp: object; calendar: one string)
    decision: Decision | None
    worker_exits: tuple[int, ...]
    crash_fired: bool  # the first worker died by SIGKILL
    trigger: str  # how the fault struck the first worker: "sigkill" | "network_cut" | "raced" | "no_crash"
    first_worker_outcome: str | None  # what the first worker itself reported (None: it reported nothing)
    first_answer_matches: bool | None  # that report against the service (None: it cannot say or said nothing)
    settle_from: str | None  # what the settle time is counted from
    setting: tuple[str, ...]  # what the fault does, one phrase each, from the cell's own fault settings
    conflict_recorded: bool  # the gate's receipt holds a failed re-check at recovery (baselines: False)
    disagreements: tuple[Disagreement, ...] = ()  # stored verdicts of this cell that differ from the derived ones

    def as_json(self) -> dict[str, Any]:
        """The `judge --json` object of this cell."""
        return {
            "scenario": self.scenario,
            "fault": self.fault,
            "system": self.system,
            "outcome": self.outcome,
            "agent_writes": self.agent_writes,
            "want": self.want,
            "invariant_held": self.invariant_held,
            "answer_matches": self.answer_matches,
            "can_prove": self.can_prove,
            "seconds_to_settle": self.seconds_to_settle,
            "seconds_basis": self.seconds_basis,
        }


@dataclass(frozen=True)
class Tally:
    """k of n cells."""

    k: int
    n: int

    def __str__(self) -> str:
        return f"{self.k}/{self.n}"


@dataclass(frozen=True)
class SystemSummary:
    """One system's scores over a scenario's cells."""

    system: str
    invariant_held: Tally
    answer_matched: Tally
    can_prove: Tally
    settle_min: float
    settle_max: float
    line: str  # "no_check: invariant held 0/3, answer matched 3/3, can prove 0/3, crash to settled 0.4s to 2.0s"
    settle_median: float | None = None  # the median crash-to-settled seconds, for timings set side by side


@dataclass(frozen=True)
class FaultNote:
    """The "what this run shows" paragraph of one fault, derived from its cells."""

    fault: str
    text: str


@dataclass(frozen=True)
class Difference:
    """One published-vs-ours difference for a cell and column, with why it differs."""

    fault: str
    system: str
    column: str  # "outcome" | "agent_writes" | "want" | "invariant_held" | "answer_matches" | "can_prove" | ...
    published: Any
    ours: Any
    kind: str  # "value": the figures differ; "basis": same figure, scored by a different rule
    explanation: str


@dataclass(frozen=True)
class Spread:
    """Milliseconds over n trials: the median and the 95th and 99th percentiles (nearest rank)."""

    n: int
    median: float
    p95: float
    p99: float


@dataclass(frozen=True)
class RacedVariant:
    """One system of the raced trials: its forced trial and its unforced trials' tallies, all from raw rows."""

    name: str  # the system (older files: the gate variant, "gate" | "gate+send_recheck")
    forced_outcome: str | None  # None: the file has no forced trial for this variant
    forced_double_booked: bool | None
    forced_detected: bool | None  # the worker saw the other event right after its insert (None: not looked)
    slipped: Tally  # unforced trials that ended double booked, of all unforced trials
    refused: int  # unforced trials refused because the customer's event was there before the premise read
    booked_first: int  # unforced trials whose insert reached the calendar before the customer's
    detected: Tally  # slipped trials the worker detected after its insert, of the slipped it re-read the slot in
    held: Tally  # unforced trials whose invariant held
    window: Spread | None  # the system's last check to its insert in the write log, over trials whose insert landed


@dataclass(frozen=True)
class RacedDispatch:
    """The calendar's raced trials: a customer event lands between a system's last check and its insert."""

    what: str  # the file's own description (untrusted text)
    seed: int | None
    variants: tuple[RacedVariant, ...]


@dataclass(frozen=True)
class Scenario:
    """A judged result file: its cells, per-system summaries, verdict and per-fault notes."""

    name: str  # "gcp_resource" | "calendar"
    title: str
    source: str  # the file path as given
    provenance: Provenance
    faults: tuple[str, ...]  # in file order
    systems: tuple[str, ...]  # in file order
    cells: tuple[Cell, ...]
    summaries: tuple[SystemSummary, ...]
    verdict: tuple[str, ...]  # sentences
    notes: tuple[FaultNote, ...]  # one per fault, in fault order
    raced: RacedDispatch | None = None  # calendar files with a top-level `raced_dispatch`
    disagreements: tuple[Disagreement, ...] = ()  # every stored verdict that differs from the derived one

    def cell(self, fault: str, system: str) -> Cell | None:
        """The cell of (fault, system), or None when the run has no such cell."""
        for cell in self.cells:
            if cell.fault == fault and cell.system == system:
                return cell
        return None

    def summary(self, system: str) -> SystemSummary:
        """The summary of one system."""
        return next(s for s in self.summaries if s.system == system)
