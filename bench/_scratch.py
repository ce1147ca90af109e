"""Benchmarks' scratch folders, kept while `python -m bench` runs and removed when it ends, all at once.

A JSONL claim creates a file per effect, and on some filesystems creating one gets far slower in the minutes after
a burst of deletions (ext4 without a journal passes over the inodes freed lately): a benchmark that removed its
tens of thousands of claim files as it ended would slow the next one's JSONL figures. Outside a bench run (a test
calling a benchmark's `run`), a folder goes as soon as its benchmark is done with it.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_kept: list[Path] | None = None  # the folders to remove when the bench run ends; None outside one


@contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    """A new folder for one benchmark's files, removed when it is done with it or, in a bench run, at its end."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield folder
    finally:
        if _kept is None:
            shutil.rmtree(folder, ignore_errors=True)
        else:
            _kept.append(folder)


@contextmanager
def kept_to_the_end() -> Iterator[None]:
    """A bench run: every scratch folder made inside it is kept until it ends, then removed."""
    global _kept
    _kept = []
    try:
        yield
    finally:
        for folder in _kept:
            shutil.rmtree(folder, ignore_errors=True)
        _kept = None
