"""Query budgets of the judging path that every annotator walks many times an hour: "next",
the judge page, and submitting (the last of the overlap settles the outcome). The load test
(tests/perf/load.py) runs this path for 50 people at once."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.judging.models import Judgment, Outcome
from annotation.judging.services import judgment_task_ensure_defaults
from benchmark.models import Toolset
from tests.factories import ItemFactory, MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

# next, judge page, submit, submit that settles the outcome
BUDGET = {"next": 13, "page": 8, "submit": 21, "settle": 31}


def _count(client: Client, method: str, url: str, data: Any = None) -> tuple[Any, int]:
    with CaptureQueriesContext(connection) as queries:
        response = getattr(client, method)(url, data or {})
    return response, len(queries)


def test_next_page_and_submit_stay_within_their_query_budgets() -> None:
    project = ProjectFactory(data_format="atp", toolset=Toolset.objects.create(name="atp-q"))
    for n in range(3):
        ItemFactory(project=project, external_id=f"q{n}", position=n)
    (task,) = judgment_task_ensure_defaults(project=project)
    assert task.overlap == 3
    counts: dict[str, list[int]] = {k: [] for k in BUDGET}
    for n in range(3):
        user = UserFactory(username=f"judge{n}")
        MembershipFactory(project=project, user=user, role="annotator")
        client = Client()
        client.force_login(user)
        client.get(reverse("annotation:task_list", args=[project.pk]))  # session warmed
        lease, queries = _count(client, "post", reverse("annotation:task_next", args=[task.pk]))
        assert lease.status_code == 302
        counts["next"].append(queries)
        page, queries = _count(client, "get", lease["Location"])
        assert page.status_code == 200
        counts["page"].append(queries)
        done, queries = _count(client, "post", lease["Location"], {"value": '"keep"'})
        assert done.status_code == 302, done.content.decode()[:500]
        counts["settle" if n == 2 else "submit"].append(queries)
    assert Judgment.objects.filter(task=task).count() == 3
    assert Outcome.objects.get(task=task, item__external_id="q0").verdict == "accepted"
    worst = {k: max(v) for k, v in counts.items()}
    assert all(worst[k] <= BUDGET[k] for k in BUDGET), worst
