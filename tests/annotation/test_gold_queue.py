"""Gold items in the queue (issue 26): served at the task's rate on a schedule of each
annotator's own, never to someone who judged them, kept out of outcomes; a paused queue."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotation.judgment_tasks import gold, services
from annotation.judgment_tasks.models import (
    GoldItem,
    Judgment,
    JudgmentTask,
    Outcome,
    QueuePause,
)
from benchmark.exceptions import Forbidden
from benchmark.models import Item, ItemStatus, Membership, Project, Toolset

pytestmark = pytest.mark.django_db


@pytest.fixture
def project() -> Project:
    toolset = Toolset.objects.create(name="mms-gold")
    project = Project.objects.create(name="g", kind="plan", data_format="mms", toolset=toolset)
    for i in range(12):
        Item.objects.create(project=project, external_id=f"d{i}", position=i, query=f"q{i}")
    for i in range(3):
        Item.objects.create(
            project=project,
            external_id=f"v{i}",
            position=100 + i,
            query=f"verified {i}",
            status=ItemStatus.VERIFIED,
        )
    return project


def _user(project: Project, name: str, role: str = "annotator"):  # type: ignore[no-untyped-def]
    user = get_user_model().objects.create_user(name, password="x")
    Membership.objects.create(project=project, user=user, role=role)
    return user


@pytest.fixture
def task(project: Project) -> JudgmentTask:
    task = JudgmentTask.objects.create(
        project=project, name="valid", question="Valid?", scheme="binary", overlap=3,
        consensus="majority", gold_rate=25,
    )  # fmt: skip
    for item in Item.objects.filter(project=project, status=ItemStatus.VERIFIED):
        Outcome.objects.create(task=task, item=item, verdict="accepted", value=1)
        GoldItem.objects.create(task=task, item=item, value=1)
    return task


def _judge_all(task: JudgmentTask, user, value=1, limit=50) -> list[tuple[str, bool]]:  # type: ignore[no-untyped-def]
    """Ask "next" and judge until nothing is left: (external id, served as gold) in order."""
    served = []
    for _ in range(limit):
        lease = services.assignment_next_for_user(task=task, user=user)
        if lease is None:
            break
        services.judgment_submit(task=task, item=lease.item, user=user, value=value)
        served.append((lease.item.external_id, lease.gold))
    return served


def test_schedule_is_pure_and_serves_one_in_period() -> None:
    assert gold.gold_period(25) == 4 and gold.gold_period(10) == 10 and gold.gold_period(50) == 2
    # After a gold item, period - 1 others, then the next.
    due = [gold.gold_due(rate=25, phase=0, since=s, served_before=True) for s in range(5)]
    assert due == [False, False, False, True, True]
    # Before the first: the annotator's phase.
    assert gold.gold_due(rate=25, phase=2, since=1, served_before=False) is False
    assert gold.gold_due(rate=25, phase=2, since=2, served_before=False) is True
    assert gold.gold_due(rate=0, phase=0, since=9, served_before=True) is False
    # Ahead: 10 others left, due after 1 more, then every 3: golds after the 1st, 4th, 7th, 10th.
    assert gold.gold_ahead(rate=25, phase=0, since=2, served_before=True, other_left=10,
                           gold_left=9) == 4  # fmt: skip
    assert gold.gold_ahead(rate=25, phase=0, since=2, served_before=True, other_left=10,
                           gold_left=2) == 2  # fmt: skip
    assert gold.gold_ahead(rate=25, phase=0, since=0, served_before=True, other_left=2,
                           gold_left=3) == 0  # fmt: skip
    # The phase is the same every time for one person, and within the period.
    phases = {gold.gold_phase(task_id=1, user_id=u, period=4) for u in range(40)}
    assert phases <= {0, 1, 2, 3} and len(phases) > 1
    assert gold.gold_phase(task_id=1, user_id=7, period=4) == gold.gold_phase(
        task_id=1, user_id=7, period=4
    )


def test_gold_items_are_mixed_in_at_the_rate_deterministically(
    project: Project, task: JudgmentTask
) -> None:
    alice = _user(project, "alice")
    served = _judge_all(task, alice)
    golds = [i for i, (_, is_gold) in enumerate(served) if is_gold]
    phase = gold.gold_phase(task_id=task.pk, user_id=alice.pk, period=4)
    # First gold after ``phase`` others, then one every 4 items, while gold items last.
    assert golds == [phase, phase + 4, phase + 8]
    assert sorted(ext for ext, is_gold in served if is_gold) == ["v0", "v1", "v2"]
    assert len(served) == 15  # 12 drafts and 3 gold items, each once
    # The same person in a copy of the task meets the same schedule (no randomness).
    twin = JudgmentTask.objects.create(
        project=project, name="valid 2", question="Valid?", scheme="binary", overlap=3,
        consensus="majority", gold_rate=25,
    )  # fmt: skip
    for mark in GoldItem.objects.filter(task=task):
        Outcome.objects.create(task=twin, item=mark.item, verdict="accepted", value=1)
        GoldItem.objects.create(task=twin, item=mark.item, value=1)
    again = _judge_all(twin, alice)
    phase2 = gold.gold_phase(task_id=twin.pk, user_id=alice.pk, period=4)
    assert [i for i, (_, g) in enumerate(again) if g] == [phase2, phase2 + 4, phase2 + 8]


def test_gold_judgments_never_enter_outcomes(project: Project, task: JudgmentTask) -> None:
    people = [_user(project, f"p{i}") for i in range(3)]
    for person in people:
        _judge_all(task, person, value=0)  # everyone says 0, the gold answer is 1
    for mark in GoldItem.objects.filter(task=task):
        outcome = Outcome.objects.get(task=task, item=mark.item)
        assert (outcome.verdict, outcome.value) == ("accepted", 1)
        mark.item.refresh_from_db()
        assert mark.item.status == ItemStatus.VERIFIED
        assert Judgment.with_gold.filter(task=task, item=mark.item, gold=True).count() == 3
        assert not Judgment.objects.filter(task=task, item=mark.item).exists()
    # Gold judgments carry no agreement credit; the others were settled (rejected, all 0).
    assert set(Judgment.with_gold.filter(gold=True).values_list("agrees", flat=True)) == {None}
    assert Outcome.objects.filter(task=task, verdict="rejected").count() == 12


def test_gold_needs_the_rate_and_is_not_served_twice_nor_to_its_judge(
    project: Project, task: JudgmentTask
) -> None:
    task.gold_rate = 0
    task.save()
    bob = _user(project, "bob")
    assert not any(g for _, g in _judge_all(task, bob))
    task.gold_rate = 50
    task.save()
    carol = _user(project, "carol")
    # Carol judged v0 once before it was gold-served (e.g. as a pushed item): never served.
    v0 = Item.objects.get(external_id="v0")
    lease = services._lease(task=task, user=carol, item_id=v0.pk, now=timezone.now())
    services.judgment_submit(task=task, item=v0, user=carol, value=1)
    assert lease.gold is False
    served = _judge_all(task, carol)
    assert [e for e, g in served if g] and "v0" not in [e for e, g in served if g]


def test_a_paused_queue_says_so_and_resumes(project: Project, task: JudgmentTask) -> None:
    dave = _user(project, "dave")
    reviewer = _user(project, "rita", role="reviewer")
    QueuePause.objects.create(task=task, user=dave, paused_by=reviewer, reason="gold 0.40")
    with pytest.raises(Forbidden, match="paused by a reviewer .gold 0.40."):
        services.assignment_next_for_user(task=task, user=dave)
    QueuePause.objects.filter(task=task, user=dave).update(resumed_at=task.created_at)
    assert services.assignment_next_for_user(task=task, user=dave) is not None


def test_the_next_item_guess_names_the_gold_item_the_schedule_serves_next(
    task: JudgmentTask,
) -> None:
    """The prefetch guess (the next item's images) follows the gold schedule: before every
    lease it names exactly the item "next" then serves, gold or not, so a gold item's images
    are fetched ahead like any other's (timing tells them apart no more than the page)."""
    ann = _user(task.project, "ann")
    lease = services.assignment_next_for_user(task=task, user=ann)
    served_gold = 0
    while lease is not None:
        guess = services.item_next_guess(task=task, user=ann, after=lease.item_id)
        services.judgment_submit(task=task, item=lease.item, user=ann, value=1)
        lease = services.assignment_next_for_user(task=task, user=ann)
        if lease is None:
            break
        assert guess == lease.item_id, (guess, lease.item.external_id, lease.gold)
        served_gold += lease.gold
    assert served_gold >= 2
