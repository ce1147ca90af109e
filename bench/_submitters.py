"""The worker calls the gate benchmarks time: an effect submitted through a shared journal or one of the worker's own.
Each is a module-level function, so a spawned worker process can import it."""

from __future__ import annotations

from pathlib import Path

from interlock import Effect, FunctionTarget, Gate

from ._throughput import Call, expect


def submitter(path: str, worker: int) -> Call:
    """One worker's call: submit an effect through the shared journal (tier 1, a send that only returns its id)."""
    gate = Gate(path, FunctionTarget("bench", lambda eid, payload: {"id": eid}, tier=1))
    return lambda key: expect(gate.submit(Effect(key, {"key": key})).status, "COMMITTED")


def own_journal_submitter(folder: str, worker: int) -> Call:
    """`submitter` on a journal of the worker's own in `folder`: with nothing shared, what 16 such processes do is
    the most this machine gives 16 processes doing the gate's work, whatever the journal does."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    return submitter(str(Path(folder) / f"journal-{worker}.jsonl"), worker)
