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

from experiments import scenario_calendar, scenario_gcp_resource

from pg_worker import pg_cluster, pg_url  # noqa: F401  (fixtures)

PASSWORD = "pg-journal-secret"  # the throwaway cluster trusts every local login, so the server never asks for it


def _with_password(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.replace("@", f":{PASSWORD}@", 1)))


def _run(main, out: Path, *argv: str) -> dict:
    assert main([*argv, "--out", str(out)]) == 0
    text = out.read_text()
    assert PASSWORD not in text
    return json.loads(text)


def _db_entries(url: str, effect_id: str) -> list[dict]:
    from interlock.pg import PgJournal

    with PgJournal(url) as journal:
        return journal.entries(effect_id)


def _receipts_cli(entries: list[dict], path: Path) -> dict:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    done = subprocess.run([sys.executable, "-m", "interlock.receipts", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def _gcp_judged(cell: dict) -> dict:
    says = cell["record_says"]
    receipt = cell["ids"]["receipt"]
    return {
        "outcome": cell["outcome"], "first_worker_outcome": cell["first_worker_outcome"],
        "agent_writes": len(cell["ids"]["agent_write_generations"]), "invariant_held": cell["invariant_held"],
        "answer": cell["answer_matches_service"], "proof": cell["can_prove_what_happened"],
        "journal": cell["ids"]["journal"], "worker_exits": cell["worker_exits"],
        "record_says": (says["actor"], len(says["agent_writes"]), says["unresolved_sends"], says.get("chain_valid")),
        "receipt": {k: receipt[k] for k in ("valid", "happened", "happened_once", "authorized_when_fired",
                                            "assumptions_held")},
    }


def test_gcp_resource_cell_on_postgresql_judges_the_same_as_on_jsonl(pg_url, tmp_path):
    url = _with_password(pg_url)
    argv = ["--faults", "crash_after_commit_redeploy", "--systems", "interlock"]
    on_file = _run(scenario_gcp_resource.main, tmp_path / "jsonl.json", *argv)
    on_pg = _run(scenario_gcp_resource.main, tmp_path / "pg.json", *argv, "--journal", url)
    file_cell, pg_cell = on_file["cells"][0], on_pg["cells"][0]

    assert _gcp_judged(pg_cell) == _gcp_judged(file_cell)
    assert _gcp_judged(pg_cell)["outcome"] == "COMMITTED_ON_QUERY" and pg_cell["invariant_held"] is True
    exported = pg_cell["artifacts"]["journal.jsonl"]
    assert exported == _db_entries(pg_url, pg_cell["ids"]["effect_id"])
    assert on_pg["provenance"]["journal"]["backend"] == "postgresql"
    assert on_pg["provenance"]["journal"]["server_version"]
    assert on_file["provenance"]["journal"]["backend"] == "jsonl"
    assert "PostgreSQL" in pg_cell["claim"]["kind"] and "flock" in file_cell["claim"]["kind"]
    verified = _receipts_cli(exported, tmp_path / "exported.jsonl")
    assert verified["valid"] and verified["happened"] is True and verified["happened_once"] is True


def _calendar_judged(cell: dict) -> dict:
    receipt = cell["receipt"]
    return {
        "outcome": cell["outcome"], "first_worker_outcome": cell["first_worker_outcome"],
        "agent_events": len(cell["ground_truth"]["agent_events"]), "invariant_held": cell["invariant_held"],
        "answer": (cell["answer"], cell["answer_matches_calendar"]), "proof": cell["can_prove_what_happened"],
        "journal": [e["kind"] for e in cell["journal"]], "worker_exits": cell["worker_exit_codes"],
        "crash_fired": cell["crash_fired"], "conflict": cell["conflict_recorded_at_recovery"],
        "receipt": {k: receipt[k] for k in ("valid", "happened", "happened_once", "authorized_when_fired",
                                            "assumptions_held")},
    }


def test_calendar_cell_on_postgresql_judges_the_same_as_on_jsonl(pg_url, tmp_path):
    url = _with_password(pg_url)
    argv = ["--faults", "after_commit/none", "--systems", "interlock", "--raced-trials", "0"]
    on_file = _run(scenario_calendar.main, tmp_path / "jsonl.json", *argv)
    on_pg = _run(scenario_calendar.main, tmp_path / "pg.json", *argv, "--journal", url)
    file_cell, pg_cell = on_file["cells"][0], on_pg["cells"][0]

    assert _calendar_judged(pg_cell) == _calendar_judged(file_cell)
    assert pg_cell["invariant_held"] is True and pg_cell["can_prove_what_happened"] is True
    bundle = pg_cell["evidence"]["receipt_bundle"]
    assert bundle["entries"] == _db_entries(pg_url, bundle["effect_id"])
    assert "journal.jsonl" not in pg_cell["evidence"]["case_files"]  # the exported file equals the bundle's entries
    assert on_pg["provenance"]["journal"]["backend"] == "postgresql"
    assert "PostgreSQL" in on_pg["provenance"]["claim"]["kind"]
    verified = _receipts_cli(bundle["entries"], tmp_path / "exported.jsonl")
    assert verified["valid"] and verified["happened"] is True


@pytest.mark.parametrize("main", [scenario_gcp_resource.main, scenario_calendar.main], ids=["gcp", "calendar"])
@pytest.mark.parametrize("address", [f"postgresql://u:{PASSWORD}@127.0.0.1:1/interlock",
                                     f"postgresql://u:{PASSWORD}@127.0.0.1:notaport/interlock", "journal.jsonl"])
def test_a_journal_the_run_cannot_use_is_one_line_and_exit_2_before_anything_is_written(main, address, tmp_path,
                                                                                        capsys):
    out = tmp_path / "result.json"
    assert main(["--journal", address, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--journal" in err and "Traceback" not in err
    assert PASSWORD not in err
    assert not out.exists() and list(tmp_path.iterdir()) == []
