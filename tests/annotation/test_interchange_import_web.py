"""The import page reads Label Studio JSON with a judgment task and a label mapping, and JSON
Lines / CSV with a column mapping, as ``import_dataset`` does on the command line."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotation.judgment_tasks.models import Judgment
from benchmark.models import Job, Project
from tests.benchmark.formats.test_label_studio_format import EXPORT
from tests.factories import JudgmentTaskFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

LABELS = [{"value": "yes", "accept": True}, {"value": "no"}]


def _relabelled(extra: str = "") -> bytes:
    tasks = copy.deepcopy(EXPORT)
    for task in tasks:
        for annotation in task.get("annotations", []):
            for result in annotation["result"]:
                if result["type"] == "choices":
                    result["value"]["choices"] = [
                        {"yes": "Correct", "no": "Incorrect"}[c] for c in result["value"]["choices"]
                    ]
    if extra:
        tasks[1]["annotations"][0]["result"][0]["value"]["choices"] = [extra]
    return json.dumps(tasks).encode()


def _post(client: Client, project: Project, capture: Any, name: str, body: bytes, **data: Any):
    with capture(execute=True):
        return client.post(
            f"/projects/{project.pk}/datasets/import/",
            {"file": SimpleUploadedFile(name, body), **data},
            HTTP_HX_REQUEST="true",
            HTTP_HX_TARGET="import-panel",
        )


def test_label_studio_upload_with_task_and_labels_makes_judgments(
    project: Project, clients: dict[str, Client], django_capture_on_commit_callbacks: Any
) -> None:
    task = JudgmentTaskFactory(project=project, name="Keep?", scheme="nominal", labels=LABELS)
    MembershipFactory(project=project, user=UserFactory(username="ann", email="ann@example.org"))
    response = _post(
        clients["admin"], project, django_capture_on_commit_callbacks, "ls.json", _relabelled(),
        source="label-studio", mapping="question=query", task="Keep?",
        labels="Correct=yes,Incorrect=no",
    )  # fmt: skip
    assert response.status_code == 200
    assert project.items.count() == 3
    assert sorted(Judgment.objects.filter(task=task).values_list("value", flat=True)) == [
        "yes",
        "yes",
    ]
    job = Job.objects.get(project=project)
    assert job.result["judgments"]["user_ids_unmapped"] == ["8"]


def test_an_unmapped_label_fails_the_job_and_keeps_nothing(
    project: Project, clients: dict[str, Client], django_capture_on_commit_callbacks: Any
) -> None:
    task = JudgmentTaskFactory(project=project, name="Keep?", scheme="nominal", labels=LABELS)
    UserFactory(username="ann", email="ann@example.org")
    _post(
        clients["admin"], project, django_capture_on_commit_callbacks, "ls.json",
        _relabelled("Unsure"), source="label-studio", mapping="question=query", task="Keep?",
        labels="Correct=yes,Incorrect=no",
    )  # fmt: skip
    job = Job.objects.get(project=project)
    assert job.status == "failed"
    assert "Label Studio task 102" in job.error and "'Unsure'" in job.error
    assert not project.items.exists()
    assert not Judgment.objects.filter(task=task).exists()


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"task": "Nope"}, "task", "no judgment task &#x27;Nope&#x27;"),
        ({"task": "Keep?", "labels": "Correct=maybe"}, "labels", "not a value of task"),
        ({"labels": "Correct=yes"}, "labels", "goes with a judgment task"),
        ({"task": "Keep?", "labels": "Correct"}, "labels", "LABEL=VALUE"),
    ],
)
def test_bad_task_or_labels_re_render_the_form_and_start_nothing(
    project: Project,
    clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any,
    data: dict[str, str],
    field: str,
    message: str,
) -> None:
    JudgmentTaskFactory(project=project, name="Keep?", scheme="nominal", labels=LABELS)
    response = _post(
        clients["admin"], project, django_capture_on_commit_callbacks, "ls.json", _relabelled(),
        source="label-studio", mapping="question=query", **data,
    )  # fmt: skip
    assert response.status_code == 200
    html = response.content.decode()
    start = html.index(f'id="id_{field}"')  # the message is under its field
    assert message in html[start : html.find("<label", start)]
    assert not Job.objects.filter(project=project).exists()
    assert not project.items.exists()


def test_csv_upload_with_a_column_mapping(
    project: Project, clients: dict[str, Client], django_capture_on_commit_callbacks: Any
) -> None:
    body = b'"id","prompt","topic"\n"s1","What is 2+2?","math"\n"s2","Name a prime.","math"\n'
    response = _post(
        clients["admin"], project, django_capture_on_commit_callbacks, "sheet.csv", body,
        source="csv", mapping="id=external_id,prompt=query,topic=category",
    )  # fmt: skip
    assert response.status_code == 200
    assert sorted(project.items.values_list("external_id", "query", "category")) == [
        ("s1", "What is 2+2?", "math"),
        ("s2", "Name a prime.", "math"),
    ]


def test_the_import_page_offers_the_interchange_inputs(
    project: Project, clients: dict[str, Client]
) -> None:
    page = clients["admin"].get(f"/projects/{project.pk}/datasets/import/").content.decode()
    for needle in (
        'value="jsonl"',
        'value="csv"',
        'name="mapping"',
        'name="task"',
        'name="labels"',
    ):
        assert needle in page
