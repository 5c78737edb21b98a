"""The checks of the load test (tests/perf/load.py) on a small fixture: its set-up, the
figures it prints, and the database check that fails the run when an item got more than its
overlap of live assignments or an accepted judgment was lost."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotation.judgment_tasks import services
from annotation.judgment_tasks.models import Assignment, JudgmentTask
from benchmark.models import Item
from tests.perf.load import check_database, percentile, setup_data, summarise


def test_percentiles_and_the_combined_row() -> None:
    assert percentile([], 95) == 0.0
    assert percentile(range(1, 101), 50) == 50.0
    assert percentile(range(1, 101), 95) == 95.0
    assert percentile([7.0], 95) == 7.0
    times = {
        "next": [(0.0, 10.0), (1.0, 20.0), (9.0, 30.0)],
        "submit": [(2.0, 100.0), (9.5, 40.0)],
        "login": [(0.5, 900.0)],
    }
    rows = {r["name"]: r for r in summarise(times, seconds=10.0)}
    assert rows["next + submit"]["requests"] == 5
    assert rows["next + submit"]["p95"] == 100.0
    assert rows["all"]["requests"] == 6
    assert rows["login"]["rps"] == pytest.approx(0.1)
    # after the logins: only requests started from 5 s on, over the last 5 s
    later = {r["name"]: r for r in summarise(times, seconds=10.0, since=5.0)}
    assert later["next + submit"]["requests"] == 2
    assert later["next + submit"]["p95"] == 40.0
    assert later["login"]["requests"] == 0
    assert later["next"]["rps"] == pytest.approx(0.2)


@pytest.mark.django_db(transaction=False)
def test_the_database_check_finds_over_assignment_and_lost_judgments() -> None:
    data = setup_data(items=4, annotators=4, reviewers=1)
    task = JudgmentTask.objects.get(pk=data["task"])
    assert (task.overlap, Item.objects.filter(project_id=data["project"]).count()) == (3, 4)
    people = {u.username: u for u in get_user_model().objects.all()}
    accepted = []
    for name in data["annotators"][:3]:
        lease = services.assignment_next_for_user(task=task, user=people[name])
        assert lease is not None
        item = Item.objects.get(pk=lease.item_id)
        services.judgment_submit(task=task, item=item, user=people[name], value="keep")
        accepted.append((name, item.pk))
    assert len({item for _, item in accepted}) == 1  # three people judged the first item
    assert check_database(task_id=task.pk, accepted=accepted) == []

    # a judgment the client saw accepted but the database does not hold
    problems = check_database(task_id=task.pk, accepted=[*accepted, ("annotator03", item.pk)])
    assert problems == [
        f"lost: the judgment of annotator03 on item {item.pk} was accepted, not stored"
    ]

    # a fourth live lease of the same item (written around the queue)
    now = timezone.now()
    Assignment.objects.create(
        task=task,
        item=item,
        user=people["annotator03"],
        leased_at=now,
        expires_at=now + timedelta(minutes=30),
    )
    assert check_database(task_id=task.pk, accepted=accepted) == [
        f"item {item.pk}: 4 live assignments, overlap 3"
    ]
