"""The pipeline: re-judge result files from their raw artifacts alone (no service, no credentials)."""

from .compare import compare_published, published_runs
from .derive import derive, derive_cell
from .load import BadInput
from .model import (Cell, Decision, Difference, FaultNote, GroundTruth, Proof, Provenance, RacedDispatch,
                    RacedVariant, RecordSays, Scenario, Service, Spread, SystemSummary, Tally)
from .tables import as_text, cells_frame, summary_frame

__all__ = [
    "BadInput", "Cell", "Decision", "Difference", "FaultNote", "GroundTruth", "Proof", "Provenance", "RacedDispatch",
    "RacedVariant", "RecordSays", "Scenario", "Service", "Spread", "SystemSummary", "Tally", "as_text", "cells_frame",
    "compare_published", "derive", "derive_cell", "published_runs", "summary_frame",
]
