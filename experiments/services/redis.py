"""A throwaway `redis-server` on 127.0.0.1 and a free port, in a temporary directory, for the Powertools peer.

Nothing is persisted (no RDB snapshots, no append-only file) and the directory is removed on stop, so a run never
leaves Redis data in the repository. The server is its own process; the idempotency records it holds are read
back by the workers and saved into each cell's artifacts.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from experiments.services._serving import on_a_free_port, port_taken_told

REDIS_SERVER = "redis-server"
START_TIMEOUT_SECONDS = 10.0
STOP_TIMEOUT_SECONDS = 5.0


class RedisMissing(RuntimeError):
    """No redis-server on PATH."""


class RedisServer:
    """One redis-server process; `stop()` ends it and removes its directory. Use it as a context manager."""

    def __init__(self) -> None:
        binary = shutil.which(REDIS_SERVER)
        if binary is None:
            raise RedisMissing("no redis-server on PATH: apt-get install redis-server")
        self.dir = Path(tempfile.mkdtemp(prefix="interlock-redis-"))
        self.log = self.dir / "redis.log"
        self.host = "127.0.0.1"
        self._binary = binary
        self.process: subprocess.Popen[bytes] | None = None
        try:
            self.port = on_a_free_port(self._start_on)
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise

    def _start_on(self, port: int) -> int:
        """Start the server on `port` and wait until it answers; PortTaken when another process bound it first."""
        with port_taken_told(self.log, f"redis-server on {self.host}:{port}"):
            self.process = subprocess.Popen(
                [self._binary, "--bind", self.host, "--port", str(port), "--dir", str(self.dir), "--save", "",
                 "--appendonly", "no", "--protected-mode", "yes", "--logfile", str(self.log), "--daemonize", "no"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, cwd=self.dir,
            )
            try:
                self._wait_until_ready(port)
            except BaseException:
                self._end()
                raise
        return port

    @property
    def url(self) -> str:
        """The address clients connect to (database 0, no TLS, no password)."""
        return f"redis://{self.host}:{self.port}/0"

    def _wait_until_ready(self, port: int) -> None:
        """Until the server answers PING, with a deadline; a server that exited says why from its log."""
        assert self.process is not None
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = self.log.read_text()[-1000:] if self.log.exists() else ""
                raise RuntimeError(f"redis-server exited with {self.process.returncode}: {tail.strip()}")
            if _pings(self.host, port):
                return
            time.sleep(0.01)
        raise RuntimeError(f"redis-server did not answer PING on {self.host}:{port} "
                           f"within {START_TIMEOUT_SECONDS:.0f}s")

    def _end(self) -> None:
        """End the server process, if it still runs."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def stop(self) -> None:
        """End the server and delete its directory."""
        self._end()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _pings(host: str, port: int) -> bool:
    """One RESP PING over a fresh connection."""
    try:
        with socket.create_connection((host, port), timeout=0.5) as conn:
            conn.sendall(b"*1\r\n$4\r\nPING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False
