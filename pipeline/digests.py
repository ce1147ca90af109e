"""The published runs' digests, as results/published/README.md states them: the bytes that make a file the
published real-service run, which alone carries no provenance block of its own."""

from __future__ import annotations

import hashlib
from pathlib import Path

SHA256 = {
    "gcp_resource.json": "bacebb050b4ec624d841496362bba05e7a45befa621c64f0cab00dbdaec89fed",
    "calendar.json": "22cb45329df092fb10ee051e00c6189bbdf2ba5ac9aecdfdb02f2560a0f38aba",
}


def sha256(path: str | Path) -> str:
    """The hex sha256 of a file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def is_published(path: str | Path) -> bool:
    """Whether the file holds the bytes of a published run, wherever it lies."""
    return sha256(path) in SHA256.values()
