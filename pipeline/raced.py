"""The raced trials of the calendar, tallied per system from the raw per-trial rows the runner records.

In each trial a customer event may land between a system's last check of the slot and its insert; Calendar has no
conditional insert, so nothing at the service stops the insert. The runner records what it observed and judges
nothing; each row of `raced_dispatch.trials` holds:

| key | what the runner observed |
|---|---|
| `system` | the system that booked (the files written before systems were raced side by side say `variant`) |
| `kind` | `forced` (the worker paused at its pause point while the customer inserted), `unforced` (the customer inserted at a random moment), `warmup` (no customer) |
| `outcome` | the worker's own outcome for the trial |
| `checked_at` | when the system reached `before_request`, right after its last check (older files: `last_read_ts`), epoch seconds |
| `agent_insert`, `customer_insert` | the stand-in's write-log entry of each insert (`seq`, `ts`, `status`), or null when it was not made |
| `after_insert_other_events` | optional: the other events the worker saw on the slot right after its own insert landed |
| `events_after` | the slot's events after the trial (kept for a reader; the write log's order already settles each trial) |

From those rows alone: a trial **slipped** when the agent's insert landed after the customer's (double booked);
it **wants** no booking when the customer's insert landed first, one otherwise; the **check-to-send window** is
the agent insert's write-log time minus `checked_at`, over the trials whose insert landed.
"""

from __future__ import annotations

import math
from statistics import median

from .load import Node
from .model import RacedDispatch, RacedVariant, Spread, Tally
from .outcomes import claim
from .times import stamp


def _rank(ordered: list[float], q: float) -> float:
    """The nearest-rank q-quantile of sorted values."""
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _spread(values: list[float]) -> Spread | None:
    """Median, nearest-rank 95th and 99th percentiles, in ms rounded to 0.01."""
    if not values:
        return None
    ordered = sorted(values)
    return Spread(len(ordered), round(median(ordered), 2), round(_rank(ordered, 0.95), 2),
                  round(_rank(ordered, 0.99), 2))


def _landed(trial: Node, key: str) -> Node | None:
    """The write-log entry of an insert that the stand-in answered 200, else None."""
    insert = trial.opt_node(key)
    return insert if insert is not None and insert.get("status", "integer", nullable=True) == 200 else None


class _Trial:
    """One row, judged from its observations."""

    def __init__(self, row: Node):
        self.row = row
        self.system = row.get("system" if row.has("system") else "variant", "string")
        self.kind = row.get("kind", "string")
        self.outcome = row.get("outcome", "string")
        self.refused = claim(row.at("outcome")) is False
        agent, customer = _landed(row, "agent_insert"), _landed(row, "customer_insert")
        self.landed = agent is not None
        agent_seq = agent.get("seq", "integer") if agent else None
        customer_seq = customer.get("seq", "integer") if customer else None
        self.customer_first = customer_seq is not None and (agent_seq is None or customer_seq < agent_seq)
        self.booked_first = agent_seq is not None and customer_seq is not None and agent_seq < customer_seq
        self.slipped = self.landed and self.customer_first
        self.held = self.landed != self.customer_first
        seen = row.opt_node("after_insert_other_events")
        self.looked = self.landed and seen is not None  # the worker re-read the slot after its insert
        self.detected = self.looked and seen is not None and bool(seen.expect("array"))
        check = row.opt_node("checked_at" if row.has("checked_at") else "last_read_ts")
        checked = stamp(check) if check is not None else None  # a reading no run could make raises
        # the insert's time may be the service's clock: a skew can make the window read negative, as measured
        self.window_ms = (stamp(agent.at("ts")) - checked) * 1000 if agent and checked is not None else None


def _system(name: str, trials: list[_Trial]) -> RacedVariant:
    mine = [t for t in trials if t.system == name]
    forced = next((t for t in mine if t.kind == "forced"), None)
    unforced = [t for t in mine if t.kind == "unforced"]
    slipped = [t for t in unforced if t.slipped]
    return RacedVariant(
        name=name,
        forced_outcome=forced.outcome if forced else None,
        forced_double_booked=forced.slipped if forced else None,
        forced_detected=forced.detected if forced and forced.looked else None,
        slipped=Tally(len(slipped), len(unforced)),
        refused=sum(t.refused for t in unforced),
        booked_first=sum(t.booked_first for t in unforced),
        detected=Tally(sum(t.detected for t in slipped), sum(t.looked for t in slipped)),
        held=Tally(sum(t.held for t in unforced), len(unforced)),
        window=_spread([t.window_ms for t in unforced if t.window_ms is not None]),
    )


def raced_dispatch(top: Node) -> RacedDispatch | None:
    """The file's `raced_dispatch` trials tallied per system, or None when the file has none."""
    node = top.opt_node("raced_dispatch")
    if node is None:
        return None
    trials = [_Trial(row) for row in node.at("trials").items()]
    names = list(dict.fromkeys(t.system for t in trials))
    return RacedDispatch(what=node.opt("what", "string", ""), seed=node.opt("seed", "integer"),
                         variants=tuple(_system(name, trials) for name in names))
