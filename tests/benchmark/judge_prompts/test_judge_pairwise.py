"""The pairwise judge asked in both orders (issue 26): strict parsing, the pair's verdict from
the two orders (a flip is a tie), and the figures (win, tie, loss, flip and longer-answer
rates) hand-computed."""

from __future__ import annotations

import pytest

from benchmark.judge_prompts import JudgeOutputError, Judgment
from benchmark.judge_prompts.pairwise import (
    AB,
    BA,
    PairVerdict,
    Preference,
    pair_calls,
    pair_verdict,
    pairwise_figures,
    parse_preference,
    verdict_of,
)


def p(choice: str) -> Preference:
    return Preference(choice=choice, why="because")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("raw", "choice"),
    [("A\nIt is right.", "A"), ("  b \n\nShorter and correct.", "B"), ("TIE\nBoth fine.", "TIE")],
)
def test_parse(raw: str, choice: str) -> None:
    assert parse_preference(raw).choice == choice


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("", "empty output"),
        ("Answer A\nwhy", "first line must be A, B or TIE"),
        ("A", "got 1 line"),
        ("A\nwhy\nmore", "got 3 line"),
    ],
)
def test_parse_refuses(raw: str, message: str) -> None:
    with pytest.raises(JudgeOutputError, match=message):
        parse_preference(raw)


def test_both_orders_are_asked_with_the_answers_swapped() -> None:
    ab, ba = pair_calls(query="Q?", answer="mine", other="ref", model="judge-m")
    assert (ab.label, ba.label) == (AB, BA)
    ab_text = ab.messages[-1]["content"]
    ba_text = ba.messages[-1]["content"]
    assert ab_text.index("mine") < ab_text.index("ref")
    assert ba_text.index("ref") < ba_text.index("mine")


@pytest.mark.parametrize(
    ("ab", "ba", "outcome", "flipped"),
    [
        ("A", "B", "win", False),  # the answer preferred in both positions
        ("B", "A", "loss", False),
        ("TIE", "TIE", "tie", False),
        ("A", "A", "tie", True),  # position A preferred both times: a flip
        ("B", "B", "tie", True),
        ("A", "TIE", "tie", False),  # undecided in one order: a tie, not a flip
        ("TIE", "A", "tie", False),
    ],
)
def test_pair_verdict(ab: str, ba: str, outcome: str, flipped: bool) -> None:
    verdict = pair_verdict(p(ab), p(ba))
    assert (verdict.outcome, verdict.flipped) == (outcome, flipped)


def test_a_failed_call_leaves_the_pair_out() -> None:
    ok = Judgment(label=AB, value=p("A"), attempts=())
    failed = Judgment(label=BA, value=None, attempts=())
    assert verdict_of({AB: ok, BA: failed}, answer_length=1, other_length=2) is None
    assert verdict_of({AB: ok}, answer_length=1, other_length=2) is None


def test_figures_hand_computed() -> None:
    verdicts: list[PairVerdict | None] = [
        PairVerdict("win", False, answer_length=300, other_length=100),  # longer won
        PairVerdict("win", False, answer_length=50, other_length=100),  # shorter won
        PairVerdict("loss", False, answer_length=40, other_length=100),  # longer (other) won
        PairVerdict("tie", True, answer_length=10, other_length=100),
        PairVerdict("win", False, answer_length=100, other_length=100),  # same length
        None,
    ]
    f = pairwise_figures(verdicts)
    assert (f.n, f.excluded) == (5, 1)
    assert (f.win, f.tie, f.loss, f.flip) == (60.0, 20.0, 20.0, 20.0)
    # Decided pairs with different lengths: 3; the longer won in 2.
    assert f.n_decided_by_length == 3
    assert f.longer_wins == pytest.approx(200 / 3)
    empty = pairwise_figures([None])
    assert (empty.n, empty.win, empty.longer_wins) == (0, None, None)


# --------------------------------------------------------------------------- model vs model


def test_comparison_figures_hand_computed() -> None:
    from benchmark.judge_prompts.pairwise import comparison_figures

    verdicts = [
        PairVerdict("win", False, answer_length=10, other_length=5),  # A, longer won
        PairVerdict("loss", False, answer_length=10, other_length=5),  # B, shorter won
        PairVerdict("loss", False, answer_length=4, other_length=4),  # B, same length
        PairVerdict("tie", True, answer_length=1, other_length=9),  # flipped
        None,  # a failed call
    ]
    f = comparison_figures(verdicts)
    assert (f.n, f.excluded, f.a_wins, f.ties, f.b_wins) == (4, 1, 1, 1, 2)
    assert (f.a_win.value, f.tie.value, f.b_win.value) == (25.0, 25.0, 50.0)
    assert f.win_share.value == pytest.approx(100 * 1.5 / 4)
    assert f.flip.value == 25.0
    assert (f.longer_wins.k, f.longer_wins.n, f.longer_wins.value) == (1, 2, 50.0)
    # Wilson 95 % for 2 of 4: centre (0.5 + z²/8) / (1 + z²/4) = 0.5, half-width 0.3992...
    assert (f.b_win.low, f.b_win.high) == pytest.approx((15.00, 85.00), abs=0.01)
    empty = comparison_figures([None])
    assert empty.n == 0 and empty.a_win.value is None and empty.longer_wins.value is None


def test_self_preference_is_own_share_minus_the_others() -> None:
    from benchmark.judge_prompts.pairwise import self_preference

    s = self_preference(side="B", own=["B", "B", "tie", "A"], others=["A", "A", "B", "tie"])
    # Own: (2 + 1/2) / 4 = 62.5 %; others: (1 + 1/2) / 4 = 37.5 %.
    assert (s.own.value, s.others.value, s.difference) == (62.5, 37.5, 25.0)
    assert self_preference(side="A", own=["A"], others=[]).difference is None


def test_identical_answers_make_no_call_and_are_a_tie_not_a_flip() -> None:
    from benchmark.judge_prompts.pairwise import pair_calls, verdict_of

    # The two orders of identical answers would be one prompt with one cache key.
    assert pair_calls(query="Q", answer="same", other="same", model="m") == []
    assert len(pair_calls(query="Q", answer="same", other="same ", model="m")) == 2
    verdict = verdict_of({}, answer_length=4, other_length=4, same=True)
    assert verdict is not None
    assert (verdict.outcome, verdict.flipped) == ("tie", False)
    assert verdict_of({}, answer_length=4, other_length=4) is None  # not identical: failed
