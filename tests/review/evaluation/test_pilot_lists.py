"""The pilot's review lists (issue 24, "Quality of a run"): over the leaderboard's runs (each
model's latest finished run), the items some model got wrong that people solved (verified, or
accepted by a blind-solving task) and the items every evaluated model solved; the page, its
query count, and its two actions through the item list's bulk actions."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.discarding.models import DiscardProposal
from annotation.judgment_tasks.models import TaskItem
from benchmark.models import Item, ItemStatus, Project
from benchmark.permissions import ACTIONS
from review.evaluation import selectors
from tests.factories import (
    EvaluationResultFactory,
    EvaluationRunFactory,
    ItemFactory,
    JudgmentTaskFactory,
    OutcomeFactory,
)

pytestmark = pytest.mark.django_db

V, D, X = ItemStatus.VERIFIED, ItemStatus.DRAFT, ItemStatus.DISCARDED
#: item: (status, model-a's F1, model-b's F1); None: unscored (no ground truth), "-": no result.
PLAN: dict[str, tuple[str, Any, Any]] = {
    "half-right": (V, 100.0, 50.0),  # people solved it, model-b did not
    "both-wrong": (V, 0.0, 0.0),
    "nobody-knows": (D, 0.0, 100.0),  # wrong, but no person solved it
    "easy-draft": (D, 100.0, 100.0),
    "easy-verified": (V, 100.0, 100.0),
    "solved-blind": (D, 0.0, 100.0),  # accepted by the blind-solving task
    "thrown-out": (X, 0.0, 100.0),
    "unscored": (V, None, None),
    "one-model-only": (D, 100.0, "-"),
}


def _run(project: Project, model: str, *, ago: int, finished: bool = True) -> Any:
    when = timezone.now() - timedelta(hours=ago)
    return EvaluationRunFactory(
        project=project, model=model, finished_at=when if finished else None
    )


def _result(run: Any, item: Item, f1: Any) -> None:
    if f1 == "-":
        return
    scores = {"n_calls": 1} if f1 is None else {"f1": f1, "precision": f1, "recall": f1}
    EvaluationResultFactory(run=run, item=item, scores=scores)


@pytest.fixture
def world(project: Project, users: dict[str, Any]) -> dict[str, Any]:
    """Two models on nine items, each with an older run (which the lists ignore) and
    model-b with a newer unfinished run (ignored too)."""
    items = {
        name: ItemFactory(
            project=project,
            external_id=name,
            status=status,
            position=n,
            discard_reason="a duplicate" if status == X else "",
        )
        for n, (name, (status, _, _)) in enumerate(PLAN.items())
    }
    old_a, old_b = _run(project, "model-a", ago=10), _run(project, "model-b", ago=10)
    for item in items.values():  # the older runs solved everything
        _result(old_a, item, 100.0)
        _result(old_b, item, 100.0)
    runs = {"model-a": _run(project, "model-a", ago=1), "model-b": _run(project, "model-b", ago=2)}
    unfinished = _run(project, "model-b", ago=0, finished=False)
    for name, (_, a, b) in PLAN.items():
        _result(runs["model-a"], items[name], a)
        _result(runs["model-b"], items[name], b)
        _result(unfinished, items[name], 0.0)
    solve = JudgmentTaskFactory(project=project, solve=True)
    OutcomeFactory(task=solve, item=items["solved-blind"], verdict="accepted")
    OutcomeFactory(task=solve, item=items["nobody-knows"], verdict="rejected")
    return {"items": items, "runs": runs, "solve": solve}


def _wrong(lists: selectors.PilotLists) -> dict[str, list[str]]:
    return {p.item["external_id"]: [r.model for r in p.results] for p in lists.wrong}


def test_the_lists_hold_what_people_solved_and_a_model_missed_and_what_every_model_solved(
    project: Project, users: dict[str, Any], world: dict[str, Any]
) -> None:
    lists = selectors.pilot_lists(user=users["reviewer"], project=project)
    assert [m.model for m in lists.models] == ["model-a", "model-b"]
    assert {m.run for m in lists.models} == {r.pk for r in world["runs"].values()}
    assert _wrong(lists) == {
        "half-right": ["model-b"],
        "both-wrong": ["model-a", "model-b"],
        "solved-blind": ["model-a"],
    }
    people = {p.item["external_id"]: p.people for p in lists.wrong}
    assert people["half-right"] == ("verified",)
    assert people["solved-blind"] == ("accepted in 'Solve blind'",)
    assert [p.item["external_id"] for p in lists.easy] == ["easy-draft", "easy-verified"]
    assert (lists.wrong_total, lists.easy_total) == (3, 2)
    assert lists.key == "f1" and lists.maximum == 100.0
    assert lists.solve_tasks == ("Solve blind",)


def test_an_item_is_easy_only_when_every_model_solved_it(
    project: Project, users: dict[str, Any], world: dict[str, Any]
) -> None:
    # A third model that solved only one of the easy items.
    run = _run(project, "model-c", ago=1)
    _result(run, world["items"]["easy-draft"], 100.0)
    _result(run, world["items"]["easy-verified"], 99.0)
    lists = selectors.pilot_lists(user=users["reviewer"], project=project)
    assert len(lists.models) == 3
    assert [p.item["external_id"] for p in lists.easy] == ["easy-draft"]
    assert _wrong(lists)["easy-verified"] == ["model-c"]


def test_no_finished_run_means_no_lists(project: Project, users: dict[str, Any]) -> None:
    item = ItemFactory(project=project, status=V)
    EvaluationResultFactory(run=_run(project, "m", ago=0, finished=False), item=item)
    lists = selectors.pilot_lists(user=users["reviewer"], project=project)
    assert (lists.models, lists.wrong, lists.easy) == ((), [], [])


def test_the_selector_and_the_page_take_a_fixed_number_of_queries(
    project: Project,
    users: dict[str, Any],
    clients: dict[str, Client],
    world: dict[str, Any],
    django_assert_max_num_queries: Any,
    django_assert_num_queries: Any,
) -> None:
    with django_assert_max_num_queries(8) as few:
        selectors.pilot_lists(user=users["reviewer"], project=project)
    url = reverse("review:evaluation_pilot", args=[project.pk])
    with django_assert_max_num_queries(20) as page:
        assert clients["reviewer"].get(url).status_code == 200
    # More models and more items: the same number of queries.
    for n in range(4):
        run = _run(project, f"more-{n}", ago=1)
        for k in range(5):
            _result(run, ItemFactory(project=project, status=V, external_id=f"x{n}-{k}"), 0.0)
    with django_assert_num_queries(len(few.captured_queries)):
        lists = selectors.pilot_lists(user=users["reviewer"], project=project)
    assert len(lists.models) == 6 and lists.wrong_total == 3 + 20
    with django_assert_num_queries(len(page.captured_queries)):
        assert clients["reviewer"].get(url).status_code == 200


def test_the_page_lists_both_with_links_to_items_and_results(
    project: Project, clients: dict[str, Client], world: dict[str, Any]
) -> None:
    text = clients["reviewer"].get(reverse("review:evaluation_pilot", args=[project.pk])).content
    page = text.decode()
    assert re.findall(r'data-wrong-item="([^"]+)"', page) == [
        "half-right",
        "both-wrong",
        "solved-blind",
    ]
    assert re.findall(r'data-easy-item="([^"]+)"', page) == ["easy-draft", "easy-verified"]
    half = world["items"]["half-right"]
    row = page[page.index('data-wrong-item="half-right"') :].split("</tr>")[0]
    assert reverse("benchmark:item_detail", args=[project.pk, half.pk]) in row
    assert reverse("review:evaluation_result", args=[world["runs"]["model-b"].pk, half.pk]) in row
    assert (
        reverse("review:evaluation_result", args=[world["runs"]["model-a"].pk, half.pk]) not in row
    )
    assert "2 evaluated models" in page and "Solve blind" in page
    assert "Items every evaluated model solved (2 models)" in page
    # The leaderboard links to the lists.
    board = clients["reviewer"].get(reverse("review:leaderboard", args=[project.pk]))
    assert reverse("review:evaluation_pilot", args=[project.pk]) in board.content.decode()


def _ids(world: dict[str, Any], *names: str) -> list[str]:
    return [f"{world['items'][n].pk}:{world['items'][n].status}" for n in names]


def test_add_to_task_puts_the_checked_items_in_the_tasks_item_set(
    project: Project, users: dict[str, Any], clients: dict[str, Client], world: dict[str, Any]
) -> None:
    task = JudgmentTaskFactory(project=project, name="Second look", items_listed=True)
    url = reverse("review:evaluation_pilot", args=[project.pk])
    data = {"action": "task", "task": task.pk, "ids": _ids(world, "both-wrong", "easy-draft")}
    response = clients["reviewer"].post(url, data, follow=True)
    assert response.redirect_chain == [(url, 302)]
    assert "2 items added to &#x27;Second look&#x27;" in response.content.decode()
    listed = set(TaskItem.objects.filter(task=task).values_list("item__external_id", flat=True))
    assert listed == {"both-wrong", "easy-draft"}
    assert (
        TaskItem.objects.get(task=task, item__external_id="easy-draft").added_by
        == users["reviewer"]
    )


def test_propose_discarding_makes_proposals_even_for_a_reviewer(
    project: Project, users: dict[str, Any], clients: dict[str, Client], world: dict[str, Any]
) -> None:
    url = reverse("review:evaluation_pilot", args=[project.pk])
    data = {"action": "discard", "reason": "every model solves it", "ids": _ids(world, "easy-draft", "easy-verified")}  # fmt: skip
    response = clients["reviewer"].post(url, data)
    assert response.status_code == 302
    proposals = DiscardProposal.objects.filter(proposed_by=users["reviewer"])
    assert sorted(p.item.external_id for p in proposals) == ["easy-draft", "easy-verified"]
    assert {p.reason for p in proposals} == {"every model solves it"}
    # Proposed, not discarded: a reviewer decides.
    assert Item.objects.get(pk=world["items"]["easy-verified"].pk).status == ItemStatus.VERIFIED


@pytest.mark.parametrize(
    ("data", "status", "message"),
    [
        ({"action": "discard", "reason": "  "}, 400, "reason: say why the items are discarded"),
        ({"action": "task"}, 400, "task: choose a judgment task"),
        ({"action": "task", "task": "listed-not"}, 400, "takes every item of the project"),
        ({"action": "discard", "reason": "r", "ids": []}, 200, "select at least one item"),
        ({"action": "export", "reason": "r"}, 200, "Select a valid choice"),
    ],
)
def test_bad_input_reshows_the_page_with_what_is_wrong(
    project: Project,
    clients: dict[str, Client],
    world: dict[str, Any],
    data: dict,
    status: int,
    message: str,
) -> None:
    if data.get("task") == "listed-not":
        data = {**data, "task": JudgmentTaskFactory(project=project, items_listed=False).pk}
    data.setdefault("ids", _ids(world, "both-wrong"))
    response = clients["reviewer"].post(reverse("review:evaluation_pilot", args=[project.pk]), data)
    assert response.status_code == status
    assert message in response.content.decode().replace("&#x27;", "'")
    assert "data-pilot-errors" in response.content.decode()
    assert not DiscardProposal.objects.exists() and not TaskItem.objects.exists()


def test_who_sees_and_who_acts(
    project: Project,
    clients: dict[str, Client],
    world: dict[str, Any],
    monkeypatch: Any,
) -> None:
    url = reverse("review:evaluation_pilot", args=[project.pk])
    assert clients["admin"].get(url).status_code == 200
    assert clients["annotator"].get(url).status_code == 403
    assert clients["outsider"].get(url).status_code == 404
    assert clients["anonymous"].get(url).status_code == 302
    data = {"action": "discard", "reason": "r", "ids": _ids(world, "both-wrong")}
    assert clients["annotator"].post(url, data).status_code == 403
    assert clients["outsider"].post(url, data).status_code == 404
    assert not DiscardProposal.objects.exists()
    # The bulk action's own permission decides the action: a role that may see the lists but
    # not put items in tasks gets 403 saying why.
    task = JudgmentTaskFactory(project=project, items_listed=True)
    monkeypatch.setitem(ACTIONS, "set_status", {"admin"})
    response = clients["reviewer"].post(
        url, {"action": "task", "task": task.pk, "ids": _ids(world, "both-wrong")}
    )
    assert response.status_code == 403
    assert not TaskItem.objects.exists()


def test_a_true_or_false_score_is_read_out_of_the_results(
    project: Project, users: dict[str, Any], monkeypatch: Any
) -> None:
    """Agentic-MME's Acc is true or false in the results' JSON (read by the database)."""
    from benchmark.evaluation.agentic_mme import PROTOCOL

    monkeypatch.setattr(selectors, "protocol_or_none", lambda project: (PROTOCOL, ""))
    right = ItemFactory(project=project, status=V, external_id="right")
    wrong = ItemFactory(project=project, status=V, external_id="wrong")
    run = _run(project, "agent", ago=1)
    EvaluationResultFactory(run=run, item=right, scores={"acc": True, "S": 1.0})
    EvaluationResultFactory(run=run, item=wrong, scores={"acc": False, "S": 1.0})
    lists = selectors.pilot_lists(user=users["reviewer"], project=project)
    assert _wrong(lists) == {"wrong": ["agent"]}
    assert [p.item["external_id"] for p in lists.easy] == ["right"]
