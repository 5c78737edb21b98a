"""The LLMI-Bench rubric judge (``llmi-rubric``): one call per criterion r1..r10 of the answer's
item, each scored 0 not met, 1 partially, 2 fully met. Per answer: the sum of the valid scores /
(2 x number of valid scores); per model ``rubric`` = 100 x the mean over answers
(``benchmark.judge_prompts.rubric``). An answer's released scores (LLM-I's result format) are shown
beside the judge's; people's "score the criteria" tasks rate the same units."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from benchmark.judge_prompts import Call, Judgment, Template
from benchmark.judge_prompts import rubric as rubric_judge
from benchmark.judge_prompts.examples import shorten
from benchmark.models import DataFormat, Response
from review.judges.calls import stored_judgment
from review.judges.inputs import image_refs, rendered_answer, rendered_images
from review.judges.specs.base import ANSWERS_COUNTS, Column, JudgeSpec, missing
from review.judges.specs.subjects import ANSWERS

if TYPE_CHECKING:
    from annotation.judgment_tasks.models import JudgmentTask
    from benchmark.models import Project
    from review.judges.models import JudgeRun

#: People's unit kind and scale that match the judge's calls (``response:<id>:r<k>``, 0/1/2).
RUBRIC_SCALE = {0, 1, 2}


def criteria(response: Response) -> dict[str, str]:
    return rubric_judge.criteria_of({"rubric": response.item.rubric or []})


def released_of(response: Response) -> rubric_judge.AnswerRubric | None:
    """The released rubric scores an imported answer carries (``extra["scores"]``), if any."""
    return released_from(response.extra)


def released_from(extra: Any) -> rubric_judge.AnswerRubric | None:
    if not isinstance(extra, Mapping):
        return None
    scores = extra.get("scores")
    if not isinstance(scores, Mapping) or not scores:
        return None
    return rubric_judge.released_rubric(extra)


def is_criterion(label: str) -> bool:
    return label[:1] == "r" and label[1:].isdigit()


class RubricJudge(JudgeSpec):
    name = "llmi-rubric"
    label = "LLMI-Bench rubric"
    rates = ANSWERS
    # Made for LLM-I; it judges any interleaved answer (both tag syntaxes).
    formats = (DataFormat.LLMI, DataFormat.ATP)
    templates = (rubric_judge.RUBRIC_TEMPLATE,)
    columns = (Column("rubric", "Rubric", "%"),)
    count_columns = (*ANSWERS_COUNTS, Column("criteria_excluded", "Criteria excluded"))
    result_template = "review/judges/llmi_rubric/result.html"
    definitions_template = "review/judges/llmi_rubric/definitions.html"
    released_scores = True
    rates_criteria = True
    human_eval = {"likert": {"score": ("rubric", "rate")}, "pair": {"bt": ("rubric", None)}}

    def label_parser(self, label: str) -> Callable[[str], Any]:
        return rubric_judge.parse_rubric

    def first_call_count(self, subject: Response) -> int:
        return len(criteria(subject))

    def first_calls(
        self, subject: Response, model: str, templates: Mapping[str, Template]
    ) -> list[Call]:
        rendered = rendered_images(subject)
        return rubric_judge.rubric_calls(
            prompt=subject.item.query,
            answer=subject.text if rendered is None else rendered_answer(subject.text, rendered),
            criteria=criteria(subject),
            model=model,
            images=image_refs(rendered or []),
            template=templates[rubric_judge.RUBRIC_TEMPLATE.id],
        )

    def scores(
        self, subject: Response, judgments: Mapping[str, Judgment[Any]], run: JudgeRun
    ) -> tuple[Any, dict[str, Any]]:
        keys = criteria(subject)
        answer = rubric_judge.answer_rubric([judgments.get(k) or missing(k) for k in keys])
        scores: dict[str, Any] = {k: (v.score if v else None) for k, v in answer.scores.items()}
        scores["rate"] = answer.rate
        scores["excluded"] = answer.excluded
        return answer, scores

    def figures(self, values: Sequence[Any]) -> dict[str, Any]:
        figure = rubric_judge.rubric_figure(values)
        return {
            "rubric": figure.percent,
            "n": figure.n,
            "excluded": figure.excluded,
            "criteria_excluded": figure.criteria_excluded,
        }

    def result(
        self,
        subject: Response,
        judgments: Mapping[str, Judgment[Any]],
        rows: Mapping[str, Any],
        run: JudgeRun,
    ) -> dict[str, Any]:
        keys = criteria(subject)
        for label in rows:
            keys.setdefault(label, "")
        answer = rubric_judge.answer_rubric([judgments.get(k) or missing(k) for k in keys])
        released = released_of(subject)
        released_rate = released.rate if released is not None else None
        return {
            "rate_pct": None if answer.rate is None else 100 * answer.rate,
            "released_pct": None if released_rate is None else 100 * released_rate,
            "has_released": released is not None,
            "criteria": [
                {
                    "key": key,
                    "text": text,
                    "judge": answer.scores.get(key),
                    "call": rows.get(key),
                    "released": released.scores.get(key) if released is not None else None,
                    "released_error": released.errors.get(key, "") if released is not None else "",
                }
                for key, text in keys.items()
            ],
        }

    # ------------------------------------------------------------------ worked examples

    def worked_example_answer(self, value: Any) -> str:
        meaning = {0: "not met", 1: "partially met", 2: "fully met"}.get(value, "")
        return f"score {value}" + (f" ({meaning})" if meaning else "")

    def worked_example_input(self, unit: str, project: Project) -> str:
        from annotation.judgment_tasks.units import UNIT_KEY

        match = UNIT_KEY.match(unit)
        response = (
            Response.objects.filter(item__project=project, pk=int(match.group(1)))
            .select_related("item")
            .first()
            if match
            else None
        )
        if response is None or match is None:
            return f"unit {unit}"
        key = match.group(2)
        criterion = criteria(response).get(key, "")
        return (
            f"Task: {shorten(response.item.query, 200)} | Report: {shorten(response.text, 240)}"
            f" | Criterion {key}: {criterion}"
        )

    # ------------------------------------------------------------------ people

    def rates_task(self, task: JudgmentTask) -> bool:
        from annotation.judgment_tasks.models import Scheme, UnitKind

        return (
            str(task.unit_kind) == UnitKind.ANSWER_CRITERION
            and task.scheme == Scheme.ORDINAL
            and set(task.label_values) == RUBRIC_SCALE
        )

    def rater_values(self, run: JudgeRun) -> dict[str, Any]:
        """``{"response:<id>:r<k>": score or None}``."""
        out: dict[str, Any] = {}
        for row in run.calls.select_related("response").order_by("id"):
            if not is_criterion(row.label):
                continue
            value = stored_judgment(row, self.parser(row.label, row.response)).value
            out[f"response:{row.response_id}:{row.label}"] = None if value is None else value.score
        return out


JUDGE = RubricJudge()
