"""Premises: expected values versus change-only, an effect's own write, and violations a person can read."""

from __future__ import annotations

from interlock import NOT_SET, Premise
from interlock.premises import violations


def value(v):
    return lambda: v


def test_a_change_only_premise_passes_while_unchanged_and_names_both_values_when_moved():
    assert violations([Premise("generation", value("17"))], {"generation": "17"}, "e") == []
    moved = Premise("generation", value("18"), annotate=lambda now: " (deployed by human-redeploy)")
    assert violations([moved], {"generation": "17"}, "e") == [
        "generation: was 17, now 18 (deployed by human-redeploy)"]


def test_an_expected_value_refuses_a_slot_that_was_already_busy_when_decided():
    busy = ["dana-busy"]
    change_only = Premise("other_events_in_slot", value(busy))
    expected = Premise("other_events_in_slot", value(busy), expect=[])
    assert violations([change_only], {"other_events_in_slot": busy}, "e") == []  # the published double booking
    assert violations([expected], {"other_events_in_slot": busy}, "e") == [
        "other_events_in_slot: must be [], was ['dana-busy'] when decided"]


def test_an_expected_value_refuses_when_the_fact_moved_away_from_it():
    expected = Premise("other_events_in_slot", value(["dana-busy"]), expect=[])
    assert violations([expected], {"other_events_in_slot": []}, "e") == [
        "other_events_in_slot: must be [], now ['dana-busy']"]
    assert violations([Premise("other_events_in_slot", value([]), expect=[])], {"other_events_in_slot": []},
                      "e") == []


def test_the_effects_own_write_is_not_a_change():
    def own(now, was, effect_id):
        return [e for e in now if e != effect_id] == was

    after_our_booking = ["e1"]
    for expect in ([], NOT_SET):
        plain = Premise("other_events_in_slot", value(after_our_booking), expect=expect)
        mine = Premise("other_events_in_slot", value(after_our_booking), expect=expect, own_write=own)
        assert violations([mine], {"other_events_in_slot": []}, "e1") == []
        assert violations([plain], {"other_events_in_slot": []}, "e1") != []
        assert violations([mine], {"other_events_in_slot": []}, "e2") != [], "another effect's write is a change"


def test_the_recorded_value_is_the_decided_one_when_given():
    reads = []
    premise = Premise("generation", lambda: reads.append(1) or "18", decided="17")
    assert premise.recorded() == "17" and reads == []
    assert Premise("generation", value("18")).recorded() == "18"


def test_every_violated_premise_is_listed():
    premises = [Premise("a", value(1)), Premise("b", value("x")), Premise("c", value(3))]
    assert violations(premises, {"a": 2, "b": "x", "c": 4}, "e") == ["a: was 2, now 1", "c: was 4, now 3"]


def test_a_flag_that_moved_from_1_to_true_or_from_0_to_false_is_a_change():
    assert violations([Premise("approved", value(True))], {"approved": 1}, "e") == ["approved: was 1, now True"]
    assert violations([Premise("open", value([False]))], {"open": [0]}, "e") == ["open: was [0], now [False]"]
    assert violations([Premise("flags", value({"on": 1}), expect={"on": True})], {"flags": {"on": True}}, "e") == [
        "flags: must be {'on': True}, now {'on': 1}"]


def test_a_tuple_read_now_is_the_list_the_journal_gave_back():
    assert violations([Premise("slot", value(("a", 1)), expect=["a", 1])], {"slot": ["a", 1]}, "e") == []
    assert violations([Premise("slot", value(("a", 1)))], {"slot": ["a", 1]}, "e") == []
