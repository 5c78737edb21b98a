"""Project admins define judgment tasks; bad combinations are explained."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse

from annotation.judgment_tasks.models import JudgmentTask

pytestmark = pytest.mark.django_db


def _post(client: Any, project: Any, **fields: Any) -> Any:
    data = {
        "name": "Keep?", "question": "Keep this query?", "scheme": "nominal",
        "labels": json.dumps([{"value": "keep", "label": "Keep", "accept": True},
                              {"value": "drop", "label": "Drop"}]),
        "relabel_fields": ["category"], "overlap": "3", "consensus": "majority",
        "required_value": "", "lease_minutes": "30", "active": "on",
    }  # fmt: skip
    data.update(fields)
    return client.post(reverse("annotation:task_new", args=[project.pk]), data)


def test_admin_creates_a_task_that_judges(project: Any, clients: dict[str, Any]) -> None:
    r = _post(clients["admin"], project)
    assert r.status_code == 302, r.content.decode()[:2000]
    task = JudgmentTask.objects.get(project=project, name="Keep?")
    assert task.label_values == ["keep", "drop"] and task.accepts("keep")
    assert task.relabel_fields == ["category"]
    edit = reverse("annotation:task_edit", args=[project.pk, task.pk])
    assert clients["admin"].get(edit).status_code == 200


def test_bad_tasks_are_explained(project: Any, clients: dict[str, Any]) -> None:
    r = _post(clients["admin"], project, labels="[]")
    assert "at least two" in r.content.decode()
    r = _post(clients["admin"], project, scheme="binary", consensus="all_required")
    assert "needs a required value" in r.content.decode()
    r = _post(clients["admin"], project, labels="[{not json")
    assert r.status_code == 200 and "JSON" in r.content.decode()
    assert not JudgmentTask.objects.filter(project=project).exists()


def test_only_admins_define_tasks(project: Any, clients: dict[str, Any]) -> None:
    assert _post(clients["reviewer"], project).status_code == 403
    assert _post(clients["annotator"], project).status_code == 403
    assert _post(clients["outsider"], project).status_code == 404
    assert _post(clients["anonymous"], project).status_code == 302
    assert not JudgmentTask.objects.exists()


def test_admin_adds_the_default_task_once(project: Any, clients: dict[str, Any]) -> None:
    project.data_format, project.kind, project.tag_syntax = "mms", "plan", ""
    project.save()
    url = reverse("annotation:task_defaults", args=[project.pk])
    page = clients["admin"].get(reverse("annotation:task_list", args=[project.pk]))
    assert "plan-validity task" in page.content.decode()
    assert clients["admin"].post(url).status_code == 302
    assert clients["admin"].post(url).status_code == 302
    (task,) = JudgmentTask.objects.filter(project=project)
    assert (task.scheme, task.overlap, task.consensus, task.required_value) == (
        "binary", 3, "all_required", 1,
    )  # fmt: skip
    assert clients["annotator"].post(url).status_code == 403


def test_admin_turns_on_routing_by_doubt(project: Any, clients: dict[str, Any]) -> None:
    """The task's settings form has "Serve items by doubt" (off by default) and the reliability
    threshold (default 0.7; out of 0..1 explained, nothing saved)."""
    page = clients["admin"].get(reverse("annotation:task_new", args=[project.pk])).content.decode()
    assert "Serve items by doubt" in page and 'value="0.7"' in page
    r = _post(clients["admin"], project, reliability_threshold="1.5")
    assert r.status_code == 200 and "less than or equal to 1" in r.content.decode()
    assert not JudgmentTask.objects.filter(project=project).exists()
    r = _post(clients["admin"], project, serve_by_doubt="on", reliability_threshold="0.8")
    assert r.status_code == 302
    task = JudgmentTask.objects.get(project=project, name="Keep?")
    assert task.serve_by_doubt and task.reliability_threshold == 0.8
    r = _post(clients["admin"], project, name="Plain")
    assert not JudgmentTask.objects.get(name="Plain").serve_by_doubt
