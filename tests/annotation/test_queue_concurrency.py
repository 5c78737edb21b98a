"""Parallel "next item" requests on PostgreSQL never over-assign an item (row locks with
SKIP LOCKED and a re-count once the lock is held), in position order and when the task serves
items by doubt (``routing``: the items' doubts scattered, one annotator below the reliability
threshold, so the candidate statement joins the doubts and orders both ways)."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, connections

from annotation.judgment_tasks import services
from annotation.judgment_tasks.doubt.models import AnnotatorReliability, ItemDoubt
from annotation.judgment_tasks.models import Assignment, JudgmentTask
from benchmark.models import Item, Membership, Project, Toolset

pytestmark = pytest.mark.django_db(transaction=True)

routing = pytest.mark.parametrize("routing", [False, True], ids=["position order", "by doubt"])


def _route(task: JudgmentTask, users: list, *, on: bool) -> None:  # type: ignore[type-arg]
    """Serve the task by doubt: every other item (or unit) scored, from most to least in
    doubt against position order, and the first user below the reliability threshold."""
    if not on:
        return
    task.serve_by_doubt = True
    task.save(update_fields=["serve_by_doubt"])
    if task.has_units:
        keys = list(task.units.values_list("item_id", "key"))
    else:
        keys = [
            (pk, "")
            for pk in Item.objects.filter(project=task.project).values_list("pk", flat=True)
        ]
    # Routing turned on gave every item (unit) its row, the prior: these are scored.
    ItemDoubt.objects.bulk_create(
        [
            ItemDoubt(task=task, item_id=item, unit=unit, score=(n + 1) / (len(keys) + 1))
            for n, (item, unit) in enumerate(keys)
            if n % 2 == 0 or len(keys) < 3
        ],
        update_conflicts=True,
        unique_fields=["task", "item", "unit"],
        update_fields=["score"],
    )
    AnnotatorReliability.objects.create(task=task, user=users[0], score=0.1, source="gold")


@routing
def test_parallel_requests_respect_the_overlap(routing: bool) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("row-level locking is proven on PostgreSQL")
    toolset = Toolset.objects.create(name="mms-c")
    project = Project.objects.create(name="c", kind="plan", data_format="mms", toolset=toolset)
    for i in range(4):
        Item.objects.create(project=project, external_id=f"i{i}", position=i)
    task = JudgmentTask.objects.create(
        project=project,
        name="t",
        question="?",
        scheme="binary",
        overlap=3,
        consensus="all_required",
        required_value=1,
    )
    users = []
    for n in range(12):
        user = get_user_model().objects.create_user(f"u{n}", password="x")
        Membership.objects.create(project=project, user=user, role="annotator")
        users.append(user)

    _route(task, users, on=routing)
    barrier = threading.Barrier(len(users))
    errors: list[BaseException] = []

    def ask(user) -> None:  # type: ignore[no-untyped-def]
        try:
            barrier.wait()
            for _ in range(2):  # ask twice: the second returns the same open lease
                services.assignment_next_for_user(task=task, user=user)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=ask, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert not errors, errors
    per_item = Counter(Assignment.objects.values_list("item_id", flat=True))
    assert max(per_item.values()) <= 3
    assert sum(per_item.values()) == 12  # 4 items x 3 = every user got one
    assert Counter(Assignment.objects.values_list("user_id", flat=True)).most_common(1)[0][1] == 1


@routing
def test_parallel_requests_respect_the_overlap_of_units(routing: bool) -> None:
    """The same for a task with units: several units of one item, each with its own k."""
    if connection.vendor != "postgresql":
        pytest.skip("row-level locking is proven on PostgreSQL")
    from annotation.judgment_tasks.models import TaskUnit

    toolset = Toolset.objects.create(name="atp-c")
    project = Project.objects.create(name="u", kind="interleaved", data_format="atp",
                                     tag_syntax="atp", toolset=toolset)  # fmt: skip
    item = Item.objects.create(project=project, external_id="i0", position=0)
    task = JudgmentTask.objects.create(
        project=project,
        name="rate",
        question="?",
        scheme="ordinal",
        labels=[{"value": v, "label": str(v)} for v in (0, 1, 2)],
        overlap=2,
        consensus="majority",
        updates_item_status=False,
        unit_kind="judge-report",
    )
    for n, label in enumerate(("precision", "recall", "chief")):
        TaskUnit.objects.create(task=task, item=item, key=f"response:1:{label}", position=n)
    users = []
    for n in range(8):
        user = get_user_model().objects.create_user(f"v{n}", password="x")
        Membership.objects.create(project=project, user=user, role="annotator")
        users.append(user)
    _route(task, users, on=routing)
    barrier = threading.Barrier(len(users))
    errors: list[BaseException] = []

    def ask(user) -> None:  # type: ignore[no-untyped-def]
        try:
            barrier.wait()
            services.assignment_next_for_user(task=task, user=user)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=ask, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert not errors, errors
    per_unit = Counter(Assignment.objects.filter(task=task).values_list("unit", flat=True))
    assert per_unit == {"response:1:precision": 2, "response:1:recall": 2, "response:1:chief": 2}


@routing
def test_parallel_requests_respect_the_overlap_in_each_raters_own_order(routing: bool) -> None:
    """The same when each rater meets the units in an order of their own (response-level
    evaluation): the open units are ranked per rater, then locked one by one."""
    if connection.vendor != "postgresql":
        pytest.skip("row-level locking is proven on PostgreSQL")
    from annotation.judgment_tasks.models import TaskUnit

    toolset = Toolset.objects.create(name="atp-o")
    project = Project.objects.create(name="o", kind="interleaved", data_format="atp",
                                     tag_syntax="atp", toolset=toolset)  # fmt: skip
    item = Item.objects.create(project=project, external_id="i0", position=0)
    task = JudgmentTask.objects.create(
        project=project,
        name="evaluate",
        question="?",
        scheme="ordinal",
        labels=[{"value": v, "label": str(v)} for v in range(1, 6)],
        overlap=2,
        consensus="median",
        updates_item_status=False,
        unit_kind="answer-eval",
        unit_params={"scale": "likert", "rater_order_seed": 5},
    )
    for n in range(3):
        TaskUnit.objects.create(task=task, item=item, key=f"response:{n + 1}:likert", position=n)
    users = []
    for n in range(8):
        user = get_user_model().objects.create_user(f"w{n}", password="x")
        Membership.objects.create(project=project, user=user, role="annotator")
        users.append(user)
    _route(task, users, on=routing)
    barrier = threading.Barrier(len(users))
    errors: list[BaseException] = []

    def ask(user) -> None:  # type: ignore[no-untyped-def]
        try:
            barrier.wait()
            services.assignment_next_for_user(task=task, user=user)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=ask, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert not errors, errors
    per_unit = Counter(Assignment.objects.filter(task=task).values_list("unit", flat=True))
    assert per_unit == {"response:1:likert": 2, "response:2:likert": 2, "response:3:likert": 2}


@routing
def test_parallel_requests_with_gold_units(routing: bool) -> None:
    """Gold units mixed in (issue 26): eight raters ask and rate concurrently until nothing is
    left. Every open unit gets exactly its k = 2 ratings (a gold unit takes no place of the
    overlap and is never served as an ordinary unit), each rater meets each gold unit at most
    once and only as gold, and no gold rating reaches an outcome."""
    if connection.vendor != "postgresql":
        pytest.skip("row-level locking is proven on PostgreSQL")
    from annotation.judgment_tasks.models import GoldItem, Judgment, Outcome, TaskUnit

    toolset = Toolset.objects.create(name="atp-g")
    project = Project.objects.create(name="g", kind="interleaved", data_format="atp",
                                     tag_syntax="atp", toolset=toolset)  # fmt: skip
    task = JudgmentTask.objects.create(
        project=project, name="rate", question="?", scheme="ordinal",
        labels=[{"value": v, "label": str(v)} for v in (0, 1, 2)], overlap=2,
        consensus="majority", updates_item_status=False, unit_kind="judge-report", gold_rate=50,
    )  # fmt: skip
    gold_keys = []
    for i in range(3):
        item = Item.objects.create(project=project, external_id=f"i{i}", position=i)
        for n, label in enumerate(("precision", "recall", "chief")):
            key = f"response:{i + 1}:{label}"
            TaskUnit.objects.create(task=task, item=item, key=key, position=3 * i + n)
            if i == 2 and label != "chief":  # two settled units of the last item are gold
                Outcome.objects.create(task=task, item=item, unit=key, verdict="accepted", value=2)
                GoldItem.objects.create(task=task, item=item, unit=key, value=2)
                gold_keys.append(key)
    users = []
    for n in range(8):
        user = get_user_model().objects.create_user(f"g{n}", password="x")
        Membership.objects.create(project=project, user=user, role="annotator")
        users.append(user)
    _route(task, users, on=routing)
    barrier = threading.Barrier(len(users))
    errors: list[BaseException] = []

    def work(user) -> None:  # type: ignore[no-untyped-def]
        try:
            barrier.wait()
            for _ in range(12):
                lease = services.assignment_next_for_user(task=task, user=user)
                if lease is None:
                    break
                services.judgment_submit(
                    task=task, item=lease.item, user=user, value=1, unit=lease.unit
                )
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert not errors, errors
    rows = list(Assignment.objects.filter(task=task).values_list("unit", "gold", "user_id"))
    ordinary = Counter(unit for unit, is_gold, _ in rows if not is_gold)
    open_keys = set(TaskUnit.objects.filter(task=task).values_list("key", flat=True)) - set(
        gold_keys
    )
    assert ordinary == dict.fromkeys(open_keys, 2)  # every open unit exactly k times
    served_gold = [(unit, user) for unit, is_gold, user in rows if is_gold]
    assert served_gold and {unit for unit, _ in served_gold} <= set(gold_keys)
    assert len(served_gold) == len(set(served_gold))  # once per rater
    assert not Judgment.objects.filter(task=task, unit__in=gold_keys).exists()
    assert set(
        Outcome.objects.filter(task=task, unit__in=gold_keys).values_list("verdict", "value")
    ) == {("accepted", 2)}
