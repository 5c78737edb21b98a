"""LLMI-Bench rubric judge (LLM-I App. C; "Rubric" in LLM-I Table 2).

Each prompt carries ten sample-specific criteria r1..r10. For each answer and each criterion
one call asks the judge for ``{"score": 0|1|2, "justification": "..."}``: 0 not met,
1 partially met, 2 fully met.

* Per answer: sum of valid scores / (2 x number of valid scores). Criteria whose output never
  parsed are excluded (``excluded``); an answer with no valid score has no rate.
* Per model: the mean of the answers' rates, as a percentage. Answers without a rate are
  excluded and counted.

Scores already in an imported answer (the released ``scores`` / ``justifications`` objects)
are read into the same structure by :func:`released_rubric`, to be shown beside the new ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .base import (
    Call,
    JudgeOutputError,
    Judgment,
    Template,
    build_call,
    load_json_object,
    mean,
    require_int,
    require_keys,
    require_str,
)

RUBRIC_TEMPLATE = Template(
    id="llmi.rubric",
    description="LLMI-Bench: one rubric criterion, scored 0/1/2",
    system=(
        "You grade interleaved text-and-image reports against one concrete, verifiable "
        "criterion. Judge only that criterion, strictly: a described image that was not "
        "actually produced does not meet a requirement for an image.\n"
        "Score 0 if the criterion is not met, 1 if it is partially met, 2 if it is fully met.\n"
        'Reply with only a JSON object: {{"score": 0, "justification": "one or two sentences"}}.'
    ),
    user=(
        "Task given to the model:\n{prompt}\n\n"
        "Model's report (images appear where their tags stand):\n{answer}\n\n"
        "Criterion {criterion_key}: {criterion}"
    ),
)


@dataclass(frozen=True)
class RubricScore:
    score: int
    justification: str


def parse_rubric(raw: str) -> RubricScore:
    """``{"score": 0|1|2, "justification": "..."}`` and nothing else."""
    obj = load_json_object(raw)
    require_keys(obj, ("score", "justification"))
    return RubricScore(
        score=require_int(obj["score"], "score", 0, 2),
        justification=require_str(obj["justification"], "justification"),
    )


def criteria_of(item: Mapping[str, Any]) -> dict[str, str]:
    """The criteria of an LLMI-Bench row ``{prompt, r1..r10}`` (or a list of
    ``{"key", "text"}`` under ``rubric``), in r-number order."""
    rubric = item.get("rubric")
    if isinstance(rubric, list):
        return {str(c["key"]): str(c.get("text", "")) for c in rubric if isinstance(c, Mapping)}
    keys = [k for k in item if isinstance(k, str) and k[:1] == "r" and k[1:].isdigit()]
    return {k: str(item[k]) for k in sorted(keys, key=lambda k: int(k[1:]))}


def rubric_calls(
    *,
    prompt: str,
    answer: str,
    criteria: Mapping[str, str],
    model: str,
    images: Sequence[str] = (),
    template: Template = RUBRIC_TEMPLATE,
) -> list[Call]:
    """One call per criterion, labelled with the criterion's key. ``images``: the answer's
    rendered images (and the prompt's inputs), as data URLs or references."""
    return [
        build_call(
            template,
            model,
            key,
            {"prompt": prompt, "answer": answer, "criterion_key": key, "criterion": text},
            images,
        )
        for key, text in criteria.items()
    ]


@dataclass(frozen=True)
class AnswerRubric:
    """One answer's rubric: ``scores[key]`` is None where the judgment failed."""

    scores: dict[str, RubricScore | None]
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def valid(self) -> list[int]:
        return [s.score for s in self.scores.values() if s is not None]

    @property
    def n(self) -> int:
        return len(self.valid)

    @property
    def excluded(self) -> int:
        return len(self.scores) - self.n

    @property
    def rate(self) -> float | None:
        """Sum of valid scores / (2 x number of valid scores), on [0, 1]."""
        valid = self.valid
        return sum(valid) / (2 * len(valid)) if valid else None


def answer_rubric(judgments: Sequence[Judgment[RubricScore]]) -> AnswerRubric:
    """An answer's rubric from its per-criterion judgments (labels are the criterion keys)."""
    return AnswerRubric(
        scores={j.label: j.value for j in judgments},
        errors={j.label: j.error or "" for j in judgments if not j.ok},
    )


def released_rubric(record: Mapping[str, Any]) -> AnswerRubric:
    """The scores an imported answer already carries (``scores`` / ``justifications`` keyed
    r1..r10, the released result format), in the judge's structure. A score that is not 0, 1
    or 2 is kept as a failure with the reason, like an unparseable judge output."""
    scores = record.get("scores") or {}
    notes = record.get("justifications") or {}
    if not isinstance(scores, Mapping):
        scores = {}
    if not isinstance(notes, Mapping):
        notes = {}
    out: dict[str, RubricScore | None] = {}
    errors: dict[str, str] = {}
    keys = criteria_of({k: "" for k in scores if isinstance(k, str)})
    for key in keys:
        try:
            score = require_int(scores[key], "score", 0, 2)
        except JudgeOutputError as exc:
            out[key], errors[key] = None, str(exc)
            continue
        note = notes.get(key, "")
        out[key] = RubricScore(score=score, justification=note if isinstance(note, str) else "")
    return AnswerRubric(scores=out, errors=errors)


@dataclass(frozen=True)
class RubricFigure:
    """A model's rubric figure: ``percent`` = 100 x mean of answer rates."""

    percent: float | None
    n: int
    excluded: int
    criteria_excluded: int


def rubric_figure(answers: Sequence[AnswerRubric]) -> RubricFigure:
    rates = [a.rate for a in answers if a.rate is not None]
    value = mean(rates)
    return RubricFigure(
        percent=None if value is None else 100 * value,
        n=len(rates),
        excluded=len(answers) - len(rates),
        criteria_excluded=sum(a.excluded for a in answers),
    )
