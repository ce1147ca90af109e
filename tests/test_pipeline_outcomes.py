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
