"""Routing by doubt (issue 26): the queue of a task that serves items by doubt offers the most
doubtful first (the least doubtful to an annotator below the reliability threshold), keeps
every guarantee of the position-order queue, and the items' doubts follow the judgments and
the outside signals."""

from __future__ import annotations

import random
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.judgment_tasks import services
from annotation.judgment_tasks.doubt import services as doubt_services
from annotation.judgment_tasks.doubt.models import AnnotatorReliability, ItemDoubt
from annotation.judgment_tasks.models import Assignment, JudgmentTask
from benchmark.metrics.doubt import Evidence, doubt
from benchmark.models import Item, Job
from tests.factories import (
    AnnotatorReliabilityFactory,
    ItemDoubtFactory,
    ItemFactory,
    JudgmentTaskFactory,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def _annotator(project: Any, name: str) -> Any:
    user = UserFactory(username=name)
    MembershipFactory(project=project, user=user, role="annotator")
    return user


@pytest.fixture
def task() -> JudgmentTask:
    project = ProjectFactory()
    for n in range(4):
        ItemFactory(project=project, external_id=f"i{n}", position=n)
    return JudgmentTaskFactory(project=project, overlap=2, serve_by_doubt=True)


def _item(name: str) -> Item:
    return Item.objects.get(external_id=name)


def _served(task: JudgmentTask, user: Any) -> str:
    lease = services.assignment_next_for_user(task=task, user=user)
    assert lease is not None
    return str(lease.item.external_id)


def test_the_most_doubtful_item_is_served_first_ties_by_position(task: JudgmentTask) -> None:
    for name, score in (("i0", 0.1), ("i1", 0.6), ("i2", 0.6), ("i3", 0.3)):
        ItemDoubtFactory(task=task, item=_item(name), score=score)
    served = []
    for n in range(4):  # each annotator takes one item; the overlap (2) leaves places
        user = _annotator(task.project, f"a{n}")
        served.append(_served(task, user))
    assert served == ["i1", "i1", "i2", "i2"]


def test_position_order_when_routing_is_off(task: JudgmentTask) -> None:
    ItemDoubtFactory(task=task, item=_item("i3"), score=0.9)
    task.serve_by_doubt = False
    task.save()
    assert _served(task, _annotator(task.project, "a")) == "i0"


def test_an_item_without_a_score_has_the_prior(task: JudgmentTask) -> None:
    """Nothing known about i2 (no row): it counts the prior, 1 (as doubtful as can be), so it
    comes before every scored item."""
    for name in ("i0", "i1", "i3"):
        ItemDoubtFactory(task=task, item=_item(name), score=0.8)
    assert doubt_services.prior(task) == 1.0
    assert _served(task, _annotator(task.project, "a")) == "i2"


def test_an_annotator_below_the_threshold_gets_the_least_doubtful_first(
    task: JudgmentTask,
) -> None:
    for name, score in (("i0", 0.5), ("i1", 0.9), ("i2", 0.05), ("i3", 0.3)):
        ItemDoubtFactory(task=task, item=_item(name), score=score)
    shaky, steady = _annotator(task.project, "shaky"), _annotator(task.project, "steady")
    AnnotatorReliabilityFactory(task=task, user=shaky, score=0.55)
    AnnotatorReliabilityFactory(task=task, user=steady, score=0.95)
    assert _served(task, shaky) == "i2"
    assert _served(task, steady) == "i1"
    # unknown reliability (no row): not gated
    assert _served(task, _annotator(task.project, "new")) == "i1"
    assert doubt_services.annotator_reliability(task=task, user=shaky) == 0.55


def test_a_threshold_of_zero_turns_the_gate_off(task: JudgmentTask) -> None:
    for name, score in (("i0", 0.5), ("i1", 0.9), ("i2", 0.05), ("i3", 0.3)):
        ItemDoubtFactory(task=task, item=_item(name), score=score)
    task.reliability_threshold = 0
    task.save()
    shaky = _annotator(task.project, "shaky")
    AnnotatorReliabilityFactory(task=task, user=shaky, score=0.0)
    assert _served(task, shaky) == "i1"


def test_overlap_and_blindness_hold_while_routing(task: JudgmentTask) -> None:
    """Every annotator keeps asking: no item gets more than ``overlap`` live assignments, no
    one is served an item twice, and every item is served exactly ``overlap`` times."""
    rng = random.Random(3)
    for n in range(4):
        ItemDoubtFactory(task=task, item=_item(f"i{n}"), score=rng.random())
    users = [_annotator(task.project, f"a{n}") for n in range(5)]
    AnnotatorReliabilityFactory(task=task, user=users[0], score=0.2)
    for _ in range(4):
        for user in users:
            lease = services.assignment_next_for_user(task=task, user=user)
            if lease is not None:
                services.judgment_submit(task=task, item=lease.item, user=user, value=1)
    per_item: dict[int, list[int]] = {}
    for item_id, user_id in Assignment.objects.values_list("item_id", "user_id"):
        per_item.setdefault(item_id, []).append(user_id)
    assert sorted(len(v) for v in per_item.values()) == [2, 2, 2, 2]
    assert all(len(set(v)) == len(v) for v in per_item.values())


def test_a_units_task_is_served_by_doubt_too() -> None:
    project = ProjectFactory()
    item = ItemFactory(project=project)
    task = JudgmentTaskFactory(
        project=project,
        scheme="ordinal",
        labels=[{"value": v, "label": str(v)} for v in (0, 1, 2)],
        overlap=2,
        consensus="majority",
        updates_item_status=False,
        unit_kind="judge-report",
        serve_by_doubt=True,
    )
    from annotation.judgment_tasks.models import TaskUnit

    for n, label in enumerate(("precision", "recall", "chief")):
        TaskUnit.objects.create(task=task, item=item, key=f"response:1:{label}", position=n)
    # Each unit got its row (the prior) as it was listed: the factory scores it.
    for unit, score in (("precision", 0.1), ("recall", 0.2), ("chief", 0.7)):
        ItemDoubtFactory(task=task, item=item, unit=f"response:1:{unit}", score=score)
    lease = services.assignment_next_for_user(task=task, user=_annotator(project, "a"))
    assert lease is not None and lease.unit == "response:1:chief"


def _next_queries(task: JudgmentTask, user: Any) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert services.assignment_next_for_user(task=task, user=user) is not None
    return len(queries)


def test_next_item_runs_no_more_than_one_more_statement(
    task: JudgmentTask, django_assert_max_num_queries: Any
) -> None:
    for n in range(4):
        ItemDoubtFactory(task=task, item=_item(f"i{n}"), score=n / 10)
    task.serve_by_doubt = False
    task.save()
    plain = _next_queries(task, _annotator(task.project, "plain"))
    task.serve_by_doubt = True
    task.save()
    gated = _annotator(task.project, "gated")
    AnnotatorReliabilityFactory(task=task, user=gated, score=0.1)
    assert _next_queries(task, _annotator(task.project, "routed")) <= plain + 1
    with django_assert_max_num_queries(plain + 1):
        services.assignment_next_for_user(task=task, user=gated)


# =========================================================================== doubts kept


def test_a_judgment_updates_its_items_doubt(task: JudgmentTask) -> None:
    """After one judgment the item (0.67) is less in doubt than the unjudged (the prior, 1)
    but still more than the items scored 0.1; after a second, disagreeing one it is back at 1."""
    for name in ("i1", "i2", "i3"):
        ItemDoubtFactory(task=task, item=_item(name), score=0.1)
    a, b = _annotator(task.project, "a"), _annotator(task.project, "b")
    item = _item("i0")
    for user, value in ((a, 1), (b, 0)):
        lease = services.assignment_next_for_user(task=task, user=user)
        assert lease is not None and lease.item_id == item.pk
        services.judgment_submit(task=task, item=item, user=user, value=value)
        row = ItemDoubt.objects.get(task=task, item=item)
        if user == a:
            assert row.score == pytest.approx(doubt(Evidence(votes={1: 1}, n_labels=2)))
    assert row.judgments == 2
    assert row.score == pytest.approx(doubt(Evidence(votes={1: 1, 0: 1}, n_labels=2)))
    assert row.signals["votes"] == {"1": 1.0, "0": 1.0}


def test_an_items_doubt_weighs_votes_by_reliability_and_keeps_outside_signals(
    task: JudgmentTask,
) -> None:
    item = _item("i1")
    a, b = _annotator(task.project, "a"), _annotator(task.project, "b")
    AnnotatorReliabilityFactory(task=task, user=a, score=0.9)
    ItemDoubtFactory(
        task=task,
        item=item,
        score=0.2,
        signals={"judge": 0, "judge_name": "j", "models_wrong": 0.5},
    )
    from tests.factories import JudgmentFactory

    JudgmentFactory(task=task, item=item, user=a, value=1)
    JudgmentFactory(task=task, item=item, user=b, value=1)
    score = doubt_services.item_doubt_update(task=task, item_id=item.pk)
    expected = doubt(Evidence(votes={1: 1.9}, n_labels=2, judge_disagrees=True, models_wrong=0.5))
    assert score == pytest.approx(expected)
    row = ItemDoubt.objects.get(task=task, item=item)
    assert row.signals["judge_disagrees"] is True and row.signals["lead"] == 1


def test_routing_off_keeps_no_doubt_on_judgments(task: JudgmentTask) -> None:
    task.serve_by_doubt = False
    task.save()
    user = _annotator(task.project, "a")
    lease = services.assignment_next_for_user(task=task, user=user)
    assert lease is not None
    services.judgment_submit(task=task, item=lease.item, user=user, value=1)
    assert not ItemDoubt.objects.exists()


def _judged_task(
    skills: dict[str, float], items: int = 12, seed: int = 1
) -> tuple[JudgmentTask, dict[str, Any]]:
    """A binary task whose items every annotator judged, right with their skill."""
    from tests.factories import JudgmentFactory

    rng = random.Random(seed)
    project = ProjectFactory()
    task = JudgmentTaskFactory(
        project=project, overlap=len(skills), serve_by_doubt=True, consensus="majority"
    )
    users = {name: _annotator(project, name) for name in skills}
    for n in range(items):
        item = ItemFactory(project=project, external_id=f"x{n}", position=n)
        truth = n % 2
        for name, skill in skills.items():
            value = truth if rng.random() < skill else 1 - truth
            JudgmentFactory(task=task, item=item, user=users[name], value=value)
    return task, users


def test_recomputing_a_task_estimates_reliability_by_dawid_skene() -> None:
    task, users = _judged_task({"good": 1.0, "fair": 0.95, "coin": 0.5, "bad": 0.0})
    summary = doubt_services.task_doubt_recompute(task=task)
    assert summary["dawid_skene"] is True and summary["judgments"] == 48
    reliability = dict(
        AnnotatorReliability.objects.filter(task=task).values_list("user__username", "score")
    )
    assert reliability["good"] > 0.9 > reliability["coin"]
    assert users["coin"].pk in summary["below_threshold"]
    assert users["good"].pk not in summary["below_threshold"]
    assert ItemDoubt.objects.filter(task=task).count() == 12
    assert all(
        s["posterior"]
        for s in ItemDoubt.objects.filter(task=task).values_list("signals", flat=True)
    )


def test_too_few_judgments_leave_reliability_unknown() -> None:
    task, _ = _judged_task({"a": 1.0, "b": 0.5}, items=3)
    summary = doubt_services.task_doubt_recompute(task=task)
    assert summary["dawid_skene"] is False
    assert not AnnotatorReliability.objects.filter(task=task).exists()
    assert ItemDoubt.objects.filter(task=task).count() == 3


def test_outside_signals_raise_doubt(task: JudgmentTask, monkeypatch: Any) -> None:
    """A judge disagreeing with the people, and models under test failing, raise an item's
    doubt above an equally judged item's."""
    from tests.factories import JudgmentFactory

    i0, i1 = _item("i0"), _item("i1")
    for item in (i0, i1):
        for name in ("a", "b"):
            user = UserFactory(username=f"{name}{item.pk}")
            JudgmentFactory(task=task, item=item, user=user, value=1)
    signals = {str(i1.pk): {"judge": 0, "judge_name": "plan judge", "models_wrong": 1.0}}
    monkeypatch.setattr(doubt_services, "_source_signals", lambda t: signals)
    doubt_services.task_doubt_recompute(task=task)
    d0 = ItemDoubt.objects.get(task=task, item=i0)
    d1 = ItemDoubt.objects.get(task=task, item=i1)
    assert d1.score > d0.score
    assert d1.signals["judge_disagrees"] is True and d1.signals["models_wrong"] == 1.0
    assert d0.signals["judge"] is None


# =========================================================================== settings


def test_turning_routing_on_starts_a_recompute_job(task: JudgmentTask) -> None:
    admin = UserFactory()
    MembershipFactory(project=task.project, user=admin, role="admin")
    task.serve_by_doubt = False
    task.save()
    services.judgment_task_save(project=task.project, user=admin, task=task, serve_by_doubt=True)
    job = Job.objects.get(kind=doubt_services.DOUBT_KIND)
    assert job.params == {"task_id": task.pk}


def test_a_threshold_out_of_range_is_refused(task: JudgmentTask) -> None:
    from benchmark.exceptions import ValidationFailed

    admin = UserFactory()
    MembershipFactory(project=task.project, user=admin, role="admin")
    with pytest.raises(ValidationFailed, match="reliability threshold"):
        services.judgment_task_save(
            project=task.project, user=admin, task=task, reliability_threshold=1.5
        )
