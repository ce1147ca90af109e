"""The project's own result files: provenance, write-log ground truth, chained journals, structured worker logs."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from interlock.journal import Journal
from pipeline import BadInput, derive

REFERENCE = Path(__file__).parents[1] / "results" / "published"
PROVENANCE = {
    "script": "experiments/scenario_gcp_resource.py", "generated": "2026-11-30T01:00:00+00:00",
    "services": {"object_store": {"real": False, "name": "fake-gcs-server", "version": "1.54"},
                 "model": {"real": False, "name": "scripted decider"}},
    "decider": "scripted", "versions": {"interlock": "0.1.0"}, "commit": "abc123", "claim": {"ttl": 30},
}


def reference(name):
    return json.loads((REFERENCE / name).read_text())


def write(tmp_path, data, name="gcp_resource.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def project_gcp():
    data = reference("gcp_resource.json")
    data.update(schema_version=1, provenance=PROVENANCE)
    return data


def unversioned_row(base):
    """hand_check on an unversioned bucket: its write landed (answer cut), a redeploy replaced it, and the
    version lookup can no longer see it."""
    cell = copy.deepcopy(base)
    cell.update(fault="crash_after_commit_redeploy_versioning_off", ground_truth_source="write_log",
                outcome="PRECONDITION_FAILED")
    cell["artifacts"]["outcome_restart.json"]["outcome"] = "PRECONDITION_FAILED"
    obj = cell["ids"]["object"]
    write = {"method": "POST", "path": "/upload/storage/v1/b/bk/o", "query": "", "object": obj, "cut": False}
    cell["artifacts"]["write_log"] = [
        {**write, "seq": 0, "ts": 1.0, "status": 200, "generation": "100", "metadata": {"writer": "human-deploy"}},
        {**write, "seq": 1, "ts": 2.0, "status": None, "generation": "200", "metadata": {"writer": "agent"},
         "cut": True},
        {**write, "seq": 2, "ts": 3.0, "status": 200, "generation": "300", "metadata": {"writer": "human-redeploy"}},
        {**write, "seq": 3, "ts": 4.0, "status": 412, "generation": None, "metadata": {"writer": "agent"}},
        {**write, "seq": 4, "ts": 5.0, "status": 200, "generation": "999", "object": "other/app.json",
         "metadata": {"writer": "agent"}},
        {**write, "seq": 5, "ts": 6.0, "status": 200, "generation": "200", "method": "GET",
         "metadata": {"writer": "agent"}},
        {**write, "seq": 6, "ts": 7.0, "status": 200, "generation": "555", "method": "GET",
         "metadata": {"writer": "agent"}},
    ]
    live = cell["artifacts"]["gcs_live_raw"]
    live.update(generation="300", metadata={"writer": "human-redeploy"})
    cell["artifacts"]["gcs_versions_raw"] = [live]
    cell["artifacts"]["log.jsonl"][-1].update(outcome="PRECONDITION_FAILED", ids={
        "writes_found": [], "live_generation": "300", "live_writer": "human-redeploy"})
    return cell


def test_project_provenance_is_read_and_labels_stand_ins(tmp_path):
    scenario = derive(write(tmp_path, project_gcp()))
    prov = scenario.provenance
    assert prov.published is False and prov.commit == "abc123" and prov.claim == {"ttl": 30}
    assert "fake-gcs-server (stand-in)" in prov.summary and "scripted decider (stand-in)" in prov.summary
    published = derive(REFERENCE / "gcp_resource.json").provenance
    assert published.published is True and published.summary.startswith("published real-service run")


@pytest.mark.parametrize("name", ["gcp_resource.json", "calendar.json"])
def test_a_run_without_provenance_is_a_real_service_run_only_while_it_holds_the_published_bytes(tmp_path, name):
    stripped = json.loads((REFERENCE.parent / "scenarios" / name).read_text())
    del stripped["provenance"]
    prov = derive(write(tmp_path, stripped, name)).provenance
    assert not any(service.real for service in prov.services)
    assert prov.summary.startswith("no provenance and not the published run's bytes")
    assert all(service.real for service in derive(REFERENCE / name).provenance.services)


def test_write_log_counts_a_cut_commit_the_version_listing_cannot_show(tmp_path):
    data = project_gcp()
    data["cells"].append(unversioned_row(data["cells"][4]))
    cell = derive(write(tmp_path, data)).cells[-1]
    assert cell.truth.source == "write_log"
    assert cell.truth.writes == (("100", "human-deploy"), ("200", "agent"), ("300", "human-redeploy"))
    assert cell.truth.agent_writes == ("200",) and cell.invariant_held is True
    assert cell.answer_matches is False  # it said "not landed"; the service committed its write
    assert cell.can_prove is False and "the record says [], the service holds [200]" in cell.proof.reason


def test_unsupported_schema_version_is_bad_input(tmp_path):
    data = project_gcp()
    data["schema_version"] = 2
    with pytest.raises(BadInput, match="schema_version: unsupported schema version"):
        derive(write(tmp_path, data))


def chained_journal(tmp_path, effect_id, generation):
    """A journal written by interlock's own Journal, with a second effect interleaved."""
    with Journal(tmp_path / "journal.jsonl") as journal:
        journal.append("PROPOSED", effect_id, {"agent": "sre-agent", "lease": "INC-2207", "premises": {}})
        journal.append("PROPOSED", "0" * 12, {"agent": "someone-else"})
        journal.append("AUTHORIZED", effect_id, {"lease": "INC-2207"})
        journal.append("DISPATCHED", effect_id, {"checks": {"lease_live": True, "lease": None, "violations": []}})
        journal.append("COMMITTED", effect_id, {"via": "recovery-query", "found": generation, "rechecked": {
            "lease_live": True, "lease": None, "violations": []}})
        return journal.entries()


def test_chained_journal_proves_the_write_and_a_removed_line_takes_proof_away(tmp_path):
    data = project_gcp()
    cell = data["cells"][5]
    generation = cell["ids"]["agent_write_generations"][0]
    cell["artifacts"]["journal.jsonl"] = chained_journal(tmp_path, cell["ids"]["effect_id"], generation)
    judged = derive(write(tmp_path, data)).cells[5]
    assert judged.receipt["format"] == "chained" and judged.record.chain_valid is True
    assert judged.record.writes == (generation,) and judged.can_prove is True
    del cell["artifacts"]["journal.jsonl"][2]
    judged = derive(write(tmp_path, data)).cells[5]
    assert judged.can_prove is False and "the hash chain does not verify" in judged.proof.reason


def test_a_calendar_baseline_with_a_structured_worker_log_can_prove(tmp_path):
    data = reference("calendar.json")
    cell = data["cells"][1]  # after_commit/none hand_check: FOUND_BY_LOOKUP
    send = {"agent": "booking-agent", "event": "send", "check": "request live; slot free"}
    cell["evidence"]["worker_log"] = json.dumps(send) + "\ncrash injected: SIGKILL at after_commit\n" + json.dumps(send)
    judged = derive(write(tmp_path, data, "calendar.json")).cells[1]
    assert judged.record.actor == "booking-agent" and judged.record.checks == ("request live; slot free",) * 2
    assert judged.record.writes == judged.truth.agent_writes and judged.can_prove is True
    assert derive(REFERENCE / "calendar.json").cells[1].can_prove is False


def test_the_verdict_follows_the_numbers(tmp_path):
    data = reference("gcp_resource.json")
    cell = data["cells"][1]  # crash_before_send_redeploy / hand_check: make the service show an agent write
    extra = copy.deepcopy(cell["artifacts"]["gcs_versions_raw"][0])
    extra.update(generation="9999999999999999", metadata={"writer": "agent"})
    cell["artifacts"]["gcs_versions_raw"].append(extra)
    scenario = derive(write(tmp_path, data))
    pair = next(s for s in scenario.verdict if "hand_check" in s and "interlock beats hand_check" in s)
    assert "on what the object store holds (3/3 against 2/3; better on crash_before_send_redeploy)" in pair
    assert scenario.summary("hand_check").invariant_held.k == 2


def test_a_peer_is_never_judged_by_an_empty_baseline_log(tmp_path):
    data = project_gcp()
    cell = copy.deepcopy(data["cells"][4])  # crash_after_commit_redeploy / hand_check, as a peer's cell
    cell["system"] = "dbos_step"
    cell["artifacts"].update({"log.jsonl": [], "peer_record_restart.json": {"found": None, "left": None}})
    data["cells"].append(cell)
    judged = derive(write(tmp_path, data)).cells[-1]
    assert judged.record.writes is None and judged.can_prove is False
    assert "the worker left no reading of the record" in judged.proof.reason
    assert "the record says []" not in judged.proof.reason
