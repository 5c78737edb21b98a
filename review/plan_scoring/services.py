"""m&m's work on verified items: tool-balanced subsets and scoring uploaded predictions."""

from __future__ import annotations

from typing import Any

import orjson

from benchmark.exceptions import ValidationFailed
from benchmark.metrics.mms import score_plans
from benchmark.models import ItemStatus, Plan, Project
from benchmark.plans.subsets import BalancedSubset, balanced_subset
from benchmark.plans.verify import toolset_from_mapping
from benchmark.toolsets.specs import plan_toolset

MAX_PREDICTION_LINES = 200_000


def _gold_plans(project: Project, status: str | None) -> dict[str, Plan]:
    plans = Plan.objects.filter(item__project=project, origin="ground_truth", is_alternative=False)
    if status:
        plans = plans.filter(item__status=status)
    out: dict[str, Plan] = {}
    for plan in plans.select_related("item").order_by("item__position", "position", "id"):
        out.setdefault(plan.item.external_id, plan)
    return out


def plan_tools(plan: Plan) -> list[str]:
    return [
        str(step.get("name"))
        for step in plan.steps or []
        if isinstance(step, dict) and step.get("name")
    ]


def project_balanced_subset(
    *, project: Project, cap: float, seed: int, status: str = ItemStatus.VERIFIED
) -> tuple[BalancedSubset, dict[str, Any]]:
    gold = _gold_plans(project, status)
    if not gold:
        raise ValidationFailed(f"no {status} items with a plan to choose from")
    try:
        subset = balanced_subset(
            [(ext, plan_tools(plan)) for ext, plan in gold.items()], cap=cap, seed=seed
        )
    except ValueError as exc:
        raise ValidationFailed(str(exc)) from None
    return subset, {"n_candidates": len(gold)}


def parse_predictions(data: bytes) -> dict[str, Any]:
    """``{"id", "prediction"}`` per line (JSONL), or a JSON array of such objects."""
    text = data.decode("utf-8", errors="replace").strip()
    rows: list[Any]
    if text.startswith("["):
        try:
            rows = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise ValidationFailed(f"the file is not valid JSON: {exc}") from None
        numbered = list(enumerate(rows, start=1))
    else:
        numbered = []
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            if n > MAX_PREDICTION_LINES:
                raise ValidationFailed(f"more than {MAX_PREDICTION_LINES} lines")
            try:
                numbered.append((n, orjson.loads(line)))
            except orjson.JSONDecodeError as exc:
                raise ValidationFailed(f"line {n} is not valid JSON: {exc}") from None
    out: dict[str, Any] = {}
    for n, row in numbered:
        if not isinstance(row, dict) or "id" not in row or "prediction" not in row:
            raise ValidationFailed(f"line {n}: expected an object with 'id' and 'prediction'")
        out[str(row["id"])] = row["prediction"]
    if not out:
        raise ValidationFailed("the file holds no predictions")
    return out


def project_score_plans(
    *,
    project: Project,
    predictions: dict[str, Any],
    plan_format: str = "auto",
    best_match: bool = False,
    status: str | None = ItemStatus.VERIFIED,
) -> dict[str, Any]:
    gold = _gold_plans(project, status)
    if not gold:
        if (
            status
            and Plan.objects.filter(
                item__project=project, origin="ground_truth", is_alternative=False
            ).exists()
        ):
            raise ValidationFailed(
                f"no {status} items with a ground-truth plan to score against; verify items "
                'first (Judging), or untick "Verified items only" to score against every '
                "ground-truth plan"
            )
        raise ValidationFailed("no items with a ground-truth plan to score against")
    unknown = sorted(set(predictions) - set(gold))
    spec = toolset_from_mapping(plan_toolset(project.toolset))
    alternatives: dict[str, list[Any]] | None = None
    if best_match:
        alternatives = {ext: [] for ext in gold}
        for plan in Plan.objects.filter(
            item__project=project, is_alternative=True, item__external_id__in=list(gold)
        ).select_related("item"):
            alternatives[plan.item.external_id].append(plan.steps)
    result = score_plans(
        {ext: plan.steps for ext, plan in gold.items()},
        predictions,
        spec,
        plan_format=plan_format,
        alternatives=alternatives,
    )
    result["unknown_ids"] = unknown[:50]
    result["n_unknown_ids"] = len(unknown)
    return result
