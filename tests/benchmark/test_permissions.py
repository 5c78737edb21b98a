"""The permission matrix: every role against every endpoint, as one table.

Roles: admin, reviewer and annotator of the project; an outsider (admin of another project);
anonymous. Members see the project; the outsider gets 404 (the project does not exist for
them); anonymous users are sent to the login page (UI) or asked for credentials (API, 401 with
WWW-Authenticate)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from benchmark import permissions
from benchmark.models import Project, Role
from tests.conftest import ROLES
from tests.factories import (
    ImageFactory,
    ItemFactory,
    JobFactory,
    PlanFactory,
    ResponseFactory,
    TrajectoryFactory,
    image_ref,
)

pytestmark = pytest.mark.django_db

HX_MAIN = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "main"}
HX_LIST = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "item-list"}

#            admin reviewer annotator outsider anonymous
MEMBERS = (200, 200, 200, 404, 302)
ANY_USER = (200, 200, 200, 200, 302)
ADMIN_ONLY = (200, 403, 403, 404, 302)
ADMIN_REVIEWER = (200, 200, 403, 404, 302)
API_MEMBERS = (200, 200, 200, 404, 401)
API_ANY_USER = (200, 200, 200, 200, 401)
EVERYONE = (200, 200, 200, 200, 200)

# (name, method, path, extra request kwargs, expected status per role in ROLES order)
MATRIX: list[tuple[str, str, str, dict[str, Any], tuple[int, ...]]] = [
    ("login page", "get", "/accounts/login/", {}, EVERYONE),
    ("project list", "get", "/", {}, ANY_USER),
    ("project list fragment", "get", "/", HX_MAIN, ANY_USER),
    ("project page", "get", "/projects/{project}/", {}, MEMBERS),
    ("project page fragment", "get", "/projects/{project}/", HX_MAIN, MEMBERS),
    ("item list fragment", "get", "/projects/{project}/?status=draft", HX_LIST, MEMBERS),
    ("item page", "get", "/projects/{project}/items/{item}/", {}, MEMBERS),
    (
        "item restore, not discarded",
        "post",
        "/projects/{project}/items/{item}/restore/",
        {},
        (409, 409, 403, 404, 302),
    ),
    ("item fragment", "get", "/projects/{project}/items/{item}/", HX_MAIN, MEMBERS),
    ("image", "get", "/images/{sha}/", {}, MEMBERS),
    ("image thumbnail", "get", "/images/{sha}/thumb/", {}, MEMBERS),
    ("import page", "get", "/projects/{project}/datasets/import/", {}, ADMIN_ONLY),
    ("import upload (no file)", "post", "/projects/{project}/datasets/import/", {}, ADMIN_ONLY),
    ("export", "get", "/projects/{project}/datasets/export/", {}, ADMIN_REVIEWER),
    (
        "export one status",
        "get",
        "/projects/{project}/datasets/export/?status=draft",
        {},
        ADMIN_REVIEWER,
    ),
    # {job} is an import job the admin started: admins see imports (tests/benchmark/
    # test_job_visibility.py has every kind of job against every role).
    ("job page", "get", "/jobs/{job}/", {}, ADMIN_ONLY),
    (
        "job fragment",
        "get",
        "/jobs/{job}/",
        {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "job-{job}"},
        ADMIN_ONLY,
    ),
    ("ask the model page", "get", "/projects/{project}/llm/items/{item}/", {}, MEMBERS),
    ("ask the model fragment", "get", "/projects/{project}/llm/items/{item}/", HX_MAIN, MEMBERS),
    ("ask the model (no prompt)", "post", "/projects/{project}/llm/items/{item}/", {}, MEMBERS),
    ("job retry (not retryable)", "post", "/llm/jobs/{job}/retry/", {}, (400, 403, 403, 404, 302)),
    ("images page", "get", "/projects/{project}/images/", {}, MEMBERS),
    (
        "images grid fragment",
        "get",
        "/projects/{project}/images/",
        {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "image-grid"},
        MEMBERS,
    ),
    ("image upload (no file)", "post", "/projects/{project}/images/", {}, MEMBERS),
    (
        "image preview (no recipe)",
        "post",
        "/projects/{project}/images/preview/",
        {},
        (400, 400, 400, 404, 302),
    ),
    (
        "image derive (no recipe)",
        "post",
        "/projects/{project}/images/derive/",
        {},
        (400, 400, 400, 404, 302),
    ),
    ("image editor page", "get", "/projects/{project}/images/{sha}/edit/", {}, MEMBERS),
    (
        "image editor save (no recipe)",
        "post",
        "/projects/{project}/images/{sha}/edit/",
        {},
        MEMBERS,
    ),
    ("toolset page", "get", "/projects/{project}/toolsets/", {}, MEMBERS),
    ("toolset edit (invalid)", "post", "/projects/{project}/toolsets/", {}, ADMIN_ONLY),
    ("api projects", "get", "/api/projects/", {}, API_ANY_USER),
    ("api project", "get", "/api/projects/{project}/", {}, API_MEMBERS),
    (
        "api import (no file)",
        "post",
        "/api/projects/{project}/import/",
        {},
        (400, 403, 403, 404, 401),
    ),
    ("api items", "get", "/api/items/", {}, API_ANY_USER),
    ("api items of project", "get", "/api/items/?project={project}", {}, API_ANY_USER),
    ("api item", "get", "/api/items/{item}/", {}, API_MEMBERS),
    ("api responses", "get", "/api/responses/", {}, API_ANY_USER),
    ("api response", "get", "/api/responses/{response}/", {}, API_MEMBERS),
    ("api plans", "get", "/api/plans/", {}, API_ANY_USER),
    ("api plan", "get", "/api/plans/{plan}/", {}, API_MEMBERS),
    ("api trajectories", "get", "/api/trajectories/", {}, API_ANY_USER),
    ("api trajectory", "get", "/api/trajectories/{trajectory}/", {}, API_MEMBERS),
    ("api images", "get", "/api/images/", {}, API_ANY_USER),
    ("api image", "get", "/api/images/{sha}/", {}, API_MEMBERS),
    ("api jobs", "get", "/api/jobs/", {}, API_ANY_USER),
    ("api job", "get", "/api/jobs/{job}/", {}, (200, 403, 403, 404, 401)),
    ("api schema", "get", "/api/schema/", {}, API_ANY_USER),
    ("api docs", "get", "/api/docs/", {}, API_ANY_USER),
]


@pytest.fixture
def world(project: Project, users: dict[str, Any]) -> dict[str, Any]:
    image = ImageFactory(projects=[project])
    item = ItemFactory(project=project, image_refs=[image_ref(image, position=0)])
    return {
        "project": project.pk,
        "item": item.pk,
        "sha": image.sha256,
        "response": ResponseFactory(item=item).pk,
        "plan": PlanFactory(item=item).pk,
        "trajectory": TrajectoryFactory(item=item).pk,
        "job": JobFactory(project=project, created_by=users["admin"]).pk,
    }


@pytest.mark.parametrize(
    ("name", "method", "path", "extra", "role", "expected"),
    [
        pytest.param(name, method, path, extra, role, statuses[i], id=f"{name}-{role}")
        for name, method, path, extra, statuses in MATRIX
        for i, role in enumerate(ROLES)
    ],
)
def test_permission_matrix(
    clients: dict[str, Any],
    world: dict[str, Any],
    name: str,
    method: str,
    path: str,
    extra: dict[str, Any],
    role: str,
    expected: int,
) -> None:
    url = path.format(**world)
    headers = {k: v.format(**world) for k, v in extra.items()}
    response = getattr(clients[role], method)(url, **headers)
    assert response.status_code == expected, (name, role, response.status_code)
    if expected == 302:
        assert response["Location"].startswith("/accounts/login/")


EVERYONE = {"view", "edit", "ask_model", "judge"}  # every member
# What reviewers do, each its own action (issue 23: one "review" guarded 72 call sites).
REVIEWING = {"set_status", "adjudicate", "manage_studies", "run_judges", "score", "release"}
REVIEWING |= {"watch_jobs", "evaluate"}  # evaluate: run a model under test (issue 24)


@pytest.mark.parametrize(
    ("role", "expected"),
    [
        (Role.ADMIN, {*EVERYONE, *REVIEWING, "import", "export", "manage"}),
        (Role.REVIEWER, {*EVERYONE, *REVIEWING, "export"}),
        (Role.ANNOTATOR, EVERYONE),
    ],
)
def test_allowed_actions_per_role(
    project: Project, users: dict[str, Any], role: str, expected: set[str]
) -> None:
    assert permissions.allowed_actions(user=users[role], project=project) == expected


def test_outsider_and_anonymous_may_do_nothing(project: Project, users: dict[str, Any]) -> None:
    from django.contrib.auth.models import AnonymousUser

    assert permissions.allowed_actions(user=users["outsider"], project=project) == set()
    assert permissions.allowed_actions(user=AnonymousUser(), project=project) == set()


def test_import_refused_for_reviewer_even_with_a_file(
    project: Project, users: dict[str, Any], clients: dict[str, Any]
) -> None:
    upload = SimpleUploadedFile("data.jsonl", b'{"trace_id": "x", "query": "q"}\n')
    response = clients["reviewer"].post(
        f"/projects/{project.pk}/datasets/import/", {"file": upload}
    )
    assert response.status_code == 403
    assert not project.jobs.exists()


def test_roles_for_reads_the_table_a_selector_filters_by() -> None:
    assert permissions.roles_for("adjudicate") == {Role.ADMIN, Role.REVIEWER}
    assert permissions.roles_for("import") == {Role.ADMIN}
    with pytest.raises(KeyError):
        permissions.roles_for("review")
