"""The raced trials are tallied by the pipeline from raw per-trial observations, one implementation."""

from __future__ import annotations

import json

import pytest

from pipeline import derive
from pipeline.published import PUBLISHED

CHECK = 1_800_000_000.0  # a clock reading of this century, as the judge requires


def trial(system, kind, outcome, *, agent_seq=None, customer_seq=None, window_ms=2.0, seen=None):
    """One raw row: what the worker reported, the stand-in's write-log entries, and the worker's clock."""
    def insert(seq, ts):
        return None if seq is None else {"seq": seq, "ts": ts, "method": "insert", "status": 200, "cut": False}
    row = {"system": system, "kind": kind, "outcome": outcome, "checked_at": CHECK,
           "agent_insert": insert(agent_seq, CHECK + window_ms / 1000),
           "customer_insert": insert(customer_seq, CHECK + 0.0005)}
    if seen is not None:
        row["after_insert_other_events"] = seen
    return row


def rows():
    return [
        trial("no_check", "forced", "BOOKED", agent_seq=2, customer_seq=1, seen=["cust"]),
        trial("no_check", "unforced", "BOOKED", agent_seq=4, customer_seq=3, window_ms=1.0, seen=["cust"]),  # slip
        trial("no_check", "unforced", "BOOKED", agent_seq=5, customer_seq=6, window_ms=3.0, seen=[]),  # first
        trial("no_check", "unforced", "BOOKED", agent_seq=8, customer_seq=7, window_ms=5.0, seen=[]),  # slip, unseen
        trial("interlock", "forced", "REFUSED:stale_premise", customer_seq=9),
        trial("interlock", "unforced", "REFUSED:stale_premise", customer_seq=10),
        trial("interlock", "unforced", "COMMITTED", agent_seq=11, window_ms=0.5),
        trial("interlock", "warmup", "COMMITTED", agent_seq=12, window_ms=99.0),
    ]


def judged(tmp_path, trials):
    data = json.loads((PUBLISHED / "calendar.json").read_text())
    data["raced_dispatch"] = {"what": "raced trials", "seed": 7, "trials": trials}
    path = tmp_path / "calendar.json"
    path.write_text(json.dumps(data))
    return {v.name: v for v in derive(path).raced.variants}


def test_slips_and_windows_come_from_the_write_log_order_and_the_clock(tmp_path):
    tally = judged(tmp_path, rows())
    assert list(tally) == ["no_check", "interlock"]
    no_check, gate = tally["no_check"], tally["interlock"]
    assert (no_check.forced_outcome, no_check.forced_double_booked, no_check.forced_detected) == ("BOOKED", True, True)
    assert (str(no_check.slipped), no_check.booked_first, no_check.refused, str(no_check.held)) == ("2/3", 1, 0, "1/3")
    assert str(no_check.detected) == "1/2"
    assert (no_check.window.n, no_check.window.median, no_check.window.p99) == (3, 3.0, 5.0)
    assert (gate.forced_outcome, gate.forced_double_booked) == ("REFUSED:stale_premise", False)
    assert (str(gate.slipped), gate.refused, str(gate.held)) == ("0/2", 1, "2/2")
    assert (gate.window.n, gate.window.median) == (1, 0.5)  # the warm-up trial is not counted


def test_an_edited_observation_moves_the_tally(tmp_path):
    edited = rows()
    edited[2]["customer_insert"]["seq"] = 1  # the customer's insert now reached the calendar first
    assert str(judged(tmp_path, edited)["no_check"].slipped) == "3/3"


def test_a_stored_tally_is_not_read(tmp_path):
    edited = rows()
    for row in edited:
        row.update(double_booked=False, invariant_held=True, window_ms=0.0, agent_first=True)
    assert str(judged(tmp_path, edited)["no_check"].slipped) == "2/3"


def test_an_unknown_trial_outcome_is_bad_input(tmp_path):
    from pipeline import BadInput

    edited = rows()
    edited[1]["outcome"] = "SORT_OF_BOOKED"
    with pytest.raises(BadInput, match=r"raced_dispatch\.trials\[1\]\.outcome: unknown outcome 'SORT_OF_BOOKED'"):
        judged(tmp_path, edited)
