"""A job is decided once: the first worker persists the decision and a restarted worker reuses it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from experiments.atomic import write_json


def persisted_decision(path: Path, decide: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Return the decision stored at `path`, or decide now and store it durably before returning it."""
    path = Path(path)
    if path.exists():
        return cast(dict[str, Any], json.loads(path.read_text(encoding="utf-8")))
    decision = decide()
    write_json(path, decision)
    return decision
