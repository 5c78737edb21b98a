"""The pairwise judge in both orders (``pairwise``, ``benchmark.judge_prompts.pairwise``): each
model answer against the item's reference answer (its ground truth), asked twice with the two
swapped; a verdict that flips with the order is a tie. Per model: win, tie and loss rates and the
flip rate; over the run: the flip rate, how often the longer answer wins, and, when the judge
model is also one of the models judged, how often it prefers its own answers against everyone
else's rate (self-preference). An answer whose item has no reference answer is not judged."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchmark.judge_prompts import Call, Judgment, Template
from benchmark.judge_prompts import pairwise as pw
from benchmark.models import DataFormat, Origin, Response
from review.judges.specs.base import Column, JudgeSpec
from review.judges.specs.subjects import ANSWERS

if TYPE_CHECKING:
    from review.judges.models import JudgeRun


def reference_text(answer: Response) -> str | None:
    """The item's reference answer (its first ground-truth answer), None when it has none."""
    return (
        Response.objects.filter(item_id=answer.item_id, origin=Origin.GROUND_TRUTH)
        .order_by("id")
        .values_list("text", flat=True)
        .first()
    )


@dataclass(frozen=True)
class PairValue:
    """What ``scores`` hands to the figures: the verdict (None: failed or no reference), the
    item and the answer's length (the run's summary looks up the references' lengths)."""

    verdict: pw.PairVerdict | None
    item_id: int
    answer_length: int


def _figures(values: Sequence[PairValue]) -> dict[str, Any]:
    f = pw.pairwise_figures([v.verdict for v in values])
    return {
        "win": f.win,
        "tie": f.tie,
        "loss": f.loss,
        "flip": f.flip,
        "n": f.n,
        "excluded": f.excluded,
    }


class PairwiseJudge(JudgeSpec):
    name = "pairwise"
    label = "Pairwise vs reference, both orders"
    rates = ANSWERS
    formats = (DataFormat.ATP, DataFormat.LLMI)
    templates = (pw.PAIRWISE_TEMPLATE,)
    agents = {pw.AB: "answer first", pw.BA: "reference first"}
    columns = (
        Column("win", "Wins vs reference", "%"),
        Column("tie", "Ties", "%"),
        Column("loss", "Losses", "%", lower_is_better=True),
        Column("flip", "Flipped with the order", "%", lower_is_better=True),
    )
    figures_heading = "Against the reference answer, per model"
    result_template = "review/judges/pairwise/result.html"
    definitions_template = "review/judges/pairwise/definitions.html"
    overall_template = "review/judges/pairwise/overall.html"

    def parsers(self, subject: Response) -> Mapping[str, Callable[[str], Any]]:
        return {pw.AB: pw.parse_preference, pw.BA: pw.parse_preference}

    def first_call_count(self, subject: Response) -> int:
        return 2

    def first_calls(
        self, subject: Response, model: str, templates: Mapping[str, Template]
    ) -> list[Call]:
        other = reference_text(subject)
        if other is None:
            return []
        return pw.pair_calls(
            query=subject.item.query,
            answer=subject.text,
            other=other,
            model=model,
            template=templates[pw.PAIRWISE_TEMPLATE.id],
        )

    def scores(
        self, subject: Response, judgments: Mapping[str, Judgment[Any]], run: JudgeRun
    ) -> tuple[Any, dict[str, Any]]:
        verdict = pw.verdict_of(dict(judgments), answer_length=len(subject.text), other_length=0)
        choices = {
            label: (j.value.choice if j.value is not None else None)
            for label, j in judgments.items()
        }
        value = PairValue(verdict=verdict, item_id=subject.item_id, answer_length=len(subject.text))
        return value, {
            "outcome": verdict.outcome if verdict else None,
            "flipped": verdict.flipped if verdict else None,
            "answer_first": choices.get(pw.AB),
            "reference_first": choices.get(pw.BA),
        }

    def figures(self, values: Sequence[Any]) -> dict[str, Any]:
        return _figures(values)

    def summary_figures(
        self, values: Sequence[Any], models: Mapping[str, Mapping[str, Any]], run: JudgeRun
    ) -> dict[str, Any]:
        """Over all answers: the figures of ``figures``, the longer-answer rate (the
        references' lengths in one query) and the judge model's self-preference."""
        items = {v.item_id for v in values}
        lengths: dict[int, int] = {}
        references = (
            Response.objects.filter(item_id__in=items, origin=Origin.GROUND_TRUTH)
            .order_by("item_id", "id")
            .values_list("item_id", "text")
        )
        for item_id, text in references:
            lengths.setdefault(item_id, len(text))
        with_lengths = [
            pw.PairVerdict(
                outcome=v.verdict.outcome,
                flipped=v.verdict.flipped,
                answer_length=v.answer_length,
                other_length=lengths.get(v.item_id, v.answer_length),
            )
            if v.verdict is not None
            else None
            for v in values
        ]
        overall = pw.pairwise_figures(with_lengths)
        summary = _figures(values) | {
            "longer_wins": overall.longer_wins,
            "n_decided_by_length": overall.n_decided_by_length,
        }
        judge_model = str(run.model or "")
        if judge_model in models:
            others = [m for name, m in models.items() if name != judge_model and m["n"]]
            won = sum((m["win"] or 0) * m["n"] for m in others)
            n_others = sum(m["n"] for m in others)
            summary["self_preference"] = {
                "model": judge_model,
                "own_win": models[judge_model]["win"],
                "others_win": won / n_others if n_others else None,
            }
        return summary


JUDGE = PairwiseJudge()
