"""The permission matrix of judging and reviewing: every role against every endpoint of the
annotation and review apps (pages and API)."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import get_resolver, resolve

from annotation.models import JudgmentTask
from tests.conftest import ROLES
from tests.factories import ItemFactory, ResponseFactory

pytestmark = pytest.mark.django_db

# admin reviewer annotator outsider anonymous; "L" = redirect to the login page,
# "R" = redirect elsewhere (a lease handed out, a form done)
MEMBERS = (200, 200, 200, 404, "L")
REVIEWERS = (200, 200, 403, 404, "L")
LEASE = ("R", "R", "R", 404, "L")
API_MEMBERS = (200, 200, 200, 404, 403)
API_REVIEWERS = (200, 200, 403, 404, 403)

TAGS = "/projects/{project}/items/{item}/responses/{response}/"

MATRIX: list[tuple[str, str, str, dict[str, Any], tuple[Any, ...]]] = [
    ("task list", "get", "/projects/{project}/judge/", {}, MEMBERS),
    ("new task form", "get", "/projects/{project}/judge/new/", {}, (200, 403, 403, 404, "L")),
    ("default tasks", "post", "/projects/{project}/judge/defaults/", {}, ("R", 403, 403, 404, "L")),
    (
        "edit task form",
        "get",
        "/projects/{project}/judge/{task}/edit/",
        {},
        (200, 403, 403, 404, "L"),
    ),
    ("next item", "post", "/judge/{task}/next/", {}, LEASE),
    ("judge page, not leased", "get", "/judge/{task}/items/{item}/", {}, (200, 200, 403, 404, "L")),
    ("disputes", "get", "/review/{task}/disputes/", {}, REVIEWERS),
    ("adjudicate", "get", "/review/{task}/items/{item}/", {}, REVIEWERS),
    ("agreement", "get", "/review/{task}/agreement/", {}, REVIEWERS),
    ("judgments csv", "get", "/review/{task}/judgments.csv", {}, REVIEWERS),
    ("balanced subset", "get", "/projects/{project}/balance/", {}, REVIEWERS),
    ("score plans", "get", "/projects/{project}/score-plans/", {}, REVIEWERS),
    ("api tasks", "get", "/api/judgment-tasks/", {}, (200, 200, 200, 200, 403)),
    ("api task", "get", "/api/judgment-tasks/{task}/", {}, API_MEMBERS),
    ("api next", "post", "/api/judgment-tasks/{task}/next/", {}, API_MEMBERS),
    ("api judgments", "get", "/api/judgment-tasks/{task}/judgments/", {}, API_MEMBERS),
    ("api agreement", "get", "/api/judgment-tasks/{task}/agreement/", {}, API_REVIEWERS),
    ("tag review", "get", TAGS + "review/", {}, MEMBERS),
    ("tag review edit", "post", TAGS + "review/", {"data": {"base": 1, "op": "keep:0"}}, MEMBERS),
    ("tag discard, no reason", "post", TAGS + "discard/", {}, MEMBERS),
    ("tag versions", "get", TAGS + "versions/", {}, MEMBERS),
    ("tag version 1", "get", TAGS + "versions/1/", {}, MEMBERS),
    ("tag revert to current", "post", TAGS + "versions/1/revert/", {}, MEMBERS),
    ("tag decisions per tool", "get", "/projects/{project}/tag-decisions/", {}, MEMBERS),
]


@pytest.fixture
def world(project: Any, users: dict[str, Any]) -> dict[str, Any]:
    item = ItemFactory(project=project)
    task = JudgmentTask.objects.create(
        project=project, name="t", question="?", scheme="binary", overlap=5, consensus="unanimous"
    )
    response = ResponseFactory(item=item)
    return {"project": project.pk, "task": task.pk, "item": item.pk, "response": response.pk}


@pytest.mark.parametrize(
    ("name", "method", "path", "extra", "role", "expected"),
    [
        pytest.param(name, method, path, extra, role, statuses[i], id=f"{name}-{role}")
        for name, method, path, extra, statuses in MATRIX
        for i, role in enumerate(ROLES)
    ],
)
def test_permission_matrix(
    name: str,
    method: str,
    path: str,
    extra: dict[str, Any],
    role: str,
    expected: Any,
    world: dict[str, Any],
    clients: dict[str, Any],
) -> None:
    response = getattr(clients[role], method)(path.format(**world), **extra)
    if expected == "L":
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")
    elif expected == "R":
        assert response.status_code == 302
        assert not response["Location"].startswith("/accounts/login/")
    else:
        assert response.status_code == expected, (name, role, response.content[:300])


def test_matrix_covers_every_route() -> None:
    names: set[str] = set()

    def walk(patterns: list[Any]) -> None:
        for p in patterns:
            if hasattr(p, "url_patterns"):
                walk(p.url_patterns)
            elif p.name:
                names.add(p.name)

    for conf in ("annotation.urls", "review.urls", "annotation.api.urls"):
        walk(get_resolver(conf).url_patterns)
    fake = {"project": 1, "task": 1, "item": 1, "response": 1}
    covered = {resolve(path.format(**fake)).url_name for _, _, path, _, _ in MATRIX}
    missing = names - covered - {"api-root"}
    assert not missing, f"routes without a row: {sorted(missing)}"
