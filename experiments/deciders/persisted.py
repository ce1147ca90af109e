"""A job is decided once: the first worker persists the decision and a restarted worker reuses it."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path


def persisted_decision(path: Path, decide: Callable[[], dict]) -> dict:
    """Return the decision stored at `path`, or decide now and store it atomically before returning it."""
    path = Path(path)
    if path.exists():
        return json.loads(path.read_text())
    decision = decide()
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as out:
        json.dump(decision, out, indent=1, sort_keys=True)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    return decision
