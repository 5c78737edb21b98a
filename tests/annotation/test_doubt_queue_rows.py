"""Routing by doubt as fast as position order (issue 26): a task that serves items by doubt keeps
a doubt row for every item (or unit) it may serve, the item's position copied, whichever way the
item arrives, and "next item" walks those rows in index order: the same order as before, no
more statements than position order, and an item that somehow has no row is still served."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.bulk_actions.services import bulk_action_apply
from annotation.judgment_tasks import services
from annotation.judgment_tasks.doubt.models import ItemDoubt
from annotation.judgment_tasks.doubt.services import task_doubt_recompute
from annotation.judgment_tasks.models import JudgmentTask
from benchmark.datasets.services import dataset_import
from benchmark.models import Item, Toolset
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


def _rows(task: JudgmentTask) -> dict[str, tuple[float, int]]:
    return {
        ext: (score, position)
        for ext, score, position in ItemDoubt.objects.filter(task=task).values_list(
            "item__external_id", "score", "position"
        )
    }


@pytest.fixture
def task() -> JudgmentTask:
    project = ProjectFactory(data_format="atp", toolset=Toolset.objects.create(name="atp-d"))
    for n in range(4):  # positions run against the ids: ties must follow the position
        ItemFactory(project=project, external_id=f"i{n}", position=10 - n)
    return JudgmentTaskFactory(project=project, overlap=1)


def test_turning_routing_on_gives_every_item_a_row_with_its_position(task: JudgmentTask) -> None:
    assert not ItemDoubt.objects.exists()
    task.serve_by_doubt = True
    task.save()
    assert _rows(task) == {"i0": (1.0, 10), "i1": (1.0, 9), "i2": (1.0, 8), "i3": (1.0, 7)}
    # all at the prior: position order, the lowest position first
    assert (
        services.assignment_next_for_user(
            task=task, user=_annotator(task.project, "a")
        ).item.external_id
        == "i3"
    )  # type: ignore[union-attr]


def test_turning_it_off_drops_only_the_rows_that_hold_the_prior(task: JudgmentTask) -> None:
    task.serve_by_doubt = True
    task.save()
    ItemDoubt.objects.filter(task=task, item__external_id="i1").update(
        score=0.2, judgments=2, signals={"votes": {"1": 2}}
    )
    task.serve_by_doubt = False
    task.save()
    assert _rows(task) == {"i1": (0.2, 9)}


def test_items_added_later_get_a_row_whichever_way_they_arrive(
    task: JudgmentTask, tmp_path: Path
) -> None:
    task.serve_by_doubt = True
    task.save()
    ItemFactory(project=task.project, external_id="one", position=20)  # one by one
    path = tmp_path / "more.jsonl"  # an import: written in bulk, no post_save
    path.write_text(
        "\n".join(
            json.dumps({"trace_id": f"imp{n}", "query": "q", "doc": [], "images": [], "gt": "x"})
            for n in range(3)
        )
        + "\n"
    )
    dataset_import(project=task.project, path=path)
    rows = _rows(task)
    assert set(rows) == {"i0", "i1", "i2", "i3", "one", "imp0", "imp1", "imp2"}
    positions = dict(Item.objects.values_list("external_id", "position"))
    assert all(rows[ext] == (1.0, positions[ext]) for ext in rows)


def test_a_task_of_listed_items_gets_rows_as_items_are_listed(task: JudgmentTask) -> None:
    task.items_listed = True
    task.serve_by_doubt = True
    task.save()
    assert not ItemDoubt.objects.exists()
    admin = UserFactory(username="boss")
    MembershipFactory(project=task.project, user=admin, role="admin")
    chosen = list(Item.objects.filter(external_id__in=["i0", "i2"]).values_list("pk", flat=True))
    bulk_action_apply(
        project=task.project, user=admin, action="task", item_ids=chosen, task=task.pk
    )
    assert set(_rows(task)) == {"i0", "i2"}


def test_recomputing_copies_the_positions_again(task: JudgmentTask) -> None:
    task.serve_by_doubt = True
    task.save()
    Item.objects.filter(external_id="i0").update(position=1)
    task_doubt_recompute(task=task)
    assert _rows(task)["i0"][1] == 1


def test_both_orders_break_ties_by_position_not_by_id(task: JudgmentTask) -> None:
    task.serve_by_doubt = True
    task.save()
    for name, score in (("i0", 0.5), ("i1", 0.5), ("i2", 0.9), ("i3", 0.9)):
        ItemDoubtFactory(task=task, item=Item.objects.get(external_id=name), score=score)
    steady, shaky = _annotator(task.project, "steady"), _annotator(task.project, "shaky")
    AnnotatorReliabilityFactory(task=task, user=shaky, score=0.3)
    first = services.assignment_next_for_user(task=task, user=steady)
    assert first is not None and first.item.external_id == "i3"  # 0.9, position 7 before 8
    low = services.assignment_next_for_user(task=task, user=shaky)
    assert low is not None and low.item.external_id == "i1"  # 0.5, position 9 before 10


def test_an_item_without_a_row_is_still_served_after_the_rest(task: JudgmentTask) -> None:
    task.serve_by_doubt = True
    task.save()
    ItemDoubt.objects.filter(task=task, item__external_id="i3").delete()  # written around
    served = []
    for n in range(4):
        lease = services.assignment_next_for_user(task=task, user=_annotator(task.project, f"a{n}"))
        assert lease is not None
        served.append(lease.item.external_id)
    assert served == ["i2", "i1", "i0", "i3"]
    assert services.assignment_next_for_user(task=task, user=_annotator(task.project, "z")) is None


def test_next_by_doubt_runs_as_many_statements_as_position_order(
    task: JudgmentTask, django_assert_max_num_queries: Any
) -> None:
    """The same statements (the open lease, pushes and the gate in one; the candidate; the
    recount; the lease), and the candidate walks the doubt rows rather than the items."""
    counts = {}
    for routed in (False, True):
        task.serve_by_doubt = routed
        task.save()
        user = _annotator(task.project, f"r{routed}")
        with CaptureQueriesContext(connection) as queries:
            assert services.assignment_next_for_user(task=task, user=user) is not None
        counts[routed] = len(queries.captured_queries)
        candidate = next(
            q["sql"]
            for q in queries.captured_queries
            if "LIMIT 1" in q["sql"] and "ORDER BY" in q["sql"] and "position" in q["sql"]
        )
        assert ("ORDER BY d.score DESC" in candidate) is routed
    assert counts[True] == counts[False]
    last = _annotator(task.project, "last")
    with django_assert_max_num_queries(counts[False]):
        services.assignment_next_for_user(task=task, user=last)


def test_a_units_task_gets_a_row_per_unit() -> None:
    project = ProjectFactory()
    item = ItemFactory(project=project)
    task = JudgmentTaskFactory(
        project=project,
        scheme="ordinal",
        labels=[{"value": v, "label": str(v)} for v in (0, 1, 2)],
        overlap=1,
        consensus="majority",
        updates_item_status=False,
        unit_kind="judge-report",
        serve_by_doubt=True,
    )
    from annotation.judgment_tasks.models import TaskUnit

    for n, label in enumerate(("precision", "recall")):
        TaskUnit.objects.create(task=task, item=item, key=f"response:1:{label}", position=5 - n)
    rows = dict(ItemDoubt.objects.filter(task=task).values_list("unit", "position"))
    assert rows == {"response:1:precision": 5, "response:1:recall": 4}
    lease = services.assignment_next_for_user(task=task, user=_annotator(project, "a"))
    assert lease is not None and lease.unit == "response:1:recall"


def test_the_page_does_not_count_the_prior_rows_as_scored(task: JudgmentTask) -> None:
    from annotation.judgment_tasks.doubt.selectors import doubt_table

    task.serve_by_doubt = True
    task.save()
    reviewer = UserFactory(username="rev")
    MembershipFactory(project=task.project, user=reviewer, role="reviewer")
    assert ItemDoubt.objects.filter(task=task).count() == 4
    table = doubt_table(user=reviewer, task=task)
    assert table.scored == 0 and table.rows == []
    task_doubt_recompute(task=task)
    assert doubt_table(user=reviewer, task=task).scored == 4
