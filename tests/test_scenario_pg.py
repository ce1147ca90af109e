"""Both scenario runners on the PostgreSQL journal (`--journal postgresql://...`): a gated cell judges the same as
on each cell's JSONL file, its journal artifact is the effect's entries exported from the database, and the
receipts CLI verifies them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from experiments.calendar.scenario import Calendar
from experiments.gcp_resource.scenario import GcpResource
from experiments.runner import main as run_main

from pg_worker import pg_cluster, pg_url  # noqa: F401  (fixtures)

PASSWORD = "pg-journal-secret"  # the throwaway cluster trusts every local login, so the server never asks for it


def _with_password(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.replace("@", f":{PASSWORD}@", 1)))


def _run(scenario, out: Path, *argv: str) -> dict:
    assert run_main(scenario, [*argv, "--out", str(out)]) == 0
    text = out.read_text()
    assert PASSWORD not in text
    return json.loads(text)


def _db_entries(url: str, effect_id: str) -> list[dict]:
    from interlock.pg import PgJournal

    with PgJournal(url) as journal:
        return journal.entries(effect_id)


def _receipts_cli(entries: list[dict], path: Path) -> dict:
    """The receipt the receipts CLI prints for a journal file of one effect's entries."""
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    done = subprocess.run([sys.executable, "-m", "interlock.receipts", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    printed = json.loads(done.stdout)
    assert printed["valid"] and list(printed["effects"]) == [entries[0]["effect_id"]]
    return printed["effects"][entries[0]["effect_id"]]


def _gcp_observed(cell: dict) -> dict:
    """What the workers reported and the store holds, without identifiers that differ between two runs."""
    settled = cell["artifacts"]["outcome_restart.json"]
    receipt = settled["ids"]["receipt"]
    return {
        "outcome": settled["outcome"], "journal": settled["ids"]["journal"], "worker_exits": cell["worker_exits"],
        "writers": [v["metadata"]["writer"] for v in cell["artifacts"]["gcs_versions_raw"]],
        "receipt": {k: receipt[k] for k in ("valid", "happened", "happened_once", "authorized_when_fired",
                                            "assumptions_held")},
    }


def test_gcp_resource_cell_on_postgresql_judges_the_same_as_on_jsonl(pg_url, tmp_path):
    url = _with_password(pg_url)
    argv = ["--faults", "crash_after_commit_redeploy", "--systems", "interlock"]
    on_file = _run(GcpResource, tmp_path / "jsonl.json", *argv)
    on_pg = _run(GcpResource, tmp_path / "pg.json", *argv, "--journal", url)
    file_cell, pg_cell = on_file["cells"][0], on_pg["cells"][0]

    assert _gcp_observed(pg_cell) == _gcp_observed(file_cell)
    assert _gcp_observed(pg_cell)["outcome"] == "COMMITTED_ON_QUERY"
    assert _gcp_observed(pg_cell)["writers"] == ["human-deploy", "agent", "human-redeploy"]
    exported = pg_cell["artifacts"]["journal.jsonl"]
    assert exported == _db_entries(pg_url, pg_cell["ids"]["effect_id"])
    assert on_pg["provenance"]["journal"]["backend"] == "postgresql"
    assert on_pg["provenance"]["journal"]["server_version"]
    assert on_file["provenance"]["journal"]["backend"] == "jsonl"
    assert "PostgreSQL" in pg_cell["claim"]["kind"] and "flock" in file_cell["claim"]["kind"]
    verified = _receipts_cli(exported, tmp_path / "exported.jsonl")
    assert verified["valid"] and verified["happened"] is True and verified["happened_once"] is True


def _calendar_observed(cell: dict) -> dict:
    """What the workers reported and the calendar holds, without identifiers that differ between two runs."""
    result = cell["evidence"]["result_file"]
    receipt = result["receipt"]
    return {
        "outcome": result["outcome"], "first_worker": cell["evidence"]["first_result_file"],
        "events": len(cell["ground_truth"]["events_list"]), "answer": result["answer"],
        "journal": [e["kind"] for e in result["journal"]], "worker_exits": cell["worker_exits"],
        "receipt": {k: receipt[k] for k in ("valid", "happened", "happened_once", "authorized_when_fired",
                                            "assumptions_held")},
    }


def test_calendar_cell_on_postgresql_judges_the_same_as_on_jsonl(pg_url, tmp_path):
    url = _with_password(pg_url)
    argv = ["--faults", "after_commit/none", "--systems", "interlock", "--raced-trials", "0"]
    on_file = _run(Calendar, tmp_path / "jsonl.json", *argv)
    on_pg = _run(Calendar, tmp_path / "pg.json", *argv, "--journal", url)
    file_cell, pg_cell = on_file["cells"][0], on_pg["cells"][0]

    assert _calendar_observed(pg_cell) == _calendar_observed(file_cell)
    assert _calendar_observed(pg_cell)["events"] == 1 and _calendar_observed(pg_cell)["answer"] == "booked"
    bundle = pg_cell["evidence"]["receipt_bundle"]
    assert bundle["entries"] == _db_entries(pg_url, bundle["effect_id"])
    assert "journal.jsonl" not in pg_cell["evidence"]["case_files"]  # the exported file equals the bundle's entries
    assert on_pg["provenance"]["journal"]["backend"] == "postgresql"
    assert "PostgreSQL" in on_pg["provenance"]["claim"]["interlock"]["kind"]
    verified = _receipts_cli(bundle["entries"], tmp_path / "exported.jsonl")
    assert verified["valid"] and verified["happened"] is True


@pytest.mark.parametrize("scenario", [GcpResource, Calendar], ids=["gcp", "calendar"])
@pytest.mark.parametrize("address", [f"postgresql://u:{PASSWORD}@127.0.0.1:1/interlock",
                                     f"postgresql://u:{PASSWORD}@127.0.0.1:notaport/interlock", "journal.jsonl"])
def test_a_journal_the_run_cannot_use_is_one_line_and_exit_2_before_anything_is_written(scenario, address,
                                                                                        tmp_path, capsys):
    out = tmp_path / "result.json"
    assert run_main(scenario, ["--journal", address, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--journal" in err and "Traceback" not in err
    assert PASSWORD not in err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_worker_whose_effect_another_process_holds_unjournaled_exports_an_empty_bundle(pg_url, tmp_path):
    from experiments.journals import case_bundle
    from interlock import Effect, FunctionTarget, Gate, Status
    from interlock.backends import open_journal

    effect = Effect("held-elsewhere", {"n": 1})
    holder_journal, holder_claims = open_journal(pg_url, claim_ttl=30)
    held = holder_claims.acquire(effect.effect_id, wait=1)  # taken, nothing journaled yet (as a recoverer checking)
    assert held is not None
    journal, claims = open_journal(pg_url, claim_ttl=30)
    gate = Gate(journal, FunctionTarget("t", lambda eid, payload: {"id": eid}), claims=claims, claim_wait=0.1)
    assert gate.submit(effect).status == Status.IN_FLIGHT
    case_file = tmp_path / "journal.jsonl"
    assert case_bundle(journal, effect.effect_id, case_file) == {"effect_id": effect.effect_id, "entries": []}
    assert not case_file.exists()
    held.release()
    assert gate.submit(effect).status == Status.COMMITTED
    entries = case_bundle(journal, effect.effect_id, case_file)["entries"]
    assert [e["kind"] for e in entries] == ["PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED"]
    assert case_file.read_bytes().count(b"\n") == 4
