"""A pairwise judge asked in both orders: which of two answers to one query is better?

Pairwise judges are known to favour a position and the longer answer (lm-sys/FastChat #3911
reports 12.9 % of verdicts flipping when the order is swapped and the longer answer preferred 68 %
of the time). So every pair is asked twice, the answers swapped: a call labelled ``ab`` shows
the answer under judgment as A and the other (the reference) as B, a call labelled ``ba`` the
reverse. The judge answers ``A``, ``B`` or ``TIE`` alone on the first line and one line saying
why (:func:`parse_preference`).

The pair's verdict (:func:`pair_verdict`), from the answer's side: **win** when both orders
prefer it, **loss** when both prefer the other, **tie** when both say TIE, when one says TIE and
the other prefers one of them, or when the verdict **flips** (each order prefers whichever answer
sits in the same position; ``flipped`` then says so). A failed call leaves the pair out.
Two **identical** answers (the same text, character for character: :func:`identical`) are a
tie by definition, and the judge is not asked: both orders would be one and the same prompt,
so the only verdicts the judge could give are a tie or a position preference, never a reason to
prefer one of them.

Figures over a set of pairs (:func:`pairwise_figures`): win, tie and loss rates (percent of the
pairs with both calls answered), the **flip rate** (percent of those pairs whose verdict
flipped), and the **longer-answer rate**: among the pairs decided (win or loss) whose answers
differ in length, the percent in which the longer one won.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .base import Call, JudgeOutputError, Judgment, Template, build_call, output_text

AB, BA = "ab", "ba"
"""The labels of the two calls of one pair: the answer shown first, then second."""

Choice = Literal["A", "B", "TIE"]

PAIRWISE_TEMPLATE = Template(
    id="pairwise.preference",
    description="Which of two answers to one query is better? A, B or TIE (asked in both orders)",
    system=(
        "You compare two answers to the same user request and say which serves the user "
        "better: correct, complete, following every instruction of the request, and no "
        "longer than it needs to be. The order in which the answers are shown means nothing, "
        "and a longer answer is not better for being longer.\n"
        "Answer A, B or TIE alone on the first line, then one line saying why."
    ),
    user="User request:\n{query}\n\n[Answer A]\n{first}\n\n[Answer B]\n{second}",
)


@dataclass(frozen=True)
class Preference:
    choice: Choice
    why: str


def parse_preference(raw: str) -> Preference:
    """``A``, ``B`` or ``TIE`` alone on the first line, one line of reason after it."""
    lines = [line.strip() for line in output_text(raw).splitlines() if line.strip()]
    word = lines[0].upper()
    if word not in ("A", "B", "TIE"):
        raise JudgeOutputError(f"first line must be A, B or TIE, got {lines[0][:40]!r}")
    if len(lines) != 2:
        raise JudgeOutputError(
            f"expected the choice and one line saying why, got {len(lines)} line(s)"
        )
    return Preference(choice=word, why=lines[1])  # type: ignore[arg-type]


def identical(answer: str, other: str) -> bool:
    """The two answers are the same text: the two orders would be the same prompt."""
    return answer == other


def pair_calls(
    *, query: str, answer: str, other: str, model: str, template: Template = PAIRWISE_TEMPLATE
) -> list[Call]:
    """The two calls of one pair: the answer first (``ab``), then the other first (``ba``);
    none for identical answers (a tie without asking, :func:`verdict_of`)."""
    if identical(answer, other):
        return []
    return [
        build_call(template, model, AB, {"query": query, "first": answer, "second": other}),
        build_call(template, model, BA, {"query": query, "first": other, "second": answer}),
    ]


Outcome = Literal["win", "tie", "loss"]


@dataclass(frozen=True)
class PairVerdict:
    """The pair's verdict from the answer's side; ``flipped``: the two orders disagreed
    because each preferred the same position."""

    outcome: Outcome
    flipped: bool
    #: The answer's and the other's length in characters (for the longer-answer rate).
    answer_length: int = 0
    other_length: int = 0


def pair_verdict(
    ab: Preference, ba: Preference, *, answer_length: int = 0, other_length: int = 0
) -> PairVerdict:
    """Combine the two orders (see the module's docstring)."""
    # From the answer's side: in ``ab`` it is A, in ``ba`` it is B.
    first = {"A": "win", "B": "loss", "TIE": "tie"}[ab.choice]
    second = {"B": "win", "A": "loss", "TIE": "tie"}[ba.choice]
    lengths = {"answer_length": answer_length, "other_length": other_length}
    if first == second:
        return PairVerdict(outcome=first, flipped=False, **lengths)  # type: ignore[arg-type]
    flipped = ab.choice == ba.choice  # the same position preferred both times
    return PairVerdict(outcome="tie", flipped=flipped, **lengths)


def verdict_of(
    judgments: dict[str, Judgment[Preference]],
    *,
    answer_length: int,
    other_length: int,
    same: bool = False,
) -> PairVerdict | None:
    """The pair's verdict from its two judgments; None when either failed. ``same``: the two
    answers are identical, a tie by definition (no judgment is read)."""
    if same:
        return PairVerdict(
            outcome="tie", flipped=False, answer_length=answer_length, other_length=other_length
        )
    ab, ba = judgments.get(AB), judgments.get(BA)
    if ab is None or ba is None or ab.value is None or ba.value is None:
        return None
    return pair_verdict(ab.value, ba.value, answer_length=answer_length, other_length=other_length)


@dataclass(frozen=True)
class PairwiseFigures:
    n: int
    excluded: int
    win: float | None
    tie: float | None
    loss: float | None
    flip: float | None
    longer_wins: float | None
    n_decided_by_length: int


def _percent(k: int, n: int) -> float | None:
    return 100 * k / n if n else None


def pairwise_figures(verdicts: Sequence[PairVerdict | None]) -> PairwiseFigures:
    kept = [v for v in verdicts if v is not None]
    n = len(kept)
    decided = [v for v in kept if v.outcome != "tie" and v.answer_length != v.other_length]
    longer = sum(1 for v in decided if (v.outcome == "win") == (v.answer_length > v.other_length))
    return PairwiseFigures(
        n=n,
        excluded=len(verdicts) - n,
        win=_percent(sum(v.outcome == "win" for v in kept), n),
        tie=_percent(sum(v.outcome == "tie" for v in kept), n),
        loss=_percent(sum(v.outcome == "loss" for v in kept), n),
        flip=_percent(sum(v.flipped for v in kept), n),
        longer_wins=_percent(longer, len(decided)),
        n_decided_by_length=len(decided),
    )


# =========================================================================== model vs model
#
# Two models' answers to the same items (model A's and model B's), each pair asked in both
# orders: the ``ab`` call shows A's answer first, the ``ba`` call B's. The pair's verdict is
# :func:`pair_verdict` from A's side, read as a winner: ``A`` (A's answer won both orders),
# ``B``, or ``tie`` (both said TIE, one order said TIE, or the verdict flipped).

Winner = Literal["A", "B", "tie"]
WINNER_OF: dict[str, Winner] = {"win": "A", "loss": "B", "tie": "tie"}


@dataclass(frozen=True)
class Share:
    """A share in percent with its 95 % Wilson score interval (``k`` of ``n``)."""

    value: float | None
    low: float | None
    high: float | None
    k: float
    n: int


def wilson_share(k: float, n: int) -> Share:
    """``k`` of ``n`` in percent with the 95 % Wilson score interval (statsmodels); ``k`` may
    hold halves (a tie counted as half a win)."""
    if n <= 0:
        return Share(value=None, low=None, high=None, k=k, n=0)
    from statsmodels.stats.proportion import proportion_confint  # lazy: ~0.3 s

    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    return Share(value=100 * k / n, low=100 * float(low), high=100 * float(high), k=k, n=n)


@dataclass(frozen=True)
class ComparisonFigures:
    """Model A against model B over the pairs both orders answered (``n``; ``excluded``: the
    pairs a call of failed)."""

    n: int
    excluded: int
    a_wins: int
    ties: int
    b_wins: int
    #: Each outcome's share of the ``n`` pairs.
    a_win: Share
    tie: Share
    b_win: Share
    #: A's win share: (A's wins + half its ties) over ``n`` (50 % means even).
    win_share: Share
    #: The pairs whose verdict flipped with the order, over ``n``.
    flip: Share
    #: Among the decided pairs (A or B won) whose answers differ in length, the longer won.
    longer_wins: Share

    def as_dict(self) -> dict[str, object]:
        import dataclasses

        return dataclasses.asdict(self)


def comparison_figures(verdicts: Sequence[PairVerdict | None]) -> ComparisonFigures:
    """The figures of a comparison from each pair's verdict (from A's side; None: failed)."""
    kept = [v for v in verdicts if v is not None]
    n = len(kept)
    a_wins = sum(v.outcome == "win" for v in kept)
    b_wins = sum(v.outcome == "loss" for v in kept)
    ties = n - a_wins - b_wins
    decided = [v for v in kept if v.outcome != "tie" and v.answer_length != v.other_length]
    longer = sum(1 for v in decided if (v.outcome == "win") == (v.answer_length > v.other_length))
    return ComparisonFigures(
        n=n,
        excluded=len(verdicts) - n,
        a_wins=a_wins,
        ties=ties,
        b_wins=b_wins,
        a_win=wilson_share(a_wins, n),
        tie=wilson_share(ties, n),
        b_win=wilson_share(b_wins, n),
        win_share=wilson_share(a_wins + ties / 2, n),
        flip=wilson_share(sum(v.flipped for v in kept), n),
        longer_wins=wilson_share(longer, len(decided)),
    )


def side_share(winners: Sequence[str], side: str) -> Share:
    """How often ``side`` ("A" or "B") is preferred among ``winners`` ("A", "B" or "tie"
    per pair): (its wins + half the ties) over the pairs, in percent, with a Wilson interval."""
    wins = sum(w == side for w in winners)
    ties = sum(w == "tie" for w in winners)
    return wilson_share(wins + ties / 2, len(winners))


@dataclass(frozen=True)
class SelfPreference:
    """The judge model is also model ``side`` ("A" or "B") of the comparison: how often it
    prefers its own answers (``own``) against how often the other raters of the same pairs
    prefer them (``others``: people's majority and other judge models), and the difference in
    percentage points (positive: the judge favours itself)."""

    side: str
    own: Share
    others: Share
    difference: float | None


def self_preference(*, side: str, own: Sequence[str], others: Sequence[str]) -> SelfPreference:
    """``own``: the judge's winner on each pair; ``others``: every other rater's winner on
    the pairs it rated (one entry per rater and pair)."""
    mine, theirs = side_share(own, side), side_share(others, side)
    difference = (
        mine.value - theirs.value if mine.value is not None and theirs.value is not None else None
    )
    return SelfPreference(side=side, own=mine, others=theirs, difference=difference)
