"""m&m's plan validity judge (``mms-plan``, ``benchmark.judge_prompts.plan_validity``): it judges Plans,
not model answers. A run judges the project's ground-truth plans (each item's plan and its
alternatives) or, with models chosen, the plans those models predicted; one call per plan, the
judge answers VALID or INVALID and one line why. Figures: the share of plans judged valid,
overall and per source ("ground truth" or the predicting model), over the plans whose judgment
parsed; ``excluded`` counts the others. As a rater it stands beside people's item-level yes/no
plan votes: its verdict on each item's ground-truth plan."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from benchmark.judge_prompts import Call, Judgment, Template
from benchmark.judge_prompts import plan_validity as validity
from benchmark.models import DataFormat, Origin, Plan
from review.judges.calls import stored_judgment
from review.judges.specs.base import Column, JudgeSpec, missing
from review.judges.specs.subjects import PLANS

if TYPE_CHECKING:
    from annotation.judgment_tasks.models import JudgmentTask
    from benchmark.models import Project
    from review.judges.models import JudgeRun


def _figure(judgments: Sequence[Judgment[validity.PlanVerdict]]) -> dict[str, Any]:
    figure = validity.validity_figure(judgments)
    return {
        "valid": figure.percent,
        "n": figure.n,
        "n_valid": figure.n_valid,
        "excluded": figure.excluded,
    }


class PlanValidityJudge(JudgeSpec):
    name = "mms-plan"
    label = "m&m's plan validity"
    rates = PLANS
    formats = (DataFormat.MMS,)
    templates = (validity.PLAN_VALIDITY_TEMPLATE,)
    columns = (Column("valid", "Judged valid", "%"),)
    count_columns = (
        Column("n_valid", "Valid"),
        Column("n", "Plans"),
        Column("excluded", "Excluded"),
    )
    figures_heading = "Plans judged valid, per source"
    result_template = "review/judges/mms_plan/result.html"
    definitions_template = "review/judges/mms_plan/definitions.html"
    overall_template = "review/judges/mms_plan/overall.html"

    def parsers(self, subject: Plan) -> Mapping[str, Callable[[str], Any]]:
        return {validity.LABEL: validity.parse_plan_validity}

    def first_call_count(self, subject: Plan) -> int:
        return 1

    def first_calls(
        self, subject: Plan, model: str, templates: Mapping[str, Template]
    ) -> list[Call]:
        return [
            validity.plan_validity_call(
                query=subject.item.query,
                steps=subject.steps,
                code=subject.code,
                model=model,
                template=templates[validity.PLAN_VALIDITY_TEMPLATE.id],
            )
        ]

    def scores(
        self, subject: Plan, judgments: Mapping[str, Judgment[Any]], run: JudgeRun
    ) -> tuple[Any, dict[str, Any]]:
        judgment = judgments.get(validity.LABEL) or missing(validity.LABEL)
        verdict = judgment.value
        return judgment, {
            "valid": verdict.valid if verdict else None,
            "why": verdict.why if verdict else None,
        }

    def figures(self, values: Sequence[Any]) -> dict[str, Any]:
        return _figure(values)

    def summary_figures(
        self, values: Sequence[Any], models: Mapping[str, Mapping[str, Any]], run: JudgeRun
    ) -> dict[str, Any]:
        """Over all plans: ``valid`` (percent judged valid), ``n``, ``n_valid``, ``excluded``."""
        return _figure(values)

    def result(
        self,
        subject: Plan,
        judgments: Mapping[str, Judgment[Any]],
        rows: Mapping[str, Any],
        run: JudgeRun,
    ) -> dict[str, Any]:
        judgment = judgments.get(validity.LABEL)
        return {"verdict": judgment.value if judgment is not None else None}

    # ------------------------------------------------------------------ people

    # ------------------------------------------------------------------ worked examples

    def call_unit(self, subject: Plan, call: Call) -> str:
        """People vote on each item's ground-truth plan: the unit is the item's id."""
        if subject.origin != Origin.GROUND_TRUTH or subject.is_alternative:
            return ""
        return str(subject.item_id)

    def worked_example_answer(self, value: Any) -> str:
        return "VALID" if value in (1, True, "1") else "INVALID"

    def worked_example_input(self, unit: str, project: Project) -> str:
        plan = (
            Plan.objects.filter(
                item__project=project,
                item_id=int(unit) if unit.isdigit() else 0,
                origin=Origin.GROUND_TRUTH,
                is_alternative=False,
            )
            .select_related("item")
            .order_by("position", "id")
            .first()
        )
        if plan is None:
            return f"item {unit}"
        steps = " -> ".join(
            str(s.get("name") or "?") if isinstance(s, dict) else "?" for s in plan.steps or []
        )
        return f"User request: {plan.item.query} | Plan: {steps or '(no steps)'}"

    def rates_task(self, task: JudgmentTask) -> bool:
        from annotation.judgment_tasks.models import Scheme, UnitKind

        return str(task.unit_kind) == UnitKind.ITEM and task.scheme == Scheme.BINARY

    def rater_run(self, run: JudgeRun) -> bool:
        return not run.selection.get("models")  # ground-truth plans, the ones people vote on

    def rater_values(self, run: JudgeRun) -> dict[str, Any]:
        """``{"<item id>": 1 / 0 / None}``: the verdict on each item's ground-truth plan."""
        return {str(item): value for item, value in plan_validity_by_item(run=run).items()}


def plan_validity_by_item(*, run: JudgeRun) -> dict[int, int | None]:
    """Per item, the judge's verdict on the item's ground-truth plan (not an alternative): 1 valid,
    0 invalid, None when the judgment failed. Items whose plan the run did not judge are
    absent."""
    rows = (
        run.plan_calls.filter(plan__origin=Origin.GROUND_TRUTH, plan__is_alternative=False)
        .select_related("plan")
        .order_by("plan__item_id", "plan__position", "plan_id", "id")
    )
    out: dict[int, int | None] = {}
    for row in rows:
        if row.plan.item_id in out:
            continue
        verdict = stored_judgment(row, validity.parse_plan_validity).value
        out[row.plan.item_id] = None if verdict is None else int(verdict.valid)
    return out


JUDGE = PlanValidityJudge()
