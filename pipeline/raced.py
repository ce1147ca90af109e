"""The calendar's raced-dispatch trials, tallied from the file's per-trial rows: how often a customer event that
lands between the gate's premise read and its insert slips through, for the gate as shipped and with a re-check
right before the insert."""

from __future__ import annotations

from statistics import median

from .load import Node
from .model import RacedDispatch, RacedVariant, Spread, Tally


def _spread(values: list[float]) -> Spread | None:
    """Median and nearest-rank 95th percentile, in ms rounded to 0.01."""
    if not values:
        return None
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return Spread(len(ordered), round(median(ordered), 2), round(p95, 2))


def _variant(name: str, trials: list[Node]) -> RacedVariant:
    mine = [t for t in trials if t.get("variant", "string") == name]
    forced = next((t for t in mine if t.get("kind", "string") == "forced"), None)
    unforced = [t for t in mine if t.get("kind", "string") == "unforced"]
    slipped = [t for t in unforced if t.get("double_booked", "boolean")]
    detected = sum(bool(t.opt("detected_after_insert", "boolean", False)) for t in slipped)
    windows = [float(t.opt("window_ms", "number")) for t in unforced if t.opt("window_ms", "number") is not None]
    return RacedVariant(
        name=name,
        forced_outcome=forced.get("outcome", "string") if forced else None,
        forced_double_booked=forced.get("double_booked", "boolean") if forced else None,
        forced_detected=forced.opt("detected_after_insert", "boolean") if forced else None,
        slipped=Tally(len(slipped), len(unforced)),
        refused=sum(t.get("outcome", "string").startswith("REFUSED:") for t in unforced),
        booked_first=sum(bool(t.get("agent_first", "boolean")) for t in unforced),
        detected=Tally(detected, len(slipped)),
        held=Tally(sum(bool(t.get("invariant_held", "boolean")) for t in unforced), len(unforced)),
        window=_spread(windows),
    )


def raced_dispatch(top: Node) -> RacedDispatch | None:
    """The file's `raced_dispatch` section judged trial by trial, or None when the file has none."""
    node = top.opt_node("raced_dispatch")
    if node is None:
        return None
    trials = node.at("trials").items()
    names = list(dict.fromkeys(t.get("variant", "string") for t in trials))
    return RacedDispatch(what=node.opt("what", "string", ""), seed=node.opt("seed", "integer"),
                         variants=tuple(_variant(name, trials) for name in names))
