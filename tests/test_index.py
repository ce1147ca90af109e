"""The journal's index file: made once, whole, however many processes reach for it at the same instant."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from interlock.index import Checkpoint, EffectIndex

ROOT = Path(__file__).resolve().parent.parent

RACER = """
import sys, time
from interlock.index import Checkpoint, EffectIndex
folder, start, rounds, writes = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
for n in range(rounds):
    while time.time() < start + 0.25 * n:
        pass
    index = EffectIndex(f"{folder}/journal{n}.index")
    if writes:
        index.advance([("e" * 12, [n])], [], [], Checkpoint(n, n, None))
    else:
        index.covered()
    index.close()
"""


KILLED_MAKER = """
import os, signal, sys
from interlock.index import Checkpoint, EffectIndex
os.link = lambda *_: os.kill(os.getpid(), signal.SIGKILL)  # killed with its draft made, before it is linked
EffectIndex(sys.argv[1]).advance([], [], [], Checkpoint(0, 0, None))
"""


def test_a_draft_left_by_a_maker_killed_mid_make_is_removed_when_the_index_is_made(tmp_path):
    path = tmp_path / "journal.index"
    killed = subprocess.run([sys.executable, "-c", KILLED_MAKER, str(path)], cwd=ROOT, timeout=60)
    assert killed.returncode == -9
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".new")] != []
    index = EffectIndex(path)
    index.advance([("e" * 12, [0])], [], [], Checkpoint(0, 0, None))
    assert index.covered() == Checkpoint(0, 0, None)
    index.close()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("journal.index.")] == []


def test_processes_making_and_reading_a_new_index_at_once_all_succeed(tmp_path):
    start, rounds = time.time() + 1.5, 12
    procs = [subprocess.Popen([sys.executable, "-c", RACER, str(tmp_path), str(start), str(rounds), str(p % 2)],
                              cwd=ROOT, stderr=subprocess.PIPE, text=True) for p in range(6)]
    failed = [err.strip().splitlines()[-1] for err in (p.communicate(timeout=120)[1] for p in procs) if err.strip()]
    assert failed == []
    covered = [EffectIndex(tmp_path / f"journal{n}.index").covered() for n in range(rounds)]
    assert [c.seq if c else None for c in covered] == list(range(rounds))
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".new")) == []


def test_threads_making_one_new_index_at_once_all_succeed(tmp_path):
    path, barrier, failed = tmp_path / "journal.index", threading.Barrier(8), []

    def make(n: int) -> None:
        index = EffectIndex(path)
        barrier.wait()
        try:
            index.advance([(f"{n:012x}", [n])], [], [], Checkpoint(n, n, None))
        except Exception as exc:  # noqa: BLE001 - every thread's failure is the finding
            failed.append(repr(exc))
        finally:
            index.close()

    threads = [threading.Thread(target=make, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failed == []
    assert [p.name for p in tmp_path.iterdir()] == ["journal.index"]  # no draft left beside it
