"""The peers end to end: real DBOS and Powertools in worker processes, a real redis-server, real SIGKILL.

One fault per scenario for each peer: gcp_resource after the store committed the rollback (the first worker dies
before the peer records the answer), calendar before the insert while the customer takes the slot during the
outage. What each asserts is the behaviour measured on these library versions; a change in either library's
recovery shows up here first.
"""

from __future__ import annotations

import json
import os
import signal
import uuid
from pathlib import Path

import pytest

from experiments import harness
from experiments.peers import AFTER_RUN_FILE, DBOS_STEP, POWERTOOLS_IDEMPOTENT, REDIS_URL_ENV, observe_record, record_file

TIMEOUT = 60.0
PEERS = (DBOS_STEP, POWERTOOLS_IDEMPOTENT)


def _env(redis_url: str, **armed: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_KILL") and k != "INTERLOCK_JOURNAL_URL"}
    return {**env, REDIS_URL_ENV: redis_url, **armed}


def _run(scenario: str, system: str, phase: str, case: Path, env: dict[str, str]) -> harness.WorkerRun:
    """The scenario's own worker process, as the runner starts it."""
    args = ["--case", str(case), "--system", system, "--phase", phase]
    return harness.run_worker(f"experiments.{scenario}.worker", args, env, TIMEOUT)


def _read(case: Path, name: str) -> dict:
    return json.loads((case / name).read_text())


@pytest.mark.parametrize("system", PEERS)
def test_a_peer_killed_after_the_store_committed_resends_and_reports_the_412(system, versioned_bucket, gcs_client,
                                                                             redis_server, tmp_path):
    name = "config/app.json"
    seed = versioned_bucket.blob(name)
    seed.metadata = {"writer": "human-deploy"}
    seed.upload_from_string(json.dumps({"version": "v42"}), content_type="application/json", if_generation_match=0)
    case = tmp_path / system
    case.mkdir()
    (case / "case.json").write_text(json.dumps({"bucket": versioned_bucket.name, "object": name}))
    (case / "decision.json").write_text(json.dumps({"to_version": "v41", "generation": str(seed.generation)}))
    env = _env(redis_server.url)

    first = _run("gcp_resource", system, "decide", case,
                 {**env, "INTERLOCK_KILL_AT": "after_commit", "INTERLOCK_KILL_MARKER": str(case / "crashed_at")})
    restart = _run("gcp_resource", system, "restart", case, env)

    assert first.exit_code == -signal.SIGKILL, first.output
    assert restart.exit_code == 0, restart.output
    outcome = _read(case, "outcome_restart.json")
    assert outcome["outcome"] == "PRECONDITION_FAILED"  # the resend met the rollback's own generation
    versions = [b for b in gcs_client.list_blobs(versioned_bucket.name, prefix=name, versions="true")]
    agent = [b for b in versions if (b.metadata or {}).get("writer") == "agent"]
    assert len(agent) == 1  # the rollback landed once, though the peer's answer says it was refused
    record = _read(case, record_file("restart"))
    reader = observe_record(case, env, TIMEOUT)  # the harness's own reading, after the last worker exited
    assert reader.exit_code == 0, reader.output
    after = _read(case, AFTER_RUN_FILE)["record"]
    if system == DBOS_STEP:
        assert after["operation_outputs"] == record["left"]["operation_outputs"]
        assert [row["status"] for row in after["workflow_status"]] == ["SUCCESS"]
    else:
        assert after["value"] == record["left"]["value"]
    if system == DBOS_STEP:
        assert [row["status"] for row in record["found"]["workflow_status"]] == ["PENDING"]
        assert record["found"]["operation_outputs"] == []  # killed before DBOS checkpointed the step
        assert record["left"]["operation_outputs"][0]["output"]["outcome"] == "PRECONDITION_FAILED"
    else:
        assert record["found"]["value"]["status"] == "INPROGRESS"
        assert record["found"]["value"]["in_progress_expiration"]  # the Lambda context was registered
        # A restart that starts within the 3 s timeout is first told IN_PROGRESS, then retries after the expiry.
        tries = [i["outcome"] for i in outcome["ids"]["invocations"]]
        assert tries[-1] == "PRECONDITION_FAILED" and set(tries[:-1]) <= {"IN_PROGRESS"}
        assert record["left"]["value"]["status"] == "COMPLETED"


def _booking_case(case: Path, start: str, end: str) -> str:
    request_id = f"req-{uuid.uuid4().hex[:12]}"
    case.mkdir()
    (case / "case.json").write_text(json.dumps({"request_id": request_id, "calendar_id": "primary",
                                                "slot_start": start, "slot_end": end}))
    (case / "request.json").write_text(json.dumps({"id": request_id, "slot_start": start, "status": "live"}))
    (case / "decision.json").write_text(json.dumps({"start": start, "end": end, "summary": "Call with Dana"}))
    return request_id


def _agent_events(api, start: str, end: str, request_id: str) -> list[dict]:
    items = api.events().list(calendarId="primary", timeMin=start, timeMax=end).execute()["items"]
    return [e for e in items if e.get("extendedProperties", {}).get("private", {}).get("booking_request")
            == request_id]


@pytest.mark.parametrize("system", PEERS)
def test_a_peer_killed_before_the_insert_books_over_the_customer_after_restart(system, calendar_server,
                                                                                calendar_api, redis_server,
                                                                                tmp_path):
    start, end = "2031-03-04T15:00:00Z", "2031-03-04T15:30:00Z"
    case = tmp_path / system
    request_id = _booking_case(case, start, end)
    env = _env(redis_server.url)

    first = _run("calendar", system, "decide", case,
                 {**env, "INTERLOCK_KILL_AT": "before_send", "INTERLOCK_KILL_MARKER": str(case / "crash_marker")})
    customer = calendar_api.events().insert(calendarId="primary", body={
        "summary": "Dana: busy", "start": {"dateTime": start}, "end": {"dateTime": end}}).execute()
    restart = _run("calendar", system, "restart", case, env)

    assert first.exit_code == -signal.SIGKILL, first.output
    assert restart.exit_code == 0, restart.output
    assert _read(case, "result.json")["outcome"] == "BOOKED"  # nothing re-checked the slot before the resend
    items = calendar_api.events().list(calendarId="primary", timeMin=start, timeMax=end).execute()["items"]
    assert len(_agent_events(calendar_api, start, end, request_id)) == 1
    assert customer["id"] in {e["id"] for e in items}  # double-booked
    record = _read(case, record_file("restart"))
    assert all(path.suffix in (".json", ".jsonl", "") for path in case.iterdir())  # text only: saved in the cell
    if system == DBOS_STEP:
        assert [row["status"] for row in record["left"]["workflow_status"]] == ["SUCCESS"]
        assert record["left"]["workflow_status"][0]["recovery_attempts"] >= 2  # run, then recovered
    else:
        assert record["left"]["value"]["status"] == "COMPLETED"


def test_dbos_on_the_runs_postgresql_journal_recovers_the_killed_workflow_from_its_tables(calendar_server,
                                                                                          calendar_api, tmp_path):
    from experiments.services.postgres import TempCluster

    start, end = "2031-03-05T09:00:00Z", "2031-03-05T09:30:00Z"
    case = tmp_path / "dbos_pg"
    request_id = _booking_case(case, start, end)
    with TempCluster() as cluster:
        env = {**_env(""), "INTERLOCK_JOURNAL_URL": cluster.create_database("journal")}
        first = _run("calendar", DBOS_STEP, "decide", case,
                     {**env, "INTERLOCK_KILL_AT": "after_commit", "INTERLOCK_KILL_MARKER": str(case / "crash")})
        restart = _run("calendar", DBOS_STEP, "restart", case, env)

    assert first.exit_code == -signal.SIGKILL, first.output
    assert restart.exit_code == 0, restart.output
    assert _read(case, "result.json")["outcome"] == "ALREADY_EXISTS_409"  # the rerun step met its own event id
    assert len(_agent_events(calendar_api, start, end, request_id)) == 1
    record = _read(case, record_file("restart"))
    assert record["found"]["system_database"] == "postgresql"
    assert [row["status"] for row in record["found"]["workflow_status"]] == ["PENDING"]
    assert not list(tmp_path.glob("*.sqlite"))


def test_the_run_starts_a_redis_server_only_for_powertools_and_leaves_nothing_behind(monkeypatch):
    import redis

    from experiments.peers import peer_services

    monkeypatch.delenv(REDIS_URL_ENV, raising=False)
    with peer_services([DBOS_STEP]) as none:
        assert none == {} and REDIS_URL_ENV not in os.environ
    with peer_services([DBOS_STEP, POWERTOOLS_IDEMPOTENT]) as provenance:
        url = os.environ[REDIS_URL_ENV]
        client = redis.Redis.from_url(url)
        assert client.ping() and client.config_get("save") == {"save": ""}
        folder = Path(client.config_get("dir")["dir"])
        assert url.startswith("redis://127.0.0.1:") and provenance["idempotency_store"]["real"]
    assert REDIS_URL_ENV not in os.environ and not folder.exists()
