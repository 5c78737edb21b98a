"""Judging through the API: next item, submit, blind listing, agreement for reviewers."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from annotation.judgment_tasks.models import JudgmentTask
from tests.factories import ItemFactory, MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def world() -> dict[str, Any]:
    project = ProjectFactory(name="api-judging")
    for i in range(2):
        ItemFactory(project=project, external_id=f"x{i}", position=i)
    task = JudgmentTask.objects.create(
        project=project,
        name="t",
        question="ok?",
        scheme="binary",
        overlap=2,
        consensus="unanimous",
    )
    clients = {}
    for name, role in [("a", "annotator"), ("b", "annotator"), ("r", "reviewer")]:
        user = UserFactory(username=name)
        MembershipFactory(project=project, user=user, role=role)
        client = APIClient()
        client.force_authenticate(user)
        clients[name] = client
    outsider = APIClient()
    outsider.force_authenticate(UserFactory(username="o"))
    clients["o"] = outsider
    return {"task": task, "c": clients}


def test_annotators_see_only_their_own_judgments(world: dict[str, Any]) -> None:
    task, c = world["task"], world["c"]
    base = f"/api/judgment-tasks/{task.pk}"
    lease_a = c["a"].post(f"{base}/next/").json()
    lease_b = c["b"].post(f"{base}/next/").json()
    assert lease_a["item"] == lease_b["item"]
    r = c["a"].post(f"{base}/judgments/", {"item": lease_a["item"], "value": 1}, format="json")
    assert r.status_code == 201, r.content
    # b has not submitted: the API shows b nothing of a's judgment
    assert c["b"].get(f"{base}/judgments/").json()["results"] == []
    c["b"].post(f"{base}/judgments/", {"item": lease_b["item"], "value": 0}, format="json")
    mine = c["b"].get(f"{base}/judgments/").json()["results"]
    assert [(j["annotator"], j["value"]) for j in mine] == [("b", 0)]
    everyone = c["r"].get(f"{base}/judgments/").json()["results"]
    assert sorted(j["annotator"] for j in everyone) == ["a", "b"]
    report = c["r"].get(f"{base}/agreement/").json()
    assert report["percent_agreement"]["value"] == 0.0
    assert c["a"].get(f"{base}/agreement/").status_code == 403


def test_judging_an_unassigned_item_is_403_and_bad_value_400(world: dict[str, Any]) -> None:
    task, c = world["task"], world["c"]
    base = f"/api/judgment-tasks/{task.pk}"
    item = task.project.items.first()
    r = c["a"].post(f"{base}/judgments/", {"item": item.pk, "value": 1}, format="json")
    assert r.status_code == 403
    assert "not assigned" in r.json()["detail"]
    lease = c["a"].post(f"{base}/next/").json()
    r = c["a"].post(f"{base}/judgments/", {"item": lease["item"], "value": "maybe"}, format="json")
    assert r.status_code == 400
    assert "labels" in r.json()["detail"]


def test_other_projects_tasks_are_404(world: dict[str, Any]) -> None:
    task, c = world["task"], world["c"]
    assert c["o"].get(f"/api/judgment-tasks/{task.pk}/").status_code == 404
    assert c["o"].post(f"/api/judgment-tasks/{task.pk}/next/").status_code == 404
    assert c["o"].get("/api/judgment-tasks/").json()["results"] == []
