"""A fleet on one journal: workers SIGKILLed at random and restarted, on a JSONL journal that checkpoints, rolls,
archives and retires claims under them, and on PostgreSQL, also through database crashes and outages. The
service's own files are the ground truth: each effect held exactly once."""

from __future__ import annotations

import collections
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from interlock import Journal, effect_id_for
from interlock.backends import open_journal
from interlock.pg.journal import RECONNECT_SECONDS

from fleet_worker import AWAY
from pg_worker import fresh_database, pg_cluster  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[1]
KEYS = 300


def _start(folder: Path, seed: int, address: str | None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.fleet_worker", str(folder), str(KEYS), str(seed),
                             *([address] if address else [])], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.fixture(params=["jsonl", "postgresql"])
def address(request) -> str | None:
    """None for the JSONL journal in the test's folder, else a fresh PostgreSQL database's address."""
    if request.param == "jsonl":
        return None
    return fresh_database(request.getfixturevalue("pg_cluster"), "fleet")


def _recorded(folder: Path, address: str | None) -> collections.Counter:
    """How many of the effects the journal records with each resolution kind."""
    if address is None:
        journal, claims = Journal(folder / "journal.jsonl", archive=folder / "archive"), None
    else:
        journal, claims = open_journal(address)
    try:
        return collections.Counter(journal.effect(effect_id_for(f"k{k}")).resolution["kind"] for k in range(KEYS))
    finally:
        journal.close()
        if claims is not None:
            claims.close()


def _fleet(folder: Path, address: str | None, seed: int, outage: Callable[[random.Random], None] | None = None,
           allowed: tuple[int, ...] = (0, -signal.SIGKILL)) -> None:
    """Six workers, one of them SIGKILLed at random 25 times (every fifth time, `outage` strikes instead), each that
    ended started again as a supervisor would; then one more settles what they left. The service must hold every
    effect once and the journal record it COMMITTED. A worker may end only with a code in `allowed`."""
    (folder / "service").mkdir()
    chance = random.Random(seed)
    start = lambda: _start(folder, chance.randrange(1 << 30), address)  # noqa: E731
    running = [start() for _ in range(6)]
    everyone = list(running)
    for turn in range(25):
        time.sleep(chance.uniform(0.02, 0.3))
        if outage is not None and turn % 5 == 2:
            outage(chance)
        else:
            victim = chance.choice(running)
            victim.send_signal(signal.SIGKILL)
            victim.wait()
        for n, worker in enumerate(running):
            if worker.poll() is not None:
                running[n] = start()
                everyone.append(running[n])
    last = _start(folder, 0, address)  # settles whatever the others left open
    ended = [(w, *w.communicate(timeout=300)) for w in [*everyone, last]]
    assert [(w.returncode, out, err[-300:]) for w, out, err in ended if w.returncode not in allowed] == []
    assert last.returncode == 0
    copies = collections.Counter(f.name.split(".")[0] for f in (folder / "service").iterdir())
    assert {eid: n for eid, n in copies.items() if n != 1} == {} and len(copies) == KEYS
    assert _recorded(folder, address) == {"COMMITTED": KEYS}
    if address is None:  # the workers retired settled effects' claims as they went, under each other's acquires
        assert len(list((folder / "journal.jsonl.claims").glob("*.lock"))) < KEYS


@pytest.mark.parametrize("seed", [0, 1])
def test_workers_killed_at_random_land_every_effect_exactly_once(tmp_path, address, seed):
    _fleet(tmp_path, address, seed)


def test_a_fleet_through_database_crashes_and_outages_lands_every_effect_exactly_once(tmp_path, pg_cluster):
    def outage(chance: random.Random) -> None:
        """A crash (entries not yet on disk are lost) or a clean stop, for a moment or past the reconnect wait."""
        (pg_cluster.kill if chance.random() < 0.5 else pg_cluster.stop_server)()
        time.sleep(chance.choice([0.3, RECONNECT_SECONDS + 1]))
        pg_cluster.start()

    _fleet(tmp_path, fresh_database(pg_cluster, "fleet"), 0, outage, (0, -signal.SIGKILL, AWAY))
