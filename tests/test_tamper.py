"""Every damaged journal is flagged by verify, except what COVERS says only a signature can catch, which a
signature then catches; a torn last line never costs a complete entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments import tamper
from pg_worker import pg_cluster, pg_url  # noqa: F401  (fixtures)
from interlock import Journal, verify, verify_journal
from interlock.receipts import COVERS



@pytest.fixture(scope="module")
def keys():
    return tamper.Keys()


@pytest.fixture(scope="module")
def gate_originals():
    return tamper.generated_originals()


def assert_corpus_holds(originals, keys):
    assert originals and not tamper.originals_verify(originals, keys)
    result = tamper.run_corpus(originals, keys)
    assert result["misses"] == []
    return result["kinds"]


def test_every_mutant_of_the_published_journals_is_flagged_unless_documented(keys):
    originals = tamper.reference_originals()
    assert len(originals) == 11  # 8 calendar receipt bundles, 3 gcp journals
    kinds = assert_corpus_holds(originals, keys)
    assert kinds["field_changed"]["flagged_unsigned"] == kinds["field_changed"]["generated"] > 400


def test_every_mutant_of_a_gate_journal_is_flagged_unless_documented(gate_originals, keys):
    kinds = assert_corpus_holds(gate_originals, keys)
    assert all(row["generated"] > 0 for row in kinds.values()), kinds


def test_every_mutant_of_a_postgresql_gate_journal_is_flagged_unless_documented(pg_url, keys):
    from interlock.pg import PgClaims, PgJournal

    journal = PgJournal(pg_url)
    claims = PgClaims(journal)
    entries = tamper.gated_entries(journal, claims)
    claims.close()
    originals = tamper.originals_of_journal(entries, "gate journal on PostgreSQL")
    assert [o.scope for o in originals].count("journal") == 1
    kinds = assert_corpus_holds(originals, keys)
    assert kinds["forked_chain"]["flagged_unsigned"] == kinds["forked_chain"]["generated"] > 0


def test_documented_undetectable_mutants_pass_unsigned_and_fail_signed(gate_originals, keys):
    documented = [m for o in gate_originals for m in tamper.mutants(o, keys) if m.expect_unsigned == tamper.UNDETECTABLE]
    assert {m.kind for m in documented} == {"cut_tail", "forged_committed", "other_key"}
    for mutant in documented:
        assert not tamper.flagged(mutant, keys, signed=False), mutant.label
        assert tamper.flagged(mutant, keys, signed=True), mutant.label


def test_covers_names_every_kind_left_undetectable_unsigned():
    for phrase in tamper.DOCUMENTED.values():
        assert phrase in COVERS


def test_a_forged_commit_after_a_refusal_is_flagged_without_a_signature(gate_originals):
    refused = next(o for o in gate_originals if o.scope == "bundle" and o.entries[-1]["kind"] == "REFUSED")
    forged = refused.entries + [tamper.forged_committed(refused, refused.entries)]
    result = verify(forged)
    assert result["tamper_evident"] and not result["valid"]
    assert any("after the effect was already resolved" in p or "with no send open" in p for p in result["problems"])


def test_a_forged_commit_onto_an_open_dispatch_needs_the_signature(tmp_path, keys):
    entries = tamper.gate_journal(tmp_path)
    left_open = next(o for o in tamper.originals_of_journal(entries, "x") if o.scope == "bundle"
                     and o.entries[0].get("key") == "left-open")
    cut = left_open.entries[:3]  # PROPOSED, AUTHORIZED, DISPATCHED: the state a crash before the answer leaves
    assert [e["kind"] for e in cut] == ["PROPOSED", "AUTHORIZED", "DISPATCHED"]
    forged = cut + [tamper.forged_committed(left_open, cut)]
    assert verify(forged)["happened"] is True  # unsigned, the forgery reads as landed
    mutant = tamper.Mutant("forged_committed", tamper.Original("open", "bundle", cut, left_open.effect_id), "appended",
                           forged)
    assert tamper.flagged(mutant, keys, signed=True)


def test_a_cut_whole_journal_is_caught_by_its_checkpoint(gate_originals, keys):
    whole = next(o for o in gate_originals if o.scope == "journal")
    cut = tamper.Mutant("cut_tail", whole, "last entry", whole.entries[:-1])
    assert verify_journal(cut.entries)["valid"]
    assert tamper.flagged(cut, keys, signed=True)


def test_a_torn_last_line_keeps_every_complete_entry_at_every_offset(tmp_path):
    swept = tamper.torn_tail_sweep(tmp_path)
    assert swept["offsets_tried"] > 100
    assert swept["runs_losing_a_complete_entry"] == 0
    assert swept["runs_with_a_wrong_torn_file"] == 0


def test_a_torn_tail_is_set_aside_beside_the_journal(tmp_path):
    path = tmp_path / "journal.jsonl"
    journal = Journal(path)
    journal.append("PROPOSED", "a" * 12, {"n": 1})
    journal.flush()
    journal.append("PROPOSED", "b" * 12, {"n": 2})  # torn by a crash before any flush covered it
    raw = path.read_bytes()
    path.write_bytes(raw[:-9])
    with Journal(path) as journal:
        assert [e["effect_id"] for e in journal.entries()] == ["a" * 12]
    assert Path(f"{path}.torn").read_bytes() == raw[raw.index(b"\n") + 1:-9] + b"\n"


def test_a_sigkill_mid_append_loses_no_complete_entry(tmp_path):
    """A kill may land between two writes, so kills go on (each losing nothing) until at least one has torn a line."""
    torn = 0
    for attempt in range(8):
        killed = tamper.sigkill_mid_append(tmp_path / str(attempt), runs=2)
        assert killed["runs_losing_a_complete_entry"] == 0
        torn += killed["runs_killed_mid_line"]
        if torn:
            break
    assert torn >= 1


def test_the_committed_tamper_summary_is_current_and_shows_no_miss():
    summary = json.loads((Path(__file__).parents[1] / "results" / "reliability" / "tamper.json").read_text())
    assert summary["schema_version"] == 2 and summary["provenance"]["script"] == "python -m experiments.tamper"
    published = [s for s in summary["sources"] if s["source"].startswith("results/published/")]
    assert len(published) == 11 and {s["format"] for s in published} == {"published"}
    assert [k["kind"] for k in summary["kinds"]] == list(tamper.KINDS)
    assert summary["totals"]["missed"] == 0 and summary["originals_failing_verify"] == []
    assert summary["totals"]["flagged_signed"] == summary["totals"]["generated"]
