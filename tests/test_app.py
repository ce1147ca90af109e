"""`interlock.Interlock`: both published scenarios in a few lines, decision-time premises, calls like the wrapped
function, async effects, outcomes and errors, and recovery after a real SIGKILL."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from interlock import (DEDUPE, EPOCH, CallableLease, ConfigurationError, DuplicateAction, EffectRefused,
                       EffectUnsettled, FileClaims, Interlock, Journal, JournalError, Status, UnjournalableArgument,
                       current_effect, current_epoch, effect_id_for, verify)
from interlock.hooks import NO_HOOKS
from tests.app_worker import SLOT, World, app_for, async_app_for, load, save

ROOT = Path(__file__).resolve().parents[1]
FREE = {"other_events_in_slot": []}


@pytest.fixture
def world(tmp_path):
    save(tmp_path / "requests.json", {"r1": "live"})
    save(tmp_path / "incident.json", {"INC-1": "open"})
    save(tmp_path / "objects.json", [{"object": "config/app.json", "version": "v42", "writer": "human-deploy"}])
    return tmp_path


def run(directory: Path, *args: str, kill: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_")}
    if kill:
        env["INTERLOCK_KILL_AT"] = kill
    return subprocess.run([sys.executable, "-m", "tests.app_worker", str(directory), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


class Crash(Exception):
    """What a `CrashAt` hook raises: the process stops there, its journal as a crash leaves it."""


class CrashAt:
    """Hooks that stop the gate at one of its points."""

    def __init__(self, point: str):
        self.point = point

    def reach(self, point: str) -> None:
        if point == self.point:
            raise Crash(point)


def counter_app(tmp_path, **effect):
    """An app with one action over an in-process counter; returns (app, action, calls)."""
    app = Interlock(tmp_path / "journal.jsonl", claim_wait=1.0)
    calls: list[tuple] = []
    options = {"key": lambda name, n=1: f"count:{name}", "in_flight": 0.0, **effect}

    @app.effect(name="count", **options)
    def count(name: str, n: int = 1) -> dict:
        """Count something."""
        calls.append((name, n, current_effect()))
        return {"n": n}

    return app, count, calls


def test_a_free_slot_is_booked_once(world):
    app, book, _ = app_for(world)
    first = book("r1", *SLOT, observed=FREE)
    assert first.status == "COMMITTED" and first.evidence == {"event": effect_id_for("booking:r1")}
    assert book("r1", *SLOT, observed=FREE).status == "DUPLICATE_IGNORED"
    assert len(load(world / "calendar.json", [])) == 1


def test_a_slot_busy_when_decided_is_refused_not_double_booked(world):
    save(world / "calendar.json", [{"id": "dana", "start": SLOT[0], "end": SLOT[1]}])
    _, book, _ = app_for(world)
    outcome = book("r1", *SLOT, observed={"other_events_in_slot": ["dana"]})
    assert outcome.status == "REFUSED:stale_premise" and outcome.code == "stale_premise"
    assert outcome.rechecked.violations == ("other_events_in_slot: must be [], was ['dana'] when decided",)
    assert [e["id"] for e in load(world / "calendar.json", [])] == ["dana"]


def test_the_premise_is_the_value_the_agent_saw_not_the_value_at_call_time(tmp_path):
    app = Interlock(tmp_path / "journal.jsonl")
    store = {"version": 0}
    sent = []

    @app.effect(name="deploy", key=lambda: "deploy:1", facts={"version": lambda: store["version"]}, in_flight=0.0)
    def deploy() -> None:
        sent.append(current_effect())

    seen = store["version"]  # the agent decides on version 0
    store["version"] = 100  # a human moves it before the call runs
    outcome = deploy(observed={"version": seen})
    assert outcome.status == Status.REFUSED_STALE_PREMISE and sent == []
    assert app.journal.entries(outcome.effect_id)[0]["premises"] == {"version": 0}


def test_a_fact_with_no_observed_value_is_an_error_unless_read_at_call(tmp_path):
    app, count, calls = counter_app(tmp_path, facts={"level": lambda name, n=1: 7})
    with pytest.raises(ConfigurationError, match="no observed value"):
        count("a")
    with pytest.raises(ConfigurationError, match="not declared"):
        count("a", observed={"level": 7, "other": 1})
    assert app.journal.entries() == [] and calls == []
    (tmp_path / "b").mkdir()
    other, reading, _ = counter_app(tmp_path / "b", facts={"level": lambda name, n=1: 7}, read_at_call=True)
    assert reading("a").status == "COMMITTED"
    assert other.journal.entries()[0]["premises"] == {"level": 7}


def test_expect_takes_a_callable_evaluated_at_decision_time(tmp_path):
    wanted = {"level": 1}
    app, count, calls = counter_app(tmp_path, facts={"level": lambda name, n=1: 1},
                                    expect={"level": lambda name, n=1: wanted["level"]})
    assert count("a", observed={"level": 1}).status == "COMMITTED"
    wanted["level"] = 2
    assert count("b", observed={"level": 1}).status == "REFUSED:stale_premise"
    assert app.journal.entries(effect_id_for("count:b"))[0]["expect"] == {"level": 2}


def test_two_actions_with_one_name_are_rejected(tmp_path):
    app = Interlock(tmp_path / "journal.jsonl")
    app.effect(name="send", key=lambda: "k")(lambda: None)
    with pytest.raises(DuplicateAction):
        app.effect(name="send", key=lambda: "k2")(lambda: None)


def test_expect_must_name_a_declared_fact(tmp_path):
    app = Interlock(tmp_path / "journal.jsonl")
    with pytest.raises(ConfigurationError, match="not declared"):
        app.effect(key=lambda: "k", expect={"slot": []})


def test_a_gated_function_is_called_like_the_function_it_wraps(tmp_path):
    _, count, calls = counter_app(tmp_path)
    outcome = count("a", n=3)
    assert outcome.status == "COMMITTED" and outcome.evidence == {"n": 3}
    assert calls == [("a", 3, effect_id_for("count:a"))]
    assert count.__name__ == "count" and count.__doc__ == "Count something." and count.name == "count"
    assert count.__wrapped__.__name__ == "count"  # the plain function stays reachable
    with pytest.raises(TypeError):
        count("a", 1, 2)


def test_the_effect_id_is_only_available_inside_a_send(tmp_path):
    with pytest.raises(ConfigurationError, match="only inside"):
        current_effect()


def test_an_argument_that_would_not_survive_the_journal_is_refused_before_anything_is_journaled(tmp_path):
    app, count, calls = counter_app(tmp_path, key=lambda name, n=1: f"count:{name}")
    with pytest.raises(UnjournalableArgument, match="tuple"):
        count(("a", "b"))
    with pytest.raises(UnjournalableArgument):
        count("a", n={1: "int key"})
    assert app.journal.entries() == [] and calls == []


def test_raise_for_status_returns_a_landed_outcome_and_raises_otherwise(tmp_path):
    live = {"on": False}
    _, count, _ = counter_app(tmp_path, lease=lambda name, n=1: live["on"])
    with pytest.raises(EffectRefused) as refused:
        count("a").raise_for_status()
    assert refused.value.outcome.code == "lease"
    live["on"] = True
    assert count("a").raise_for_status().evidence == {"n": 1}


def test_a_refusal_before_the_send_lets_a_later_submit_try_again(tmp_path):
    live = {"on": False}
    app, count, calls = counter_app(tmp_path, lease=lambda name, n=1: live["on"])
    assert count("a").status == "REFUSED:lease"
    live["on"] = True
    assert count("a").status == "COMMITTED" and len(calls) == 1
    assert count("a").status == "DUPLICATE_IGNORED"
    assert verify(app.journal.entries(effect_id_for("count:a")))["valid"]


def test_a_busy_effect_fails_fast_with_claim_wait_zero(tmp_path):
    app = Interlock(tmp_path / "journal.jsonl", claim_wait=0)
    action = app.effect(name="x", key=lambda: "k", in_flight=0.0)(lambda: None)
    held = FileClaims(tmp_path / "journal.jsonl.claims").acquire(effect_id_for("k"), 0)
    started = time.monotonic()
    outcome = action()
    assert outcome.status == "IN_FLIGHT" and time.monotonic() - started < 0.5
    with pytest.raises(EffectUnsettled):
        outcome.raise_for_status()
    held.release()


def test_the_app_is_a_context_manager_that_closes_its_journal(tmp_path):
    with Interlock(tmp_path / "journal.jsonl") as app:
        app.effect(name="x", key=lambda: "k")(lambda: None)()
    with pytest.raises(JournalError, match="closed"):
        app.journal.refresh()
    with pytest.raises(JournalError, match="closed"):
        app.effect(name="y", key=lambda: "k2")(lambda: None)()


def test_recover_settles_a_booking_killed_after_the_calendar_committed(world):
    assert run(world, "book", "r1", kill="after_commit").returncode == -signal.SIGKILL
    recovered = run(world, "recover")
    assert recovered.returncode == 0, recovered.stderr
    assert json.loads(recovered.stdout) == ["COMMITTED_BY_RETRY"]
    assert len(load(world / "calendar.json", [])) == 1
    assert json.loads(run(world, "recover").stdout) == []


def test_recover_settles_an_async_booking_killed_after_the_calendar_committed(world):
    assert run(world, "book", "r1", "--async", kill="after_commit").returncode == -signal.SIGKILL
    recovered = run(world, "recover", "--async")
    assert recovered.returncode == 0, recovered.stderr
    assert json.loads(recovered.stdout) == ["COMMITTED_BY_RETRY"]
    assert len(load(world / "calendar.json", [])) == 1


def test_recover_refuses_a_rollback_whose_generation_moved_during_the_outage(world):
    assert run(world, "rollback", kill="before_send").returncode == -signal.SIGKILL
    versions = load(world / "objects.json", [])
    save(world / "objects.json", versions + [{"object": "config/app.json", "version": "v43",
                                              "writer": "human-redeploy"}])
    recovered = run(world, "recover")
    assert json.loads(recovered.stdout) == ["REFUSED:stale_premise_at_recovery"], recovered.stderr
    assert [v["writer"] for v in load(world / "objects.json", [])] == ["human-deploy", "human-redeploy"]
    app, _, _ = app_for(world)
    entries = app.journal.entries(effect_id_for("rollback:config/app.json:INC-1"))
    assert entries[-1]["rechecked"]["violations"] == ["generation: was 1, now 2"]
    again = run(world, "rollback")  # a refusal at recovery is final: the same call stays refused
    assert json.loads(again.stdout) == ["REFUSED:stale_premise_at_recovery"], again.stderr


def test_recover_finds_an_async_rollback_that_landed_before_the_kill(world):
    assert run(world, "rollback", "--async", kill="after_commit").returncode == -signal.SIGKILL
    save(world / "incident.json", {"INC-1": "resolved"})
    assert json.loads(run(world, "recover", "--async").stdout) == ["COMMITTED_ON_QUERY"]
    assert [v["writer"] for v in load(world / "objects.json", [])] == ["human-deploy", "agent"]


def test_recover_reports_open_effects_of_unregistered_actions_and_settles_the_rest(world):
    assert run(world, "book", "r1", kill="after_commit").returncode == -signal.SIGKILL
    assert run(world, "rollback", kill="after_commit").returncode == -signal.SIGKILL
    app = Interlock(world / "journal.jsonl")
    app.effect(name="rollback", key=lambda obj, to_version: f"rollback:{obj}:INC-1",
               lease=lambda obj, to_version: True, facts={"generation": lambda obj, to_version: "1"}, in_flight=0.0,
               lookup=lambda obj, to_version: "2")(lambda obj, to_version: "never")
    recovered = app.recover()
    assert [o.status for o in recovered.settled] == ["COMMITTED_ON_QUERY"]
    assert [(u.action, u.effect_id) for u in recovered.unsettled] == [("book", effect_id_for("booking:r1"))]
    assert "no action named 'book'" in recovered.unsettled[0].reason and not recovered.complete


def test_one_effect_that_cannot_be_rebuilt_does_not_stop_recovery_of_the_others(world):
    assert run(world, "book", "r1", kill="after_commit").returncode == -signal.SIGKILL
    assert run(world, "rollback", kill="after_commit").returncode == -signal.SIGKILL
    app = Interlock(world / "journal.jsonl")
    places = World(world)
    app.effect(name="book", key=lambda rid, start, end: f"renamed:{rid}", tier=1, lookup=places.find_event,
               facts={"other_events_in_slot": places.others_in_slot})(places.insert)
    app.effect(name="rollback", key=lambda obj, to_version: f"rollback:{obj}:INC-1", lease=places.incident_open,
               facts={"generation": places.generation}, lookup=places.find_write, in_flight=0.0)(places.write)
    recovered = app.recover()
    assert [o.status for o in recovered.settled] == ["COMMITTED_ON_QUERY"]
    assert "key of 'book' gives effect" in recovered.unsettled[0].reason


def test_an_async_effect_refuses_a_moved_premise_like_a_sync_one(world):
    app, book, _ = async_app_for(world)
    save(world / "calendar.json", [{"id": "dana", "start": SLOT[0], "end": SLOT[1]}])
    outcome = asyncio.run(book("r1", *SLOT, observed=FREE))
    assert outcome.status == "REFUSED:stale_premise"
    assert [e["id"] for e in load(world / "calendar.json", [])] == ["dana"]


def test_a_typed_call_passes_the_observed_values_through_decided_on(world):
    _, book, _ = app_for(world)
    assert book.decided_on(FREE)("r1", *SLOT).status == "COMMITTED"


def test_recover_without_an_event_loop_runs_async_actions_in_one_of_its_own(world):
    _, book, _ = async_app_for(world, hooks=CrashAt("after_commit"))
    with pytest.raises(Crash):
        asyncio.run(book("r1", *SLOT, observed=FREE))
    app, _, _ = async_app_for(world)
    recovered = app.recover()
    assert [o.status for o in recovered.settled] == ["COMMITTED_BY_RETRY"] and recovered.complete
    assert len(load(world / "calendar.json", [])) == 1


@pytest.mark.parametrize("fences, settles", [(("version",), "REFUSED:stale_premise_at_recovery"), ((), "IN_FLIGHT")])
def test_recovery_refuses_at_once_only_when_the_declared_fence_covers_the_fact_that_moved(tmp_path, fences, settles):
    store = {"version": 0}

    def make(hooks):
        app = Interlock(tmp_path / "journal.jsonl", claim_wait=0.0, hooks=hooks)

        @app.effect(name="deploy", key=lambda: "deploy:1", facts={"version": lambda: store["version"]},
                    lookup=lambda: None, fences=fences, in_flight=60.0)
        def deploy() -> None:
            raise AssertionError("nothing may be sent")

        return app, deploy

    crashing, deploy = make(CrashAt("before_request"))
    with pytest.raises(Crash):
        deploy(observed={"version": 0})
    crashing.close()
    store["version"] = 1  # the fact moved while the request might still be on its way
    app, _ = make(NO_HOOKS)
    recovered = app.recover()
    outcome = (recovered.settled + [u.outcome for u in recovered.unsettled])[0]
    assert outcome.status == settles


def test_recover_reports_an_effect_it_closed_as_ambiguous_apart_from_the_settled_ones(tmp_path):
    sent = []

    def make(hooks):
        app = Interlock(tmp_path / "journal.jsonl", claim_wait=0.0, hooks=hooks)
        return app, app.effect(name="notify", key=lambda: "notify:1", in_flight=0.0)(lambda: sent.append(1))

    crashing, notify = make(CrashAt("after_commit"))
    with pytest.raises(Crash):
        notify()
    crashing.close()
    recovered = make(NO_HOOKS)[0].recover()
    assert [o.status for o in recovered.ambiguous] == ["AMBIGUOUS"]
    assert recovered.settled == [] and recovered.unsettled == [] and not recovered.complete


def test_an_app_takes_a_journal_opened_with_options_of_its_own(tmp_path):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from interlock import Journal

    key = Ed25519PrivateKey.generate()
    app = Interlock(Journal(tmp_path / "journal.jsonl", key=key, checkpoint_every=2), claim_wait=1.0)
    sent = []

    @app.effect(name="count", key=lambda n: f"count:{n}", tier=1)
    def count(n: int) -> dict:
        sent.append(n)
        return {"n": n}

    assert [count(n).status for n in (1, 2, 1)] == ["COMMITTED", "COMMITTED", "DUPLICATE_IGNORED"]
    assert sent == [1, 2] and isinstance(app.claims, FileClaims)
    assert (tmp_path / "journal.jsonl.checkpoints").read_text().count('"signature"') >= 1
    app.close()


def test_an_app_refuses_a_journal_it_cannot_pair_with_claims_without_the_postgresql_driver():
    script = ("import sys; sys.modules['psycopg'] = None\n"
              "from interlock import ConfigurationError, Interlock\n"
              "for given in (object(), b'journal.jsonl', None):\n"
              "    try:\n"
              "        Interlock(given)\n"
              "    except ConfigurationError as exc:\n"
              "        print('refused:', 'a Journal or a PgJournal' in str(exc))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == ["refused: True"] * 3, done.stderr


def test_a_journal_given_to_an_app_may_be_closed_again_by_its_owner_without_touching_other_files(tmp_path):
    from interlock import Journal

    with Journal(tmp_path / "journal.jsonl") as journal:
        with Interlock(journal) as app:
            app.effect(name="count", key=lambda n: f"count:{n}", tier=1)(lambda n: {"n": n})(1)
        with open(tmp_path / "other.txt", "w") as other:  # may take a descriptor number the app's close freed
            journal.close()
            other.write("still open")
    assert (tmp_path / "other.txt").read_text() == "still open"


def test_a_call_spelled_with_keywords_is_the_same_effect(tmp_path):
    app, count, calls = counter_app(tmp_path)
    assert count("pages").status == "COMMITTED"
    assert count(name="pages").status == "DUPLICATE_IGNORED"
    assert count("pages", n=1).status == "DUPLICATE_IGNORED"  # passed by name where it could go by position
    assert len(calls) == 1
    app.close()


def test_the_lease_function_is_asked_once_per_check(tmp_path):
    asked = []

    def lease(name, n=1):
        asked.append(name)
        return True

    app, count, _ = counter_app(tmp_path, lease=lease)
    assert count("pages").status == "COMMITTED"
    assert len(asked) == 3  # the decision's record, the check before the dispatch, the last look
    app.close()


@pytest.mark.parametrize("address, says", [("", "expected a postgresql:// URL or a file path"),
                                           ("sqlite:///x.db", "only postgresql:// URLs name a database"),
                                           ("{tmp}", "is a folder"), ("{tmp}/no/such/j.jsonl", "does not exist")])
def test_an_address_that_cannot_be_a_journal_is_a_configuration_error(tmp_path, address, says):
    with pytest.raises(ConfigurationError, match=says):
        Interlock(address.format(tmp=tmp_path))


@pytest.mark.parametrize("option, says", [({"in_flight": float("nan")}, "in_flight"),
                                          ({"in_flight": float("inf")}, "in_flight"),
                                          ({"fences": None}, "fences"), ({"fences": 3}, "fences")])
def test_an_in_flight_bound_that_is_not_finite_or_fences_that_are_no_collection_are_refused_at_declaration(
        tmp_path, option, says):
    app = Interlock(tmp_path / "journal.jsonl")
    with pytest.raises(ConfigurationError, match=says):
        app.effect(key=lambda n: f"n:{n}", lookup=lambda n: None, **option)(lambda n: n)
    app.close()


@pytest.mark.parametrize("option", [{"checkpoint_every": 0}, {"checkpoint_every": -1}, {"segment_bytes": 0},
                                    {"checkpoint_every": 1.5}])
def test_a_journal_checkpointing_or_rolling_at_no_whole_positive_count_is_refused_before_it_opens(tmp_path, option):
    with pytest.raises(ConfigurationError, match=next(iter(option))):
        Journal(tmp_path / "journal.jsonl", **option)
    assert not (tmp_path / "journal.jsonl.lock").exists()


@pytest.mark.parametrize("option", [{"claim_wait": "5"}, {"claim_wait": -1}, {"claim_ttl": 0}, {"claim_ttl": None}])
def test_a_wait_or_lifetime_that_is_not_a_number_of_seconds_is_a_configuration_error(tmp_path, option):
    with pytest.raises(ConfigurationError, match=next(iter(option))):
        Interlock(tmp_path / "journal.jsonl", **option)


def test_a_sync_action_with_an_async_fact_inside_a_running_loop_says_to_declare_it_async(tmp_path):
    async def slot(name, n=1):
        return []

    app, count, calls = counter_app(tmp_path, facts={"slot": slot}, read_at_call=True)

    async def agent():
        return count("pages")

    with pytest.raises(ConfigurationError, match="declare the action `async def`"):
        asyncio.run(agent())
    assert calls == []
    app.close()


def test_a_lease_answer_that_is_not_a_bool_is_an_error_not_a_live_lease(tmp_path):
    app, cancel, calls = counter_app(tmp_path, lease=lambda name, n=1: "cancelled")
    with pytest.raises(ConfigurationError, match="count: lease= returned 'cancelled'"):
        cancel("a")
    assert calls == []
    with pytest.raises(ConfigurationError, match="must return True or False"):
        CallableLease(lambda: "open").is_live()


@pytest.mark.parametrize("answer", ["yes", None, 1])
def test_a_lease_that_answers_a_non_bool_is_refused_before_anything_is_journaled(tmp_path, answer):
    app, count, calls = counter_app(tmp_path, lease=lambda name, n=1: answer)
    with pytest.raises(ConfigurationError, match=f"count: lease= returned {answer!r}"):
        count("a")
    assert calls == [] and app.journal.entries() == []
    app.close()


@pytest.mark.parametrize("key", [lambda name, n=1: None, lambda name, n=1: 7, lambda name, n=1: ""])
def test_a_key_that_does_not_name_the_request_in_a_string_is_an_error_before_anything_is_journaled(tmp_path, key):
    app, count, calls = counter_app(tmp_path, key=key)
    with pytest.raises(ConfigurationError, match="count: key= returned"):
        count("a")
    assert calls == [] and app.journal.entries() == []


@pytest.mark.parametrize("options, says", [
    ({"key": "booking"}, "key must be a function"),
    ({"key": None}, "key must be a function"),
    ({"key": lambda: "k", "facts": {"slot": 5}}, "fact 'slot' must be a function"),
    ({"key": lambda: "k", "facts": ["slot"]}, "facts must be a mapping"),
    ({"key": lambda: "k", "lease": True}, "lease must be a function"),
    ({"key": lambda: "k", "lookup": "find"}, "lookup must be a function"),
    ({"key": lambda: "k", "fences": ["DEDUP"]}, "fences names \\['DEDUP'\\]"),
])
def test_declaring_an_action_with_arguments_it_cannot_use_is_an_error_at_once(tmp_path, options, says):
    with Interlock(tmp_path / "journal.jsonl") as app:
        with pytest.raises(ConfigurationError, match=says):
            app.effect(**options)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_an_action_fenced_on_the_epoch_sends_the_claim_epoch_of_each_send(tmp_path, asynchronous):
    seen: list[int] = []

    def make(hooks):
        app = Interlock(tmp_path / "journal.jsonl", claim_wait=0.0, hooks=hooks)

        def sync_send(order: str) -> dict:
            seen.append(current_epoch())
            return {"order": order}

        async def async_send(order: str) -> dict:
            seen.append(current_epoch())
            return {"order": order}

        send = app.effect(name="send", key=lambda order: f"send:{order}", tier=1, fences=[EPOCH, DEDUPE])(
            async_send if asynchronous else sync_send)
        return app, send

    crashing, send = make(CrashAt("after_commit"))
    with pytest.raises(Crash):
        asyncio.run(send("o1")) if asynchronous else send("o1")
    crashing.close()
    app, send = make(NO_HOOKS)
    outcome = asyncio.run(send("o1")) if asynchronous else send("o1")
    assert outcome.status == "COMMITTED_BY_RETRY" and seen == [1, 2]  # the successor's resend carries its own


def test_current_epoch_is_set_only_inside_a_send_fenced_on_the_epoch(tmp_path):
    app, count, _ = counter_app(tmp_path)
    with pytest.raises(ConfigurationError, match="current_epoch\\(\\) is set only inside a gated send whose action "
                                                 "fences on EPOCH"):
        current_epoch()

    @app.effect(name="unfenced", key=lambda: "unfenced")
    def unfenced() -> int:
        return current_epoch()

    outcome = unfenced()  # the function's own error: never sent again
    assert outcome.status == "AMBIGUOUS" and "fences on EPOCH" in outcome.error["message"]


def test_a_fence_may_name_a_declared_fact(tmp_path):
    with Interlock(tmp_path / "journal.jsonl") as app:
        app.effect(key=lambda: "k", facts={"generation": lambda: 1}, fences=["generation", "effect_id"])


@pytest.mark.parametrize("observed", [["busy"], 3, "slot"])
def test_observed_values_that_are_not_a_mapping_are_an_error(tmp_path, observed):
    app, count, calls = counter_app(tmp_path, facts={"slot": lambda name, n=1: []})
    with pytest.raises(ConfigurationError, match="observed must be a mapping"):
        count("a", observed=observed)
    assert calls == []


def test_a_lease_that_raises_at_a_recoverys_resend_leaves_the_effect_to_the_next_recover(tmp_path):
    lease, held = {"live": True}, {}

    class Faults:
        """A crash once the booking landed, then one failed lease read at the last look before the resend."""

        def __init__(self):
            self.points: set[str] = set()

        def reach(self, point):
            if point in self.points:
                return
            self.points.add(point)
            if point == "after_commit":
                raise Crash(point)
            if point == "recovery_before_resend":
                lease["hiccup"] = True

    def request_is_live(rid):
        if lease.pop("hiccup", False):
            raise ConnectionError("lease db timeout")
        return lease["live"]

    app = Interlock(tmp_path / "journal.jsonl", claim_wait=1.0, hooks=Faults())

    @app.effect(name="book", key=lambda rid: f"book:{rid}", lease=request_is_live, tier=1)
    def book(rid):
        held.setdefault(current_effect(), rid)  # the calendar dedupes on the event id
        return {"event": rid}

    with pytest.raises(Crash):
        book("r1")
    assert [u.reason for u in app.recover().unsettled] == ["ConnectionError: lease db timeout"]
    again = app.recover()
    assert [o.status for o in again.settled] == [Status.COMMITTED_BY_RETRY] and again.complete
    lease["live"] = False
    assert book("r1").status == Status.DUPLICATE_IGNORED and len(held) == 1


def test_a_lookup_answering_an_empty_list_has_not_found_the_effect(tmp_path):
    sends, held = [], []
    app = Interlock(tmp_path / "journal.jsonl", claim_wait=1.0)

    @app.effect(name="book", key=lambda rid: f"book:{rid}", lookup=lambda rid: [e for e in held if e == rid],
                in_flight=0.0)
    def book(rid):
        sends.append(rid)
        if len(sends) == 1:  # the first request never arrives
            raise TimeoutError("read timed out")
        held.append(rid)
        return {"event": rid}

    outcome = book("r1")
    assert outcome.status == Status.REAPPLIED_AFTER_QUERY and held == ["r1"]
