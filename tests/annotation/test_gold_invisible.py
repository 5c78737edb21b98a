"""Gold items are indistinguishable for the annotator (issue 26): the judge page and the API
answers for a gold item and for any other item differ only in the item's own content (its id,
external id, query and place), and the progress counts go down by one per item, gold or not."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.judgment_tasks.models import Assignment, GoldItem, JudgmentTask, Outcome
from benchmark.models import Item, ItemStatus
from tests.factories import ItemFactory, MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

CSRF = re.compile(r"[A-Za-z0-9]{64}")
PROGRESS = re.compile(
    r'data-progress="today">(\d+) judged today.*?data-progress="left">(\d+) left for you'
    r'.*?data-progress="position">Item (\d+) of (\d+)',
    re.S,
)


@pytest.fixture
def world() -> Any:
    project = ProjectFactory(name="blind judging")
    task = JudgmentTask.objects.create(
        project=project, name="keep", question="Keep?", scheme="binary", overlap=3,
        consensus="majority", gold_rate=50,
    )  # fmt: skip
    for i in range(6):
        ItemFactory(project=project, external_id=f"item-{i:02d}", position=i, query=f"Q number {i}")
    for i in range(6, 9):
        item = ItemFactory(
            project=project, external_id=f"item-{i:02d}", position=i, query=f"Q number {i}",
            status=ItemStatus.VERIFIED,
        )  # fmt: skip
        Outcome.objects.create(task=task, item=item, verdict="accepted", value=1)
        GoldItem.objects.create(task=task, item=item, value=1)
    people = {}
    for name in ("ann", "ben"):
        people[name] = UserFactory(username=name)
        MembershipFactory(project=project, user=people[name], role="annotator")
    return task, people


def _normalized(html: str, item: Item, previous: Item | None) -> str:
    """The page with the item's own content (and the previous item's, in the undo line), the
    CSRF tokens and the progress figures taken out."""
    for it, name in ((item, "ITEM"), (previous, "PREVIOUS")):
        if it is None:
            continue
        html = html.replace(it.external_id, f"{name}-EXT").replace(it.query, f"{name}-QUERY")
        html = html.replace(f"/items/{it.pk}/", f"/items/{name}-PK/")
        html = html.replace(f'?after={it.pk}"', f'?after={name}-PK"')  # the prefetch's ask
        html = html.replace(f'data-item-key="{it.pk}"', f'data-item-key="{name}-PK"')
    html = CSRF.sub("TOKEN", html)
    return PROGRESS.sub("PROGRESS", html)


def test_judge_pages_of_gold_and_other_items_differ_only_in_the_item(world) -> None:  # type: ignore[no-untyped-def]
    task, people = world
    client = Client()
    client.force_login(people["ann"])
    pages: list[tuple[bool, str]] = []
    figures: list[tuple[int, int, int, int]] = []
    previous = None
    while True:
        answer = client.post(reverse("annotation:task_next", args=[task.pk]))
        if answer.status_code != 302:
            break
        lease = Assignment.objects.filter(task=task, user=people["ann"], status="active").get()
        item = Item.objects.get(pk=lease.item_id)
        assert answer["Location"] == reverse("annotation:judge", args=[task.pk, item.pk])
        html = client.get(answer["Location"]).content.decode()
        figures.append(tuple(int(n) for n in PROGRESS.search(html).groups()))  # type: ignore[union-attr,misc]
        pages.append((lease.gold, _normalized(html, item, previous)))
        done = client.post(answer["Location"], {"value": "1", "seconds": "3"})
        assert done.status_code == 302
        previous = item
    gold = [g for g, _ in pages]
    assert len(pages) == 9 and gold.count(True) == 3  # every item once, three of them gold
    # Each judgment counts one more today and one less left, whatever the item was.
    assert [f[0] for f in figures] == list(range(9))
    assert [f[1] for f in figures] == list(range(9, 0, -1))
    assert {f[3] for f in figures} == {9}
    # Past the first page (which has no "undo" line yet), every page is the same page.
    gold_pages = {html for g, html in pages[1:] if g}
    other_pages = {html for g, html in pages[1:] if not g}
    assert len(gold_pages) == 1 and gold_pages == other_pages
    assert "gold" not in pages[-1][1].lower()


def test_api_answers_of_gold_and_other_items_have_the_same_shape(world) -> None:  # type: ignore[no-untyped-def]
    task, people = world
    api = APIClient()
    api.force_authenticate(people["ben"])
    shapes: dict[bool, set[tuple[str, ...]]] = {True: set(), False: set()}
    made = 0
    while True:
        answer = api.post(f"/api/judgment-tasks/{task.pk}/next/")
        if answer.status_code == 204:
            break
        body = answer.json()
        lease = Assignment.objects.get(task=task, user=people["ben"], item_id=body["item"])
        shapes[lease.gold].add(tuple(sorted(body)))
        posted = api.post(
            f"/api/judgment-tasks/{task.pk}/judgments/", {"item": body["item"], "value": 1},
            format="json",
        )  # fmt: skip
        assert posted.status_code == 201
        shapes[lease.gold].add(tuple(sorted(posted.json())))
        made += 1
    assert made == 9 and shapes[True] == shapes[False]
    listed = api.get(f"/api/judgment-tasks/{task.pk}/judgments/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert len(rows) == 9  # their gold judgments are listed as any other
    assert all("gold" not in key for row in rows for key in row)
    # Submitting a gold item's judgment again is the same harmless repeat as for any item.
    gold_item = GoldItem.objects.filter(task=task).first().item_id  # type: ignore[union-attr]
    again = api.post(
        f"/api/judgment-tasks/{task.pk}/judgments/", {"item": gold_item, "value": 0}, format="json"
    )
    assert again.status_code == 200 and again.json()["already_recorded"] is True
