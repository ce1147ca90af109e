"""Pausing Python's cycle collector while a journal is read: reading builds many small acyclic objects (parsed
entries, folded records), and on a million of them the collector's repeated passes cost more than the reading."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with the cycle collector off, turning it back on after if it was on; reference counting still
    frees everything the block drops."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
