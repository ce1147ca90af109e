"""File claims: one holder per effect, freed by the kernel the moment the holder dies, fenced by an epoch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from interlock import Effect, FileClaims, FunctionTarget, Gate, Journal, JournalCorrupt, verify_journal

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


def _gate(folder: Path, sent: list[str]) -> tuple[Journal, Gate]:
    """A JSONL journal and a gate on it, its target recording every send in `sent`."""
    journal = Journal(folder / "journal.jsonl")
    target = FunctionTarget("svc", lambda eid, payload: sent.append(eid) or {"id": eid}, tier=1)
    return journal, Gate(journal, target, claim_wait=0)


def test_retiring_deletes_the_claim_files_of_settled_effects_and_keeps_held_and_open_ones(tmp_path):
    journal, gate = _gate(tmp_path, [])
    for key in ("settled-1", "settled-2", "held"):
        assert gate.submit(Effect(key, {"k": key})).status.value == "COMMITTED"
    opened = Effect("open", {"k": "open"}).effect_id
    with gate.claims.acquire(opened, 0) as claim:  # a send journaled, its sender gone before any resolution
        for kind in ("PROPOSED", "AUTHORIZED", "DISPATCHED"):
            journal.append(kind, opened, {"epoch": claim.epoch}, holds=claim.holds)
    held = gate.claims.acquire(Effect("held", {}).effect_id, 0)
    assert gate.claims.retire_settled(journal) == 2
    left = sorted(p.name for p in gate.claims.directory.iterdir())
    assert left == sorted(f"{eid}.lock" for eid in (opened, held.effect_id))
    assert held.confirm(), "the held claim lost its file under its holder"
    held.release()
    assert gate.claims.retire_settled(journal) == 1  # released now: it goes at the next retire


def test_an_effect_submitted_again_after_its_claim_retired_is_a_duplicate_sent_once(tmp_path):
    journal, gate = _gate(tmp_path, sent := [])
    effect = Effect("booking", {"slot": 9})
    assert gate.submit(effect).status.value == "COMMITTED"
    assert gate.claims.retire_settled(journal) == 1
    again = gate.submit(effect)
    assert again.status.value == "DUPLICATE_IGNORED" and again.evidence == {"id": effect.effect_id}
    assert sent == [effect.effect_id]
    entries = journal.entries()
    assert [e["kind"] for e in entries] == ["PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED"]
    assert verify_journal(entries)["valid"] is True


def test_a_claim_file_retired_after_a_waiter_opened_it_is_never_taken_through_that_open(tmp_path):
    first, second = FileClaims(tmp_path), FileClaims(tmp_path)
    first.acquire("e1", 0).release()
    opened_before = second._open("e1")
    try:
        assert first._retire("e1") is True
        assert second._try("e1", opened_before) is None, "a claim was taken on a file no longer in the folder"
    finally:
        os.close(opened_before)
    with second.acquire("e1", 0) as claim:
        assert os.fstat(claim._fd).st_ino == (tmp_path / "e1.lock").stat().st_ino
        assert claim.epoch == 1 and claim.confirm()
        assert first._retire("e1") is False, "a held claim's file was deleted"


def test_an_effect_submitted_again_after_its_claim_retired_is_decided_on_every_line_checked(tmp_path):
    journal, gate = _gate(tmp_path, [])
    effect = Effect("booking", {"slot": 9})
    gate.submit(effect)
    gate.claims.retire_settled(journal)
    other = Journal(tmp_path / "journal.jsonl")  # another process appends two lines; the first is then damaged
    other.append("PROPOSED", "x1", {"a": 1})
    other.append("PROPOSED", "x2", {"b": 1})
    other.close()
    path = tmp_path / "journal.jsonl"
    lines = path.read_bytes().split(b"\n")
    lines[-3] = lines[-3].replace(b'"a":1', b'"a":2')
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(JournalCorrupt, match="hash does not match"):
        gate.submit(effect)  # its new claim starts at epoch 1, yet the effect was claimed before: checked, not skimmed
