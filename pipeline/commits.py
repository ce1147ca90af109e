"""How a result file names the code it ran: the commit its run started on, uncommitted changes, and where the code
had moved to when the run ended (the workers spawned after the move ran that code)."""

from __future__ import annotations

from .load import Node


def commit_said(provenance: Node) -> str | None:
    """The commit the run started on, marked when the tree had uncommitted changes or the code moved during it."""
    commit: str | None = provenance.opt("commit", "string")  # opt() has checked it is a string when present
    if not commit:
        return commit
    started = _marked(commit, provenance.opt("commit_dirty", "boolean", False))
    moved = moved_to(provenance)
    return f"{started}; the code moved during the run, to {moved}" if moved else started


def moved_to(provenance: Node) -> str | None:
    """What the code was when a run ended that started on other code, else None."""
    moved = provenance.opt_node("code_moved_during_run")
    if moved is None:
        return None
    return _marked(moved.opt("commit_at_end", "string") or "an unknown commit",
                   moved.opt("commit_dirty_at_end", "boolean", False))


def _marked(commit: str, dirty: bool) -> str:
    return f"{commit} (with uncommitted changes)" if dirty else commit
