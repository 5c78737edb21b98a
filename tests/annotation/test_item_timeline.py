"""The item's one history: its fields', plans', answers' and reference trajectory's versions in
one timeline (sources registered by annotation), each with author, time, what changed, note,
its own version page and its own revert endpoint; queries constant in the number of versions;
the blind verifier refused as before."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.plan_editor.services import plan_save
from annotation.tag_review.services import response_save_version
from annotation.trajectories.services import task_document
from benchmark.items.history import HistoryEntry, history_source_register, item_timeline
from benchmark.items.services import item_update
from benchmark.models import Item, Origin, Plan, ProjectKind, Response, Role
from tests.factories import (
    ItemFactory,
    MembershipFactory,
    ProjectFactory,
    ResponseFactory,
    ResponseVersionFactory,
    TrajectoryFactory,
    TrajectoryVersionFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

STEP = {"id": 0, "name": "image captioning", "args": {"image": "1.jpg"}}


def member(project: Any, role: str = Role.ANNOTATOR, name: str = "") -> tuple[Client, Any]:
    user = UserFactory(**({"username": name} if name else {}))
    MembershipFactory(project=project, user=user, role=role)
    client = Client()
    client.force_login(user)
    return client, user


def history_url(item: Item) -> str:
    return reverse("benchmark:item_history", args=[item.project_id, item.pk])


def entries(body: str) -> list[tuple[str, str]]:
    """(source, version) of each entry, in page order."""
    return re.findall(r'data-source="([^"]+)" data-version="(\d+)"', body)


def steps(n: int) -> list[dict[str, Any]]:
    return [{**STEP, "args": {"image": f"{n}.jpg"}}]


def edit_everything(item: Item, user: Any, times: int, start: int) -> None:
    """Field and plan saves (m&m's), or field and answer saves (ATP-Bench)."""
    response = Response.objects.filter(item=item, key="gt").first()
    for n in range(start, start + times):
        item_update(item=item, user=user, changes={"query": f"Query {n}"}, base_version=None)
        if response is None:
            plan_save(item=item, user=user, steps=steps(n), note=f"plan {n}")
            plan_save(item=item, user=user, steps=steps(n + 100), key="alt1", is_alternative=True)
            continue
        response.item = item
        latest = response.versions.order_by("-number").first()
        response_save_version(
            response=response,
            user=user,
            text=f"Answer {n}",
            base_number=latest.number if latest else 1,
            decisions=[],
            note=f"answer {n}",
        )


@pytest.fixture
def mms() -> Any:
    return ProjectFactory(kind=ProjectKind.PLAN, data_format="mms", tag_syntax="")


@pytest.fixture
def atp() -> Any:
    return ProjectFactory(kind=ProjectKind.INTERLEAVED, data_format="atp")


def answered(project: Any, text: str = "") -> tuple[Item, Response]:
    item = ItemFactory(project=project)
    return item, ResponseFactory(item=item, key="gt", origin=Origin.GROUND_TRUTH, text=text)


def test_one_timeline_of_fields_and_plans(mms: Any) -> None:
    item = ItemFactory(project=mms)
    client, user = member(mms, name="dana")
    edit_everything(item, user, times=2, start=1)
    body = client.get(history_url(item)).content.decode()
    shown = entries(body)
    # Fields 1-3 (1: as created), plan 1-2 (the first save made it), alt1 1-2; newest first.
    assert sorted(shown) == sorted(
        [("Fields", "1"), ("Fields", "2"), ("Fields", "3"), ("Plan", "1"), ("Plan", "2")]
        + [("Plan alt1", "1"), ("Plan alt1", "2")]
    )
    assert shown[0] == ("Plan alt1", "2") and shown[-1] == ("Fields", "1")
    assert "by dana" in body and "plan 2" in body
    # Each entry links to its own version page.
    plan_page = reverse("annotation:plan_version", args=[mms.pk, item.pk, 1])
    assert f'href="{plan_page}"' in body
    assert f'href="{plan_page}?key=alt1"' in body
    assert f'href="{history_url(item)}#fields-v2"' in body and 'id="fields-v2"' in body
    # What changed, in short: the field's name, the plan's step.
    assert "step 0: image" in body and ">query<" in body


def test_answers_join_the_timeline(atp: Any) -> None:
    item, response = answered(atp)
    client, user = member(atp, name="dana")
    edit_everything(item, user, times=2, start=1)
    body = client.get(history_url(item)).content.decode()
    assert sorted(e for e in entries(body) if e[0] != "Fields") == [
        ("Answer · Ground truth", n) for n in ("1", "2", "3")
    ]
    assert "answer 2" in body and "+1 −1 line(s)" in body
    answer_page = reverse("annotation:tag_version", args=[atp.pk, item.pk, response.pk, 2])
    assert f'href="{answer_page}"' in body
    assert f'id="response-{response.pk}-v2"' in body
    # The version's own page leads back to the item's history.
    assert f'href="{history_url(item)}"' in client.get(answer_page).content.decode()


def test_each_entry_reverts_through_its_own_endpoint(mms: Any, atp: Any) -> None:
    item = ItemFactory(project=mms)
    client, user = member(mms)
    edit_everything(item, user, times=2, start=1)
    body = client.get(history_url(item)).content.decode()
    plan_revert = reverse("annotation:plan_version_revert", args=[mms.pk, item.pk, 1])
    field_revert = reverse("benchmark:item_revert", args=[mms.pk, item.pk, 2])
    for url in (plan_revert, field_revert):
        assert f'action="{url}"' in body
    # The current versions offer no revert.
    assert reverse("annotation:plan_version_revert", args=[mms.pk, item.pk, 2]) not in body

    assert client.post(plan_revert, {"key": "gold", "base": "2"}).status_code == 302
    assert Plan.objects.get(item=item, key="gold").steps == steps(1)
    assert client.post(field_revert, {"base_version": "3"}).status_code == 302
    assert Item.objects.get(pk=item.pk).query == "Query 1"
    # The timeline shows the reverts as new versions; a revert from the outdated page is 409.
    body = client.get(history_url(item)).content.decode()
    assert ("Plan", "3") in entries(body) and "Reverted to version 1" in body
    assert client.post(plan_revert, {"key": "gold", "base": "2"}).status_code == 409
    assert client.post(field_revert, {"base_version": "3"}).status_code == 409

    item, response = answered(atp, text="Imported")
    client, user = member(atp)
    edit_everything(item, user, times=2, start=1)
    answer_revert = reverse("annotation:tag_version_revert", args=[atp.pk, item.pk, response.pk, 1])
    body = client.get(history_url(item)).content.decode()
    assert f'action="{answer_revert}"' in body and 'name="base" value="3"' in body
    assert client.post(answer_revert, {"base": "3"}).status_code == 302
    assert Response.objects.get(pk=response.pk).text == "Imported"
    assert client.post(answer_revert, {"base": "3"}).status_code == 409


@pytest.mark.parametrize("kind", ["mms", "atp"])
def test_queries_do_not_grow_with_the_versions(kind: str, request: Any) -> None:
    project = request.getfixturevalue(kind)
    item, _ = answered(project) if kind == "atp" else (ItemFactory(project=project), None)
    client, user = member(project)
    if kind == "atp":
        other = ResponseFactory(item=item, key="gpt", origin=Origin.MODEL, text="model")
        ResponseVersionFactory(response=other, number=1)
    edit_everything(item, user, times=1, start=1)

    def count() -> tuple[int, int]:
        with CaptureQueriesContext(connection) as queries:
            page = client.get(history_url(item))
        assert page.status_code == 200
        return len(queries), len(entries(page.content.decode()))

    few, shown_few = count()
    edit_everything(item, user, times=6, start=10)
    if kind == "atp":
        for n in range(2, 8):
            ResponseVersionFactory(response=other, number=n, text=f"model {n}", author=user)
    many, shown_many = count()
    assert shown_many >= shown_few + 12
    assert many == few


def test_reviewers_see_and_cannot_revert_what_they_may_not_edit(mms: Any) -> None:
    item = ItemFactory(project=mms)
    _, user = member(mms)
    plan_save(item=item, user=user, steps=steps(1))
    plan_save(item=item, user=user, steps=steps(2))
    timeline = item_timeline(user=user, project=mms, item=item, may_edit=False)
    assert [e.source for e in timeline if e.source == "Plan"] == ["Plan", "Plan"]
    assert all(not e.revert_url for e in timeline)
    outsider, _ = member(ProjectFactory(), Role.ADMIN)
    assert outsider.get(history_url(item)).status_code == 404


def test_a_removed_alternative_keeps_its_versions_without_revert(mms: Any) -> None:
    item = ItemFactory(project=mms)
    client, user = member(mms)
    for n in (1, 2):
        plan_save(item=item, user=user, steps=steps(n), key="alt1", is_alternative=True)
    Plan.objects.filter(item=item, key="alt1").delete()
    body = client.get(history_url(item)).content.decode()
    assert [e for e in entries(body) if e[0] == "Plan alt1"] == [("Plan alt1", "2")] + [
        ("Plan alt1", "1")
    ]
    assert (
        "plan_version_revert" not in body
        and f"/plan-editor/items/{item.pk}/versions/1/revert/" not in body
    )


def test_trajectory_versions_join_the_timeline() -> None:
    project = ProjectFactory(kind=ProjectKind.TRAJECTORY, data_format="agentic-mme")
    item = ItemFactory(project=project, expected_answer="Willow St")
    client, user = member(project, name="erin")
    reference = TrajectoryFactory(item=item, key="reference", origin=Origin.GROUND_TRUTH)
    first = task_document(item=item, reference=reference)
    first["golden_answer"]["value"] = "Willow Street"
    TrajectoryVersionFactory(item=item, number=1, data=first, note="imported")
    TrajectoryVersionFactory(
        item=item,
        number=2,
        data=task_document(item=item, reference=reference),
        author=user,
        base_number=1,
        note="fixed the answer",
    )
    body = client.get(history_url(item)).content.decode()
    assert [e for e in entries(body) if e[0] == "Trajectory"] == [
        ("Trajectory", "2"),
        ("Trajectory", "1"),
    ]
    assert "by erin" in body and "fixed the answer" in body
    page = reverse("annotation:trajectory_version", args=[project.pk, item.pk, 2])
    assert f'href="{page}"' in body
    revert = reverse("annotation:trajectory_version_revert", args=[project.pk, item.pk, 1])
    assert f'action="{revert}"' in body
    assert 'name="base" value="2"' in body
    done = client.post(revert, {"base": "2"})
    assert done.status_code == 302, re.findall(r"<li>(.*?)</li>", done.content.decode())
    assert Item.objects.get(pk=item.pk).expected_answer == "Willow Street"


def test_a_registered_source_adds_entries(mms: Any) -> None:
    item = ItemFactory(project=mms)
    _, user = member(mms)

    def source(**kwargs: Any) -> list[HistoryEntry]:
        return [HistoryEntry("Notes", 1, "zoe", item.created_at, "a note")]

    history_source_register(source)
    try:
        timeline = item_timeline(user=user, project=mms, item=item, may_edit=True)
    finally:
        from benchmark.items import history

        history._SOURCES.remove(source)
    assert ("Notes", 1) in [(e.source, e.number) for e in timeline]
