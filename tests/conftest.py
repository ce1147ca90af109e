"""Shared fixtures: the local stand-ins, each started for the tests that need it and stopped after them.

| fixture | what it gives |
|---|---|
| `fake_gcs_server` (session) | a running fake-gcs-server (`.endpoint`, `.log_path`, `.pid`) |
| `gcs_client` | the real storage client, at `fake_gcs_server` (STORAGE_EMULATOR_HOST set for the test) |
| `versioned_bucket`, `unversioned_bucket` | a fresh bucket on `fake_gcs_server` |
| `gcs_proxy` | a recording proxy in front of `fake_gcs_server`; STORAGE_EMULATOR_HOST points at it |
| `recorded_bucket` | a fresh versioned bucket reached through `gcs_proxy` |
| `calendar_server` | a fresh Calendar stand-in in this process; INTERLOCK_CALENDAR_URL points at it |
| `calendar_api` | the real googleapiclient Calendar service at `calendar_server` |
| `messages_server` | the Messages API stub; INTERLOCK_MESSAGES_URL points at it |
| `ledger` | a fresh ledger write service (`experiments.services.ledger`), no delay, no fence: configure it per test |
| `redis_server` (session) | a throwaway redis-server on loopback (`.url`, `.host`, `.port`), nothing persisted |

The cloud clients are imported inside the fixtures, so test files that use none of them do not pay for the import.
"""

from __future__ import annotations

import uuid

import pytest


@pytest.fixture(scope="session")
def fake_gcs_server(tmp_path_factory):
    from experiments.services import fake_gcs

    with fake_gcs(tmp_path_factory.mktemp("fake-gcs") / "fake-gcs-server.log") as server:
        yield server


@pytest.fixture
def gcs_client(fake_gcs_server, monkeypatch):
    from experiments import clients

    monkeypatch.setenv(clients.STORAGE_EMULATOR_HOST, fake_gcs_server.endpoint)
    return clients.storage_client()


def _fresh_bucket(client, versioned: bool):
    bucket = client.bucket(f"test-{uuid.uuid4().hex[:12]}")
    bucket.versioning_enabled = versioned
    return client.create_bucket(bucket)


@pytest.fixture
def versioned_bucket(gcs_client):
    return _fresh_bucket(gcs_client, versioned=True)


@pytest.fixture
def unversioned_bucket(gcs_client):
    return _fresh_bucket(gcs_client, versioned=False)


@pytest.fixture
def gcs_proxy(fake_gcs_server, tmp_path, monkeypatch):
    from experiments import clients
    from experiments.services import recording_proxy

    with recording_proxy(fake_gcs_server.endpoint, tmp_path / "gcs-wire.jsonl") as proxy:
        monkeypatch.setenv(clients.STORAGE_EMULATOR_HOST, proxy.endpoint)
        yield proxy


@pytest.fixture
def recorded_bucket(gcs_proxy):
    from experiments import clients

    return _fresh_bucket(clients.storage_client(), versioned=True)


@pytest.fixture
def calendar_server(tmp_path, monkeypatch):
    from experiments import clients
    from experiments.services import calendar_standin

    with calendar_standin(tmp_path / "calendar-writes.jsonl") as standin:
        monkeypatch.setenv(clients.CALENDAR_URL, standin.endpoint)
        yield standin


@pytest.fixture
def calendar_api(calendar_server):
    from experiments import clients

    return clients.calendar_service()


@pytest.fixture
def messages_server(monkeypatch):
    from experiments import clients
    from experiments.services import messages_stub

    with messages_stub() as stub:
        monkeypatch.setenv(clients.MESSAGES_URL, stub.endpoint)
        yield stub


@pytest.fixture
def ledger(tmp_path):
    from experiments.services import ledger_service

    with ledger_service(tmp_path / "ledger.jsonl") as service:
        yield service


@pytest.fixture(scope="session")
def redis_server():
    from experiments.services.redis import RedisServer

    with RedisServer() as server:
        yield server
