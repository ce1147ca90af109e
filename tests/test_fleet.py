"""A fleet on one journal: workers SIGKILLed at random and restarted, on a JSONL journal that checkpoints, rolls
and archives under them, and on PostgreSQL. The service's own files are the ground truth: each effect held
exactly once."""

from __future__ import annotations

import collections
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from interlock import Journal, effect_id_for
from interlock.backends import open_journal

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


def _journal(folder: Path, address: str | None):
    if address is None:
        return Journal(folder / "journal.jsonl", archive=folder / "archive")
    return open_journal(address)[0]


@pytest.mark.parametrize("seed", [0, 1])
def test_workers_killed_at_random_land_every_effect_exactly_once(tmp_path, address, seed):
    (tmp_path / "service").mkdir()
    chance = random.Random(seed)
    start = lambda seed: _start(tmp_path, seed, address)  # noqa: E731
    workers = [start(chance.randrange(1 << 30)) for _ in range(6)]
    for _ in range(25):
        time.sleep(chance.uniform(0.02, 0.3))
        live = [w for w in workers if w.poll() is None]
        if not live:
            break
        victim = chance.choice(live)
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        workers.append(start(chance.randrange(1 << 30)))
    last = start(0)  # settles whatever the killed ones left open
    ended = [(w, *w.communicate(timeout=300)) for w in [*workers, last]]
    assert [(w.returncode, out, err[-300:]) for w, out, err in ended if w.returncode not in (0, -signal.SIGKILL)] == []
    assert last.returncode == 0
    copies = collections.Counter(f.name.split(".")[0] for f in (tmp_path / "service").iterdir())
    assert {eid: n for eid, n in copies.items() if n != 1} == {} and len(copies) == KEYS
    with _journal(tmp_path, address) as journal:
        kinds = collections.Counter(journal.effect(effect_id_for(f"k{k}")).resolution["kind"] for k in range(KEYS))
    assert kinds == {"COMMITTED": KEYS}
