"""The judgment queue: overlap, leases, blindness of submission, outcomes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotation.judgment_tasks import services
from annotation.judgment_tasks.models import Assignment, Judgment, JudgmentTask, Outcome
from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.models import Item, Membership, Project, Toolset
from review.adjudication import services as review_services

pytestmark = pytest.mark.django_db


@pytest.fixture
def project() -> Project:
    toolset = Toolset.objects.create(name="mms-q")
    project = Project.objects.create(name="q", kind="plan", data_format="mms", toolset=toolset)
    for i in range(3):
        Item.objects.create(project=project, external_id=f"i{i}", position=i, query=f"q{i}")
    return project


def _user(project: Project, name: str, role: str = "annotator"):  # type: ignore[no-untyped-def]
    user = get_user_model().objects.create_user(name, password="x")
    Membership.objects.create(project=project, user=user, role=role)
    return user


@pytest.fixture
def task(project: Project) -> JudgmentTask:
    return JudgmentTask.objects.create(
        project=project,
        name="valid plan",
        question="Does this plan solve the query?",
        scheme="binary",
        overlap=3,
        consensus="all_required",
        required_value=1,
    )


def test_no_item_gets_more_than_k_live_assignments(project: Project, task: JudgmentTask) -> None:
    users = [_user(project, f"a{i}") for i in range(5)]
    got = [services.assignment_next_for_user(task=task, user=u) for u in users]
    first = Item.objects.get(external_id="i0")
    assert [a.item_id for a in got[:3]] == [first.pk] * 3
    assert {a.item_id for a in got[3:]} == {Item.objects.get(external_id="i1").pk}
    assert Assignment.objects.filter(item=first).count() == 3


def test_same_user_gets_their_open_lease_back(project: Project, task: JudgmentTask) -> None:
    user = _user(project, "a")
    one = services.assignment_next_for_user(task=task, user=user)
    two = services.assignment_next_for_user(task=task, user=user)
    assert one.pk == two.pk


def test_expired_lease_returns_item_to_pool(project: Project, task: JudgmentTask) -> None:
    task.overlap = 1
    task.save()
    a, b = _user(project, "a"), _user(project, "b")
    lease = services.assignment_next_for_user(task=task, user=a)
    assert services.assignment_next_for_user(task=task, user=b).item_id != lease.item_id
    Assignment.objects.filter(user=b).delete()
    later = timezone.now() + timedelta(minutes=task.lease_minutes + 1)
    again = services.assignment_next_for_user(task=task, user=b, now=later)
    assert again.item_id == lease.item_id


def test_votes_decide_outcome_and_item_status(project: Project, task: JudgmentTask) -> None:
    users = [_user(project, f"a{i}") for i in range(3)]
    item = Item.objects.get(external_id="i0")
    for user, vote in zip(users, [1, 1, 0], strict=True):
        services.assignment_next_for_user(task=task, user=user)
        services.judgment_submit(task=task, item=item, user=user, value=vote, seconds=4)
    outcome = Outcome.objects.get(task=task, item=item)
    assert outcome.verdict == "disputed"
    credits = Judgment.objects.filter(task=task, item=item).order_by("created_at", "pk")
    assert list(credits.values_list("agrees", flat=True)) == [None, None, None]  # not settled
    item.refresh_from_db()
    assert item.status == "in_review"
    reviewer = _user(project, "r", role="reviewer")
    review_services.outcome_decide(
        task=task, item=item, reviewer=reviewer, verdict="accepted", value=1
    )
    # The judgments' agreement with the decided outcome is stored with it (the team page).
    assert list(credits.values_list("agrees", flat=True)) == [1.0, 1.0, 0.0]
    item.refresh_from_db()
    assert item.status == "verified"
    outcome.refresh_from_db()
    assert outcome.decided_by == reviewer


def test_unanimous_ones_verify_and_zeros_discard(project: Project, task: JudgmentTask) -> None:
    users = [_user(project, f"a{i}") for i in range(3)]
    i0, i1 = Item.objects.get(external_id="i0"), Item.objects.get(external_id="i1")
    for user in users:
        services.assignment_next_for_user(task=task, user=user)
        services.judgment_submit(task=task, item=i0, user=user, value="1")
    for user in users:
        services.assignment_next_for_user(task=task, user=user)
        services.judgment_submit(task=task, item=i1, user=user, value=0)
    i0.refresh_from_db()
    i1.refresh_from_db()
    assert (i0.status, i1.status) == ("verified", "discarded")
    assert i1.discard_reason


def test_submit_twice_is_harmless_and_unassigned_is_refused(
    project: Project, task: JudgmentTask
) -> None:
    a, b = _user(project, "a"), _user(project, "b")
    lease = services.assignment_next_for_user(task=task, user=a)
    first = services.judgment_submit(task=task, item=lease.item, user=a, value=1)
    again = services.judgment_submit(task=task, item=lease.item, user=a, value=0)
    assert again.pk == first.pk and again.value == 1
    assert Judgment.objects.count() == 1
    with pytest.raises(Forbidden):
        services.judgment_submit(task=task, item=lease.item, user=b, value=1)


def test_bad_value_and_non_member_are_refused(project: Project, task: JudgmentTask) -> None:
    a = _user(project, "a")
    lease = services.assignment_next_for_user(task=task, user=a)
    with pytest.raises(ValidationFailed, match="not one of the labels"):
        services.judgment_submit(task=task, item=lease.item, user=a, value=7)
    stranger = get_user_model().objects.create_user("s", password="x")
    with pytest.raises(Forbidden):
        services.assignment_next_for_user(task=task, user=stranger)


def test_expired_lease_submission_conflicts_when_others_filled_it(
    project: Project, task: JudgmentTask
) -> None:
    task.overlap = 1
    task.save()
    a, b = _user(project, "a"), _user(project, "b")
    lease = services.assignment_next_for_user(task=task, user=a)
    Assignment.objects.filter(pk=lease.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    other = services.assignment_next_for_user(task=task, user=b)
    assert other.item_id == lease.item_id
    services.judgment_submit(task=task, item=lease.item, user=b, value=1)
    with pytest.raises(Conflict):
        services.judgment_submit(task=task, item=lease.item, user=a, value=1)


def test_author_does_not_judge_own_item_unless_allowed(
    project: Project, task: JudgmentTask
) -> None:
    a = _user(project, "author")
    Item.objects.filter(external_id="i0").update(provenance="user:author")
    assert services.assignment_next_for_user(task=task, user=a).item.external_id == "i1"


@pytest.mark.parametrize("provenance", ["written by author", "drafted by author with m"])
def test_an_item_written_in_the_app_is_not_offered_to_its_author(
    project: Project, task: JudgmentTask, provenance: str
) -> None:
    """Items created in the app ("written by <user>", benchmark.items) or by the drafting
    page name their author the same way the queue recognises."""
    a = _user(project, "author")
    Item.objects.filter(external_id="i0").update(provenance=provenance)
    assert services.assignment_next_for_user(task=task, user=a).item.external_id == "i1"
