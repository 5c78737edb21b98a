"""The leaderboard's trust row for a judge whose reports people rate ("Rate the judge": here
the LLM-I LLM judge): the share of its reports people rated right with its Wilson interval,
flagged below 0.8, linking to the rating task; a new rating changes it."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.judgment_tasks.models import JudgmentTask
from benchmark.models import Origin, Project, Response
from review.judges.models import JudgeCall, JudgeRun
from tests.review.evaluation.test_leaderboard_trust import (  # noqa: F401 (fixture)
    other_run,
    project,
    rate,
    trust_cells,
)

pytestmark = pytest.mark.django_db

#: Two people's ratings of the LLM judge's report on each of the three answers: 100 %, 75 %,
#: 0 %: one of three rated right (80 %).
RATINGS = [(2, 2), (2, 1), (0, 0)]


def rate_llm_reports(project: Project, run: JudgeRun, users: dict[str, Any]) -> JudgmentTask:  # noqa: F811
    answers = Response.objects.filter(item__project=project, origin=Origin.MODEL).order_by(
        "item__position", "model_name"
    )
    task = JudgmentTask.objects.create(
        project=project,
        name="Rate the LLM judge",
        question="Do you agree with the report?",
        scheme="ordinal",
        labels=[{"value": 0}, {"value": 1}, {"value": 2}],
        unit_kind="judge-report",
        unit_params={"judge_run": run.pk, "judge": run.judge, "labels": ["llm"]},
        overlap=2,
        consensus="majority",
    )
    for n, (answer, ratings) in enumerate(zip(answers, RATINGS, strict=True)):
        JudgeCall.objects.create(
            run=run,
            response=answer,
            label="llm",
            key=f"k{n}",
            template_id="llmi.llm_judge",
            template_version="v",
            outputs=["Text: 4\nImage: 3"],
            ok=True,
        )
        for name, value in zip(("annotator", "reviewer"), ratings, strict=True):
            rate(task, f"response:{answer.pk}:llm", users[name], value)
    return task


def test_a_report_judge_shows_the_share_of_its_reports_rated_right(
    project: Project,  # noqa: F811
    users: dict[str, Any],
    clients: dict[str, Client],
) -> None:
    run = other_run(project)
    task = rate_llm_reports(project, run, users)
    url = reverse("review:leaderboard", args=[project.pk])
    html = clients["reviewer"].get(url).content.decode()
    (cell,) = trust_cells(html)
    # 1 of 3: 0.33, Wilson [0.06, 0.79]; below 0.8.
    assert "rated right <span data-trust-share>0.33</span>" in cell
    assert "data-trust-interval>[0.06, 0.79]" in cell
    assert "below 0.8" in cell and f"/agreement/{task.pk}/" in cell
    assert html.count("data-low-trust") == 2  # alpha's and beta's R_llm
    # A new rating moves it (a new cache key): the second answer's 2, 1 becomes 2, 1, 2
    # (83 %, right): 2 of 3.
    answer = Response.objects.filter(item__project=project, origin=Origin.MODEL).order_by(
        "item__position", "model_name"
    )[1]
    rate(task, f"response:{answer.pk}:llm", users["admin"], 2)
    (cell,) = trust_cells(clients["reviewer"].get(url).content.decode())
    assert "rated right <span data-trust-share>0.67</span>" in cell
