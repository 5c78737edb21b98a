"""Project admins edit their toolset; a built-in or shared toolset is copied first."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse

from benchmark.builtin import toolsets_ensure
from benchmark.models import Project, Tool
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_projects(client_for: Any) -> dict[str, Any]:
    atp = toolsets_ensure()["atp"]
    a = Project.objects.create(
        name="A", kind="interleaved", tag_syntax="atp", data_format="atp", toolset=atp
    )
    b = Project.objects.create(
        name="B", kind="interleaved", tag_syntax="atp", data_format="atp", toolset=atp
    )
    admin, annotator = UserFactory(username="adm"), UserFactory(username="ann")
    MembershipFactory(project=a, user=admin, role="admin")
    MembershipFactory(project=a, user=annotator, role="annotator")
    return {"a": a, "b": b, "admin": client_for(admin), "annotator": client_for(annotator)}


def test_admin_renames_code_parameters_without_touching_other_projects(
    two_projects: dict[str, Any],
) -> None:
    a, b = two_projects["a"], two_projects["b"]
    code = a.toolset.tools.get(name__iexact="code")
    params = [
        {"name": "diagram_type", "type": "str", "required": True},
        {"name": "data", "type": "str", "required": True},
    ]
    r = two_projects["admin"].post(
        reverse("benchmark:toolset", args=[a.pk]),
        {
            "tool_id": code.pk,
            "name": code.name,
            "description": "Charts from data",
            "parameters": json.dumps(params),
        },
    )
    assert r.status_code == 302
    a.refresh_from_db()
    b.refresh_from_db()
    assert a.toolset != b.toolset and not a.toolset.builtin
    assert [p["name"] for p in a.toolset.tools.get(name=code.name).parameters] == [
        "diagram_type",
        "data",
    ]
    assert [p["name"] for p in b.toolset.tools.get(name=code.name).parameters] == ["code"]
    assert a.toolset.tools.count() == b.toolset.tools.count() == 5


def test_bad_parameters_are_explained_and_nothing_changes(two_projects: dict[str, Any]) -> None:
    a = two_projects["a"]
    url = reverse("benchmark:toolset", args=[a.pk])
    r = two_projects["admin"].post(url, {"name": "Plot", "parameters": "[{'name': 1"})
    assert r.status_code == 200
    assert "not valid JSON" in r.content.decode()
    r = two_projects["admin"].post(url, {"name": "Plot", "parameters": '[{"type": "str"}]'})
    assert "parameter 1 needs a name" in r.content.decode()
    r = two_projects["admin"].post(url, {"name": "search", "parameters": "[]"})
    assert "already has a tool named" in r.content.decode()
    a.refresh_from_db()
    assert a.toolset.builtin  # nothing was copied for a refused edit
    assert not Tool.objects.filter(name="Plot").exists()


def test_annotators_see_but_cannot_edit(two_projects: dict[str, Any]) -> None:
    a = two_projects["a"]
    url = reverse("benchmark:toolset", args=[a.pk])
    page = two_projects["annotator"].get(url)
    assert page.status_code == 200 and "Reference" in page.content.decode()
    assert "Add a tool" not in page.content.decode()
    r = two_projects["annotator"].post(url, {"name": "X", "parameters": "[]"})
    assert r.status_code == 403
    stranger = UserFactory(username="s")
    from django.test import Client

    c = Client()
    c.force_login(stranger)
    assert c.get(url).status_code == 404
