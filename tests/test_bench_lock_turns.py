"""The lock-turns benchmark records, in real worker processes, each turn of a shared journal's lock from the first
try to the release: every gated effect takes three turns, a writer alone takes each at once, and writers that
share the lock wait some share of their time for it."""

from __future__ import annotations

from pathlib import Path

from bench._lock_turns import lock_turns


def test_writers_sharing_the_lock_take_three_turns_an_effect_and_wait_a_share_of_their_time(tmp_path: Path):
    figures = lock_turns(tmp_path / "turns", 6, 120)
    assert figures["jsonl_lock_turns_per_effect_6_workers"] == 3.0  # PROPOSED, DISPATCHED, COMMITTED
    assert 0 < figures["jsonl_lock_wait_share_6_workers"] < 1  # six writers on this machine's cores do wait
    assert figures["jsonl_lock_hold_ms_median_6_workers"] > 0


def test_a_writer_alone_never_waits_for_the_lock(tmp_path: Path):
    figures = lock_turns(tmp_path / "turns", 1, 30)
    assert figures["jsonl_lock_turns_per_effect_1_workers"] == 3.0
    assert figures["jsonl_lock_wait_share_1_workers"] < 0.1
