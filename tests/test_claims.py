"""File claims: one holder per effect, freed by the kernel the moment the holder dies, fenced by an epoch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from interlock import FileClaims

ROOT = Path(__file__).resolve().parents[1]

HOLDER = """
import sys, time
from interlock import FileClaims
claim = FileClaims(sys.argv[1]).acquire("e1", 5)
print(claim.epoch, flush=True)
time.sleep(60)
"""


def test_a_held_claim_is_refused_after_the_wait(tmp_path):
    claims = FileClaims(tmp_path)
    held = claims.acquire("e1", 0)
    started = time.monotonic()
    assert FileClaims(tmp_path).acquire("e1", 0.1) is None
    waited = time.monotonic() - started
    assert 0.1 <= waited < 0.5
    held.release()


def test_claims_on_different_effects_do_not_block_each_other(tmp_path):
    claims = FileClaims(tmp_path)
    with claims.acquire("e1", 0), claims.acquire("e2", 0) as other:
        assert other is not None


def test_every_acquisition_bumps_the_fencing_epoch(tmp_path):
    claims = FileClaims(tmp_path)
    epochs = []
    for _ in range(3):
        with claims.acquire("e1", 0) as claim:
            epochs.append(claim.epoch)
    assert epochs == [1, 2, 3]
    owner = claims.owner("e1")
    assert owner["epoch"] == 3 and owner["pid"] == os.getpid()
    assert claims.owner("never") is None


def test_a_released_claim_is_taken_by_a_waiter(tmp_path):
    claims = FileClaims(tmp_path)
    held = claims.acquire("e1", 0)
    holder = subprocess.Popen([sys.executable, "-c", "import sys\nfrom interlock import FileClaims\n"
                               "c = FileClaims(sys.argv[1]).acquire('e1', 10)\nprint(c.epoch)", str(tmp_path)],
                              cwd=ROOT, stdout=subprocess.PIPE, text=True)
    time.sleep(0.2)
    assert holder.poll() is None, "the waiter got a claim that was held"
    held.release()
    out, _ = holder.communicate(timeout=10)
    assert out.strip() == "2"


def test_a_killed_holders_claim_is_free_at_once(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "1"
        assert FileClaims(tmp_path).acquire("e1", 0) is None
        holder.send_signal(signal.SIGKILL)
        assert holder.wait(10) == -signal.SIGKILL
        started = time.monotonic()
        claim = FileClaims(tmp_path).acquire("e1", 5)
        assert claim is not None and time.monotonic() - started < 0.1
        assert claim.epoch == 2
        claim.release()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


STOPPABLE = """
import sys
from interlock import FileClaims
claim = FileClaims(sys.argv[1], ttl=float(sys.argv[2])).acquire("e1", 5)
print(claim.epoch, flush=True)
sys.stdin.readline()
print(claim.confirm(), flush=True)
"""


def test_a_stopped_holder_loses_its_claim_after_the_ttl_and_its_confirm_fails(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", STOPPABLE, str(tmp_path), "0.5"], cwd=ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "1"
        holder.send_signal(signal.SIGSTOP)
        started = time.monotonic()
        claim = FileClaims(tmp_path, ttl=0.5).acquire("e1", 5)
        waited = time.monotonic() - started
        assert claim is not None and claim.epoch == 2
        assert waited < 2.0, f"the stopped holder kept its claim for {waited:.2f}s"
        holder.send_signal(signal.SIGCONT)
        holder.stdin.write("go\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "False"
        assert claim.confirm() is True
        claim.release()
    finally:
        holder.send_signal(signal.SIGCONT)
        holder.kill()
        holder.wait()


def test_a_live_holder_keeps_its_claim_past_the_ttl_by_renewing_it(tmp_path):
    claims = FileClaims(tmp_path, ttl=0.5)
    with claims.acquire("e1", 0) as held:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            assert FileClaims(tmp_path, ttl=0.5).acquire("e1", 0) is None
            time.sleep(0.05)
        assert held.confirm() is True


def test_a_released_claim_no_longer_confirms(tmp_path):
    claim = FileClaims(tmp_path).acquire("e1", 0)
    claim.release()
    assert claim.confirm() is False


def test_a_claim_keeps_its_owner_record_in_its_one_file(tmp_path):
    claims = FileClaims(tmp_path)
    with claims.acquire("e1", 0) as claim:
        assert sorted(p.name for p in tmp_path.iterdir()) == ["e1.lock"]
        assert f'"epoch": {claim.epoch}' in (tmp_path / "e1.lock").read_text()


def test_the_record_lock_excludes_every_other_open_of_the_file_and_ignores_the_flock(tmp_path):
    import fcntl

    from interlock.claims import _RECORD_LOCK, _record_locked

    path = tmp_path / "e1.lock"
    path.touch()
    flocked, mine, other = (os.open(path, os.O_RDWR) for _ in range(3))
    try:
        fcntl.flock(flocked, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a holder's flock does not stop the record lock
        with _record_locked(mine):
            try:
                fcntl.fcntl(other, fcntl.F_OFD_SETLK, _RECORD_LOCK)
            except OSError:
                pass
            else:
                raise AssertionError("a second open of the file took the record lock while it was held")
        with _record_locked(other):  # and once given back, anyone takes it
            pass
    finally:
        for fd in (flocked, mine, other):
            os.close(fd)
