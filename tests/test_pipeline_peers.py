"""Proof for the peers from their own records: DBOS's system database rows and the Powertools idempotency record,
as the runner saved them in the cell, read with the rule every other record is read by."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from pipeline import BadInput, derive
from pipeline.render import render_site

RESULTS = Path(__file__).parents[1] / "results" / "scenarios"
RECORD = "peer_record_restart.json"
AFTER_RUN = "peer_record_after_run.json"


def results(name):
    return json.loads((RESULTS / f"{name}.json").read_text())


def cell_of(data, fault, system):
    return next(c for c in data["cells"] if c["fault"] == fault and c["system"] == system)


def judged(tmp_path, data, fault, system, name="gcp_resource"):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return next(c for c in derive(path).cells if c.fault == fault and c.system == system)


def newest(files):
    """The reading the pipeline reads: the harness's after the run, else the restart worker's own."""
    return files[AFTER_RUN]["record"] if AFTER_RUN in files else files[RECORD]["left"]


def dbos_left(cell):
    return newest(cell["artifacts"])


def test_a_dbos_record_of_the_refused_step_proves_that_nothing_landed(tmp_path):
    cell = judged(tmp_path, results("gcp_resource"), "crash_before_send_redeploy", "dbos_step")
    assert cell.truth.agent_writes == ()
    assert cell.record.actor == "agent" and cell.record.checks[0].startswith("ifGenerationMatch=")
    assert cell.record.writes == () and cell.can_prove is True
    assert ("workflow status", "SUCCESS") in cell.record.shown


def test_a_dbos_record_that_never_saw_the_killed_attempts_write_is_no_proof(tmp_path):
    cell = judged(tmp_path, results("gcp_resource"), "crash_after_commit_redeploy", "dbos_step")
    landed = cell.truth.agent_writes
    assert len(landed) == 1 and cell.record.writes == () and cell.can_prove is False
    assert f"the record says [], the service holds [{landed[0]}]" in cell.proof.reason


def test_the_proof_follows_the_step_output_the_record_holds(tmp_path):
    data = results("gcp_resource")
    cell = cell_of(data, "crash_after_commit_redeploy", "dbos_step")
    fault = judged(tmp_path, copy.deepcopy(data), "crash_after_commit_redeploy", "dbos_step")
    step = dbos_left(cell)["operation_outputs"][-1]
    step["output"] = {"outcome": "WRITTEN", "ids": {"generation": fault.truth.agent_writes[0]}}
    edited = judged(tmp_path, data, "crash_after_commit_redeploy", "dbos_step")
    assert edited.record.writes == fault.truth.agent_writes and edited.can_prove is True


def test_a_dbos_step_that_stored_an_error_cannot_say_what_landed(tmp_path):
    data = results("gcp_resource")
    step = dbos_left(cell_of(data, "crash_after_commit_redeploy", "dbos_step"))["operation_outputs"][-1]
    step.update(output=None, error={"message": "ConnectionError: the answer was lost"})
    cell = judged(tmp_path, data, "crash_after_commit_redeploy", "dbos_step")
    assert cell.record.writes is None and cell.can_prove is False
    assert "its step stored an error, not an answer" in cell.proof.reason


def test_a_pending_workflow_leaves_its_send_unresolved(tmp_path):
    data = results("gcp_resource")
    left = dbos_left(cell_of(data, "crash_after_commit_redeploy", "dbos_step"))
    left["workflow_status"][0]["status"] = "PENDING"
    left["operation_outputs"] = []
    cell = judged(tmp_path, data, "crash_after_commit_redeploy", "dbos_step")
    assert cell.record.writes is None and cell.record.unresolved_sends == 1
    assert "the workflow is PENDING" in cell.proof.reason


def test_a_powertools_record_names_its_response_but_no_actor_and_no_check(tmp_path):
    data = results("calendar")
    cell = judged(tmp_path, data, "before_send/none", "powertools_idempotent", "calendar")
    assert cell.record.writes == cell.truth.agent_writes and len(cell.truth.agent_writes) == 1
    assert cell.can_prove is False
    assert cell.proof.reason == "the record names no actor; the record holds no check"


def test_an_in_progress_powertools_record_cannot_say(tmp_path):
    data = results("calendar")
    files = cell_of(data, "before_send/none", "powertools_idempotent")["evidence"]["case_files"]
    newest(files)["value"] = {"status": "INPROGRESS", "expiration": 1, "in_progress_expiration": 1}
    cell = judged(tmp_path, data, "before_send/none", "powertools_idempotent", "calendar")
    assert cell.record.writes is None and cell.record.unresolved_sends == 1
    assert "the record is INPROGRESS" in cell.record.reason


def test_a_powertools_response_that_is_not_json_is_bad_input_naming_its_path(tmp_path):
    data = results("calendar")
    index = data["cells"].index(cell_of(data, "before_send/none", "powertools_idempotent"))
    files = data["cells"][index]["evidence"]["case_files"]
    newest(files)["value"]["data"] = "{cut"
    where = f'["{AFTER_RUN}"].record' if AFTER_RUN in files else f'["{RECORD}"].left'
    path = tmp_path / "calendar.json"
    path.write_text(json.dumps(data))
    with pytest.raises(BadInput) as caught:
        derive(path)
    assert str(caught.value) == (f"{path}: cells[{index}].evidence.case_files{where}.value.data: "
                                 "the COMPLETED record's data is not JSON")


def test_a_peer_cell_without_its_record_says_so(tmp_path):
    data = results("gcp_resource")
    files = cell_of(data, "crash_before_send_redeploy", "dbos_step")["artifacts"]
    for name in [name for name in files if name.startswith("peer_record_")]:
        del files[name]
    cell = judged(tmp_path, data, "crash_before_send_redeploy", "dbos_step")
    assert cell.record.writes is None and cell.can_prove is False
    assert "the cell keeps no record of the peer (DBOS system database rows)" in cell.proof.reason


def test_the_cell_page_shows_the_peer_record_escaped(tmp_path):
    data = results("gcp_resource")
    step = dbos_left(cell_of(data, "crash_after_commit_redeploy", "dbos_step"))["operation_outputs"][-1]
    step["output"]["ids"]["refused"] = "<script>alert(1)</script>"
    path = tmp_path / "gcp_resource.json"
    path.write_text(json.dumps(data))
    docs = tmp_path / "docs"
    render_site([derive(path)], {}, docs)
    page = (docs / "scenarios" / "gcp_resource" / "cells.md").read_text()
    assert "<th>step send&#95;write output</th>" in page and "<th>workflow status</th> <td>SUCCESS</td>" in page
    assert "<script>" not in page and "&#60;script&#62;alert(1)&#60;/script&#62;" in page


def test_the_methodology_page_cites_each_peers_documentation_from_the_provenance(tmp_path):
    docs = tmp_path / "docs"
    render_site([derive(RESULTS / "gcp_resource.json")], {}, docs)
    page = (docs / "methodology.md").read_text()
    provenance = results("gcp_resource")["provenance"]["peers"]
    for peer in ("dbos_step", "powertools_idempotent"):
        assert f"### {peer.replace('_', '&#95;')}" in page
        for doc in provenance[peer]["docs"]:
            assert doc["url"].replace("-", "&#45;").replace("_", "&#95;") in page
    assert "Temporal is described on the [peers](peers.md) page and not measured" in page


def test_the_peers_page_says_temporal_is_not_measured_and_cites_its_activity_semantics(tmp_path):
    docs = tmp_path / "docs"
    render_site([derive(RESULTS / "calendar.json")], {}, docs)
    page = (docs / "peers.md").read_text()
    temporal = next(line for line in page.splitlines() if line.startswith("- **Temporal**"))
    assert "not measured" in temporal and "at least once" in temporal
    assert "Start-To-Close timeout" in temporal and "Heartbeat timeout" in temporal
    assert "(https://docs.temporal.io/encyclopedia/detecting-activity-failures)" in temporal


def test_the_harness_reading_after_the_run_is_preferred_to_the_last_workers_own(tmp_path):
    data = results("gcp_resource")
    cell = cell_of(data, "crash_after_commit_redeploy", "dbos_step")
    fault = judged(tmp_path, copy.deepcopy(data), "crash_after_commit_redeploy", "dbos_step")
    after = copy.deepcopy(dbos_left(cell))
    after["operation_outputs"][-1]["output"] = {"outcome": "WRITTEN", "ids": {"generation": fault.truth.agent_writes[0]}}
    cell["artifacts"]["peer_record_after_run.json"] = {"read_by": "the harness", "read_at": 1.0, "record": after}
    edited = judged(tmp_path, data, "crash_after_commit_redeploy", "dbos_step")
    assert edited.record.source.endswith('["peer_record_after_run.json"].record')
    assert edited.record.writes == fault.truth.agent_writes and edited.can_prove is True
