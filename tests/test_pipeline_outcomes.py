"""The judge's outcome table: every outcome a system reports claims landed, not landed, or cannot say."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.outcomes import UnknownOutcome, landed


@pytest.mark.parametrize("outcome", ["WRITTEN", "BOOKED", "ALREADY_APPLIED", "ALREADY_EXISTS_409", "FOUND_BY_LOOKUP",
                                     "COMMITTED", "COMMITTED_BY_RETRY", "COMMITTED_ON_QUERY", "REAPPLIED_AFTER_QUERY",
                                     "DUPLICATE_IGNORED"])
def test_outcomes_that_claim_the_effect_landed(outcome):
    assert landed(outcome) is True


@pytest.mark.parametrize("outcome", ["PRECONDITION_FAILED", "REFUSED:stale_premise_at_recovery", "REFUSED:slot_busy"])
def test_outcomes_that_claim_it_did_not_land(outcome):
    assert landed(outcome) is False


@pytest.mark.parametrize("outcome", ["AMBIGUOUS", "IN_FLIGHT", "IN_PROGRESS", "WORKFLOW_ERROR",
                                     "IDEMPOTENCY_VALIDATION_ERROR"])
def test_outcomes_that_cannot_say(outcome):
    assert landed(outcome) is None


@pytest.mark.parametrize("outcome", ["REFUSED:", "MOSTLY_WRITTEN", "committed", ""])
def test_an_outcome_without_a_row_is_refused_rather_than_guessed(outcome):
    with pytest.raises(UnknownOutcome):
        landed(outcome)


def test_the_pipeline_reads_outcomes_through_its_own_table_only():
    sources = (Path(__file__).parents[1] / "pipeline").rglob("*.py")
    assert [p.name for p in sources if "interlock.outcomes" in p.read_text()] == []


def test_every_status_and_fault_the_experiments_can_write_has_a_row():
    """A runner or library change that adds an outcome or a fault is judged only once the pipeline has its row."""
    from interlock import Status

    from experiments import outcomes as baseline
    from experiments.calendar.faults import FAULTS as CALENDAR_FAULTS
    from experiments.gcp_resource.faults import FAULTS as GCP_FAULTS
    from experiments.peers.job import IN_PROGRESS, VALIDATION_ERROR, WORKFLOW_ERROR
    from pipeline import CATALOGUE

    statuses = [s.value for s in Status if not s.value.endswith(":")]
    words = [v for k, v in vars(baseline).items() if k.isupper() and isinstance(v, str) and not v.endswith(":")]
    for outcome in [*statuses, *words, IN_PROGRESS, VALIDATION_ERROR, WORKFLOW_ERROR]:
        landed(outcome)
    assert {f.name for f in GCP_FAULTS} <= set(CATALOGUE["gcp_resource"])
    assert {f.name for f in CALENDAR_FAULTS} <= set(CATALOGUE["calendar"])
