"""The pipeline: re-judge result files from their raw artifacts alone (no service, no credentials)."""

from .compare import compare_published
from .derive import derive, derive_cell
from .faults import CATALOGUE, Fault
from .load import BadInput
from .model import (Cell, Decision, Difference, Disagreement, FaultNote, GroundTruth, Proof, Provenance,
                    RacedDispatch, RacedVariant, RecordSays, Scenario, Service, Spread, SystemSummary, Tally)
from .outcomes import UnknownOutcome, landed
from .published import published_files, published_runs
from .tables import as_text, cells_frame, summary_frame

__all__ = [
    "BadInput", "CATALOGUE", "Cell", "Decision", "Difference", "Disagreement", "Fault", "FaultNote", "GroundTruth",
    "Proof", "Provenance", "RacedDispatch", "RacedVariant", "RecordSays", "Scenario", "Service", "Spread",
    "SystemSummary", "Tally", "UnknownOutcome", "as_text", "cells_frame", "compare_published", "derive",
    "derive_cell", "landed", "published_files", "published_runs", "summary_frame",
]
