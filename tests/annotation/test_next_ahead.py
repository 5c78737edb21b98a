"""Leasing the next item ahead (issue 25, finding 3): while an item is judged under a live
lease, the judge page leases the one after it and holds its judging area, shown at once on
submit while the judgment is sent in the background. The lease ahead goes through the same
queue as "next" (overlap, pushes, gold schedule, doubt routing), counts toward the overlap and
expires like any lease; at most one item is held ahead. The browser side is
tests/e2e/test_next_ahead_browser.py."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.judgment_tasks import services
from annotation.judgment_tasks.models import (
    Assignment,
    AssignmentStatus,
    GoldItem,
    JudgmentTask,
    Outcome,
    TaskUnit,
)
from benchmark.exceptions import ValidationFailed
from benchmark.models import Item, ItemStatus, Membership, Project, Toolset
from tests.factories import ItemDoubtFactory, ItemPushFactory

pytestmark = pytest.mark.django_db

HX = {"HX-Request": "true", "HX-Target": "judging"}


@pytest.fixture
def project() -> Project:
    toolset = Toolset.objects.create(name="mms-ahead")
    project = Project.objects.create(name="a", kind="plan", data_format="mms", toolset=toolset)
    for i in range(4):
        Item.objects.create(project=project, external_id=f"i{i}", position=i, query=f"q{i}")
    return project


def _user(project: Project, name: str) -> Any:
    user = get_user_model().objects.create_user(name, password="x")
    Membership.objects.create(project=project, user=user, role="annotator")
    return user


def _task(project: Project, **fields: Any) -> JudgmentTask:
    values: dict[str, Any] = {
        "project": project, "name": "valid", "question": "Valid?", "scheme": "binary",
        "overlap": 1, "consensus": "majority",
    }  # fmt: skip
    values.update(fields)
    return JudgmentTask.objects.create(**values)


def _ahead(task: JudgmentTask, user: Any, lease: Assignment, **kw: Any) -> Assignment | None:
    return services.assignment_next_for_user(
        task=task, user=user, ahead_of=(lease.item_id, lease.unit), **kw
    )


def test_the_lease_ahead_is_the_next_item_and_only_one(project: Project) -> None:
    task = _task(project)
    user = _user(project, "a")
    current = services.assignment_next_for_user(task=task, user=user)
    assert current is not None and current.item.external_id == "i0"
    ahead = _ahead(task, user, current)
    assert ahead is not None and ahead.item.external_id == "i1"
    # Asked again (a reload, another tab): the same lease, not a third one.
    assert _ahead(task, user, current).pk == ahead.pk  # type: ignore[union-attr]
    assert Assignment.objects.filter(user=user, status=AssignmentStatus.ACTIVE).count() == 2
    # Once the current item is judged, "next" (the usual way) serves the item held ahead.
    services.judgment_submit(task=task, item=current.item, user=user, value=1)
    after = services.assignment_next_for_user(task=task, user=user)
    assert after is not None and after.pk == ahead.pk
    # And the item after that one is leased ahead of it.
    assert _ahead(task, user, after).item.external_id == "i2"  # type: ignore[union-attr]


def test_nothing_is_leased_ahead_of_an_item_not_leased_to_the_user(project: Project) -> None:
    task = _task(project)
    user, other = _user(project, "a"), _user(project, "b")
    theirs = services.assignment_next_for_user(task=task, user=other)
    assert theirs is not None
    with pytest.raises(ValidationFailed, match="no open lease of item"):
        _ahead(task, user, theirs)
    assert not Assignment.objects.filter(user=user).exists()


def test_the_lease_ahead_counts_toward_the_overlap_and_expires(project: Project) -> None:
    Item.objects.filter(external_id__in=["i2", "i3"]).delete()
    task = _task(project, overlap=1, lease_minutes=30)
    first, second = _user(project, "a"), _user(project, "b")
    current = services.assignment_next_for_user(task=task, user=first)
    assert current is not None
    assert _ahead(task, first, current) is not None
    # Both items hold their one place: nothing for the second annotator.
    assert services.assignment_next_for_user(task=task, user=second) is None
    # The lease ahead expires like any other: its place goes to the next who asks.
    later = timezone.now() + timedelta(minutes=31)
    got = services.assignment_next_for_user(task=task, user=second, now=later)
    assert got is not None and got.item.external_id in ("i0", "i1")


def test_nothing_left_ahead(project: Project) -> None:
    Item.objects.exclude(external_id="i0").delete()
    task = _task(project)
    user = _user(project, "a")
    current = services.assignment_next_for_user(task=task, user=user)
    assert current is not None
    assert _ahead(task, user, current) is None
    assert Assignment.objects.filter(user=user).count() == 1


def test_an_item_pushed_to_the_user_is_leased_ahead_first(project: Project) -> None:
    task = _task(project)
    user = _user(project, "a")
    current = services.assignment_next_for_user(task=task, user=user)
    assert current is not None
    ItemPushFactory(task=task, item=Item.objects.get(external_id="i3"), user=user)
    ahead = _ahead(task, user, current)
    assert ahead is not None and ahead.item.external_id == "i3"


def test_routing_by_doubt_leases_ahead_in_doubt_order(project: Project) -> None:
    task = _task(project, serve_by_doubt=True)
    for external_id, score in (("i0", 0.1), ("i1", 0.2), ("i2", 0.9), ("i3", 0.5)):
        ItemDoubtFactory(task=task, item=Item.objects.get(external_id=external_id), score=score)
    user = _user(project, "a")
    current = services.assignment_next_for_user(task=task, user=user)
    assert current is not None and current.item.external_id == "i2"
    ahead = _ahead(task, user, current)
    assert ahead is not None and ahead.item.external_id == "i3"


def test_gold_items_come_at_the_same_places_with_a_lease_ahead(project: Project) -> None:
    """The gold schedule served ahead is the one "next" serves once the current item is
    judged: the same items in the same order, gold or not."""
    for i in range(4, 10):
        Item.objects.create(project=project, external_id=f"i{i}", position=i, query=f"q{i}")
    for i in range(2):
        Item.objects.create(project=project, external_id=f"v{i}", position=100 + i,
                            query="verified", status=ItemStatus.VERIFIED)  # fmt: skip
    task = _task(project, overlap=3, gold_rate=25)
    for item in Item.objects.filter(project=project, status=ItemStatus.VERIFIED):
        Outcome.objects.create(task=task, item=item, verdict="accepted", value=1)
        GoldItem.objects.create(task=task, item=item, value=1)

    def served(user: Any, ahead: bool) -> list[tuple[str, bool]]:
        order: list[tuple[str, bool]] = []
        lease = services.assignment_next_for_user(task=task, user=user)
        while lease is not None:
            held = _ahead(task, user, lease) if ahead else None
            services.judgment_submit(task=task, item=lease.item, user=user, value=1)
            order.append((lease.item.external_id, lease.gold))
            lease = services.assignment_next_for_user(task=task, user=user)
            assert held is None or (lease is not None and lease.pk == held.pk)
        return order

    # Leased ahead or not, the gold items come where the schedule puts them: after the
    # annotator's phase of other items, then one in every period of 4 (gold_period(25)).
    from annotation.judgment_tasks import gold as gold_schedule

    for name, ahead in (("plain", False), ("ahead", True)):
        user = _user(project, name)
        order = served(user, ahead)
        assert len(order) == 12
        phase = gold_schedule.gold_phase(task_id=task.pk, user_id=user.pk, period=4)
        assert [n for n, (_, gold) in enumerate(order) if gold] == [phase, phase + 4], order
        # The other items in queue order, as "next" serves them.
        assert [e for e, gold in order if not gold] == [f"i{i}" for i in range(10)]


def test_units_are_leased_ahead_too(project: Project) -> None:
    item = Item.objects.get(external_id="i0")
    task = _task(
        project, scheme="ordinal", labels=[{"value": v, "label": str(v)} for v in (0, 1, 2)],
        overlap=2, updates_item_status=False, unit_kind="judge-report",
    )  # fmt: skip
    for n, label in enumerate(("precision", "recall", "chief")):
        TaskUnit.objects.create(task=task, item=item, key=f"response:1:{label}", position=n)
    user = _user(project, "a")
    current = services.assignment_next_for_user(task=task, user=user)
    assert current is not None and current.unit == "response:1:precision"
    ahead = _ahead(task, user, current)
    assert ahead is not None and ahead.unit == "response:1:recall"


# ----------------------------------------------------------------------------- the views


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _ahead_url(task: JudgmentTask, after: Any) -> str:
    return reverse("annotation:task_next_ahead", args=[task.pk]) + f"?after={after}"


def test_the_ahead_endpoint_answers_the_next_items_judging_area(
    project: Project, django_assert_max_num_queries: Any
) -> None:
    task = _task(project)
    user = _user(project, "a")
    client = _client(user)
    client.post(reverse("annotation:task_next", args=[task.pk]))
    current = Assignment.objects.get(user=user)
    with django_assert_max_num_queries(30):
        answer = client.post(_ahead_url(task, current.item_id), headers=HX)
    assert answer.status_code == 200
    ahead = Assignment.objects.exclude(pk=current.pk).get(user=user)
    assert ahead.item.external_id == "i1"
    assert answer["HX-Push-Url"] == reverse("annotation:judge", args=[task.pk, ahead.item_id])
    body = answer.content.decode()
    assert 'id="judging"' in body and f'data-item-key="{ahead.item_id}"' in body
    assert 'data-lease-total="1800"' in body and "data-lease-left=" in body
    assert "<html" not in body  # the area alone, held hidden by the page
    # The page of the current item names this URL.
    page = client.get(reverse("annotation:judge", args=[task.pk, current.item_id])).content
    assert f'data-ahead-url="{_ahead_url(task, current.item_id)}"' in page.decode()


def test_the_ahead_endpoint_says_what_is_wrong(project: Project) -> None:
    task = _task(project)
    user = _user(project, "a")
    client = _client(user)
    bad = client.post(_ahead_url(task, "x"), headers=HX)
    assert bad.status_code == 400 and b"after: give the id" in bad.content
    not_mine = client.post(_ahead_url(task, Item.objects.get(external_id="i3").pk), headers=HX)
    assert not_mine.status_code == 400 and b"no open lease of item" in not_mine.content
    assert not Assignment.objects.exists()
    Item.objects.exclude(external_id="i0").delete()
    client.post(reverse("annotation:task_next", args=[task.pk]))
    current = Assignment.objects.get(user=user)
    assert (
        client.post(_ahead_url(task, current.item_id), headers=HX).status_code == 204
    )  # none left


def test_a_judgment_sent_in_the_background_answers_small(
    project: Project, django_assert_max_num_queries: Any
) -> None:
    task = _task(project, overlap=2)  # the outcome stays pending: the judgment may be undone
    user = _user(project, "a")
    client = _client(user)
    client.post(reverse("annotation:task_next", args=[task.pk]))
    current = Assignment.objects.get(user=user)
    client.post(_ahead_url(task, current.item_id), headers=HX)
    ahead = Assignment.objects.exclude(pk=current.pk).get(user=user)
    url = reverse("annotation:judge", args=[task.pk, current.item_id])
    ahead_headers = {**HX, "X-Benchwright-Ahead": str(ahead.item_id)}
    # The save, the progress line, and the next lease ahead with its judging area: one
    # request where the page would otherwise make two.
    with django_assert_max_num_queries(36):
        answer = client.post(url, {"value": "1", "seconds": "2.5"}, headers=ahead_headers)
    assert answer.status_code == 200 and answer["X-Judgment-Saved"] == "1"
    body = answer.content.decode()
    # The progress line and the undo paragraph of the item now shown, nothing else.
    assert 'id="judge-progress"' in body and 'id="undo-line"' in body and 'id="keys-undo"' in body
    assert 'Judged <span class="mono">i0</span>' in body and "undo the judgment of i0" in body
    assert "Item 2 of 4" in body
    # Never the area the person works in now; the item after it, leased ahead, to hold.
    shown, held = body.split('<template id="ahead-next">')
    assert 'id="judging"' not in shown and 'id="judgment"' not in shown
    current.refresh_from_db()
    assert current.status == AssignmentStatus.SUBMITTED
    ahead.refresh_from_db()
    assert ahead.status == AssignmentStatus.ACTIVE  # still held, now on screen
    after = Assignment.objects.get(
        user=user, status=AssignmentStatus.ACTIVE, item__external_id="i2"
    )
    assert f'data-item-key="{after.item_id}"' in held and "data-lease-left=" in held
    assert answer["HX-Push-Url"] == reverse("annotation:judge", args=[task.pk, after.item_id])
    assert Assignment.objects.filter(user=user, status=AssignmentStatus.ACTIVE).count() == 2


def test_a_refused_background_judgment_answers_the_item_with_its_errors(project: Project) -> None:
    task = _task(project)
    user = _user(project, "a")
    client = _client(user)
    client.post(reverse("annotation:task_next", args=[task.pk]))
    current = Assignment.objects.get(user=user)
    client.post(_ahead_url(task, current.item_id), headers=HX)
    ahead = Assignment.objects.exclude(pk=current.pk).get(user=user)
    url = reverse("annotation:judge", args=[task.pk, current.item_id])
    ahead_headers = {**HX, "X-Benchwright-Ahead": str(ahead.item_id)}
    invalid = client.post(url, {"value": "7", "comment": "kept"}, headers=ahead_headers)
    assert invalid.status_code == 400
    body = invalid.content.decode()
    assert f'data-item-key="{current.item_id}"' in body and "kept" in body
    # The lease ran out and someone else took the place: 403 or 409, never a silent loss.
    Assignment.objects.filter(pk=current.pk).update(expires_at=timezone.now() - timedelta(1))
    taken = services.assignment_next_for_user(task=task, user=_user(project, "b"))
    assert taken is not None and taken.item_id == current.item_id
    refused = client.post(url, {"value": "1"}, headers=ahead_headers)
    assert refused.status_code in (403, 409)
    assert "X-Judgment-Saved" not in refused
