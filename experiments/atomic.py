"""The one way the experiments write a JSON file: whole or not at all, even across a crash of the machine.

A result file, a queued job, a decision or a request file is read by another process (a restarted worker, the
pipeline). A reader must see the old content or the new, never half of it, and a file that was reported written
must survive a power cut: write a temp file beside it, fsync it, rename it over the old one, fsync the directory.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any


def write_json(path: str | os.PathLike[str], obj: Any, indent: int | None = 1) -> None:
    """Replace `path` with `obj` as JSON atomically and durably; concurrent writers each rename their own temp."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(json.dumps(obj, indent=indent) + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
