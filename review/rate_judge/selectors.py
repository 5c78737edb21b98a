"""Reads for rating the judge: the runs a reviewer may build a task from, and the figures of
a "rate the judge" task (ATP-Bench §6: agreement rate per agent = mean rating / 2)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from annotation.judgment_tasks.models import Judgment, JudgmentTask, UnitKind
from annotation.judgment_tasks.units import unit_parse
from benchmark.exceptions import ValidationFailed
from benchmark.metrics.rating_rate import rating_rates
from benchmark.models import Project
from benchmark.permissions import can
from benchmark.typing import AnyUser
from review.judges.models import JudgeRun
from review.rate_judge.units import agent_name


def judge_runs(*, user: AnyUser, project: Project) -> QuerySet[JudgeRun]:
    """The project's judge runs, for reviewers and admins (none for anyone else)."""
    if not can(user=user, project=project, action="manage_studies"):
        return JudgeRun.objects.none()
    return JudgeRun.objects.filter(project=project).select_related("job").order_by("-id")


#: Below this agreement rate (percent) an agent's reports are flagged not trustworthy, unless
#: the reviewer sets another threshold (ATP-Bench §6 reports 84.00 to 88.00 %).
DEFAULT_RATE_THRESHOLD = 80.0


def rate_figures(
    *, task: JudgmentTask, bootstrap: int = 1000, threshold: float = DEFAULT_RATE_THRESHOLD
) -> dict[str, Any] | None:
    """For a ``judge-report`` task: per agent, the agreement rate (100 x mean rating / 2),
    its 95 % bootstrap interval over units, the numbers of units and ratings, ``flagged``
    when the rate is below ``threshold`` percent (or there is none), and per annotator the
    same rate; ``annotators`` lays the per-annotator rates out as rows with one cell per
    agent. None for other tasks. Callers check the user may review."""
    if task.unit_kind != UnitKind.JUDGE_REPORT:
        return None
    rows = []
    for unit, username, value in Judgment.objects.filter(task=task).values_list(
        "unit", "user__username", "value"
    ):
        try:
            _, label = unit_parse(unit)
        except ValidationFailed:
            continue
        rows.append((unit, username, label, value))
    labels = list((task.unit_params or {}).get("labels") or [])
    figures = rating_rates(rows, top=2, groups=labels, n_resamples=bootstrap)
    figures["threshold"] = threshold
    for group in figures["groups"]:
        group["name"] = agent_name(str(group["group"]))
        group["flagged"] = group["rate"] is None or group["rate"] < threshold
    figures["annotators"] = [
        {
            "rater": rater["rater"],
            "rate": rater["rate"],
            "n": rater["n"],
            "cells": [group["raters"].get(rater["rater"]) for group in figures["groups"]],
        }
        for rater in figures["raters"]
    ]
    return figures
