"""A release reads its items and their provenance in bulk: three times the items (each with
judgments, an outcome, a status change, answer versions and tag decisions) cost the same
number of queries, and the release still holds every item's provenance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchmark.models import ItemStatus, Project
from review.releases.services import release_create
from tests.factories import (
    DecisionFactory,
    DraftingSessionFactory,
    ItemFactory,
    ItemStatusChangeFactory,
    JudgmentFactory,
    JudgmentTaskFactory,
    OutcomeFactory,
    PlanFactory,
    ProjectFactory,
    ResponseFactory,
    ResponseVersionFactory,
    TagDecisionFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def _verified_items(project: Project, n: int) -> None:
    task = JudgmentTaskFactory(project=project, name="Correct?")
    annotators = [UserFactory() for _ in range(3)]
    for _ in range(n):
        item = ItemFactory(project=project, status=ItemStatus.VERIFIED)
        response = ResponseFactory(item=item)
        PlanFactory(item=item)
        for user in annotators:
            JudgmentFactory(task=task, item=item, user=user)
        OutcomeFactory(task=task, item=item, verdict="accepted")
        DecisionFactory(task=task, item=item)
        ItemStatusChangeFactory(
            item=item, from_status=ItemStatus.IN_REVIEW, to_status=ItemStatus.VERIFIED
        )
        DraftingSessionFactory(item=item)
        ResponseVersionFactory(response=response)
        TagDecisionFactory(
            version=ResponseVersionFactory(response=response, number=2, base_number=1)
        )


def _queries_of_release(project: Project, out: Path) -> int:
    with CaptureQueriesContext(connection) as ctx:
        release_create(project=project, user=None, name="v", out_dir=out)
    return len(ctx.captured_queries)


def test_three_times_the_items_take_the_same_number_of_queries(tmp_path: Path) -> None:
    small, large = ProjectFactory(name="small"), ProjectFactory(name="large")
    _verified_items(small, 4)
    _verified_items(large, 12)

    few = _queries_of_release(small, tmp_path / "small")
    many = _queries_of_release(large, tmp_path / "large")

    assert many == few
    lines = (tmp_path / "large" / "provenance.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    assert len(rows) == 12
    assert all(len(row["judgments"]) == 3 and row["outcomes"] for row in rows)
    assert all(row["counts"]["tag_decisions"] == 1 for row in rows)
    assert all(row["counts"]["response_versions"] == 2 for row in rows)
