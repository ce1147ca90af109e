"""A stand-in server whose port another process takes between the probe and its own bind starts on a fresh port.

The race is made certain here: the first port handed out is one a socket of this test listens on.
"""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Iterator

import psycopg
import pytest

from experiments.services import _serving, fake_gcs
from experiments.services.postgres import TempCluster
from experiments.services.redis import RedisServer


@pytest.fixture
def taken_port(monkeypatch) -> Iterator[int]:
    """A port this test listens on, handed out as the first free port; later ones are really free."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        ports = iter([port])
        really_free = _serving.free_port
        monkeypatch.setattr(_serving, "free_port", lambda: next(ports, None) or really_free())
        yield port


def test_a_cluster_starts_on_a_fresh_port_when_its_port_was_taken(taken_port):
    with TempCluster() as cluster:
        assert cluster.port != taken_port
        with psycopg.connect(cluster.url) as conn:
            assert conn.execute("SHOW port").fetchone() == (str(cluster.port),)
        cluster.restart()  # a restart keeps the port its clients know
        with psycopg.connect(cluster.url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)


def test_redis_starts_on_a_fresh_port_when_its_port_was_taken(taken_port):
    with RedisServer() as server:
        assert server.port != taken_port
        with socket.create_connection((server.host, server.port), timeout=2) as conn:
            conn.sendall(b"*1\r\n$4\r\nPING\r\n")
            assert conn.recv(16).startswith(b"+PONG")


def test_fake_gcs_starts_on_a_fresh_port_when_its_port_was_taken(taken_port, tmp_path):
    with fake_gcs(tmp_path / "fake-gcs.log") as server:
        assert not server.endpoint.endswith(f":{taken_port}")
        with urllib.request.urlopen(f"{server.endpoint}/storage/v1/b", timeout=5) as answer:
            assert answer.status == 200


def test_a_port_taken_every_time_fails_the_start_after_the_last_attempt():
    tried = []

    def start(port: int) -> None:
        tried.append(port)
        raise _serving.PortTaken(f"could not bind {port}")

    with pytest.raises(_serving.PortTaken):
        _serving.on_a_free_port(start)
    assert len(tried) == _serving.PORT_ATTEMPTS


def test_a_start_that_fails_for_another_reason_is_not_tried_again():
    tried = []

    def start(port: int) -> None:
        tried.append(port)
        raise RuntimeError("the binary crashed")

    with pytest.raises(RuntimeError, match="crashed"):
        _serving.on_a_free_port(start)
    assert len(tried) == 1
