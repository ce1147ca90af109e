"""The ledger write service: slow writes land after their client is gone, fences refuse what they should."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from urllib.parse import urlsplit

import pytest


def call(ledger, method: str, path: str, body: dict | None = None, headers: dict | None = None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(ledger.endpoint + path, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def wait_until(predicate, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "condition not met before the deadline"
        time.sleep(0.01)


def test_an_unfenced_ledger_applies_every_put_and_counts_them(ledger):
    assert call(ledger, "PUT", "/effects/e1", {"value": 1})[0] == 200
    assert call(ledger, "PUT", "/effects/e1", {"value": 1})[0] == 200
    assert call(ledger, "GET", "/applies/e1") == (200, {"id": "e1", "applies": 2, "refused": 0})
    status, record = call(ledger, "GET", "/effects/e1")
    assert status == 200 and record["version"] == 2 and record["body"] == {"value": 1}
    assert call(ledger, "GET", "/effects/nope")[0] == 404


def test_a_slow_write_lands_after_its_client_was_killed(ledger):
    ledger.configure(delay=0.3)
    host = urlsplit(ledger.endpoint)
    body = json.dumps({"value": 1}).encode()
    client = subprocess.Popen([sys.executable, "-c", (
        "import socket, sys\n"
        f"s = socket.create_connection(('127.0.0.1', {host.port}))\n"
        f"s.sendall(b'PUT /effects/late HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: {len(body)}\\r\\n\\r\\n' + {body!r})\n"
        "print('sent', flush=True)\n"
        "sys.stdin.read()\n")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert client.stdout.readline().strip() == "sent"
    wait_until(lambda: any(e["event"] == "put" for e in ledger.log()))
    client.kill()
    client.wait()
    assert ledger.applies("late") == 0, "the write landed before the delay"
    wait_until(lambda: ledger.applies("late") == 1)


def test_the_version_fence_refuses_a_write_decided_on_an_old_version(ledger):
    ledger.configure(fences=["version"])
    call(ledger, "POST", "/resources/default", {"writer": "human"})
    assert call(ledger, "PUT", "/effects/e1", {}, {"If-Match": "0"})[0] == 412
    assert call(ledger, "PUT", "/effects/e1", {}, {"If-Match": "1"})[0] == 200
    assert call(ledger, "GET", "/resources/default")[1] == {"resource": "default", "version": 2, "writer": "e1"}
    assert call(ledger, "GET", "/applies/e1")[1] == {"id": "e1", "applies": 1, "refused": 1}


def test_the_epoch_fence_refuses_a_superseded_sender(ledger):
    ledger.configure(fences=["epoch"])
    assert call(ledger, "PUT", "/effects/e1", {}, {"X-Epoch": "2"})[0] == 200
    assert call(ledger, "PUT", "/effects/e1", {}, {"X-Epoch": "1"})[0] == 409
    assert ledger.applies("e1") == 1


def test_the_dedupe_fence_applies_an_id_once(ledger):
    ledger.configure(fences=["dedupe"])
    assert call(ledger, "PUT", "/effects/e1", {"v": 1})[0] == 200
    status, answer = call(ledger, "PUT", "/effects/e1", {"v": 1})
    assert status == 409 and answer["record"]["id"] == "e1"
    assert ledger.applies("e1") == 1


@pytest.mark.parametrize("settings", [{"delay": 3}, {"delay": "1"}, {"fences": ["nope"]}, {"fences": "version"}])
def test_the_ledger_refuses_settings_it_does_not_know(ledger, settings):
    status, answer = call(ledger, "POST", "/config", settings)
    assert status == 400 and ("delay" in answer["error"] or "fences" in answer["error"])
    assert call(ledger, "GET", "/config")[1] == {"delay": 0.0, "fences": []}


def test_the_ledger_runs_as_its_own_process(tmp_path):
    endpoint_file = tmp_path / "endpoint"
    service = subprocess.Popen([sys.executable, "-m", "experiments.services.ledger", "--endpoint-file",
                                str(endpoint_file), "--fence", "dedupe"])
    try:
        wait_until(endpoint_file.exists)
        url = endpoint_file.read_text()
        with urllib.request.urlopen(url + "/config", timeout=5) as answer:
            assert json.loads(answer.read()) == {"delay": 0.0, "fences": ["dedupe"]}
    finally:
        service.kill()
        service.wait()


def test_a_fence_call_raises_the_epoch_so_an_older_write_still_in_flight_is_refused(ledger):
    ledger.configure(delay=0.4, fences=["epoch"])
    old = threading.Thread(target=call, args=(ledger, "PUT", "/effects/e1", {"value": 1}, {"X-Epoch": "1"}))
    old.start()
    wait_until(lambda: any(e["event"] == "put" for e in ledger.log()))
    assert call(ledger, "POST", "/fences/e1", {}, {"X-Epoch": "2"}) == (200, {"id": "e1", "epoch": 2})
    old.join()
    assert call(ledger, "GET", "/applies/e1") == (200, {"id": "e1", "applies": 0, "refused": 1})


def test_a_lookup_with_a_newer_epoch_raises_it_although_nothing_was_written(ledger):
    ledger.configure(fences=["epoch"])
    assert call(ledger, "GET", "/effects/e1", headers={"X-Epoch": "3"})[0] == 404
    assert call(ledger, "PUT", "/effects/e1", {"value": 1}, {"X-Epoch": "2"})[0] == 409
    assert call(ledger, "PUT", "/effects/e1", {"value": 1}, {"X-Epoch": "3"})[0] == 200


def test_a_newer_write_raises_the_epoch_when_it_arrives_not_when_it_applies(ledger):
    ledger.configure(delay=0.4, fences=["epoch"])
    old = threading.Thread(target=call, args=(ledger, "PUT", "/effects/e1", {"value": 1}, {"X-Epoch": "1"}))
    old.start()
    wait_until(lambda: any(e["event"] == "put" for e in ledger.log()))
    assert call(ledger, "PUT", "/effects/e1", {"value": 1}, {"X-Epoch": "2"})[0] == 200
    old.join()
    assert call(ledger, "GET", "/applies/e1") == (200, {"id": "e1", "applies": 1, "refused": 1})
