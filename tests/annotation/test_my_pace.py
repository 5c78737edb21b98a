"""An annotator's own pace on the judging page (issue 25, "per-annotator pace"): items today and
in the last 7 days, the streak of days with work, and the median seconds per item."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.judgment_tasks.pace import annotator_pace
from benchmark.models import Project
from tests.factories import DatedJudgmentFactory, ItemFactory, JudgmentTaskFactory, UserFactory

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 10, 15, 0, tzinfo=UTC)


def judged(project: Project, user: Any, at: datetime, seconds: float) -> None:
    task = (
        JudgmentTaskFactory(project=project)
        if not project.judgment_tasks.exists()
        else (project.judgment_tasks.first())
    )
    DatedJudgmentFactory(
        task=task, item=ItemFactory(project=project), user=user, value=1, seconds=seconds, at=at
    )


def test_pace_counts_days_streak_and_median(project: Project, users: dict[str, Any]) -> None:
    me = users["annotator"]
    assert annotator_pace(user=me, project=project, now=NOW) is None
    for days_ago, seconds in ((0, 10), (0, 30), (1, 20), (2, 0), (9, 50)):
        judged(project, me, NOW - timedelta(days=days_ago), seconds)
    judged(project, UserFactory(), NOW, 999)  # someone else's
    pace = annotator_pace(user=me, project=project, now=NOW)
    assert pace is not None
    assert (pace.today, pace.week, pace.total, pace.streak) == (2, 4, 5, 3)
    assert pace.median_seconds == 25.0  # 10, 20, 30, 50 (0 is no time)
    assert pace.items_per_hour == 144
    # the next morning, before the first item, the streak is still alive
    pace = annotator_pace(user=me, project=project, now=NOW + timedelta(days=1))
    assert pace is not None and pace.streak == 3 and not pace.streak_alive_today


def test_the_judging_page_shows_my_work(
    project: Project, users: dict[str, Any], clients: dict[str, Client],
    django_assert_max_num_queries: Any,
) -> None:  # fmt: skip
    url = reverse("annotation:task_list", args=[project.pk])
    html = clients["annotator"].get(url).content.decode()
    assert "data-pace-none" in html
    now = datetime.now(UTC)
    for seconds in (12, 18):
        judged(project, users["annotator"], now, seconds)
    with django_assert_max_num_queries(12):
        html = clients["annotator"].get(url).content.decode()
    panel = re.search(r"data-my-pace>(.*?)</section>", html, re.S)
    assert panel
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", panel.group(1)))
    assert "Today 2" in text and "Streak 1 day" in text and "Per item 15.0 s" in text
    assert "Items per hour 240" in text
    # the reviewer, who judged nothing here, sees their own (empty) panel, not the annotator's
    assert "data-pace-none" in clients["reviewer"].get(url).content.decode()
