"""How busy the machine a result file ran on was: its load average at the run's start and end, and its cores.

A count of runs inside the check-to-send window moves with the load (a loaded machine stretches every step of a
recoverer racing a held sender), so a page gives it beside the counts; files from before it was recorded have none.
"""

from __future__ import annotations

from .load import Node


def load_said(provenance: Node) -> tuple[float, float] | None:
    """(load average at the start, at the end) the provenance records, else None."""
    load = provenance.opt_node("load_average")
    if load is None:
        return None
    return load.get("at_start", "number"), load.get("at_end", "number")


def cores_said(provenance: Node) -> int | None:
    """The machine's core count the provenance records (one at least), else None."""
    host = provenance.opt_node("host")
    cpus = host.opt_node("cpus") if host is not None else None
    return cpus.count(1) if cpus is not None else None
