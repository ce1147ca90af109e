"""One worker of a fleet sharing a JSONL journal, run as a real process by tests/test_fleet.py.

`python -m tests.fleet_worker DIR KEYS SEED` submits effects `k0` .. `k<KEYS-1>` in an order of its own (SEED) to
a service that stores each send as a file `DIR/service/<effect id>.<random>` and finds an effect by its files, on
a journal that checkpoints every 5 entries, rolls at 5 KB and archives its settled segments every few effects.
It stops at the first outcome that is a refusal or AMBIGUOUS, printing it.
"""

from __future__ import annotations

import os
import random
import sys
import uuid
from pathlib import Path
from typing import Any

from interlock import Effect, FunctionTarget, Gate, Journal

CHECKPOINT_EVERY = 5
SEGMENT_BYTES = 5_000
ARCHIVE_EVERY = 13


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


def main(folder: Path, keys: int, seed: int) -> int:
    journal = Journal(folder / "journal.jsonl", checkpoint_every=CHECKPOINT_EVERY, segment_bytes=SEGMENT_BYTES,
                      archive=folder / "archive")
    gate = Gate(journal, service_target(folder / "service"), claim_wait=10)
    order = list(range(keys))
    random.Random(seed).shuffle(order)
    for n, k in enumerate(order):
        outcome = gate.submit(Effect(f"k{k}", {"k": k}))
        if outcome.status.value.startswith("REFUSED") or outcome.status.value == "AMBIGUOUS":
            print(f"k{k}: {outcome}")
            return 1
        if n % ARCHIVE_EVERY == 3:
            journal.archive_settled()
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])))
