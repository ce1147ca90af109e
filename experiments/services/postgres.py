"""A throwaway PostgreSQL cluster in a temporary directory, on 127.0.0.1 and a free port, for tests, benchmarks and
runs of the scenarios on the PostgreSQL journal (`--journal`)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from experiments.services._serving import on_a_free_port, port_taken_told

SUPERUSER = "postgres"


class PgBinariesMissing(RuntimeError):
    """No initdb/pg_ctl on PATH or under /usr/lib/postgresql/*/bin."""


def binaries() -> Path:
    """The directory holding initdb and pg_ctl (the newest Debian version when several are installed)."""
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb"):
        return Path(os.path.realpath(on_path)).parent
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3]))
    if not found:
        raise PgBinariesMissing("no PostgreSQL server binaries (initdb, pg_ctl): apt-get install postgresql")
    return Path(found[-1]).parent


class TempCluster:
    """initdb + pg_ctl in a private directory; `stop()` removes it. As root, the server runs as the postgres user."""

    def __init__(self, settings: dict[str, Any] | None = None):
        self.bin = binaries()
        self.dir = Path(tempfile.mkdtemp(prefix="interlock-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        self.port = 0  # chosen at the first start
        self.settings = {"listen_addresses": "127.0.0.1", "unix_socket_directories": str(self.dir),
                         "max_connections": 200, **(settings or {})}
        self._as: list[str] = []
        if os.geteuid() == 0:
            account = pwd.getpwnam(SUPERUSER)
            os.chown(self.dir, account.pw_uid, account.pw_gid)
            self._as = ["runuser", "-u", SUPERUSER, "--"]
        try:
            self._run("initdb", "-D", str(self.data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--no-sync")
            on_a_free_port(self._start_on)
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise

    @property
    def url(self) -> str:
        """The cluster's default database."""
        return self.database_url("postgres")

    def database_url(self, name: str) -> str:
        """The address of one database of this cluster."""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{name}"

    def create_database(self, name: str) -> str:
        """A fresh, empty database; returns its address."""
        import psycopg  # the optional postgres extra: only a caller that creates databases needs it

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.database_url(name)

    def start(self) -> None:
        """Start the server on its port and wait until it accepts connections."""
        options = " ".join(f"-c {k}={v}" for k, v in {**self.settings, "port": self.port}.items())
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start")

    def _start_on(self, port: int) -> None:
        """The first start, on `port`; PortTaken when another process bound it first."""
        self.port = port
        with port_taken_told(self.log, f"PostgreSQL on 127.0.0.1:{port}"):
            self.start()

    def restart(self) -> None:
        """Stop (ending every session at once) and start again, as a database failover or reboot would."""
        self.stop_server()
        self.start()

    def stop_server(self) -> None:
        """Stop the server, keeping the cluster: every session ends and new ones are refused until `start()`."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def kill(self) -> None:
        """Kill the server the way a crash would (no shutdown checkpoint: `start()` runs crash recovery)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def stop(self) -> None:
        """Stop the server and delete the cluster."""
        try:
            if (self.data / "postmaster.pid").exists():  # thrown away next: no need for a clean shutdown
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> TempCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self, tool: str, *args: str) -> None:
        done = subprocess.run([*self._as, str(self.bin / tool), *args], capture_output=True, text=True, cwd=self.dir)
        if done.returncode != 0:
            log = self.log.read_text()[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stderr.strip()}\n{log}")
