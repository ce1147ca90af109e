"""Benchmark numbers as `make bench` stored them in results/bench/<name>.json, flattened to one row per figure."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .load import Node, read


@dataclass(frozen=True)
class Benchmark:
    """One benchmark file: its figures as (dotted name, value), in the file's order."""

    name: str
    source: str
    figures: tuple[tuple[str, Any], ...]


def _flatten(node: Node, prefix: str = "") -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for key in node.expect("object"):
        child = node.at(key)
        name = f"{prefix}{key}"
        if isinstance(child.value, dict):
            rows += _flatten(child, name + ".")
        else:
            rows.append((name, child.value))
    return rows


def benchmarks(folder: Path, shown: str = "results/bench") -> tuple[Benchmark, ...]:
    """Every results/bench/*.json, in name order; none is fine."""
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    return tuple(Benchmark(path.stem, f"{shown}/{path.name}", tuple(_flatten(read(path)))) for path in files)
