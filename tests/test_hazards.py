"""Safety beyond the published faults, at the public API, with real worker processes, real signals and the
ledger service: a request that outlives its sender, a paused sender, a send function that raises."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from interlock import bundle, effect_id_for, open_send, verify
from interlock.backends import open_journal
from pg_worker import SHORT_LEASE, fresh_database, pg_cluster  # noqa: F401  (fixture)
from tests.hazard_worker import journal_address

ROOT = Path(__file__).resolve().parents[1]
EFFECT = effect_id_for("write:ledger/default:INC-7")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_")}
    return {**env, **extra}


def worker(directory: Path, ledger, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    if (directory / "journal.address").exists() and "--ttl" not in args:
        args = (*args, "--ttl", str(SHORT_LEASE))
    return subprocess.Popen([sys.executable, "-m", "tests.hazard_worker", str(directory), ledger.endpoint, *args],
                            cwd=ROOT, env=env or clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def at_once(directory: Path) -> str:
    """The claim wait of a recoverer that must not wait for the killed sender: none on one host, where the kernel
    frees a dead holder's claim; on PostgreSQL, the holder's lease (it was killed inside a request)."""
    return str(2 * SHORT_LEASE) if (directory / "journal.address").exists() else "0"


def finished(process: subprocess.Popen, timeout: float = 30) -> dict:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err
    return json.loads(out.splitlines()[-1])


def wait_until(predicate, seconds: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"{what} not met within {seconds}s"
        time.sleep(0.005)


def at_the_service(ledger) -> bool:
    return any(e["event"] == "put" and e["id"] == EFFECT for e in ledger.log())


def kill_while_at_the_service(directory: Path, ledger, *args: str) -> None:
    sender = worker(directory, ledger, *args)
    wait_until(lambda: at_the_service(ledger), what="the request reaching the ledger")
    sender.send_signal(signal.SIGKILL)
    assert sender.wait(10) == -signal.SIGKILL
    assert ledger.applies(EFFECT) == 0, "the write landed before the kill: the schedule did not race"


def ready(directory: Path, ledger, *args: str) -> tuple[subprocess.Popen, Path]:
    """A worker started and waiting, before the race, for the file this returns to exist: its start-up (seconds on
    a loaded machine) then falls outside the race."""
    go = directory / "go"
    process = worker(directory, ledger, *args, "--go", str(go))
    wait_until(Path(f"{go}.waiting").exists, what="the worker starting")
    return process, go


def stopped_at(directory: Path, ledger, point: str, *args: str) -> subprocess.Popen:
    """A sender held at a hook point, then SIGSTOPped there: the caller sends SIGCONT."""
    pause = directory / "paused"
    sender = worker(directory, ledger, *args,
                    env=clean_env(INTERLOCK_PAUSE_AT=point, INTERLOCK_PAUSE_FILE=str(pause)))
    wait_until(pause.exists, what=f"the sender reaching {point}")
    sender.send_signal(signal.SIGSTOP)
    pause.unlink()
    return sender


def journal_entries(directory: Path) -> list[dict]:
    """The effect's journal entries, on whichever journal the world keeps."""
    journal, _ = open_journal(journal_address(directory))
    with journal:
        return journal.entries(EFFECT)


def receipt(directory: Path) -> dict:
    journal, _ = open_journal(journal_address(directory))
    with journal:
        return verify(bundle(journal, EFFECT))


@pytest.fixture(params=["jsonl", "postgresql"])
def world(request, tmp_path):
    """The lease file and the journal the workers share: a JSONL file, or a database of its own."""
    (tmp_path / "lease.json").write_text(json.dumps({"status": "open"}))
    if request.param == "postgresql":
        cluster = request.getfixturevalue("pg_cluster")
        (tmp_path / "journal.address").write_text(fresh_database(cluster, "h"))
    return tmp_path


def test_recovery_waits_out_an_unfenced_request_that_outlives_its_sender(world, ledger):
    ledger.configure(delay=0.3)
    kill_while_at_the_service(world, ledger, "--in-flight", "1.0")
    outcome = finished(worker(world, ledger, "--mode", "recover", "--in-flight", "1.0"))
    assert outcome["status"] == "COMMITTED_ON_QUERY"
    assert ledger.applies(EFFECT) == 1, "recovery resent a write that was still in flight"
    assert receipt(world)["happened"] is True


# One host only: the ledger holds a write at most 2 s, too short to wait out a PostgreSQL lease before it lands.
@pytest.mark.parametrize("world", ["jsonl"], indirect=True)
def test_recovery_reports_in_flight_with_the_time_it_can_decide(world, ledger):
    ledger.configure(delay=2.0)
    recoverer, go = ready(world, ledger, "--mode", "recover", "--in-flight", "2.5", "--claim-wait", "0")
    kill_while_at_the_service(world, ledger, "--in-flight", "2.5")
    killed = time.time()
    go.touch()
    outcome = finished(recoverer)
    assert ledger.applies(EFFECT) == 0, "the stray write landed before recovery looked: the schedule did not race"
    # counted from when the dead sender's claim was taken, not from its dispatch: its send ran until it died
    assert outcome["status"] == "IN_FLIGHT" and killed + 2.5 <= outcome["decide_at"] <= time.time() + 2.5
    wait_until(lambda: ledger.applies(EFFECT) == 1, what="the stray write landing")
    wait_until(lambda: time.time() > outcome["decide_at"], what="the bound passing")
    assert finished(worker(world, ledger, "--mode", "recover", "--in-flight", "2.5"))["status"] == "COMMITTED_ON_QUERY"
    assert ledger.applies(EFFECT) == 1


def test_recovery_counts_the_in_flight_bound_from_when_a_sender_that_died_sending_lost_its_claim(world, ledger):
    # The send held its request (a client retrying a first attempt that never arrived) and made it just before its
    # sender was killed: counted from the dispatch, the bound has passed while the request is still on its way.
    postgres = (world / "journal.address").exists()
    ledger.configure(delay=2.0 if postgres else 0.8)  # on PostgreSQL the claim is taken once the 1 s lease ran out
    bound, hang = ("2.5", "2.2") if postgres else ("1.6", "1.8")  # each bound leaves the landing 0.5 s or more
    recoverer, go = ready(world, ledger, "--mode", "recover", "--in-flight", bound, "--claim-wait", "10")
    kill_while_at_the_service(world, ledger, "--in-flight", bound, "--hang", hang)
    go.touch()
    outcome = finished(recoverer)
    assert ledger.applies(EFFECT) == 1, "recovery resent while the dead sender's last request was on its way"
    assert outcome["status"] == "COMMITTED_ON_QUERY"


def test_a_version_fenced_write_that_landed_late_is_recorded_as_committed(world, ledger):
    ledger.configure(delay=0.3, fences=["version"])
    kill_while_at_the_service(world, ledger, "--fence", "version")
    outcome = finished(worker(world, ledger, "--mode", "recover", "--fence", "version"))
    assert ledger.applies(EFFECT) == 1
    assert outcome["status"] in ("COMMITTED_ON_QUERY", "REAPPLIED_AFTER_QUERY")
    assert receipt(world)["happened"] is True, "the record says the write did not happen, the ledger holds it"


def test_a_paused_sender_loses_its_claim_and_does_not_send_after_its_lease_ended(world, ledger):
    recoverer, go = ready(world, ledger, "--mode", "recover", "--in-flight", "0.2", "--ttl", "1.0", "--claim-wait", "5")
    sender = stopped_at(world, ledger, "before_send", "--in-flight", "0.2", "--ttl", "1.0")
    try:
        (world / "lease.json").write_text(json.dumps({"status": "revoked"}))
        started = time.monotonic()
        go.touch()
        outcome = finished(recoverer)
        assert outcome["status"] == "REFUSED:lease_at_recovery"
        assert time.monotonic() - started < 4.0, "recovery waited for more than the claim's lifetime"
    finally:
        sender.send_signal(signal.SIGCONT)
    woke = finished(sender)
    assert woke["status"] != "COMMITTED"
    assert ledger.applies(EFFECT) == 0 and not at_the_service(ledger), "the woken sender sent after its lease ended"


def test_a_paused_sender_whose_claim_was_taken_over_does_not_send_when_it_wakes(world, ledger):
    sender = stopped_at(world, ledger, "before_send", "--in-flight", "0.2", "--ttl", "1.0")
    try:
        outcome = finished(worker(world, ledger, "--mode", "recover", "--in-flight", "0.2", "--ttl", "1.0",
                                  "--claim-wait", "5"))
        assert outcome["status"] == "REAPPLIED_AFTER_QUERY" and ledger.applies(EFFECT) == 1
    finally:
        sender.send_signal(signal.SIGCONT)
    assert finished(sender)["status"] == "IN_FLIGHT"
    assert ledger.applies(EFFECT) == 1, "the woken sender sent although its claim was taken over"


def test_a_sender_fenced_out_before_its_successor_resends_answers_in_flight_not_refused(world, ledger):
    ledger.configure(fences=["epoch"])
    sender = stopped_at(world, ledger, "before_request", "--fence", "epoch", "--in-flight", "0.2", "--ttl", "1.0")
    successor = None
    try:  # the successor's lookup raises the fence; it is held before its resend, so the service holds nothing
        successor = stopped_at(world, ledger, "recovery_before_resend", "--mode", "recover", "--fence", "epoch",
                               "--in-flight", "0.2", "--ttl", "1.0", "--claim-wait", "5")
        sender.send_signal(signal.SIGCONT)
        woke = finished(sender)
        assert ledger.counts(EFFECT) == {"id": EFFECT, "applies": 0, "refused": 1}
        assert woke["status"] == "IN_FLIGHT", "the fenced-out sender answered as if the effect would never land"
    finally:
        sender.send_signal(signal.SIGCONT)
        if successor is not None:
            successor.send_signal(signal.SIGCONT)
    assert finished(successor)["status"] == "REAPPLIED_AFTER_QUERY" and ledger.applies(EFFECT) == 1
    kinds = [e["kind"] for e in journal_entries(world)]
    assert kinds.count("REFUSED") == 0 and kinds[-1] == "COMMITTED"


def test_an_exception_from_the_send_is_refused_as_send_failed_when_the_ledger_holds_nothing_and_not_retried(
        world, ledger):
    first = finished(worker(world, ledger, "--in-flight", "0", "--bug"))
    assert first["status"] == "REFUSED:send_failed"
    assert first["error"] == {"type": "KeyError", "message": "'no such field'"}
    entries = journal_entries(world)
    assert entries[-1]["kind"] == "REFUSED" and entries[-1]["error"]["type"] == "KeyError"
    again = finished(worker(world, ledger, "--in-flight", "0"))
    assert again["status"] == "REFUSED:send_failed" and again["error"]["type"] == "KeyError"
    assert not at_the_service(ledger), "a send whose own code failed was called again"


def test_an_exception_from_the_send_is_ambiguous_while_its_in_flight_bound_outlasts_the_wait(world, ledger):
    first = finished(worker(world, ledger, "--in-flight", "60", "--claim-wait", "0.2", "--bug"))
    assert first["status"] == "AMBIGUOUS" and first["error"]["type"] == "KeyError"
    assert journal_entries(world)[-1]["kind"] == "AMBIGUOUS"
    assert not at_the_service(ledger)


def test_a_sender_stopped_after_its_confirm_is_refused_by_an_epoch_fenced_service(world, ledger):
    ledger.configure(fences=["epoch"])
    sender = stopped_at(world, ledger, "before_request", "--fence", "epoch", "--in-flight", "0.2", "--ttl", "1.0")
    try:
        outcome = finished(worker(world, ledger, "--mode", "recover", "--fence", "epoch", "--in-flight", "0.2",
                                  "--ttl", "1.0", "--claim-wait", "5"))
        assert outcome["status"] == "REAPPLIED_AFTER_QUERY" and ledger.applies(EFFECT) == 1
    finally:
        sender.send_signal(signal.SIGCONT)
    woke = finished(sender)
    assert ledger.counts(EFFECT) == {"id": EFFECT, "applies": 1, "refused": 1}, "the stale epoch's request landed"
    assert woke["status"] == "COMMITTED_ON_QUERY", "the woken sender's record disagrees with the service"
    kinds = [e["kind"] for e in journal_entries(world)]
    assert kinds.count("COMMITTED") == 1 and "LATE_RESULT" in kinds


def human_write(ledger) -> None:
    ledger.human_write("default", "human")


def revoke(world: Path) -> None:
    (world / "lease.json").write_text(json.dumps({"status": "revoked"}))


def settled_at_the_service(ledger) -> bool:
    events = [e["event"] for e in ledger.log() if e["id"] == EFFECT]
    return events.count("put") == events.count("applied") + events.count("refused")


@pytest.mark.parametrize("fence", ["dedupe", "version"])
def test_a_fence_that_does_not_cover_a_revoked_lease_waits_for_the_stray_write(world, ledger, fence):
    ledger.configure(delay=0.6, fences=[fence])
    kill_while_at_the_service(world, ledger, "--fence", fence, "--in-flight", "1.5")
    revoke(world)
    outcome = finished(worker(world, ledger, "--mode", "recover", "--fence", fence, "--in-flight", "1.5"))
    assert ledger.applies(EFFECT) == 1, "the stray write did not land: the schedule did not race"
    assert outcome["status"] == "COMMITTED_ON_QUERY", "recovery refused while the first write was still in flight"
    assert receipt(world)["happened"] is True


def test_a_dedupe_fence_does_not_cover_a_moved_premise(world, ledger):
    ledger.configure(delay=0.6, fences=["dedupe"])
    kill_while_at_the_service(world, ledger, "--fence", "dedupe", "--in-flight", "1.5")
    human_write(ledger)
    outcome = finished(worker(world, ledger, "--mode", "recover", "--fence", "dedupe", "--in-flight", "1.5"))
    assert outcome["status"] == "COMMITTED_ON_QUERY" and ledger.applies(EFFECT) == 1
    assert receipt(world)["happened"] is True


def test_a_version_fence_refuses_at_once_when_the_premise_it_covers_moved(world, ledger):
    ledger.configure(delay=0.6, fences=["version"])
    kill_while_at_the_service(world, ledger, "--fence", "version", "--in-flight", "30")
    human_write(ledger)
    outcome = finished(worker(world, ledger, "--mode", "recover", "--fence", "version", "--in-flight", "30",
                              "--claim-wait", at_once(world)))
    assert outcome["status"] == "REFUSED:stale_premise_at_recovery"
    wait_until(lambda: settled_at_the_service(ledger), what="the stray write meeting the version fence")
    assert ledger.counts(EFFECT) == {"id": EFFECT, "applies": 0, "refused": 1}
    assert receipt(world)["happened"] is False


def test_an_epoch_fence_raised_by_recovery_shuts_out_the_stray_write_and_refuses_at_once(world, ledger):
    ledger.configure(delay=2.0, fences=["epoch"])
    recoverer, go = ready(world, ledger, "--mode", "recover", "--fence", "epoch", "--in-flight", "30",
                          "--claim-wait", at_once(world))
    kill_while_at_the_service(world, ledger, "--fence", "epoch", "--in-flight", "30")
    revoke(world)
    go.touch()
    outcome = finished(recoverer)
    assert outcome["status"] == "REFUSED:lease_at_recovery", "recovery did not shut the stray write out"
    wait_until(lambda: settled_at_the_service(ledger), what="the stray write meeting the epoch fence")
    assert ledger.counts(EFFECT) == {"id": EFFECT, "applies": 0, "refused": 1}
    assert receipt(world)["happened"] is False


def test_an_epoch_fence_raised_by_recovery_lets_it_resend_at_once_without_a_second_apply(world, ledger):
    ledger.configure(delay=2.0, fences=["epoch"])
    recoverer, go = ready(world, ledger, "--mode", "recover", "--fence", "epoch", "--in-flight", "30",
                          "--claim-wait", at_once(world))
    kill_while_at_the_service(world, ledger, "--fence", "epoch", "--in-flight", "30")
    go.touch()
    outcome = finished(recoverer)
    assert outcome["status"] == "REAPPLIED_AFTER_QUERY"
    wait_until(lambda: settled_at_the_service(ledger), what="both writes settling at the ledger")
    assert ledger.counts(EFFECT) == {"id": EFFECT, "applies": 1, "refused": 1}, "the stray write landed as well"
    assert receipt(world)["happened"] is True


def test_a_sender_stopped_past_its_claim_ttl_appends_nothing_after_its_successor_settled(world, ledger):
    sender = stopped_at(world, ledger, "after_proposed", "--in-flight", "0.2", "--ttl", "1.0")
    try:
        outcome = finished(worker(world, ledger, "--mode", "recover", "--in-flight", "0.2", "--ttl", "1.0",
                                  "--claim-wait", "5"))
        assert outcome["status"] == "COMMITTED" and ledger.applies(EFFECT) == 1
    finally:
        sender.send_signal(signal.SIGCONT)
    assert finished(sender)["status"] == "IN_FLIGHT"
    entries = journal_entries(world)
    kinds = [e["kind"] for e in entries]
    assert kinds[-1] == "COMMITTED", f"the superseded sender appended after its successor settled: {kinds}"
    assert not open_send(entries) and receipt(world)["happened"] is True
    assert ledger.applies(EFFECT) == 1


def test_recovery_does_not_resend_over_a_sender_stopped_after_its_confirm_when_nothing_fences_it(world, ledger):
    sender = stopped_at(world, ledger, "before_request", "--in-flight", "0.2", "--ttl", "1.0")
    try:
        outcome = finished(worker(world, ledger, "--mode", "recover", "--in-flight", "0.2", "--ttl", "1.0",
                                  "--claim-wait", "2"))
        assert outcome["status"] == "IN_FLIGHT", "recovery concluded while the stopped sender could still send"
        assert not at_the_service(ledger)
    finally:
        sender.send_signal(signal.SIGCONT)
    finished(sender)
    settled = finished(worker(world, ledger, "--mode", "recover", "--in-flight", "0.2", "--ttl", "1.0"))
    assert ledger.applies(EFFECT) == 1, "the stopped sender's write and a resend both landed"
    assert settled["status"] in ("COMMITTED_ON_QUERY", "DUPLICATE_IGNORED") and receipt(world)["happened"] is True


def test_a_retired_calendar_event_id_refuses_a_late_insert_and_is_never_taken_for_the_booking(calendar_api):
    from interlock import Rejected
    from interlock.targets.calendar import CalendarEventTarget

    target = CalendarEventTarget(calendar_api, "primary")
    eid = effect_id_for("booking:late")
    event = {"summary": "booking", "start": {"dateTime": "2030-01-07T10:00:00Z"},
             "end": {"dateTime": "2030-01-07T10:30:00Z"}}
    target.close_out(eid, {"event": event}, epoch=2)
    with pytest.raises(Rejected, match="retired"):
        target.apply(eid, {"event": event})  # the stray insert of the dead sender, arriving late
    assert target.lookup(eid, {"event": event}) is None
    slot = calendar_api.events().list(calendarId="primary", timeMin="2030-01-07T10:00:00Z",
                                      timeMax="2030-01-07T10:30:00Z").execute()["items"]
    assert slot == []
    target.close_out(eid, {"event": event}, epoch=3)  # a second recovery finds the id retired already


def test_a_calendar_placeholder_whose_delete_was_lost_is_finished_by_the_next_close_out(calendar_api):
    from interlock.targets.calendar import CalendarEventTarget, retired

    target = CalendarEventTarget(calendar_api, "primary")
    eid = effect_id_for("booking:cut")
    events = calendar_api.events()
    placeholder = {"id": eid, "start": {"dateTime": "2000-01-01T00:00:00Z"},
                   "end": {"dateTime": "2000-01-01T00:01:00Z"},
                   "extendedProperties": {"private": {"interlock_retired": "true"}}}
    events.insert(calendarId="primary", body=placeholder).execute()  # as if the answer to the delete were lost
    assert target.lookup(eid, {}) is None, "a placeholder was taken for the booking"
    target.close_out(eid, {}, epoch=2)
    found = events.get(calendarId="primary", eventId=eid).execute()
    assert retired(found) and found["status"] == "cancelled"
