"""The published runs' artifact format, read beside this project's own.

The published runs (`results/published/`, shipped byte for byte) were written by an earlier gate: its journal
chains each effect on its own through `prev`, numbers no entry, documents kinds this gate never writes, and
journals a resend only inside its COMMITTED. This project's journal is another format (`interlock.receipts`).
The pipeline and the experiments both judge gate records of either kind, and neither may import the other, so
the published format lives here, beside them: the library users install carries none of it.
"""

from __future__ import annotations

from typing import Any

import interlock

from .receipt import KINDS, RESEND_VIAS, entry_hash, is_published, verify


def verify_record(bundle: dict[str, Any] | list[Any], *, public_key: str | None = None) -> dict[str, Any]:
    """The receipt of a gate record in either format: the published one read here, this journal's by the
    library, so one judge reads both the published runs and the project's own."""
    entries = bundle.get("entries") if isinstance(bundle, dict) else bundle
    if isinstance(entries, list) and is_published(entries):
        return verify(bundle, public_key=public_key)
    return interlock.verify(bundle, public_key=public_key)


__all__ = ["KINDS", "RESEND_VIAS", "entry_hash", "is_published", "verify", "verify_record"]
