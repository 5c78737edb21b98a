"""Leasing items ahead (issue 25, finding 3): while an item is judged under a live lease, the
judge page leases the items after it (one request fills its queue) and holds their judging areas,
each shown at once on a submit while the judgment is sent in the background. A lease ahead
goes through the same queue as "next" (overlap, pushes, gold schedule, doubt routing), counts
toward the overlap and expires like any lease; at most ``services.AHEAD_MAX`` are held ahead of
the item judged now. The browser side is tests/e2e/test_next_ahead_browser.py."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction
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


def test_the_lease_ahead_is_the_next_item(project: Project) -> None:
    task = _task(project)
    user = _user(project, "a")
    current = services.assignment_next_for_user(task=task, user=user)
    assert current is not None and current.item.external_id == "i0"
    ahead = _ahead(task, user, current)
    assert ahead is not None and ahead.item.external_id == "i1"
    # Asked again naming nothing held (a reload, another tab): the same lease, not a third one.
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


# ----------------------------------------------------------------------------- the queue


def _more(project: Project, upto: int) -> None:
    for i in range(4, upto):
        Item.objects.create(project=project, external_id=f"i{i}", position=i, query=f"q{i}")


def _fill(task: JudgmentTask, user: Any, current: Assignment) -> list[Assignment]:
    """The leases the judge page takes ahead of ``current``, one request at a time, each
    naming those held before it, until the service has no more (or refuses one more)."""
    held: list[Assignment] = []
    while len(held) < services.AHEAD_MAX:
        keys = [services.page_key(a.item_id, a.unit) for a in held]
        lease = _ahead(task, user, current, held=keys)
        if lease is None:
            break
        held.append(lease)
    return held


def _open(user: Any) -> list[str]:
    rows = Assignment.objects.filter(user=user, status=AssignmentStatus.ACTIVE)
    return sorted(rows.values_list("item__external_id", flat=True))


def test_the_queue_holds_up_to_ahead_max_in_the_tasks_order(project: Project) -> None:
    _more(project, 9)
    task = _task(project)
    user = _user(project, "a")
    current = services.assignment_next_for_user(task=task, user=user)
    assert current is not None
    held = _fill(task, user, current)
    assert 2 <= services.AHEAD_MAX <= 7  # 9 items: the one judged, those held, one after
    assert [a.item.external_id for a in held] == [f"i{n}" for n in range(1, 1 + services.AHEAD_MAX)]
    # One more than allowed: a clear refusal, nothing leased.
    keys = [str(a.item_id) for a in held]
    with pytest.raises(ValidationFailed, match=f"at most {services.AHEAD_MAX} are leased ahead"):
        _ahead(task, user, current, held=keys)
    assert len(_open(user)) == 1 + services.AHEAD_MAX
    # The items held ahead are the ones "next" serves, in order, once each is judged.
    lease: Assignment | None = current
    served = []
    while lease is not None and len(served) < 1 + services.AHEAD_MAX:
        services.judgment_submit(task=task, item=lease.item, user=user, value=1)
        lease = services.assignment_next_for_user(task=task, user=user)
        assert lease is not None
        served.append(lease.pk)
    assert served[:-1] == [a.pk for a in held]
    assert lease is not None and lease.item.external_id == f"i{1 + services.AHEAD_MAX}"


def test_a_reloaded_page_gets_its_queue_back_without_new_leases(project: Project) -> None:
    _more(project, 9)
    task = _task(project)
    user = _user(project, "a")
    current = services.assignment_next_for_user(task=task, user=user)
    assert current is not None
    held = _fill(task, user, current)
    before = Assignment.objects.count()
    # The page reloaded holds nothing: asked again, it is given the same leases in order.
    assert [a.pk for a in _fill(task, user, current)] == [a.pk for a in held]
    assert Assignment.objects.count() == before
    # Naming only some of them (a page that dropped the first): the first one not named.
    again = _ahead(task, user, current, held=[str(held[1].item_id)])
    assert again is not None and again.pk == held[0].pk


def test_an_item_whose_judgment_is_being_sent_is_not_leased_again(project: Project) -> None:
    """The page asks for the next item ahead as soon as it shows one, while the judgment of
    the item before may still be on its way (its lease still open): that item is neither
    answered nor leased again, and the gold schedule counts it."""
    task = _task(project, overlap=2)
    user = _user(project, "a")
    first = services.assignment_next_for_user(task=task, user=user)
    assert first is not None
    shown = _ahead(task, user, first)
    assert shown is not None and shown.item.external_id == "i1"
    # i1 is on screen, i0's save not answered yet: the next ahead is i2, not i0.
    nxt = _ahead(task, user, shown)
    assert nxt is not None and nxt.item.external_id == "i2"
    assert _open(user) == ["i0", "i1", "i2"]
    # i0 saved meanwhile: the queue goes on after i2.
    services.judgment_submit(task=task, item=first.item, user=user, value=1)
    after = _ahead(task, user, shown, held=[str(nxt.item_id)])
    assert after is not None and after.item.external_id == "i3"


def test_two_annotators_never_share_an_item_ahead(project: Project) -> None:
    total = 2 * (1 + services.AHEAD_MAX) + 1  # one left for a third
    _more(project, total)
    task = _task(project, overlap=1)
    a, b = _user(project, "a"), _user(project, "b")
    mine = services.assignment_next_for_user(task=task, user=a)
    theirs = services.assignment_next_for_user(task=task, user=b)
    assert mine is not None and theirs is not None
    leases = [mine, theirs, *_fill(task, a, mine), *_fill(task, b, theirs)]
    items = [lease.item_id for lease in leases]
    assert len(items) == 2 * (1 + services.AHEAD_MAX)
    assert len(set(items)) == len(items)  # no item leased twice
    # Overlap 1: every item is taken by one of them; nothing is left for a third.
    c = _user(project, "c")
    left = total - len(items)
    got = [services.assignment_next_for_user(task=task, user=c) for _ in range(1)]
    assert (got[0] is None) == (left == 0)


def test_leases_ahead_expire_like_any_other(project: Project) -> None:
    _more(project, 6)
    task = _task(project, overlap=1, lease_minutes=30)
    a, b = _user(project, "a"), _user(project, "b")
    current = services.assignment_next_for_user(task=task, user=a)
    assert current is not None
    held = _fill(task, a, current)
    later = timezone.now() + timedelta(minutes=31)
    # Expired, their places go to the next who asks, in the task's order.
    got = services.assignment_next_for_user(task=task, user=b, now=later)
    assert got is not None and got.item.external_id == "i0"
    nxt = services.assignment_next_for_user(task=task, user=b, now=later)
    assert nxt is not None and nxt.pk == got.pk  # b's own open lease
    more = services.assignment_next_for_user(
        task=task, user=b, now=later, ahead_of=(got.item_id, "")
    )
    assert more is not None and more.item_id == held[0].item_id
    # A's queue is gone: nothing is leased ahead of an expired lease.
    with pytest.raises(ValidationFailed, match="no open lease"):
        _ahead(task, a, current, now=later)


def test_gold_units_come_at_the_same_places_with_a_full_queue(project: Project) -> None:
    """A task with units, some of them gold: served through a full queue ahead, the units come
    in the same order, gold ones at the same places, as "next" serves them one by one."""
    task = _task(
        project, scheme="ordinal", labels=[{"value": v, "label": str(v)} for v in (0, 1, 2)],
        overlap=3, updates_item_status=False, unit_kind="judge-report", gold_rate=25,
    )  # fmt: skip
    position = 0
    for item in Item.objects.filter(project=project).order_by("position"):
        for label in ("precision", "recall", "chief"):
            TaskUnit.objects.create(
                task=task, item=item, key=f"response:{item.pk}:{label}", position=position
            )
            position += 1
    settled = Item.objects.get(project=project, external_id="i3")
    for label in ("precision", "recall"):
        key = f"response:{settled.pk}:{label}"
        Outcome.objects.create(task=task, item=settled, unit=key, verdict="accepted", value=2)
        GoldItem.objects.create(task=task, item=settled, unit=key, value=2)

    def served(user: Any, ahead: bool) -> list[tuple[str, bool]]:
        order: list[tuple[str, bool]] = []
        lease = services.assignment_next_for_user(task=task, user=user)
        queue: list[Assignment] = []
        while lease is not None:
            if ahead:  # the page tops its queue up as soon as an item is shown
                keys = [a.unit for a in queue]
                while len(queue) < services.AHEAD_MAX:
                    more = _ahead(task, user, lease, held=keys)
                    if more is None:
                        break
                    queue.append(more)
                    keys.append(more.unit)
            services.judgment_submit(
                task=task, item=lease.item, user=user, unit=lease.unit, value=2
            )
            order.append((lease.unit, lease.gold))
            lease = services.assignment_next_for_user(task=task, user=user)
            if queue:
                assert lease is not None and lease.pk == queue.pop(0).pk
        return order

    from annotation.judgment_tasks import gold as gold_schedule

    orders = {}
    for name in ("plain", "ahead"):
        user = _user(project, name)
        order = orders[name] = served(user, name == "ahead")
        assert len(order) == 12
        # The gold units where the schedule puts them: after the annotator's phase of other
        # units, then one in every period of 4 (gold_period(25)).
        phase = gold_schedule.gold_phase(task_id=task.pk, user_id=user.pk, period=4)
        assert [n for n, (_, g) in enumerate(order) if g] == [phase, phase + 4], order
    # The other units in the task's order, with a queue ahead or not.
    assert [u for u, g in orders["ahead"] if not g] == [u for u, g in orders["plain"] if not g]


# ------------------------------------------------------- one request fills the whole queue


def _fill_at_once(
    task: JudgmentTask, user: Any, current: Assignment, held: list[str] | None = None
) -> list[Assignment]:
    return services.assignments_ahead_for_user(
        task=task, user=user, ahead_of=(current.item_id, current.unit), held=held or []
    )


def test_one_request_fills_the_queue_in_the_tasks_order(project: Project) -> None:
    _more(project, 9)
    task = _task(project)
    user = _user(project, "a")
    current = services.assignment_next_for_user(task=task, user=user)
    assert current is not None
    filled = _fill_at_once(task, user, current)
    assert [a.item.external_id for a in filled] == [
        f"i{n}" for n in range(1, 1 + services.AHEAD_MAX)
    ]
    assert len(_open(user)) == 1 + services.AHEAD_MAX
    # Asked again holding nothing (a reloaded page): the same leases in order, none new.
    assert [a.pk for a in _fill_at_once(task, user, current)] == [a.pk for a in filled]
    assert len(_open(user)) == 1 + services.AHEAD_MAX


def test_with_two_held_one_more_is_leased_and_with_three_none(project: Project) -> None:
    _more(project, 9)
    task = _task(project)
    user = _user(project, "a")
    current = services.assignment_next_for_user(task=task, user=user)
    assert current is not None
    first = _fill(task, user, current)[: services.AHEAD_MAX - 1]
    Assignment.objects.filter(user=user).exclude(
        pk__in=[current.pk, *[a.pk for a in first]]
    ).delete()  # the page holds AHEAD_MAX - 1
    keys = [str(a.item_id) for a in first]
    more = _fill_at_once(task, user, current, keys)
    assert [a.item.external_id for a in more] == [f"i{services.AHEAD_MAX}"]
    assert len(_open(user)) == 1 + services.AHEAD_MAX
    keys.append(str(more[0].item_id))
    with pytest.raises(ValidationFailed, match=f"at most {services.AHEAD_MAX} are leased ahead"):
        _fill_at_once(task, user, current, keys)
    assert len(_open(user)) == 1 + services.AHEAD_MAX  # nothing leased by the refusal


def test_two_annotators_filling_at_once_never_share(project: Project) -> None:
    total = 1 + services.AHEAD_MAX + 3  # a takes 1 + AHEAD_MAX, b gets the 3 left
    _more(project, total)
    task = _task(project, overlap=1)
    a, b = _user(project, "a"), _user(project, "b")
    mine = services.assignment_next_for_user(task=task, user=a)
    assert mine is not None
    ours = _fill_at_once(task, a, mine)
    theirs_now = services.assignment_next_for_user(task=task, user=b)
    assert theirs_now is not None
    theirs = _fill_at_once(task, b, theirs_now)
    items = [x.item_id for x in [mine, *ours, theirs_now, *theirs]]
    assert len(set(items)) == len(items) == total  # no item leased twice
    assert len(ours) == services.AHEAD_MAX and len(theirs) == 2  # b's queue: what is left
    assert _fill_at_once(task, b, theirs_now, [str(x.item_id) for x in theirs]) == []


def test_filling_at_once_keeps_the_gold_schedule(project: Project) -> None:
    """The queue filled in one request holds the leases (gold or not, in order) that one
    request per lease takes."""
    _more(project, 10)
    for i in range(2):
        Item.objects.create(project=project, external_id=f"v{i}", position=100 + i,
                            query="verified", status=ItemStatus.VERIFIED)  # fmt: skip
    task = _task(project, overlap=3, gold_rate=25)
    for item in Item.objects.filter(project=project, status=ItemStatus.VERIFIED):
        Outcome.objects.create(task=task, item=item, verdict="accepted", value=1)
        GoldItem.objects.create(task=task, item=item, value=1)
    user = _user(project, "a")
    orders = []
    for fill in (_fill, _fill_at_once):
        with transaction.atomic():
            current = services.assignment_next_for_user(task=task, user=user)
            assert current is not None
            orders.append(
                [(a.item.external_id, a.gold) for a in [current, *fill(task, user, current)]]
            )
            transaction.set_rollback(True)
    assert len(orders[0]) == 1 + services.AHEAD_MAX
    assert any(is_gold for _, is_gold in orders[0])  # a gold item within the first period
    assert orders[0] == orders[1]


# ----------------------------------------------------------------------------- the views


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _ahead_url(task: JudgmentTask, after: Any) -> str:
    return reverse("annotation:task_next_ahead", args=[task.pk]) + f"?after={after}"


#: The statements of one request that leases AHEAD_MAX (5) items ahead and answers their
#: judging areas (one leasing a single item takes 22; 5 x 22 = 110): the session, user and
#: task, the user's open leases (read and locked), pushes, gate and pause (one statement), the
#: savepoint around them, and the toolset the plans are checked against are read once (12);
#: each new lease (4: the candidate, its places counted again, the lease, its push taken) and
#: each area (4: the item, its plans, its progress line, the judgments shown) cost their own.
FILL_QUERIES = 12 + 8 * services.AHEAD_MAX


def _areas(answer: Any) -> list[tuple[str, str]]:
    """(URL, item key) of each judging area a fill answers, in order."""
    body = answer.content.decode()
    found = re.findall(r'<template data-url="([^"]+)">.*?data-item-key="([^"]+)"', body, re.S)
    assert body.count('id="judging"') == len(found)
    return found


def test_the_ahead_endpoint_answers_the_next_items_judging_areas(
    project: Project, django_assert_num_queries: Any
) -> None:
    _more(project, 1 + services.AHEAD_MAX)  # the one judged and a whole queue
    task = _task(project)
    user = _user(project, "a")
    client = _client(user)
    client.post(reverse("annotation:task_next", args=[task.pk]))
    current = Assignment.objects.get(user=user)
    with django_assert_num_queries(FILL_QUERIES):
        answer = client.post(_ahead_url(task, current.item_id), headers=HX)
    assert answer.status_code == 200
    aheads = list(Assignment.objects.exclude(pk=current.pk).filter(user=user).order_by("pk"))
    assert [a.item.external_id for a in aheads] == [
        f"i{n}" for n in range(1, 1 + services.AHEAD_MAX)
    ]
    assert _areas(answer) == [
        (reverse("annotation:judge", args=[task.pk, a.item_id]), str(a.item_id)) for a in aheads
    ]
    body = answer.content.decode()
    assert body.count('data-lease-total="1800"') == services.AHEAD_MAX
    assert "data-lease-left=" in body
    assert "<html" not in body  # the areas alone, held hidden by the page
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


def test_the_ahead_endpoint_leases_what_is_missing_and_refuses_one_more(
    project: Project, django_assert_max_num_queries: Any
) -> None:
    _more(project, 9)
    task = _task(project)
    user = _user(project, "a")
    client = _client(user)
    client.post(reverse("annotation:task_next", args=[task.pk]))
    current = Assignment.objects.get(user=user)
    first = _fill(task, user, current)
    Assignment.objects.filter(pk__in=[a.pk for a in first[1:]]).delete()
    held = [str(first[0].item_id)]  # the page holds one: the request leases the rest
    url = _ahead_url(task, current.item_id) + "".join(f"&held={key}" for key in held)
    with django_assert_max_num_queries(FILL_QUERIES):
        answer = client.post(url, headers=HX)
    assert answer.status_code == 200, answer.content
    keys = [key for _, key in _areas(answer)]
    assert len(keys) == services.AHEAD_MAX - 1
    assert [Item.objects.get(pk=key).external_id for key in keys] == [
        f"i{n}" for n in range(2, 1 + services.AHEAD_MAX)
    ]
    held += keys
    page = client.get(reverse("annotation:judge", args=[task.pk, current.item_id])).content
    assert f'data-ahead-max="{services.AHEAD_MAX}"' in page.decode()
    more = _ahead_url(task, current.item_id) + "".join(f"&held={key}" for key in held)
    refused = client.post(more, headers=HX)
    assert refused.status_code == 400
    assert f"at most {services.AHEAD_MAX} are leased ahead".encode() in refused.content
    assert Assignment.objects.filter(user=user).count() == 1 + services.AHEAD_MAX


def test_a_judgment_sent_in_the_background_answers_small(
    project: Project, django_assert_max_num_queries: Any
) -> None:
    task = _task(project, overlap=2)  # the outcome stays pending: the judgment may be undone
    user = _user(project, "a")
    client = _client(user)
    client.post(reverse("annotation:task_next", args=[task.pk]))
    current = Assignment.objects.get(user=user)
    client.post(_ahead_url(task, current.item_id), headers=HX)
    ahead = Assignment.objects.exclude(pk=current.pk).filter(user=user).earliest("pk")
    url = reverse("annotation:judge", args=[task.pk, current.item_id])
    ahead_headers = {**HX, "X-Benchwright-Ahead": str(ahead.item_id)}
    # The save and the progress line; nothing leased (the page asks for that itself).
    with django_assert_max_num_queries(19):
        answer = client.post(url, {"value": "1", "seconds": "2.5"}, headers=ahead_headers)
    assert answer.status_code == 200 and answer["X-Judgment-Saved"] == "1"
    body = answer.content.decode()
    # The progress line and the undo paragraph of the item now shown, nothing else.
    assert 'id="judge-progress"' in body and 'id="undo-line"' in body and 'id="keys-undo"' in body
    assert 'Judged <span class="mono">i0</span>' in body and "undo the judgment of i0" in body
    assert f'hx-get="{url}"' in body  # the undo link names the item judged
    assert "Item 2 of 4" in body
    # Never a judging area: not the one the person works in now, and no item ahead.
    assert 'id="judging"' not in body and 'id="judgment"' not in body and "<template" not in body
    assert "HX-Push-Url" not in answer
    current.refresh_from_db()
    assert current.status == AssignmentStatus.SUBMITTED
    ahead.refresh_from_db()
    assert ahead.status == AssignmentStatus.ACTIVE  # still held, now on screen
    # The items held ahead: the one on screen and those after it (the project's other 3).
    active = Assignment.objects.filter(user=user, status=AssignmentStatus.ACTIVE).count()
    assert active == min(services.AHEAD_MAX, 3)


def test_a_saved_judgment_naming_no_item_on_screen_is_still_saved(project: Project) -> None:
    """The judgment is saved before the answer is drawn: an item on screen the page cannot
    name (or may not see) leaves the progress line out, never answers an error."""
    task = _task(project)
    user = _user(project, "a")
    client = _client(user)
    client.post(reverse("annotation:task_next", args=[task.pk]))
    current = Assignment.objects.get(user=user)
    url = reverse("annotation:judge", args=[task.pk, current.item_id])
    answer = client.post(url, {"value": "1"}, headers={**HX, "X-Benchwright-Ahead": "undefined"})
    assert answer.status_code == 200 and answer["X-Judgment-Saved"] == "1"
    assert 'id="judge-progress"' not in answer.content.decode()
    current.refresh_from_db()
    assert current.status == AssignmentStatus.SUBMITTED


def test_a_refused_background_judgment_answers_the_item_with_its_errors(project: Project) -> None:
    task = _task(project)
    user = _user(project, "a")
    client = _client(user)
    client.post(reverse("annotation:task_next", args=[task.pk]))
    current = Assignment.objects.get(user=user)
    client.post(_ahead_url(task, current.item_id), headers=HX)
    ahead = Assignment.objects.exclude(pk=current.pk).filter(user=user).earliest("pk")
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


# ------------------------------------------------- the page left: the items ahead given back


def _live(user: Any) -> list[str]:
    """The user's leases still running (an ended one stays "active" until it is taken again)."""
    rows = Assignment.objects.filter(
        user=user, status=AssignmentStatus.ACTIVE, expires_at__gt=timezone.now()
    )
    return sorted(rows.values_list("item__external_id", flat=True))


def test_leaving_the_page_gives_back_the_items_held_ahead(project: Project) -> None:
    _more(project, 9)
    task = _task(project, overlap=1)
    a, b = _user(project, "a"), _user(project, "b")
    current = services.assignment_next_for_user(task=task, user=a)
    assert current is not None
    held = _fill_at_once(task, a, current)
    theirs = services.assignment_next_for_user(task=task, user=b)
    assert theirs is not None
    keys = [str(x.item_id) for x in held]
    # Only the user's own open leases of the keys named end: not the one on screen, not
    # another person's (b's item named too).
    ended = services.assignments_ahead_release(task=task, user=a, keys=[*keys, str(theirs.item_id)])
    assert ended == len(held) == services.AHEAD_MAX
    assert _live(a) == ["i0"]
    assert Assignment.objects.get(pk=theirs.pk).expires_at > timezone.now()
    # Overlap 1: the items given back go to the next person at once, in the task's order.
    services.judgment_submit(task=task, item=theirs.item, user=b, value=1)
    again = services.assignment_next_for_user(task=task, user=b)
    assert again is not None and again.item_id == held[0].item_id
    # Given back twice, or naming nothing of theirs: nothing changes.
    assert services.assignments_ahead_release(task=task, user=a, keys=keys) == 0
    assert services.assignments_ahead_release(task=task, user=a, keys=[]) == 0


def test_giving_back_refuses_a_key_that_is_not_an_item(project: Project) -> None:
    task = _task(project)
    user = _user(project, "a")
    current = services.assignment_next_for_user(task=task, user=user)
    assert current is not None
    held = _fill_at_once(task, user, current)
    with pytest.raises(ValidationFailed, match="held: 'x1' is not the id of an item"):
        services.assignments_ahead_release(task=task, user=user, keys=[str(held[0].item_id), "x1"])
    assert len(_live(user)) == 1 + len(held)  # nothing ended


def test_the_release_endpoint(project: Project) -> None:
    task = _task(project)
    user = _user(project, "a")
    client = _client(user)
    client.post(reverse("annotation:task_next", args=[task.pk]))
    current = Assignment.objects.get(user=user)
    client.post(_ahead_url(task, current.item_id), headers=HX)
    held = list(Assignment.objects.filter(user=user).exclude(pk=current.pk))
    assert held
    url = reverse("annotation:task_next_ahead_release", args=[task.pk])
    bad = client.post(url, {"held": ["nope"]})
    assert bad.status_code == 400 and b"held: 'nope' is not the id of an item" in bad.content
    answer = client.post(url, {"held": [str(a.item_id) for a in held]})
    assert answer.status_code == 204
    assert _live(user) == [current.item.external_id]
    # The judge page names the route.
    page = client.get(reverse("annotation:judge", args=[task.pk, current.item_id])).content
    assert f'data-ahead-release="{url}"' in page.decode()


@pytest.mark.parametrize("key", ["²", "1e3", "-1", "9" * 19, " 1"])
def test_giving_back_refuses_a_key_that_is_not_an_item_id(project: Project, key: str) -> None:
    task = _task(project)
    user = _user(project, "a")
    with pytest.raises(ValidationFailed, match="is not the id of an item"):
        services.assignments_ahead_release(task=task, user=user, keys=[key])


def test_giving_back_refuses_too_many_keys(project: Project) -> None:
    task = _task(project)
    user = _user(project, "a")
    keys = [str(n) for n in range(services.RELEASE_MAX + 1)]
    with pytest.raises(ValidationFailed, match=f"held: {len(keys)} keys named"):
        services.assignments_ahead_release(task=task, user=user, keys=keys)
    assert services.assignments_ahead_release(task=task, user=user, keys=keys[:-1]) == 0
