"""Claims without liveness detection, as the published run had them: a dead holder's claim stays taken until its
TTL (30 s) has run out, counted from when it was taken.

The control system `interlock_ttl` passes these to the Gate, so its restarted worker waits out the TTL before it
may recover, which reproduces the published run's ~31 s to settle. The library's own claims free a dead holder's
claim at once (flock); this class keeps the same flock underneath and adds the wait a TTL lease imposes.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from experiments.atomic import write_json

if TYPE_CHECKING:
    from interlock._protocols import ClaimLike, ClaimsLike

TTL_SECONDS = 30.0
_POLL_SECONDS = 0.01


class TtlClaim:
    """A held claim that records its release, so the next holder knows it need not wait out the TTL."""

    def __init__(self, inner: ClaimLike, record: Path):
        self.inner, self.record = inner, record
        self.effect_id, self.epoch = inner.effect_id, inner.epoch

    def confirm(self) -> bool:
        """Whether this epoch still owns the effect (the underlying claim's answer)."""
        return self.inner.confirm()

    def release(self) -> None:
        """Give the effect back and record that it was given back."""
        write_json(self.record, {**_read(self.record), "released": True})
        self.inner.release()

    def __enter__(self) -> TtlClaim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class TtlClaims:
    """Wraps claims (`inner`); an acquire waits until an unreleased earlier claim's TTL has run out."""

    def __init__(self, inner: ClaimsLike, directory: str | os.PathLike[str], ttl: float = TTL_SECONDS):
        self.inner, self.directory, self.ttl = inner, Path(directory), ttl
        self.directory.mkdir(parents=True, exist_ok=True)

    def acquire(self, effect_id: str, wait: float) -> TtlClaim | None:
        """The claim once any unreleased earlier claim has expired, then within `wait` of the underlying claims."""
        record = self.directory / f"{effect_id}.ttl.json"
        taken = _read(record)
        if taken and not taken.get("released"):
            expires = float(taken["since"]) + self.ttl
            while time.time() < expires:  # a TTL lease: nothing tells this holder the other one is dead
                time.sleep(min(_POLL_SECONDS, max(0.0, expires - time.time())))
        claim = self.inner.acquire(effect_id, wait)
        if claim is None:
            return None
        write_json(record, {"since": time.time(), "pid": os.getpid(), "released": False})
        return TtlClaim(claim, record)


def _read(path: Path) -> dict[str, Any]:
    try:
        return cast(dict[str, Any], json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return {}
