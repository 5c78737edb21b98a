"""Bulk actions on the item list: each action by role, stale selections, the pushed queue
order, the job path for a large selection, all or nothing, and the page's query counts."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.bulk_actions import services
from annotation.discarding.models import DiscardProposal
from annotation.judgment_tasks import services as judging
from annotation.judgment_tasks.models import Assignment, ItemPush, JudgmentTask, Outcome, TaskItem
from benchmark.exceptions import Forbidden, ValidationFailed
from benchmark.models import Item, ItemStatus, ItemStatusChange, Job, JobStatus, Project, Role
from tests.factories import (
    AssignmentFactory,
    ItemFactory,
    ItemPushFactory,
    JudgmentTaskFactory,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def project() -> Project:
    project = ProjectFactory()
    for i in range(5):
        ItemFactory(project=project, external_id=f"b{i}", position=i)
    return project


def member(project: Project, role: str):  # type: ignore[no-untyped-def]
    return MembershipFactory(project=project, role=role).user


@pytest.fixture
def reviewer(project: Project):  # type: ignore[no-untyped-def]
    return member(project, Role.REVIEWER)


@pytest.fixture
def annotator(project: Project):  # type: ignore[no-untyped-def]
    return member(project, Role.ANNOTATOR)


def ids(project: Project, n: int | None = None) -> list[int]:
    pks = list(
        Item.objects.filter(project=project).order_by("position").values_list("pk", flat=True)
    )
    return pks[:n] if n is not None else pks


def start(project: Project, user, action: str, item_ids: list[int], **params):  # type: ignore[no-untyped-def]
    return services.bulk_action_start(
        project=project,
        user=user,
        action=action,
        item_ids=item_ids,
        seen=params.pop("seen", None),
        params=params,
    )


# --------------------------------------------------------------------------- status


@pytest.mark.parametrize("role", [Role.REVIEWER, Role.ADMIN])
def test_reviewer_sets_status_each_change_recorded_and_already_reported(project, role) -> None:  # type: ignore[no-untyped-def]
    reviewer = member(project, role)
    first, *rest = ids(project, 3)
    Item.objects.filter(pk=first).update(status=ItemStatus.VERIFIED)
    result = start(project, reviewer, "status", [first, *rest], status="verified")
    assert result.message == "2 items set to verified; 1 already were"
    assert set(Item.objects.filter(pk__in=rest).values_list("status", flat=True)) == {"verified"}
    changes = ItemStatusChange.objects.filter(item_id__in=rest)
    assert [(c.changed_by_id, c.from_status, c.to_status) for c in changes] == [
        (reviewer.pk, "draft", "verified")
    ] * 2
    assert not ItemStatusChange.objects.filter(item_id=first).exists()


def test_stale_selection_is_skipped_and_reported_not_an_error(project, reviewer) -> None:  # type: ignore[no-untyped-def]
    a, b = ids(project, 2)
    # Someone set b to "in review" after the user saw it as a draft.
    Item.objects.filter(pk=b).update(status=ItemStatus.IN_REVIEW)
    seen = {a: "draft", b: "draft"}
    result = start(project, reviewer, "status", [a, b], status="verified", seen=seen)
    assert result.counts == {"changed": 1, "stale": 1}
    assert "1 skipped: changed by someone else" in result.message
    assert Item.objects.get(pk=b).status == ItemStatus.IN_REVIEW


def test_annotator_may_not_set_status_or_use_tasks(project, annotator) -> None:  # type: ignore[no-untyped-def]
    task = JudgmentTaskFactory(project=project, items_listed=True)
    for action, params in [
        ("status", {"status": "verified"}),
        ("task", {"task": task.pk}),
        ("requeue", {"task": task.pk}),
        ("push", {"task": task.pk, "users": [annotator.pk]}),
    ]:
        with pytest.raises(Forbidden, match="only reviewers and admins"):
            start(project, annotator, action, ids(project, 1), **params)
    assert not ItemStatusChange.objects.exists()


def test_discard_needs_a_reason_and_annotators_propose(project, reviewer, annotator) -> None:  # type: ignore[no-untyped-def]
    a, b, c = ids(project, 3)
    with pytest.raises(ValidationFailed, match="reason"):
        start(project, reviewer, "discard", [a], reason=" ")
    result = start(project, annotator, "discard", [a, b], reason="duplicate")
    assert result.message.startswith("2 discard proposals made")
    assert DiscardProposal.objects.filter(proposed_by=annotator).count() == 2
    assert Item.objects.get(pk=a).status == ItemStatus.DRAFT
    again = start(project, annotator, "discard", [a, c], reason="duplicate")
    assert again.counts == {"proposed": 1, "skipped": 1}

    done = start(project, reviewer, "discard", [a, b], reason="duplicate")
    assert done.message == "2 items set to discarded"
    assert set(Item.objects.filter(pk__in=[a, b]).values_list("discard_reason", flat=True)) == {
        "duplicate"
    }


def test_all_or_nothing_when_a_change_fails(project, reviewer, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    calls = []
    real = services.item_status_set

    def failing(**kwargs):  # type: ignore[no-untyped-def]
        calls.append(kwargs["item"].pk)
        if len(calls) == 3:
            raise RuntimeError("disk full")
        return real(**kwargs)

    monkeypatch.setattr(services, "item_status_set", failing)
    with pytest.raises(RuntimeError):
        start(project, reviewer, "status", ids(project), status="in_review")
    assert not Item.objects.filter(status=ItemStatus.IN_REVIEW).exists()
    assert not ItemStatusChange.objects.exists()


# --------------------------------------------------------------------------- tasks


def test_assign_to_task_gives_a_listed_task_its_items(project, reviewer) -> None:  # type: ignore[no-untyped-def]
    task = JudgmentTaskFactory(project=project, items_listed=True, overlap=1)
    every = JudgmentTaskFactory(project=project)
    with pytest.raises(ValidationFailed, match="takes every item"):
        start(project, reviewer, "task", ids(project, 1), task=every.pk)
    pks = ids(project)
    result = start(project, reviewer, "task", [pks[3], pks[1]], task=task.pk)
    assert result.message == f"2 items added to {task.name!r}"
    assert start(project, reviewer, "task", [pks[1], pks[2]], task=task.pk).counts == {
        "added": 1,
        "already": 1,
    }
    # The queue offers only the listed items, in position order.
    offered = []
    for n in range(4):
        judge = member(project, Role.ANNOTATOR)
        lease = judging.assignment_next_for_user(task=task, user=judge)
        offered.append(lease.item_id if lease else None)
        del n
    assert offered == [pks[1], pks[2], pks[3], None]


def test_requeue_ends_leases_withdraws_pushes_and_skips_settled(project, reviewer) -> None:  # type: ignore[no-untyped-def]
    task = JudgmentTaskFactory(project=project, overlap=1)
    a, b, c, d = ids(project, 4)
    lease = AssignmentFactory(task=task, item_id=a)
    ItemPushFactory(task=task, item_id=b)
    Outcome.objects.create(task=task, item_id=c, verdict="accepted")
    result = start(project, reviewer, "requeue", [a, b, c, d], task=task.pk)
    assert result.counts == {"leases": 1, "pushes": 1, "returned": 2, "in_pool": 1, "settled": 1}
    assert result.message.startswith(f"2 items returned to the pool of {task.name!r}")
    lease.refresh_from_db()
    assert lease.expires_at <= timezone.now()
    assert not ItemPush.objects.exists()
    # Item a is offered again to someone else.
    other = member(project, Role.ANNOTATOR)
    assert judging.assignment_next_for_user(task=task, user=other).item_id == a


# --------------------------------------------------------------------------- push


def test_pushed_items_come_first_and_hold_their_place(project, reviewer) -> None:  # type: ignore[no-untyped-def]
    task = JudgmentTaskFactory(project=project, overlap=1)
    alice, bob = member(project, Role.ANNOTATOR), member(project, Role.ANNOTATOR)
    pks = ids(project)
    result = start(project, reviewer, "push", [pks[3], pks[2]], task=task.pk, users=[alice.pk])
    assert result.counts == {"pushed": 2}
    # Bob pulls: the pushed items are held for Alice (overlap 1), so he gets b0.
    assert judging.assignment_next_for_user(task=task, user=bob).item_id == pks[0]
    # Alice's next item is a pushed one first, before the pull queue's b1.
    first = judging.assignment_next_for_user(task=task, user=alice)
    assert first.item_id == pks[2]
    assert ItemPush.objects.get(item_id=pks[2]).taken_at is not None
    judging.judgment_submit(task=task, item=first.item, user=alice, value=1)
    assert judging.assignment_next_for_user(task=task, user=alice).item_id == pks[3]
    # Pushing to Bob an item Alice holds is full at overlap 1.
    again = start(project, reviewer, "push", [pks[3]], task=task.pk, users=[bob.pk])
    assert again.counts == {"pushed": 0, "full": 1}


def test_push_checks_people_and_task(project, reviewer) -> None:  # type: ignore[no-untyped-def]
    task = JudgmentTaskFactory(project=project)
    outsider = UserFactory()
    with pytest.raises(ValidationFailed, match="users: push only to active members"):
        start(project, reviewer, "push", ids(project, 1), task=task.pk, users=[outsider.pk])
    with pytest.raises(ValidationFailed, match="task: choose"):
        start(project, reviewer, "push", ids(project, 1), users=[reviewer.pk])
    other = JudgmentTaskFactory()
    with pytest.raises(ValidationFailed, match="no judgment task"):
        start(project, reviewer, "push", ids(project, 1), task=other.pk, users=[reviewer.pk])


def test_push_skips_the_author(project, reviewer) -> None:  # type: ignore[no-untyped-def]
    task = JudgmentTaskFactory(project=project, author_may_judge=False)
    writer = member(project, Role.ANNOTATOR)
    a = ids(project, 1)[0]
    Item.objects.filter(pk=a).update(provenance=f"drafted by {writer.username}")
    result = start(project, reviewer, "push", [a], task=task.pk, users=[writer.pk])
    assert result.counts == {"pushed": 0, "author": 1}


# --------------------------------------------------------------------------- jobs


def test_large_selection_runs_as_a_job(
    project, reviewer, monkeypatch, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(services, "BULK_DIRECT_LIMIT", 2)
    monkeypatch.setattr(services, "CHUNK", 2)
    with django_capture_on_commit_callbacks(execute=True):
        result = start(project, reviewer, "status", ids(project), status="in_review")
    assert result.job is not None
    job = Job.objects.get(pk=result.job.pk)
    assert (job.kind, job.status) == ("bulk_action", JobStatus.SUCCEEDED)
    assert (job.progress, job.total) == (5, 5)
    assert job.result["message"] == "5 items set to in review"
    assert Item.objects.filter(status=ItemStatus.IN_REVIEW).count() == 5
    # The job page shows the summary to the user who started it.
    client = Client()
    client.force_login(reviewer)
    page = client.get(reverse("benchmark:job_detail", args=[job.pk]))
    assert "5 items set to in review" in page.content.decode()


# --------------------------------------------------------------------------- views


def post(client: Client, project: Project, data: dict) -> object:
    return client.post(reverse("annotation:bulk_action", args=[project.pk]), data)


def test_view_sets_status_of_rows_selected_by_hand(project, reviewer) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(reviewer)
    a, b = ids(project, 2)
    answer = post(
        client,
        project,
        {"action": "status", "status": "verified", "ids": [f"{a}:draft", f"{b}:draft"]},
    )
    assert answer.status_code == 302
    page = client.get(answer["Location"])
    assert "2 items set to verified" in page.content.decode()
    assert Item.objects.filter(status="verified").count() == 2


def test_view_all_matching_the_filter(project, reviewer) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(reviewer)
    Item.objects.filter(pk__in=ids(project, 2)).update(status=ItemStatus.IN_REVIEW)
    answer = post(
        client,
        project,
        {"action": "status", "status": "verified", "scope": "matching", "filter-status": "draft"},
    )
    assert answer.status_code == 302
    assert answer["Location"].endswith("?status=draft")
    assert Item.objects.filter(status="verified").count() == 3
    assert Item.objects.filter(status="in_review").count() == 2


def test_view_bad_input_rerenders_with_a_message(project, reviewer, annotator) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(reviewer)
    answer = post(client, project, {"action": "status", "status": "verified"})
    assert answer.status_code == 200
    assert "selection: select at least one item" in answer.content.decode()
    answer = post(client, project, {"action": "status", "status": "nope", "ids": ids(project, 1)})
    assert answer.status_code == 200
    assert "data-bulk-errors" in answer.content.decode()
    client.force_login(annotator)
    answer = post(
        client, project, {"action": "status", "status": "verified", "ids": ids(project, 1)}
    )
    assert answer.status_code == 403
    assert "only reviewers and admins" in answer.content.decode()


def test_view_exports_only_the_selection(project, reviewer) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(reviewer)
    a, _, c = ids(project, 3)
    answer = post(
        client, project, {"action": "export", "ids": [f"{a}:draft", str(c)], "scope": "selected"}
    )
    assert answer.status_code == 200
    assert "selection" in answer["Content-Disposition"]
    body = b"".join(answer.streaming_content).decode()  # type: ignore[attr-defined]
    rows = [json.loads(line) for line in io.StringIO(body) if line.strip()]
    assert [r["trace_id"] for r in rows] == ["b0", "b2"]


def test_view_export_refused_to_annotators(project, annotator) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(annotator)
    answer = post(
        client, project, {"action": "export", "ids": ids(project, 1), "scope": "selected"}
    )
    assert answer.status_code == 403


def test_other_projects_items_are_left_out(project, reviewer) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(reviewer)
    foreign = ItemFactory()
    answer = post(client, project, {"action": "status", "status": "verified", "ids": [foreign.pk]})
    assert answer.status_code == 400
    assert "selection: select at least one item" in answer.content.decode()
    assert Item.objects.get(pk=foreign.pk).status == ItemStatus.DRAFT


def test_project_page_queries_do_not_grow_with_items(
    project, reviewer, django_assert_max_num_queries
) -> None:  # type: ignore[no-untyped-def]
    JudgmentTaskFactory(project=project)
    client = Client()
    client.force_login(reviewer)
    url = reverse("benchmark:project_detail", args=[project.pk])
    with django_assert_max_num_queries(14) as few:
        page = client.get(url)
    assert page.content.decode().count('class="bulk-check"') == 5
    for _ in range(40):
        ItemFactory(project=project)
    with django_assert_max_num_queries(len(few.captured_queries)):
        page = client.get(url)
    assert page.content.decode().count('class="bulk-check"') == 45


def test_bulk_action_queries_do_not_grow_with_the_selection(
    project, reviewer, django_assert_max_num_queries
) -> None:  # type: ignore[no-untyped-def]
    task = JudgmentTaskFactory(project=project, items_listed=True)
    client = Client()
    client.force_login(reviewer)
    with django_assert_max_num_queries(40) as few:
        post(
            client,
            project,
            {"action": "push", "task": task.pk, "users": [reviewer.pk], "ids": ids(project, 2)},
        )
    for _ in range(60):
        ItemFactory(project=project)
    with django_assert_max_num_queries(len(few.captured_queries)):
        answer = post(
            client,
            project,
            {"action": "push", "task": task.pk, "users": [reviewer.pk], "scope": "matching"},
        )
    assert answer.status_code == 302
    assert ItemPush.objects.count() == 65
    assert TaskItem.objects.filter(task=task).count() == 65


def test_task_list_shows_pushed_untaken_items(project, reviewer) -> None:  # type: ignore[no-untyped-def]
    task = JudgmentTaskFactory(project=project)
    alice = member(project, Role.ANNOTATOR)
    a = ids(project, 1)[0]
    ItemPushFactory(task=task, item_id=a, user=alice)
    ItemPushFactory(
        task=task, item=ItemFactory(project=project), user=alice, taken_at=timezone.now()
    )
    client = Client()
    client.force_login(reviewer)
    html = client.get(reverse("annotation:task_list", args=[project.pk])).content.decode()
    assert "pushed, not yet taken (1)" in html
    assert alice.username in html


def test_expired_pushed_lease_is_not_pushed_again(project, reviewer) -> None:  # type: ignore[no-untyped-def]
    task = JudgmentTaskFactory(project=project, overlap=2)
    alice = member(project, Role.ANNOTATOR)
    a = ids(project, 1)[0]
    start(project, reviewer, "push", [a], task=task.pk, users=[alice.pk])
    lease = judging.assignment_next_for_user(task=task, user=alice)
    assert lease.item_id == a
    Assignment.objects.filter(pk=lease.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    # The push was taken: Alice's next item comes from the pull queue (her own item again,
    # first in position order, since nobody else holds it).
    assert not ItemPush.objects.filter(taken_at__isnull=True).exists()
    assert judging.assignment_next_for_user(task=task, user=alice).item_id == a
    assert JudgmentTask.objects.get(pk=task.pk).pushes.count() == 1


def test_annotators_are_offered_proposing_discards_only(project, annotator, reviewer) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(annotator)
    html = client.get(reverse("benchmark:project_detail", args=[project.pk])).content.decode()
    assert '<option value="discard">Propose discarding</option>' in html
    assert '<option value="status">' not in html
    client.force_login(reviewer)
    html = client.get(reverse("benchmark:project_detail", args=[project.pk])).content.decode()
    assert '<option value="status">Set status</option>' in html
