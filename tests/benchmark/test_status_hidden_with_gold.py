"""Issue 26, the open leak: only verified items can be gold, so in a project with gold items an
annotator who could read item status would tell gold items apart from drafts. For users who
may not adjudicate, item status is hidden there (``benchmark.visibility.status_hidden``): the
item list, the item page, the item history and the items API of a gold item and of a draft
differ only in the item's own content; reviewers still see status, and a project without gold
is unchanged."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.judgment_tasks.models import GoldItem, JudgmentTask, Outcome
from benchmark.models import Item, ItemStatus, ItemStatusChange, Project
from review.gold.services import gold_mark, gold_unmark, project_has_gold_sync
from tests.factories import ItemFactory

pytestmark = pytest.mark.django_db

CSRF = re.compile(r"[A-Za-z0-9]{64}")
TIMES = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d+)?)?([+-]\d\d:\d\d|Z)?")
NATURAL = re.compile(r"\d+\xa0\w+( ago)?|\w+\.? \d+, \d{4}(, [\d:]+ [ap]\.m\.)?")


@pytest.fixture
def world(project: Project, users: dict[str, Any]) -> dict[str, Any]:
    """Two items that differ only in their content and status: a verified item marked gold
    (with a recorded status change) and a draft."""
    task = JudgmentTask.objects.create(
        project=project, name="keep", question="Keep?", scheme="binary", overlap=1,
        consensus="majority", gold_rate=50,
    )  # fmt: skip
    gold = ItemFactory(
        project=project, external_id="gold-one", query="Which bridge is older?", position=1,
        status=ItemStatus.VERIFIED,
    )  # fmt: skip
    draft = ItemFactory(
        project=project, external_id="draft-two", query="How tall is the tower?", position=2
    )
    for item in (gold, draft):
        Item.objects.filter(pk=item.pk).update(created_at=gold.created_at)
    ItemStatusChange.objects.create(
        item=gold, changed_by=users["reviewer"], from_status="draft", to_status="verified"
    )
    Outcome.objects.create(task=task, item=gold, verdict="accepted", value=1)
    gold_mark(task=task, item=gold, user=users["reviewer"], value=1)
    project.refresh_from_db()
    return {"task": task, "gold": gold, "draft": draft}


def _page(client: Client, url: str) -> str:
    answer = client.get(url)
    assert answer.status_code == 200, url
    return answer.content.decode()


def _normalized(html: str, item: Item) -> str:
    html = html.replace(item.external_id, "EXT").replace(item.query, "QUERY")
    html = html.replace(f"/items/{item.pk}/", "/items/PK/")
    html = html.replace(f'value="{item.pk}:', 'value="PK:')  # the bulk bar's checkbox
    html = CSRF.sub("TOKEN", html)
    return NATURAL.sub("WHEN", TIMES.sub("TIME", html))


def _row(html: str, item: Item) -> str:
    match = re.search(
        r"<tr[^>]*>(?:(?!</tr>).)*?" + re.escape(item.external_id) + r".*?</tr>", html, re.S
    )
    assert match, item.external_id
    return _normalized(match.group(0), item)


def test_gold_services_keep_the_project_flag(world: dict[str, Any], users: dict[str, Any]) -> None:
    task, gold = world["task"], world["gold"]
    assert Project.objects.get(pk=task.project_id).has_gold
    gold_unmark(task=task, item_id=gold.pk, user=users["reviewer"])
    assert not Project.objects.get(pk=task.project_id).has_gold
    gold_mark(task=task, item=gold, user=users["reviewer"], value=1)
    assert Project.objects.get(pk=task.project_id).has_gold
    GoldItem.objects.filter(task=task).delete()  # e.g. the task deleted
    assert project_has_gold_sync(project_id=task.project_id) is False
    assert not Project.objects.get(pk=task.project_id).has_gold


def test_annotator_item_list_has_no_status_and_the_rows_are_alike(
    world: dict[str, Any], project: Project, clients: dict[str, Client]
) -> None:
    html = _page(clients["annotator"], f"/projects/{project.pk}/")
    assert "<th>Status</th>" not in html
    assert 'id="id_status"' not in html  # no status filter
    assert "?status=" not in html  # no counts per status linking to it
    assert 'class="badge status-' not in html  # (the bulk bar's status menu is not offered)
    assert _row(html, world["gold"]) == _row(html, world["draft"])


def test_annotator_status_filter_is_ignored_on_the_list_and_refused_elsewhere(
    world: dict[str, Any], project: Project, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    client = clients["annotator"]
    html = _page(client, f"/projects/{project.pk}/?status=verified")
    assert "gold-one" in html and "draft-two" in html  # ignored: every item listed
    assert "Some filters were ignored" not in html
    api = APIClient()
    api.force_authenticate(users["annotator"])
    for url in (f"/api/items/?project={project.pk}&status=verified", "/api/items/?status=draft"):
        answer = api.get(url)
        assert answer.status_code == 400, url
        assert "not shown to annotators" in answer.content.decode()
    saved = client.post(
        reverse("benchmark:saved_filters", args=[project.pk]),
        {"name": "verified only", "query": "status=verified"},
    )
    assert saved.status_code in (200, 400)
    assert "not shown to annotators" in saved.content.decode()


def test_annotator_item_pages_and_history_of_gold_and_draft_are_alike(
    world: dict[str, Any], project: Project, clients: dict[str, Client]
) -> None:
    client = clients["annotator"]
    pages = {}
    for name in ("gold", "draft"):
        item = world[name]
        detail = _page(client, f"/projects/{project.pk}/items/{item.pk}/")
        assert "status-history" not in detail and "status-verified" not in detail
        assert "status-draft" not in detail
        history = _page(client, f"/projects/{project.pk}/items/{item.pk}/history/")
        pages[name] = (_normalized(detail, item), _normalized(history, item))
    assert pages["gold"] == pages["draft"]


def test_annotator_items_api_omits_status(
    world: dict[str, Any], project: Project, users: dict[str, Any]
) -> None:
    api = APIClient()
    api.force_authenticate(users["annotator"])
    listed = api.get(f"/api/items/?project={project.pk}").json()["results"]
    assert {row["external_id"]: row["status"] for row in listed} == {
        "gold-one": None,
        "draft-two": None,
    }
    details = {}
    for name in ("gold", "draft"):
        item = world[name]
        body = api.get(f"/api/items/{item.pk}/").json()
        assert body["status"] is None
        details[name] = {
            k: v
            for k, v in body.items()
            if k not in {"id", "external_id", "query", "position", "raw", "updated_at"}
        }
    assert details["gold"] == details["draft"]


def test_reviewer_still_sees_status(
    world: dict[str, Any], project: Project, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    client = clients["reviewer"]
    html = _page(client, f"/projects/{project.pk}/")
    assert "<th>Status</th>" in html and "status-verified" in html
    assert "gold-one" in html and "draft-two" not in _page(
        client, f"/projects/{project.pk}/?status=verified"
    )
    detail = _page(client, f"/projects/{project.pk}/items/{world['gold'].pk}/")
    assert "status-verified" in detail and 'id="status-history"' in detail
    assert "Draft → Verified" in detail
    api = APIClient()
    api.force_authenticate(users["reviewer"])
    listed = api.get(f"/api/items/?project={project.pk}&status=verified").json()["results"]
    assert [(row["external_id"], row["status"]) for row in listed] == [("gold-one", "verified")]
    assert api.get(f"/api/items/{world['draft'].pk}/").json()["status"] == "draft"


def test_a_project_without_gold_is_unchanged_for_annotators(
    project: Project, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    item = ItemFactory(project=project, external_id="plain", status=ItemStatus.VERIFIED)
    ItemStatusChange.objects.create(
        item=item, changed_by=users["reviewer"], from_status="draft", to_status="verified"
    )
    client = clients["annotator"]
    html = _page(client, f"/projects/{project.pk}/")
    assert "<th>Status</th>" in html and "status-verified" in html and "?status=" in html
    assert "plain" not in _page(client, f"/projects/{project.pk}/?status=draft")
    detail = _page(client, f"/projects/{project.pk}/items/{item.pk}/")
    assert "status-verified" in detail and "Draft → Verified" in detail
    api = APIClient()
    api.force_authenticate(users["annotator"])
    assert api.get(f"/api/items/{item.pk}/").json()["status"] == "verified"
    assert api.get(f"/api/items/?project={project.pk}&status=verified").status_code == 200


def test_query_budgets_hold_with_gold(
    world: dict[str, Any],
    project: Project,
    clients: dict[str, Client],
    django_assert_max_num_queries: Any,
) -> None:
    # the budgets of tests/benchmark/test_item_pages_cost.py: hiding status costs no query
    pages = {
        f"/projects/{project.pk}/": 9,
        f"/projects/{project.pk}/?status=verified&level=1": 10,
        f"/projects/{project.pk}/items/{world['gold'].pk}/": 10,
        f"/api/items/{world['gold'].pk}/": 4,
    }
    for role in ("annotator", "reviewer"):
        for url, budget in pages.items():
            # a reviewer's item page also reads the gold notices (review.gold): 4 more
            more = 4 if role == "reviewer" and "/items/" in url and "/api/" not in url else 0
            with django_assert_max_num_queries(budget + more):
                assert clients[role].get(url).status_code == 200, (role, url)
