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

from annotation.judgment_tasks import selectors, services
from annotation.judgment_tasks.models import Judgment, Outcome
from annotation.judgment_tasks.services import judgment_task_ensure_defaults
from benchmark.models import Item, Toolset
from tests.factories import (
    ItemFactory,
    ItemPushFactory,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

# next, judge page, submit, submit that settles the outcome. The page's 9: 7 before the
# progress line and the undo (one statement for done today, left, position and total; one for
# the last judgment that may be undone).
BUDGET = {"next": 10, "page": 9, "submit": 15, "settle": 18}


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


def _atp_task_with_items(n: int) -> Any:
    project = ProjectFactory(data_format="atp", toolset=Toolset.objects.create(name="atp-s"))
    for i in range(n):
        ItemFactory(project=project, external_id=f"s{i}", position=i)
    (task,) = judgment_task_ensure_defaults(project=project)
    return project, task


def test_next_and_submit_services_stay_within_their_query_budgets(
    django_assert_max_num_queries: Any,
) -> None:
    """The services themselves, on each path "next" takes: a fresh lease (1 statement for the
    open lease and pending pushes, the candidate, the recount, the lease, the push update), the
    open lease handed back, a pushed item first; and submit (no outcome yet, one pending,
    the one that settles it and sets the item's status)."""
    project, task = _atp_task_with_items(3)
    people = []
    for n in range(3):
        user = UserFactory(username=f"svc{n}")
        MembershipFactory(project=project, user=user, role="annotator")
        people.append(user)
    tasks = [selectors.task_get(user=u, pk=task.pk) for u in people]  # roles read with them
    task = tasks[0]
    with django_assert_max_num_queries(7):  # with the savepoint and its release
        lease = services.assignment_next_for_user(task=task, user=people[0])
    with django_assert_max_num_queries(4):
        again = services.assignment_next_for_user(task=task, user=people[0])
    assert lease is not None and again is not None and again.pk == lease.pk
    item = Item.objects.get(pk=lease.item_id)
    with django_assert_max_num_queries(11):  # the outcome row is created on the first judgment
        services.judgment_submit(task=task, item=item, user=people[0], value="keep")
    pushed = Item.objects.get(project=project, external_id="s2")
    ItemPushFactory(task=task, item=pushed, user=people[1])
    with django_assert_max_num_queries(7):
        lease = services.assignment_next_for_user(task=tasks[1], user=people[1])
    assert lease is not None and lease.item_id == pushed.pk
    services.judgment_submit(task=task, item=pushed, user=people[1], value="keep")
    for user, queries in ((people[1], 8), (people[2], 14)):  # pending, then settled
        lease = services.assignment_next_for_user(task=tasks[people.index(user)], user=user)
        assert lease is not None and lease.item_id == item.pk
        with django_assert_max_num_queries(queries):
            services.judgment_submit(task=task, item=item, user=user, value="keep")
    outcome = Outcome.objects.get(task=task, item=item)
    assert outcome.verdict == "accepted"
    assert set(Judgment.objects.filter(task=task, item=item).values_list("agrees", flat=True)) == {
        1.0
    }
    item.refresh_from_db()
    assert item.status == "verified" and item.status_changes.count() == 1


def test_a_failed_submit_shows_the_item_as_its_reader_may_see_it() -> None:
    """A submit reads the item without the answer-hiding query (it shows nothing); when it
    fails, the page it shows again reads the item as the judge page does."""
    project, task = _atp_task_with_items(0)
    item = ItemFactory(project=project, external_id="f0", position=0, expected_answer="Bakery")
    user = UserFactory(username="failing")
    MembershipFactory(project=project, user=user, role="annotator")
    client = Client()
    client.force_login(user)
    lease = client.post(reverse("annotation:task_next", args=[task.pk]))
    assert lease["Location"].endswith(f"/items/{item.pk}/")
    failed = client.post(lease["Location"], {"value": '"no such label"'})
    assert failed.status_code == 200 and failed.context["form"].errors
    shown = failed.context["item"]
    assert shown.answer_hidden is False and shown.expected_answer == "Bakery"
    assert not Judgment.objects.filter(task=task).exists()
    done = client.post(lease["Location"], {"value": '"keep"'})
    assert done.status_code == 302
    assert Judgment.objects.get(task=task, item=item).value == "keep"
