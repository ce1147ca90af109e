"""The verdict block and the verdict sentences: derived from the cells, any set of systems, plain words."""

from __future__ import annotations

from pipeline.render import headline
from pipeline.render.headline import Outcome, Side
from pipeline.scenarios import GCP
from pipeline.verdict import _pair_sentence


def _o(fault: str, system: str, held: bool = True, answer: bool | None = True, proved: bool = True,
       seconds: float | None = 0.2, double: bool = False) -> Outcome:
    return Outcome(fault, system, held, answer, proved, seconds, double)


def test_a_system_sentence_counts_breaks_wrong_answers_proof_and_time():
    mine = [_o("a", "no_check", held=False, double=True), _o("b", "no_check", answer=False, proved=False),
            _o("c", "no_check", answer=None, seconds=None)]
    text = headline.sentence(mine)
    assert text == "Broke in 1 of 3 (1 double booked), wrong answer in 1, could not say in 1; proves 2; 0.2\u00a0s."
    assert headline.sentence([_o("a", "interlock", seconds=30.9)]) == "Held in 1 of 1; proves all; 31\u00a0s."


def test_the_block_has_a_row_for_every_system_of_either_side_and_says_not_run_where_one_lacks_it():
    published = Side("published run", "real Google services and a model", True,
                     (_o("a", "no_check"), _o("a", "interlock", seconds=31.0)))
    ours = Side("this run", "local stand-ins and the scripted decider", False,
                (_o("a", "no_check"), _o("a", "interlock"), _o("b", "dbos_step", held=False)))
    block = headline.build([published, ours], [None, "a qualification"])
    assert [system for system, _ in block.rows] == ["no_check", "interlock", "dbos_step"]
    assert dict(block.rows)["dbos_step"] == ("Not run.", "Broke in 1 of 1; proves all; 0.2\u00a0s.")
    assert block.qualifications == ("a qualification",)


def test_the_settle_note_names_the_claim_ttl_only_where_the_gate_was_slower():
    slow = Side("published run", "real", True, (_o("a", "hand_check", seconds=2.0), _o("a", "interlock", seconds=31)))
    fast = Side("this run", "stand-ins", False, (_o("a", "hand_check"), _o("a", "interlock")))
    note = headline.settle_note([(slow, 30.0, None), (fast, None, {"interlock": {"kind": "flock per effect, x"}})])
    assert "published run, interlock about 31\u00a0s against about 2\u00a0s for hand_check" in note
    assert "30 s claim TTL" in note
    assert "this run, interlock about 0.2\u00a0s, as fast as hand_check, the fastest other system (a dead " \
           "sender's claim is freed at once: flock per effect)" in note
    assert headline.settle_note([(Side("this run", "x", False, (_o("a", "interlock"),)), None, None)]) is None


class _Cell:
    """The four attributes the pair sentence reads."""

    def __init__(self, fault: str, held: bool, seconds: float = 0.2):
        self.fault, self.invariant_held, self.answer_matches, self.can_prove = fault, held, True, True
        self.seconds_to_settle = seconds


def test_a_gate_no_better_in_total_is_said_to_trade_faults_not_to_beat_the_baseline():
    pairs = [(_Cell("a", True), _Cell("a", False)), (_Cell("b", False), _Cell("b", True)),
             (_Cell("c", True), _Cell("c", True))]
    text = _pair_sentence(GCP, "interlock", "hand_check", pairs)
    assert "beats" not in text and "worse than" not in text
    assert "interlock and hand_check trade faults on what the object store holds (2/3 each; interlock better on a, " \
           "worse on b)" in text


def test_the_settle_note_names_the_ttl_control_beside_a_gate_that_frees_claims_at_once():
    side = Side("this run", "stand-ins", False, (_o("a", "hand_check"), _o("a", "interlock"),
                                                 _o("a", "interlock_ttl", seconds=10.4)))
    note = headline.settle_note([(side, None, {"kind": "flock per effect"})])
    assert note == ("Settling after a crash: this run, interlock about 0.2\u00a0s, as fast as hand_check, the "
                    "fastest other system (a dead sender's claim is freed at once: flock per effect), interlock_ttl about 10\u00a0s.")


def test_a_slower_gate_whose_claims_free_at_once_is_not_said_to_have_waited_for_a_claim():
    side = Side("this run", "stand-ins", False, (_o("a", "hand_check", seconds=0.3), _o("a", "interlock", seconds=0.5),
                                                 _o("a", "interlock_ttl", seconds=30.1)))
    note = headline.settle_note([(side, None, {"interlock": {"kind": "flock per effect (released by the kernel)"}})])
    assert "waited for a dead sender's claim" not in note
    assert note == ("Settling after a crash: this run, interlock about 0.5\u00a0s against about 0.3\u00a0s for "
                    "hand_check (a dead sender's claim is freed at once: flock per effect), "
                    "interlock_ttl about 30\u00a0s.")
    unknown = headline.settle_note([(side, None, None)])  # no claim kind stated: the wait stays the likely reason
    assert "it waited for a dead sender's claim" in unknown


def test_the_raced_note_gives_each_share_to_one_decimal_as_the_table_does():
    from types import SimpleNamespace

    from pipeline.model import Tally

    variants = (SimpleNamespace(name="no_check", slipped=Tally(109, 200)),
                SimpleNamespace(name="interlock", slipped=Tally(13, 200)))
    note = headline.raced_slips(SimpleNamespace(raced=SimpleNamespace(variants=variants)))
    assert "109 of 200 (54.5%) for no_check, 13 of 200 (6.5%) for interlock" in note
    assert "a system's last slot read" in note


def test_a_tie_on_time_says_which_figure_is_the_gates_and_which_the_baselines():
    pairs = [(_Cell("a", True, seconds=0.4), _Cell("a", True, seconds=0.6))]
    text = _pair_sentence(GCP, "interlock", "hand_check", pairs)
    assert text.startswith("On the one fault both ran (a), hand_check ties interlock")
    assert "they tie on time: interlock about 0.4s from crash to settled against about 0.6s for hand_check." in text


def _gcp_run() -> tuple[object, list]:
    from pathlib import Path

    from pipeline.derive import judged
    from pipeline.load import read

    path = Path(__file__).resolve().parents[1] / "results" / "scenarios" / "gcp_resource.json"
    return judged(read(str(path)), str(path)), read(str(path)).value["cells"]


def test_versioning_off_is_blamed_only_for_answers_right_with_versioning_on():
    scenario, raw = _gcp_run()
    note = headline.versioning_off(scenario, raw)
    wrong = {(c.fault, c.system) for c in scenario.cells if c.answer_matches is False}
    blamed = sorted({s for f, s in wrong if f.endswith("_versioning_off")
                     and (f.removesuffix("_versioning_off"), s) not in wrong})
    anyway = sorted({s for f, s in wrong if f.endswith("_versioning_off")
                     and (f.removesuffix("_versioning_off"), s) in wrong})
    assert blamed and anyway  # the committed run has both: lookups blind to a replaced write, and no lookup at all
    said, _, apart = note.partition(" Wrong in the same faults with versioning on as well")
    assert all(f"{s} in " in said for s in blamed) and not any(f"{s} in " in said for s in anyway)
    assert all(f"{s} in " in apart for s in anyway)
