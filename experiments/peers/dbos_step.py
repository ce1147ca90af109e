"""DBOS Transact as a peer: the job's write is a `@DBOS.step` inside a `@DBOS.workflow` whose id is the job id.

Configured as DBOS documents for an exactly-once workflow: the idempotency key is the workflow id (`SetWorkflowID`,
Python idempotency tutorial), the system database is SQLite by default and PostgreSQL when the run keeps its journal
there (Python "database connection" tutorial), the step keeps DBOS's default of no automatic retries, and the
restarted worker is a new process that calls `DBOS.launch()`, which recovers the workflows left PENDING under its
executor id (the self-hosting guide), then waits for the recovered workflow's result. Each cell has its own executor
id, so a restart recovers its own job and no other cell's. Workflow inputs and outputs are stored as DBOS's portable
JSON, so the rows saved into a cell read without DBOS.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from dbos import DBOS, DBOSConfig, DBOSPortableJSONSerializer, SetWorkflowID

from experiments.peers.job import DBOS_STEP, WORKFLOW_ERROR, PeerJob, Send

APP_NAME = "interlock-peers"
SQLITE_FILE = "dbos_system.sqlite"
RECORD_TABLES = ("workflow_status", "workflow_input", "workflow_output", "operation_outputs")

_send: Send | None = None  # set before launch: recovery reruns the step in this process, through this call


@DBOS.step()
def send_write(request: dict[str, Any]) -> dict[str, Any]:
    """The one step: the scenario's write (crash points, refusal and all), its answer checkpointed by DBOS."""
    if _send is None:
        raise RuntimeError("the DBOS peer ran a step before DBOS was launched with its send")
    outcome, ids = _send(request)
    return {"outcome": outcome, "ids": ids}


@DBOS.workflow()
def run_job(request: dict[str, Any]) -> dict[str, Any]:
    """The job's workflow: one step, so a recovery resumes right at the write."""
    return send_write(request)


def system_database_url(case_dir: Path, journal_url: str | None) -> str:
    """The run's PostgreSQL journal database when it has one, else a SQLite file beside the cell's directory.

    Beside, not in it: everything in the cell's directory is saved into the cell as text, and the database is
    saved as its rows (`record`).
    """
    if journal_url:
        return journal_url
    case_dir = Path(case_dir).resolve()
    return f"sqlite:///{case_dir.with_name(f'{case_dir.name}.{SQLITE_FILE}')}"


def config(database_url: str, executor_id: str) -> DBOSConfig:
    """The documented setup, with an executor id of the caller's and no admin server (nothing else listens)."""
    # DBOS 3.4.0 declares no `run_admin_server` (it has no admin server) and ignores the key.
    return cast(DBOSConfig, {"name": APP_NAME, "system_database_url": database_url, "executor_id": executor_id,
                             "run_admin_server": False, "log_level": "WARNING",
                             "serializer": DBOSPortableJSONSerializer()})


def launch(database_url: str, executor_id: str, send: Send) -> None:
    """Configure and launch DBOS in this process; from here on it recovers this executor's pending workflows."""
    global _send
    _send = send
    DBOS(config=config(database_url, executor_id))
    DBOS.launch()


def start(job_id: str, request: dict[str, Any]) -> dict[str, Any]:
    """Run the job's workflow under its id: a second start of the same id waits for the first one's result."""
    with SetWorkflowID(job_id):
        return run_job(request)


def run(phase: str, job: PeerJob, database_url: str) -> tuple[str, dict[str, Any]]:
    """Run the job as a workflow (`decide`) or launch DBOS so it recovers the job and wait for it (`restart`)."""
    launch(database_url, f"cell-{job.job_id}", job.send)
    try:
        return _settle(phase, job)
    finally:
        DBOS.destroy()


def _settle(phase: str, job: PeerJob) -> tuple[str, dict[str, Any]]:
    existed = phase == "restart" and DBOS.get_workflow_status(job.job_id) is not None
    ids: dict[str, Any] = {"workflow_id": job.job_id, "workflow_existed": existed}
    if not existed:  # a first delivery, or a restart of a job whose first worker never started the workflow
        result = start(job.job_id, job.request)
        return result["outcome"], {**result["ids"], **ids}
    try:
        result = DBOS.retrieve_workflow(job.job_id).get_result()
    except Exception as exc:  # the workflow ended in ERROR: DBOS hands back the recorded exception
        return WORKFLOW_ERROR, {**ids, "error": f"{type(exc).__name__}: {exc}"}
    return result["outcome"], {**result["ids"], **ids}


def record(job_id: str, database_url: str) -> dict[str, Any]:
    """The job's rows of DBOS's own record (workflow status, step outputs), read straight from the system database."""
    import sqlalchemy as sa

    postgres = database_url.startswith("postgres")
    engine = sa.create_engine(database_url.replace("postgresql://", "postgresql+psycopg://", 1) if postgres
                              else database_url)
    schema = "dbos." if postgres else ""
    try:
        with engine.connect() as conn:
            tables = {table: [_plain(dict(row)) for row in conn.execute(
                sa.text(f"SELECT * FROM {schema}{table} WHERE workflow_uuid = :id"), {"id": job_id}).mappings()]
                for table in RECORD_TABLES}
    finally:
        engine.dispose()
    tables["operation_outputs"].sort(key=lambda row: row.get("function_id") or 0)
    return {"peer": DBOS_STEP, "system_database": "postgresql" if postgres else "sqlite", "workflow_id": job_id,
            **tables}


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """A row as JSON: stored JSON text (inputs, outputs, errors) parsed, anything else kept as it reads."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, str) and key in ("output", "error", "inputs") and value[:1] in "{[\"":
            try:
                value = json.loads(value)
            except ValueError:
                pass
        elif isinstance(value, (bytes, memoryview)):
            value = bytes(value).hex()
        elif value is not None and not isinstance(value, (str, int, float, bool)):
            value = str(value)
        out[key] = value
    return out
