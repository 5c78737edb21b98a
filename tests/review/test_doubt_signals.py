"""Routing by doubt's outside signals (issue 26), as review gives them to ``annotation.judgment_tasks.doubt``:
the newest plan-validity judge run against the people's votes, and the share of the models
under test (each model's latest finished run) that got an item wrong; each read in a few
statements, and both raising the items' doubt when the task is recomputed."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from annotation.judgment_tasks.doubt import services as doubt_services
from annotation.judgment_tasks.doubt.models import ItemDoubt
from review.agreement.judge_sources import doubt_judge_values
from review.evaluation.selectors import doubt_models_wrong
from tests.factories import (
    EvaluationResultFactory,
    EvaluationRunFactory,
    ItemFactory,
    JudgmentFactory,
    JudgmentTaskFactory,
    PlanJudgeCallFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def test_the_judge_signal_is_the_newest_plan_judge_run(django_assert_max_num_queries: Any) -> None:
    call = PlanJudgeCallFactory()  # VALID: the judge says 1
    project, item = call.run.project, call.plan.item
    other = PlanJudgeCallFactory(
        run=call.run, outputs=["INVALID\nA step is missing."], plan__item__project=project
    )
    task = JudgmentTaskFactory(project=project, serve_by_doubt=True, overlap=2)
    with django_assert_max_num_queries(6):
        values = doubt_judge_values(task)
    assert values[str(item.pk)]["judge"] == 1 and values[str(other.plan.item_id)]["judge"] == 0
    assert "fake-vl-7b" in values[str(item.pk)]["judge_name"]
    for name in ("a", "b"):  # the people say 0 on the plan the judge finds valid, 1 on the other
        JudgmentFactory(task=task, item=item, user=UserFactory(username=f"{name}1"), value=0)
        JudgmentFactory(
            task=task, item=other.plan.item, user=UserFactory(username=f"{name}2"), value=0
        )
    doubt_services.task_doubt_recompute(task=task)
    flagged = ItemDoubt.objects.get(task=task, item=item)
    agreed = ItemDoubt.objects.get(task=task, item=other.plan.item)
    assert flagged.signals["judge_disagrees"] is True
    assert agreed.signals["judge_disagrees"] is False
    assert flagged.score > agreed.score


def test_a_failed_judge_run_gives_no_judge_signal() -> None:
    call = PlanJudgeCallFactory()
    call.run.job.status = "failed"
    call.run.job.save()
    task = JudgmentTaskFactory(project=call.run.project)
    assert doubt_judge_values(task) == {}


def test_the_models_signal_is_the_share_of_latest_runs_that_failed(  # type: ignore[no-untyped-def]
    project, django_assert_max_num_queries
) -> None:
    items = [ItemFactory(project=project, external_id=f"e{n}", position=n) for n in range(3)]
    now = timezone.now()
    old = EvaluationRunFactory(project=project, model="a", finished_at=now - timedelta(hours=5))
    a = EvaluationRunFactory(project=project, model="a", finished_at=now)
    b = EvaluationRunFactory(project=project, model="b", finished_at=now)
    unfinished = EvaluationRunFactory(project=project, model="b", finished_at=None)
    for item, (fa, fb) in zip(items, [(100.0, 100.0), (0.0, 100.0), (0.0, 0.0)], strict=True):
        EvaluationResultFactory(run=old, item=item, scores={"f1": 100.0})
        EvaluationResultFactory(run=a, item=item, scores={"f1": fa})
        EvaluationResultFactory(run=b, item=item, scores={"f1": fb})
        EvaluationResultFactory(run=unfinished, item=item, scores={"f1": 0.0})
    task = JudgmentTaskFactory(project=project, serve_by_doubt=True)
    with django_assert_max_num_queries(4):
        wrong = doubt_models_wrong(task)
    assert {k: v["models_wrong"] for k, v in wrong.items()} == {
        str(items[0].pk): 0.0,
        str(items[1].pk): 0.5,
        str(items[2].pk): 1.0,
    }
    doubt_services.task_doubt_recompute(task=task)
    scores = dict(ItemDoubt.objects.filter(task=task).values_list("item__external_id", "score"))
    # nobody judged them: all at the prior, 1, whatever the models did
    assert scores == {"e0": 1.0, "e1": 1.0, "e2": 1.0}
    for item in items:
        JudgmentFactory(task=task, item=item, value=1)
    doubt_services.task_doubt_recompute(task=task)
    scores = dict(ItemDoubt.objects.filter(task=task).values_list("item__external_id", "score"))
    assert scores["e0"] < scores["e1"] < scores["e2"]
