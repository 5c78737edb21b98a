"""The import page's Label Studio user map, and who a web import may credit (as on the command
line: members of the project who may judge the task)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotation.judgment_tasks.models import Judgment
from benchmark.models import Job, Project, Role
from tests.annotation.label_studio_export import choice, normal_export
from tests.factories import JudgmentTaskFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

LABELS = [{"value": "yes", "accept": True}, {"value": "no"}]


def _post(client: Client, project: Project, capture: Any, body: bytes, **data: Any) -> Any:
    with capture(execute=True):
        return client.post(
            f"/projects/{project.pk}/datasets/import/",
            {"file": SimpleUploadedFile("project-3-at-2025.json", body), **data},
            HTTP_HX_REQUEST="true",
            HTTP_HX_TARGET="import-panel",
        )


def _export() -> bytes:
    datas = [{"external_id": "x1", "query": "Keep it?"}, {"external_id": "x2", "query": "And?"}]
    tasks = normal_export(
        datas, {0: [(2, [choice("yes")]), (3, [choice("no")])], 1: [(9, [choice("yes")])]}
    )
    return json.dumps(tasks).encode()


@pytest.fixture
def task(project: Project, users: dict[str, Any]) -> Any:
    return JudgmentTaskFactory(project=project, name="Keep?", scheme="nominal", labels=LABELS)


def test_the_user_map_field_credits_mapped_members(
    project: Project,
    users: dict[str, Any],
    clients: dict[str, Client],
    task: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    response = _post(
        clients["admin"], project, django_capture_on_commit_callbacks, _export(),
        source="label-studio", task="Keep?", user_map="2=annotator-user, 3=reviewer-user",
    )  # fmt: skip
    assert response.status_code == 200
    assert sorted(Judgment.objects.values_list("item__external_id", "user__username", "value")) == [
        ("x1", "annotator-user", "yes"),
        ("x1", "reviewer-user", "no"),
    ]
    job = Job.objects.get(project=project)
    assert job.result["judgments"]["user_ids_unmapped"] == ["9"]


def test_the_import_page_offers_the_user_map(project: Project, clients: dict[str, Client]) -> None:
    page = clients["admin"].get(f"/projects/{project.pk}/datasets/import/").content.decode()
    assert 'name="user_map"' in page


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"task": "Keep?", "user_map": "2"}, "ID=USER"),
        ({"task": "Keep?", "user_map": "2=outsider-user"}, "is not a member of project"),
        ({"task": "Keep?", "user_map": "2=no-such-person"}, "is not a member of project"),
        ({"user_map": "2=annotator-user"}, "goes with a judgment task"),
    ],
)
def test_a_bad_user_map_re_renders_the_form_and_starts_nothing(
    project: Project,
    clients: dict[str, Client],
    task: Any,
    django_capture_on_commit_callbacks: Any,
    data: dict[str, str],
    message: str,
) -> None:
    response = _post(
        clients["admin"], project, django_capture_on_commit_callbacks, _export(),
        source="label-studio", **data,
    )  # fmt: skip
    assert response.status_code == 200
    html = response.content.decode()
    start = html.index('id="id_user_map"')  # the message is under its field
    assert message in html[start : html.find("<label", start)]
    assert not Job.objects.filter(project=project).exists()
    assert not project.items.exists()


def test_a_web_import_credits_no_one_outside_the_project(
    project: Project,
    users: dict[str, Any],
    clients: dict[str, Client],
    task: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """An admin of the project uploads an export naming a member of another project and a
    staff account: neither is credited, and both are reported alike."""
    staff = UserFactory(username="staffer", is_staff=True)
    MembershipFactory(project=project, user=UserFactory(username="ann"), role=Role.ANNOTATOR)
    tasks = [
        {
            "id": 1,
            "data": {"external_id": "x1", "query": "q"},
            "annotations": [
                {"completed_by": {"email": users["outsider"].email}, "result": [choice("yes")]},
                {"completed_by": {"email": staff.email}, "result": [choice("yes")]},
                {"completed_by": "ann", "result": [choice("no")]},
            ],
        }
    ]
    _post(
        clients["admin"], project, django_capture_on_commit_callbacks,
        json.dumps(tasks).encode(), source="label-studio", task="Keep?",
    )  # fmt: skip
    assert list(Judgment.objects.values_list("user__username", flat=True)) == ["ann"]
    job = Job.objects.get(project=project)
    assert job.result["judgments"]["users_not_importable"] == sorted(
        [users["outsider"].email, staff.email]
    )
    # the job's page says what was not imported, in the same words for both
    page = clients["admin"].get(f"/jobs/{job.pk}/").content.decode()
    assert "who are not members of this project who may judge this task" in page
    assert users["outsider"].email in page and "staffer@example.org" in page
