"""The gate in one process: the happy path, refusals, payload binding, and answers lost in flight."""

from __future__ import annotations

import json
import threading
import time

import pytest

from interlock.backends import open_journal
from pg_worker import fresh_database, pg_cluster  # noqa: F401  (fixture)
from tests.hazard_worker import journal_address
from interlock import (CallableLease, Check, ConfigurationError, Effect, EffectRefused, EffectUnsettled, FunctionTarget,
                       Gate, NOT_SET, Premise, Rejected, UnknownEffect, bundle, effect_id_for, verify)


class Service:
    """A service whose every call is counted; it can fail after landing (a lost answer) or refuse."""

    def __init__(self):
        self.landed: list[tuple[str, dict]] = []
        self.lose_answer = False
        self.refuse: Rejected | None = None

    def send(self, effect_id, payload):
        if self.refuse is not None:
            raise self.refuse
        self.landed.append((effect_id, payload))
        if self.lose_answer:
            raise ConnectionResetError("connection reset after the request was sent")
        return {"call": len(self.landed)}

    def find(self, effect_id, payload):
        return next(({"call": n} for n, (eid, _) in enumerate(self.landed, 1) if eid == effect_id), None)


@pytest.fixture
def service():
    return Service()


@pytest.fixture(autouse=True, params=["jsonl", "postgresql"])
def backend(request, tmp_path):
    """Every test on each journal: the JSONL file in its folder, or a database of its own."""
    if request.param == "postgresql":
        cluster = request.getfixturevalue("pg_cluster")
        (tmp_path / "journal.address").write_text(fresh_database(cluster, "g"))
    return request.param


def journal_in(folder):
    """The journal and claims of the test's folder (see `backend`)."""
    return open_journal(journal_address(folder))


def gated(folder, target, **options):
    journal, claims = journal_in(folder)
    return Gate(journal, target, claims=claims, **options)


def gate_for(tmp_path, service, tier=2):
    target = FunctionTarget("svc", service.send, tier=tier, find=service.find if tier != 3 else None,
                            in_flight=0.0)  # an in-process service: nothing is in flight once a call returns
    return gated(tmp_path, target, claim_wait=0.5)


def effect(payload=None, *, live=True, generation="17", decided=None):
    premise = Premise("generation", lambda: generation, decided=decided if decided is not None else generation)
    lease = CallableLease(lambda: live, lambda: {"incident": "INC-1", "status": "open" if live else "resolved"})
    return Effect("rollback:b/o:INC-1", payload or {"to": "v41"}, [premise], lease)


def kinds(gate, eid):
    return [e["kind"] for e in gate.journal.entries(eid)]


def test_a_valid_effect_is_sent_once_with_four_journal_entries(tmp_path, service):
    gate = gate_for(tmp_path, service)
    outcome = gate.submit(effect())
    assert outcome.status == "COMMITTED" and outcome.evidence == {"call": 1} and outcome.landed is True
    assert outcome.effect_id == effect_id_for("rollback:b/o:INC-1")
    assert kinds(gate, outcome.effect_id) == ["PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED"]
    receipt = verify(bundle(gate.journal, outcome.effect_id))
    assert receipt["valid"] and receipt["happened"] is True and receipt["evidence"] == {"call": 1}
    assert receipt["authorized_when_fired"] is True and receipt["assumptions_held"] is True


def test_an_answer_holding_u0000_is_journaled_and_settles_the_effect(tmp_path):
    landed = []

    def send(effect_id, payload):  # jsonb cannot hold U+0000; the service's answer, kept as evidence, may
        landed.append(effect_id)
        return {"etag": "a\x00b", "\x00": True}

    gate = gated(tmp_path, FunctionTarget("svc", send, tier=2, find=lambda eid, payload: None), claim_wait=0.5)
    outcome = gate.submit(effect())
    assert outcome.status == "COMMITTED" and outcome.evidence == {"etag": "a\x00b", "\x00": True}
    assert gate.submit(effect()).status == "DUPLICATE_IGNORED" and len(landed) == 1
    assert verify(bundle(gate.journal, outcome.effect_id))["valid"]


def test_the_same_effect_again_is_a_duplicate_and_is_not_sent(tmp_path, service):
    gate = gate_for(tmp_path, service)
    gate.submit(effect())
    again = gate.submit(effect())
    assert again.status == "DUPLICATE_IGNORED" and again.evidence == {"call": 1}
    assert len(service.landed) == 1


def test_the_same_key_with_another_payload_is_refused_before_and_after_commit(tmp_path, service):
    gate = gate_for(tmp_path, service)
    service.refuse = Rejected("503 try later")
    assert gate.submit(effect()).status == "REFUSED:target_error"
    assert gate.submit(effect({"to": "v40"})).status == "REFUSED:conflicting_payload"
    service.refuse = None
    (tmp_path / "other").mkdir()
    other = gate_for(tmp_path / "other", service)
    assert other.submit(effect()).status == "COMMITTED"
    assert other.submit(effect({"to": "v40"})).status == "REFUSED:conflicting_payload"
    assert other.submit(effect()).status == "DUPLICATE_IGNORED"
    assert len(service.landed) == 1


def test_a_dead_lease_is_refused_without_reading_the_premises(tmp_path, service):
    gate = gate_for(tmp_path, service)
    read = []
    dead = Effect("k", {"x": 1}, [Premise("p", lambda: read.append(1) or 1, decided=1)],
                  CallableLease(lambda: False, lambda: {"status": "resolved"}))
    outcome = gate.submit(dead)
    assert outcome.status == "REFUSED:lease" and outcome.landed is False
    assert outcome.rechecked == Check(lease_live=False, lease={"status": "resolved"})
    assert read == [] and service.landed == []


def test_a_moved_premise_is_refused_with_a_readable_reason(tmp_path, service):
    gate = gate_for(tmp_path, service)
    outcome = gate.submit(effect(generation="18", decided="17"))
    assert outcome.status == "REFUSED:stale_premise"
    assert outcome.rechecked.violations == ("generation: was 17, now 18",)
    refused = gate.journal.entries(outcome.effect_id)[-1]
    assert refused["reason"] == ["generation: was 17, now 18"] and refused["resolves"] is False
    assert service.landed == []
    assert verify(bundle(gate.journal, outcome.effect_id))["happened"] is False


def test_a_failed_precondition_at_the_service_is_a_stale_premise(tmp_path, service):
    gate = gate_for(tmp_path, service)
    service.refuse = Rejected("412 precondition failed", precondition=True)
    outcome = gate.submit(effect())
    assert outcome.status == "REFUSED:stale_premise" and outcome.landed is False
    assert gate.journal.entries(outcome.effect_id)[-1]["resolves"] is True


def test_a_lost_answer_on_a_lookup_target_is_found_not_resent(tmp_path, service):
    gate = gate_for(tmp_path, service, tier=2)
    service.lose_answer = True
    outcome = gate.submit(effect())
    assert outcome.status == "COMMITTED_ON_QUERY" and outcome.evidence == {"call": 1}
    assert len(service.landed) == 1
    assert not gate.journal.effect(outcome.effect_id).open_dispatch


def test_a_lost_answer_on_a_blind_target_is_ambiguous_and_never_resent(tmp_path, service):
    gate = gate_for(tmp_path, service, tier=3)
    service.lose_answer = True
    outcome = gate.submit(effect())
    assert outcome.status == "AMBIGUOUS" and outcome.landed is None
    service.lose_answer = False
    assert gate.submit(effect()).status == "AMBIGUOUS"
    assert len(service.landed) == 1
    assert verify(bundle(gate.journal, outcome.effect_id))["happened"] == "unknown"


def test_a_held_claim_makes_submit_report_in_flight(tmp_path, service):
    gate = gate_for(tmp_path, service)
    with gate.claims.acquire(effect().effect_id, 0):
        assert gate.submit(effect()).status == "IN_FLIGHT"
    assert service.landed == []


def test_recovering_an_unknown_effect_is_an_error(tmp_path, service):
    with pytest.raises(ConfigurationError, match="not in"):
        gate_for(tmp_path, service).recover(effect())


def test_recover_settles_an_effect_that_was_only_proposed(tmp_path, service):
    class Crash(Exception):
        pass

    class CrashAfterProposed:
        def reach(self, point):
            if point == "after_proposed":
                raise Crash(point)

    target = FunctionTarget("svc", service.send, tier=2, find=service.find, in_flight=0.0)
    with pytest.raises(Crash):
        gated(tmp_path, target, hooks=CrashAfterProposed()).submit(effect())
    assert gate_for(tmp_path, service).recover(effect()).status == "COMMITTED"
    assert len(service.landed) == 1



def test_the_proposal_is_in_the_journal_before_the_gate_goes_on_and_on_postgresql_it_came_with_the_claim(
        tmp_path, service, backend):
    seen = []

    class Look:
        def reach(self, point):
            if point == "after_proposed":
                seen.append(kinds(gate, effect_id_for("rollback:b/o:INC-1")))
                if backend == "postgresql":
                    import psycopg

                    with psycopg.connect(journal_address(tmp_path), autocommit=True) as conn:
                        seen.append(conn.execute(
                            "SELECT j.xmin = c.xmin FROM interlock_journal j JOIN interlock_claims c USING (effect_id)"
                            " WHERE j.kind = 'PROPOSED'").fetchone()[0])  # one transaction: one round trip

    gate = gated(tmp_path, FunctionTarget("svc", service.send, tier=3), hooks=Look())
    assert gate.submit(effect()).status == "COMMITTED"
    assert seen == [["PROPOSED"]] + ([True] if backend == "postgresql" else [])

def test_gates_share_a_journal_object(tmp_path, service):
    journal, claims = journal_in(tmp_path)
    first = Gate(journal, FunctionTarget("a", service.send, tier=3), claims=claims)
    second = Gate(journal, FunctionTarget("b", service.send, tier=3), claims=claims)
    assert first.submit(Effect("k1", {})).status == "COMMITTED"
    assert second.submit(Effect("k2", {})).status == "COMMITTED"
    assert len(journal) == 8


def _buggy(calls, landed=None, landing_after=None):
    """A send function with a bug (a KeyError): before its request, or after it sent one that lands later."""

    def send(effect_id, payload):
        calls.append(effect_id)
        if landed is not None:
            threading.Timer(landing_after, landed.append, [(effect_id, payload)]).start()
        return payload["missing"]

    return send


def _found_in(landed):
    return lambda effect_id, payload: next(({"call": 1} for eid, _ in landed if eid == effect_id), None)


@pytest.mark.parametrize("tier", [1, 2])
def test_a_bug_in_the_send_is_refused_as_send_failed_once_nothing_can_land_and_not_called_again(tmp_path, tier):
    calls = []
    target = FunctionTarget("svc", _buggy(calls), tier=tier, find=lambda eid, payload: None, in_flight=0.0)
    gate = gated(tmp_path, target)
    outcome = gate.submit(effect())
    assert outcome.status == "REFUSED:send_failed" and outcome.landed is False
    assert outcome.error == {"type": "KeyError", "message": "'missing'"}
    last = gate.journal.entries(outcome.effect_id)[-1]
    assert last["kind"] == "REFUSED" and last["error"] == outcome.error and last["resolves"] is True
    assert verify(bundle(gate.journal, outcome.effect_id))["happened"] is False
    again = gate.submit(effect())
    assert again.status == "REFUSED:send_failed" and again.error == outcome.error
    assert calls == [outcome.effect_id]


def test_a_bug_in_the_send_is_ambiguous_while_a_request_of_it_may_still_land(tmp_path):
    calls = []
    target = FunctionTarget("svc", _buggy(calls), tier=2, find=lambda eid, payload: None, in_flight=60.0)
    gate = gated(tmp_path, target, claim_wait=0.2)
    outcome = gate.submit(effect())
    assert outcome.status == "AMBIGUOUS" and outcome.error == {"type": "KeyError", "message": "'missing'"}
    assert kinds(gate, outcome.effect_id)[-1] == "AMBIGUOUS"
    assert verify(bundle(gate.journal, outcome.effect_id))["happened"] == "unknown"
    assert gate.submit(effect()).status == "AMBIGUOUS" and calls == [outcome.effect_id]
    with pytest.raises(EffectUnsettled, match="AMBIGUOUS.*KeyError: 'missing'"):
        outcome.raise_for_status()


def test_a_bug_in_the_send_is_refused_once_a_close_out_whose_answer_was_lost_took_it_again(tmp_path):
    calls, shut = [], []

    def close_out(effect_id, payload, *, epoch):
        shut.append(epoch)
        if len(shut) == 1:
            raise ConnectionResetError("the close-out's answer was lost")

    target = FunctionTarget("svc", _buggy(calls), tier=2, find=lambda eid, payload: None, in_flight=60.0,
                            shut=close_out)
    outcome = gated(tmp_path, target, claim_wait=0.2).submit(effect())
    assert outcome.status == "REFUSED:send_failed" and len(shut) == 2 and len(calls) == 1


def test_a_recovery_makes_a_close_out_whose_answer_was_lost_once_more_and_then_decides(tmp_path):
    live, shut = [True], []

    def lost(effect_id, payload):  # the request never arrives, and the lease ends before recovery looks
        live[0] = False
        raise ConnectionResetError("connection reset")

    def close_out(effect_id, payload, *, epoch):
        shut.append(epoch)
        if len(shut) == 1:
            raise ConnectionResetError("the close-out's answer was lost")

    target = FunctionTarget("svc", lost, tier=2, find=lambda eid, payload: None, in_flight=60.0, shut=close_out)
    lease = CallableLease(lambda: live[0], lambda: {"incident": "INC-1", "status": "open" if live[0] else "resolved"})
    outcome = gated(tmp_path, target, claim_wait=0.2).submit(Effect("k", {"to": "v41"}, [], lease))
    assert outcome.status == "REFUSED:lease_at_recovery" and outcome.landed is False and len(shut) == 2


def test_a_bug_raised_while_its_request_still_lands_is_found_after_the_bound_not_refused(tmp_path):
    calls, landed = [], []
    target = FunctionTarget("svc", _buggy(calls, landed, landing_after=0.3), tier=2, find=_found_in(landed),
                            in_flight=0.6)
    gate = gated(tmp_path, target, claim_wait=5.0)
    started = time.monotonic()
    outcome = gate.submit(effect())
    assert outcome.status == "COMMITTED_ON_QUERY" and outcome.landed is True
    assert time.monotonic() - started >= 0.5  # the bound after the DISPATCHED was waited out before the last look
    assert outcome.error == {"type": "KeyError", "message": "'missing'"} and len(landed) == 1 and len(calls) == 1


def test_a_lost_answer_to_an_unfenced_target_is_not_judged_before_its_in_flight_bound(tmp_path, service):
    def timed_out(effect_id, payload):  # the request is still at the service: it has not landed yet
        raise TimeoutError("no answer within the client's timeout")

    target = FunctionTarget("svc", timed_out, tier=2, find=service.find, in_flight=60.0)
    outcome = gated(tmp_path, target, claim_wait=0.2).submit(effect())
    assert outcome.status == "IN_FLIGHT" and outcome.decide_at > time.time() + 50


def test_a_lost_answer_found_by_the_lookup_is_committed_without_waiting_out_the_bound(tmp_path, service):
    target = FunctionTarget("svc", service.send, tier=2, find=service.find, in_flight=60.0)
    service.lose_answer = True
    outcome = gated(tmp_path, target, claim_wait=0.2).submit(effect())
    assert outcome.status == "COMMITTED_ON_QUERY" and len(service.landed) == 1


def test_a_resend_whose_answer_is_lost_is_found_by_one_more_lookup_not_left_open(tmp_path, service):
    sends = []

    def lossy(effect_id, payload):  # the first request never arrives; the resend lands and its answer is lost
        sends.append(effect_id)
        if len(sends) == 2:
            service.landed.append((effect_id, payload))
        raise ConnectionResetError("connection reset")

    target = FunctionTarget("svc", lossy, tier=2, find=service.find, in_flight=0.0)
    outcome = gated(tmp_path, target, claim_wait=0.5).submit(effect())
    assert outcome.status == "COMMITTED_ON_QUERY" and outcome.evidence == {"call": 1}
    assert len(sends) == 2 and len(service.landed) == 1
    journal = journal_in(tmp_path)[0]
    assert [e["kind"] for e in journal.entries(outcome.effect_id)] == [
        "PROPOSED", "AUTHORIZED", "DISPATCHED", "REDISPATCHED", "COMMITTED"]
    assert journal.entries(outcome.effect_id)[-1]["via"] == "recovery-query"
    assert not journal.effect(outcome.effect_id).open_dispatch


def test_a_resend_whose_answer_is_lost_and_not_found_stays_open_and_is_not_sent_again(tmp_path, service):
    sends = []

    def unreachable(effect_id, payload):  # no request arrives, and none is answered
        sends.append(effect_id)
        raise ConnectionResetError("connection reset")

    target = FunctionTarget("svc", unreachable, tier=2, find=service.find, in_flight=0.0)
    outcome = gated(tmp_path, target, claim_wait=0.5).submit(effect())
    assert outcome.status == "AMBIGUOUS" and len(sends) == 2  # the send and one resend, nothing more
    journal = journal_in(tmp_path)[0]
    assert journal.effect(outcome.effect_id).open_dispatch  # a request of the resend may still land
    assert journal.entries(outcome.effect_id)[-1]["kind"] == "REDISPATCHED"


def test_a_fact_reader_that_raises_at_the_last_look_closes_the_send_as_not_made(tmp_path, service):
    away = []

    class Outage:
        """The fact store goes away once DISPATCHED is journaled, before the last look, and comes back after."""

        def reach(self, point):
            if point == "before_send" and not away:
                away.append(True)

    target = FunctionTarget("svc", service.send, tier=3, in_flight=0.0)
    gate = gated(tmp_path, target, claim_wait=0.5, hooks=Outage())

    def generation():
        if away[-1:] == [True]:
            away.append(False)
            raise ConnectionError("fact store away")
        return "17"

    blip = Effect("rollback:b/o:INC-1", {"to": "v41"}, [Premise("generation", generation, decided="17")])
    with pytest.raises(ConnectionError, match="fact store away"):
        gate.submit(blip)
    assert service.landed == []
    eid = effect_id_for("rollback:b/o:INC-1")
    refused = gate.journal.entries(eid)[-1]
    assert (refused["kind"], refused["code"], refused["resolves"]) == ("REFUSED", "check_failed", False)
    assert refused["error"] == {"type": "ConnectionError", "message": "fact store away"}
    assert gate.journal.effect(eid).open_dispatch is False
    assert gate.submit(blip).status == "COMMITTED" and len(service.landed) == 1  # decided again, sent once
    receipt = verify(bundle(gate.journal, eid))
    assert receipt["valid"] and receipt["happened"] is True and receipt["happened_once"] is True


@pytest.mark.parametrize("answer", [float("nan"), b"bytes", {1, 2}, (1, 2), {"at": time.gmtime(0)}])
def test_an_answer_json_cannot_hold_is_journaled_as_python_shows_it_and_reported_so_by_every_submit(tmp_path, answer):
    sent = []
    target = FunctionTarget("svc", lambda eid, payload: sent.append(eid) or answer, tier=1)
    gate = gated(tmp_path, target, claim_wait=0.5)
    first = gate.submit(effect())
    assert first.status == "COMMITTED" and first.evidence == {"python_repr": repr(answer)}
    again = gate.submit(effect())
    assert again.status == "DUPLICATE_IGNORED" and again.evidence == first.evidence
    assert len(sent) == 1
    lines = list(gate.journal.lines()) if hasattr(gate.journal, "lines") else []
    for entry in gate.journal.entries(first.effect_id):  # every entry is JSON, without NaN
        json.loads(json.dumps(entry, allow_nan=False))
    assert all("NaN" not in line for line in lines)


def test_a_send_answered_with_a_list_is_one_landing_not_copies(tmp_path):
    target = FunctionTarget("svc", lambda eid, payload: [{"id": 1}, {"id": 2}], tier=1)
    gate = gated(tmp_path, target, claim_wait=0.5)
    outcome = gate.submit(effect())
    receipt = verify(bundle(gate.journal, outcome.effect_id))
    assert receipt["valid"] and receipt["held_twice"] == [] and receipt["happened_once"] is True


def test_the_evidence_of_a_send_is_the_same_on_the_submit_that_sent_and_on_a_later_one(tmp_path, service):
    stamped = FunctionTarget("svc", lambda eid, payload: {**service.send(eid, payload), "at": time.gmtime(0)}, tier=1)
    gate = gated(tmp_path, stamped, claim_wait=0.5)
    first, again = gate.submit(effect()), gate.submit(effect())
    assert (first.status, again.status) == ("COMMITTED", "DUPLICATE_IGNORED") and len(service.landed) == 1
    assert first.evidence == again.evidence == gate.journal.entries(first.effect_id)[-1]["result"]
    assert first.evidence == {"python_repr": repr({"call": 1, "at": time.gmtime(0)})}


@pytest.mark.parametrize("moved, now, reason", [("generation", "18", ["generation: was 17, now 18"]),
                                                 ("lease", False, "lease not live")])
def test_a_refusal_at_the_last_look_reports_the_same_reason_on_that_submit_and_a_later_one(tmp_path, service, moved,
                                                                                          now, reason):
    facts = {"generation": "17", "lease": True}

    class Moves:  # the fact moves once DISPATCHED is journaled, before the last look
        def reach(self, point):
            if point == "before_send":
                facts[moved] = now

    gate = gated(tmp_path, FunctionTarget("svc", service.send, tier=1), claim_wait=0.5, hooks=Moves())
    lease = CallableLease(lambda: facts["lease"], lambda: {"incident": "INC-1"})
    moving = Effect("k", {"to": "v41"}, [Premise("generation", lambda: facts["generation"], decided="17")], lease)
    first, again = gate.submit(moving), gate.submit(moving)
    assert first.refused and (first.status, first.reason) == (again.status, again.reason)
    assert first.reason == reason and service.landed == []


class _Answers:
    """A Lease of the caller's own whose `is_live` gives back `answer`, whatever it is."""

    def __init__(self, answer):
        self.answer = answer

    def is_live(self):
        return self.answer

    def describe(self):
        return {"incident": "INC-1"}


@pytest.mark.parametrize("answer", ["yes", None, 1])
def test_a_lease_of_its_own_that_answers_a_non_bool_is_an_error_and_nothing_is_sent(tmp_path, service, answer):
    gate = gate_for(tmp_path, service, tier=1)
    with pytest.raises(ConfigurationError, match=f"is_live\\(\\) returned {answer!r}"):
        gate.submit(Effect("k", {"to": "v41"}, [], _Answers(answer)))
    assert service.landed == [] and kinds(gate, effect_id_for("k")) == ["PROPOSED"]


def test_a_lease_that_answers_a_non_bool_at_the_last_look_is_never_sent(tmp_path, service):
    lease = _Answers(True)

    class Turns:  # the answer turns to a truthy status once DISPATCHED is journaled, before the last look
        def reach(self, point):
            if point == "before_send":
                lease.answer = "yes"

    gate = gated(tmp_path, FunctionTarget("svc", service.send, tier=1), claim_wait=0.5, hooks=Turns())
    with pytest.raises(ConfigurationError, match="returned 'yes'"):
        gate.submit(Effect("k", {"to": "v41"}, [], lease))
    refused = gate.journal.entries(effect_id_for("k"))[-1]
    assert service.landed == [] and (refused["kind"], refused["code"]) == ("REFUSED", "check_failed")


def test_a_lease_that_answers_a_non_bool_at_recovery_is_an_error_and_nothing_is_resent(tmp_path, service):
    sends = []

    def lost(effect_id, payload):  # the request never arrives and its answer is lost: the dispatch stays open
        sends.append(effect_id)
        raise ConnectionResetError("connection reset")

    lease = _Answers(True)
    gate = gated(tmp_path, FunctionTarget("svc", lost, tier=2, find=service.find, in_flight=60.0), claim_wait=0.2)
    gated_effect = Effect("k", {"to": "v41"}, [], lease)
    assert gate.submit(gated_effect).status == "IN_FLIGHT" and len(sends) == 1
    lease.answer = "yes"
    with pytest.raises(ConfigurationError, match="returned 'yes'"):
        gate.recover(gated_effect)
    assert len(sends) == 1 and gate.journal.effect(effect_id_for("k")).open_dispatch


def test_a_refusal_says_why_in_its_outcome_and_when_raised(tmp_path, service):
    gate = gate_for(tmp_path, service)
    moved = gate.submit(effect(generation="18", decided="17"))
    assert moved.status == "REFUSED:stale_premise" and "generation" in str(moved.reason)
    with pytest.raises(EffectRefused, match=r"REFUSED:stale_premise \(.*generation"):
        moved.raise_for_status()
    assert gate.submit(effect({"to": "v40"})).reason.startswith("the effect id was journaled with another payload")


@pytest.mark.parametrize("made, says", [
    (lambda: Effect(None, {}), "key must be a non-empty str"),  # type: ignore[arg-type]
    (lambda: Effect("", {}), "key must be a non-empty str"),
    (lambda: Effect("k", "send it"), "payload must be a dict"),  # type: ignore[arg-type]
    (lambda: Effect("k", {}, [("generation", 1)]), "premises must be a list of Premise"),  # type: ignore[list-item]
    (lambda: Effect("k", {}, lease=True), "lease must be a Lease"),  # type: ignore[arg-type]
    (lambda: Premise("generation", 5), "read must be a function"),  # type: ignore[arg-type]
    (lambda: Premise("", lambda: 5), "name must be a non-empty str"),
])
def test_an_effect_or_premise_it_could_not_check_is_an_error_when_made(made, says):
    with pytest.raises(ConfigurationError, match=says):
        made()


def test_a_bundle_of_an_effect_the_journal_does_not_hold_is_an_unknown_effect(tmp_path, service):
    gate = gate_for(tmp_path, service)
    with pytest.raises(UnknownEffect, match="not in") as raised:
        bundle(gate.journal, "no-such-effect")
    assert isinstance(raised.value, KeyError)


def test_a_recovery_lookup_reports_what_it_found_as_the_journal_holds_it(tmp_path):
    landed = {}

    def send(eid, payload):
        landed[eid] = time.gmtime(0)
        raise TimeoutError("the answer was lost")

    target = FunctionTarget("svc", send, tier=2, find=lambda eid, payload: landed.get(eid))
    outcome = gated(tmp_path, target, claim_wait=0.5).submit(effect())
    assert outcome.status == "COMMITTED_ON_QUERY" and len(landed) == 1
    assert outcome.evidence == {"python_repr": repr(time.gmtime(0))}


class _CrashAt:
    """Hooks that stop the gate at one of its points (after_commit: once its send landed, before COMMITTED is
    journaled; before_request: after its last look, right before the request)."""

    class Crash(BaseException):
        """The process stops here."""

    def __init__(self, point):
        self.point = point

    def reach(self, point):
        if point == self.point:
            raise self.Crash(point)


def test_a_lease_that_raises_at_a_resends_last_look_leaves_the_send_open(tmp_path, service):
    lease = {"state": "live"}

    class Hiccup:  # the lease store fails the resend's last look once; after it the lease has ended
        def reach(self, point):
            if point == "recovery_before_resend":
                lease["state"] = "hiccup"

    def live():
        if lease["state"] == "hiccup":
            lease["state"] = "ended"
            raise OSError("lease store hiccup")
        return lease["state"] == "live"

    target = FunctionTarget("svc", service.send, tier=1)  # dedupes on the effect id; no lookup
    leased = Effect("k", {"to": "v41"}, [], CallableLease(live))
    with pytest.raises(_CrashAt.Crash):
        gated(tmp_path, target, hooks=_CrashAt("after_commit")).submit(leased)
    gate = gated(tmp_path, target, claim_wait=0.5, hooks=Hiccup())
    with pytest.raises(OSError, match="lease store hiccup"):
        gate.submit(leased)
    eid = effect_id_for("k")
    assert kinds(gate, eid)[-1] == "REDISPATCHED" and gate.journal.effect(eid).open_dispatch
    later = gate.submit(leased)  # the lease ended: nothing may be sent, and nothing can say whether it landed
    assert later.status == "AMBIGUOUS" and later.landed is None and len(service.landed) == 1


def _failed_response():
    import requests

    response = requests.Response()
    response.status_code = 404
    return response


@pytest.mark.parametrize("answer", [[], (), {}, set(), frozenset(), False, 0, "", {}.keys(), _failed_response()],
                         ids=["list", "tuple", "dict", "set", "frozenset", "False", "0", "str", "keys", "404"])
def test_a_lookup_answering_anything_false_has_not_found_the_effect(tmp_path, answer):
    sends, landed = [], []

    def send(effect_id, payload):  # the first request never arrives; the resend lands
        sends.append(effect_id)
        if len(sends) == 1:
            raise ConnectionResetError("connection reset")
        landed.append(effect_id)
        return {"call": len(landed)}

    target = FunctionTarget("svc", send, tier=2, find=lambda eid, payload: answer, in_flight=0.0)
    outcome = gated(tmp_path, target, claim_wait=0.5).submit(effect())
    assert outcome.status == "REAPPLIED_AFTER_QUERY" and landed == [outcome.effect_id]


def test_a_resend_refused_while_the_first_request_is_in_progress_waits_for_it_and_finds_it_landed(tmp_path):
    landed, pending = [], []

    def send(effect_id, payload):  # a dedupe that answers 409 while a request of the id is still being processed
        if pending:
            raise Rejected("409: a request of this id is in progress")
        pending.append(threading.Timer(0.4, lambda: landed.append(effect_id)))
        pending[0].start()
        raise _CrashAt.Crash("the sender died with its request in progress")

    target = FunctionTarget("svc", send, tier=1, find=lambda eid, payload: {"found": eid} if eid in landed else None,
                            in_flight=1.0)
    with pytest.raises(_CrashAt.Crash):
        gated(tmp_path, target).submit(effect())
    outcome = gated(tmp_path, target, claim_wait=5).submit(effect())
    assert outcome.status == "COMMITTED_ON_QUERY" and outcome.landed is True and len(landed) == 1


def test_a_send_that_hung_then_lost_its_answer_is_waited_out_by_the_next_holder_not_resent(tmp_path):
    landed, sends = [], []

    def send(effect_id, payload):  # the first request hangs, the client gives up; the service applies it later
        sends.append(effect_id)
        if len(sends) == 1:
            time.sleep(0.6)
            threading.Timer(0.3, lambda: landed.append(effect_id)).start()
            raise TimeoutError("the client timed out")
        landed.append(effect_id)
        return {"call": len(landed)}

    target = FunctionTarget("svc", send, tier=2, find=lambda eid, payload: {"found": eid} if eid in landed else None,
                            in_flight=0.8)
    first = gated(tmp_path, target, claim_wait=0.1).submit(effect())
    assert first.status == "IN_FLIGHT" and first.decide_at is not None
    later = gated(tmp_path, target, claim_wait=5).submit(effect())  # another worker, at once
    assert later.status == "COMMITTED_ON_QUERY" and len(sends) == 1 and landed == [later.effect_id]


def test_a_recoverer_whose_clock_runs_ahead_still_waits_out_the_bound_on_the_journals_clock(tmp_path, monkeypatch):
    import interlock.recovery

    landed, sends = [], []

    def send(effect_id, payload):  # the sender dies with its request on its way; the service applies it later
        sends.append(effect_id)
        if len(sends) == 1:
            threading.Timer(0.5, lambda: landed.append(effect_id)).start()
            raise _CrashAt.Crash("the sender died")
        landed.append(effect_id)
        return {"call": len(landed)}

    target = FunctionTarget("svc", send, tier=2, find=lambda eid, payload: {"found": eid} if eid in landed else None,
                            in_flight=1.0)
    with pytest.raises(_CrashAt.Crash):
        gated(tmp_path, target).submit(effect())

    class Ahead:  # this host's clock runs 5 s ahead of the one the journal stamps its entries with
        monotonic, sleep = staticmethod(time.monotonic), staticmethod(time.sleep)

        @staticmethod
        def time():
            return time.time() + 5.0

    monkeypatch.setattr(interlock.recovery, "time", Ahead)
    later = gated(tmp_path, target, claim_wait=5).submit(effect())
    assert later.status == "COMMITTED_ON_QUERY" and len(sends) == 1 and len(landed) == 1


def test_a_lookup_answer_neither_true_nor_false_is_a_configuration_error_and_nothing_is_resent(tmp_path):
    class Several:
        def __bool__(self):
            raise ValueError("the truth value of an array with more than one element is ambiguous")

    sends = []

    def send(effect_id, payload):
        sends.append(effect_id)
        raise ConnectionResetError("connection reset")

    target = FunctionTarget("svc", send, tier=2, find=lambda eid, payload: Several(), in_flight=0.0)
    with pytest.raises(ConfigurationError, match="neither true nor false"):
        gated(tmp_path, target, claim_wait=0.5).submit(effect())
    assert len(sends) == 1


def test_a_tier_3_target_with_a_lookup_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="tier 2"):
        FunctionTarget("svc", lambda eid, payload: None, tier=3, find=lambda eid, payload: None)


def test_a_resend_rejected_by_a_dedupe_fence_without_a_lookup_is_ambiguous_not_refused(tmp_path):
    store = {}

    def create_only(effect_id, payload):  # the dedupe is a create-only precondition: a second apply is a 412
        if effect_id in store:
            raise Rejected("412: the object exists", precondition=True)
        store[effect_id] = payload
        return {"generation": 1}

    target = FunctionTarget("svc", create_only, tier=1)
    with pytest.raises(_CrashAt.Crash):
        gated(tmp_path, target, hooks=_CrashAt("after_commit")).submit(effect())
    gate = gated(tmp_path, target, claim_wait=0.5)
    outcome = gate.submit(effect())
    assert outcome.status == "AMBIGUOUS" and outcome.landed is None and len(store) == 1
    assert kinds(gate, outcome.effect_id)[-1] == "AMBIGUOUS"
    assert gate.submit(effect()).status == "AMBIGUOUS"


def test_the_in_flight_bound_after_a_send_that_hung_counts_from_when_it_raised_not_from_its_dispatch(tmp_path):
    landed, sends = [], []

    def slow(effect_id, payload):  # the service applies the first request 0.2 s after the client gave up at 0.5 s
        sends.append(effect_id)
        if len(sends) == 1:
            threading.Timer(0.7, landed.append, [effect_id]).start()
            time.sleep(0.5)
            raise TimeoutError("no answer within the client's timeout")
        landed.append(effect_id)
        return {"call": len(landed)}

    target = FunctionTarget("svc", slow, tier=2, find=lambda eid, payload: {"call": 1} if eid in landed else None,
                            in_flight=0.6)
    outcome = gated(tmp_path, target, claim_wait=5.0).submit(effect())
    time.sleep(0.3)
    assert outcome.status == "COMMITTED_ON_QUERY" and len(sends) == 1 and len(landed) == 1


class _RejectedAndLost(ConnectionError, Rejected):
    """An error that is both the service's no and a lost answer: a lost answer, since it may have landed."""

    def __init__(self):
        Rejected.__init__(self, "reset, or refused?")


def test_an_error_both_rejected_and_a_lost_answer_on_the_send_is_settled_as_a_lost_answer(tmp_path):
    def send(effect_id, payload):
        raise _RejectedAndLost()

    outcome = gated(tmp_path, FunctionTarget("svc", send, tier=3), claim_wait=0.5).submit(effect())
    assert outcome.status == "AMBIGUOUS" and outcome.landed is None


def test_an_error_both_rejected_and_a_lost_answer_on_a_resend_is_settled_as_a_lost_answer(tmp_path, service):
    sends = []

    def send(effect_id, payload):  # neither request arrives; the resend's error also reads as a refusal
        sends.append(effect_id)
        raise ConnectionResetError("connection reset") if len(sends) == 1 else _RejectedAndLost()

    gate = gated(tmp_path, FunctionTarget("svc", send, tier=2, find=service.find, in_flight=0.0), claim_wait=0.5)
    outcome = gate.submit(effect())
    assert outcome.status == "AMBIGUOUS" and len(sends) == 2
    assert gate.journal.effect(outcome.effect_id).open_dispatch  # a request of the resend may still land


def _premised(names, *, leased, expect=NOT_SET):
    premises = [Premise(name, lambda: "17", decided="17", expect=expect) for name in names]
    return Effect("k", {"to": "v41"}, premises, CallableLease(lambda: True) if leased else None)


@pytest.mark.parametrize("first, again, says", [
    (_premised(["generation", "owner"], leased=True), _premised(["generation"], leased=True),
     "journaled with the premises ['generation', 'owner'"),
    (_premised([], leased=True), _premised([], leased=False), "journaled with a lease and this effect has none"),
    (_premised([], leased=False), _premised([], leased=True), "journaled without a lease and this effect has one"),
    (_premised(["generation"], leased=True, expect="17"), _premised(["generation"], leased=True, expect="18"),
     "journaled expecting {'generation': '17'} of its premises, not {'generation': '18'}"),
])
@pytest.mark.parametrize("stop", ["a moved premise", "a crash before the request"])
def test_the_same_key_and_payload_with_other_premises_expectations_or_lease_is_a_conflicting_payload(tmp_path, service, first,
                                                                                       again, says, stop):
    target = FunctionTarget("svc", service.send, tier=1)
    if stop == "a moved premise":
        moved = Effect(first.key, first.payload, [*first.premises, Premise("slot", lambda: "busy", decided="free")],
                       first.lease)
        again = Effect(again.key, again.payload, [*again.premises, Premise("slot", lambda: "free", decided="free")],
                       again.lease)
        assert gated(tmp_path, target).submit(moved).status == "REFUSED:stale_premise"
    else:
        with pytest.raises(_CrashAt.Crash):
            gated(tmp_path, target, hooks=_CrashAt("before_request")).submit(first)
    gate = gated(tmp_path, target, claim_wait=0.5)
    for outcome in (gate.submit(again), gate.recover(again)):
        assert outcome.status == "REFUSED:conflicting_payload" and says in outcome.reason
    assert service.landed == []

