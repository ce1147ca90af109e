"""One worker of a fleet sharing one journal, run as a real process by tests/test_fleet.py.

`python -m tests.fleet_worker DIR KEYS SEED [JOURNAL]` submits effects `k0` .. `k<KEYS-1>` in an order of its own
(SEED) to a service that stores each send as a file `DIR/service/<effect id>.<random>` and finds an effect by its
files. Without JOURNAL, on `DIR/journal.jsonl`, which checkpoints every 5 entries, rolls at 5 KB and archives its
settled segments (and retires their effects' claims) every few effects; with a PostgreSQL address, on that journal,
its claims leased for a second.
It stops at the first outcome that is a refusal or AMBIGUOUS, printing it, and exits AWAY when the journal cannot
be reached (a supervisor would start it again).
"""

from __future__ import annotations

import os
import random
import sys
import uuid
from pathlib import Path
from typing import Any

from interlock import Effect, FunctionTarget, Gate, Journal, JournalUnavailable
from interlock.backends import open_journal

CHECKPOINT_EVERY = 5
SEGMENT_BYTES = 5_000
ARCHIVE_EVERY = 13
AWAY = 3  # the exit code of a worker that found the journal out of reach
LEASE = 1.0  # seconds, on PostgreSQL: a holder killed inside a request keeps its claim this long


def service_target(folder: Path) -> FunctionTarget:
    """A tier-2 target whose send creates one file per copy (synced), and whose lookup finds them."""

    def send(effect_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        fd = os.open(folder / f"{effect_id}.{uuid.uuid4().hex}", os.O_CREAT | os.O_WRONLY | os.O_EXCL)
        os.fsync(fd)
        os.close(fd)
        return {"id": effect_id}

    def find(effect_id: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        return {"id": effect_id} if any(folder.glob(f"{effect_id}.*")) else None

    return FunctionTarget("files", send, tier=2, find=find, in_flight=0.0)  # a request dies with its sender


def main(folder: Path, keys: int, seed: int, address: str | None) -> int:
    if address is None:
        journal: Any = Journal(folder / "journal.jsonl", checkpoint_every=CHECKPOINT_EVERY,
                               segment_bytes=SEGMENT_BYTES, archive=folder / "archive")
        claims = None
    else:
        journal, claims = open_journal(address, claim_ttl=LEASE)
    gate = Gate(journal, service_target(folder / "service"), claims=claims, claim_wait=10)
    order = list(range(keys))
    random.Random(seed).shuffle(order)
    for n, k in enumerate(order):
        outcome = gate.submit(Effect(f"k{k}", {"k": k}))
        if outcome.status.value.startswith("REFUSED") or outcome.status.value == "AMBIGUOUS":
            print(f"k{k}: {outcome}")
            return 1
        if n % ARCHIVE_EVERY == 3 and address is None:
            journal.archive_settled()
            gate.claims.retire_settled(journal)
    return 0


if __name__ == "__main__":
    folder, keys, seed, *address = sys.argv[1:]
    try:
        sys.exit(main(Path(folder), int(keys), int(seed), address[0] if address else None))
    except JournalUnavailable as away:
        print(away)
        sys.exit(AWAY)
