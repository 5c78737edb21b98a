"""Creating a project: the service, the page, and the guidelines panel on project pages."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from benchmark.builtin import taxonomies_ensure, toolsets_ensure
from benchmark.exceptions import Forbidden, ValidationFailed
from benchmark.models import AuditAction, AuditEvent, Membership, Project, Role
from benchmark.projects.services import project_create
from tests.factories import (
    ItemFactory,
    ProjectFactory,
    ResponseFactory,
    TaxonomyTermFactory,
    ToolFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("fmt", "kind", "tag_syntax"),
    [
        ("atp", "interleaved", "atp"),
        ("llmi", "interleaved", "llmi"),
        ("agentic-mme", "trajectory", ""),
        ("mms", "plan", ""),
    ],
)
def test_each_benchmark_sets_kind_format_and_syntax(fmt: str, kind: str, tag_syntax: str) -> None:
    staff = UserFactory(is_staff=True)
    project = project_create(user=staff, name=f"New {fmt}", data_format=fmt, guidelines="# Hi")
    assert (project.kind, project.data_format, project.tag_syntax) == (kind, fmt, tag_syntax)
    assert project.toolset.builtin and project.toolset.name == fmt
    assert project.taxonomy is not None and project.taxonomy.name == fmt
    assert project.guidelines == "# Hi"
    assert Membership.objects.get(project=project).user == staff
    assert Membership.objects.get(project=project).role == Role.ADMIN
    (event,) = AuditEvent.objects.filter(action=AuditAction.PROJECT_CREATED)
    assert event.actor == staff and event.project == project and event.details["benchmark"] == fmt


def test_a_copy_of_the_builtin_toolset_and_taxonomy() -> None:
    staff = UserFactory(is_staff=True)
    builtin = toolsets_ensure()["atp"]
    project = project_create(
        user=staff, name="Copied", data_format="atp", copy_toolset=True, copy_taxonomy=True
    )
    assert not project.toolset.builtin and project.toolset != builtin
    assert sorted(project.toolset.tools.values_list("name", flat=True)) == sorted(
        builtin.tools.values_list("name", flat=True)
    )
    original = taxonomies_ensure()["atp"]
    assert project.taxonomy is not None and project.taxonomy != original
    assert project.taxonomy.terms.count() == original.terms.count()
    # Intents keep their categories.
    copied = project.taxonomy.terms.get(kind="intent", name="Hairstyle")
    assert copied.parent is not None and copied.parent.name == "Fashion"
    assert copied.parent.taxonomy == project.taxonomy


def test_another_projects_toolset_is_copied_and_must_be_visible() -> None:
    admin = UserFactory()
    mine = ProjectFactory(name="Mine")
    Membership.objects.create(project=mine, user=admin, role=Role.ADMIN)
    ToolFactory(toolset=mine.toolset, name="Zoom")
    term = TaxonomyTermFactory()
    mine.taxonomy = term.taxonomy
    mine.save()
    project = project_create(
        user=admin, name="Second", data_format="atp", toolset=mine.toolset, taxonomy=mine.taxonomy
    )
    assert project.toolset != mine.toolset
    assert list(project.toolset.tools.values_list("name", flat=True)) == ["Zoom"]
    assert project.taxonomy != mine.taxonomy
    assert list(project.taxonomy.terms.values_list("name", flat=True)) == [term.name]
    hidden = ProjectFactory(name="Hidden")
    with pytest.raises(ValidationFailed, match="toolset: not one you may use"):
        project_create(user=admin, name="Third", data_format="atp", toolset=hidden.toolset)


def test_who_may_create() -> None:
    with pytest.raises(Forbidden, match="only staff and project admins"):
        project_create(user=UserFactory(), name="Nope", data_format="atp")
    reviewer = UserFactory()
    Membership.objects.create(project=ProjectFactory(), user=reviewer, role=Role.REVIEWER)
    with pytest.raises(Forbidden):
        project_create(user=reviewer, name="Nope", data_format="atp")
    assert not Project.objects.filter(name="Nope").exists()


@pytest.mark.parametrize(
    ("name", "fmt", "message"),
    [
        ("", "atp", "name: the project needs a name"),
        ("Taken", "atp", "name: a project named 'Taken' exists already"),
        ("Fine", "docx", "benchmark: choose one of"),
    ],
)
def test_bad_input_names_the_field(name: str, fmt: str, message: str) -> None:
    ProjectFactory(name="taken")
    with pytest.raises(ValidationFailed, match=message):
        project_create(user=UserFactory(is_staff=True), name=name, data_format=fmt)


# --------------------------------------------------------------------------- the page


def test_the_new_project_page(client_for: Any) -> None:
    staff = UserFactory(is_staff=True)
    client = client_for(staff)
    listing = client.get(reverse("benchmark:project_list"))
    assert reverse("benchmark:project_create") in listing.content.decode()
    page = client.get(reverse("benchmark:project_create"))
    assert page.status_code == 200 and "Benchmark" in page.content.decode()
    response = client.post(
        reverse("benchmark:project_create"),
        {
            "name": "From the browser",
            "data_format": "mms",
            "toolset": "copy",
            "taxonomy": "",
            "description": "d",
            "guidelines": "Check **every** step.",
        },
    )
    project = Project.objects.get(name="From the browser")
    assert response.status_code == 302
    assert response["Location"] == reverse("benchmark:project_detail", args=[project.pk])
    assert project.kind == "plan" and not project.toolset.builtin and project.taxonomy.builtin
    detail = client.get(response["Location"]).content.decode()
    assert 'id="project-guidelines"' in detail and "<strong>every</strong>" in detail


def test_the_page_reports_bad_input_and_refuses_members_who_are_not_admins(
    client_for: Any, users: dict[str, Any]
) -> None:
    client = client_for(users["admin"])
    response = client.post(reverse("benchmark:project_create"), {"name": "", "data_format": "atp"})
    assert response.status_code == 400 and "This field is required" in response.content.decode()
    response = client.post(
        reverse("benchmark:project_create"), {"name": "ATP sample", "data_format": "atp"}
    )
    assert "name: a project named" in response.content.decode()
    for role in ("reviewer", "annotator"):
        assert client_for(users[role]).get(reverse("benchmark:project_create")).status_code == 403
    listing = client_for(users["reviewer"]).get(reverse("benchmark:project_list")).content
    assert reverse("benchmark:project_create").encode() not in listing


def test_guidelines_are_sanitized_and_follow_htmx_navigation(
    client_for: Any, project: Any, users: dict[str, Any]
) -> None:
    project.guidelines = "Use <script>alert(1)</script> *care*."
    project.save()
    client = client_for(users["annotator"])
    page = client.get(reverse("benchmark:project_detail", args=[project.pk])).content.decode()
    assert "<em>care</em>" in page and "<script>alert" not in page
    # Loaded into #main by htmx: the panel comes along out of band, and leaves with the project.
    hx = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "main"}
    fragment = client.get(reverse("benchmark:project_detail", args=[project.pk]), **hx)
    assert 'id="project-guidelines" class="guidelines-region" hx-swap-oob="true"' in (
        fragment.content.decode()
    )
    assert "<em>care</em>" in fragment.content.decode()
    listing = client.get(reverse("benchmark:project_list"), **hx).content.decode()
    assert 'hx-swap-oob="true">' in listing and "<em>care</em>" not in listing


def test_guidelines_show_on_annotation_screens(
    client_for: Any, project: Any, users: dict[str, Any]
) -> None:
    project.guidelines = "Prefer **Reference** over Search."
    project.save()
    item = ItemFactory(project=project)
    response = ResponseFactory(item=item, key="gt")
    client = client_for(users["annotator"])
    urls = [
        reverse("annotation:tag_review", args=[project.pk, item.pk, response.pk]),
        reverse("annotation:task_list", args=[project.pk]),
        reverse("benchmark:item_detail", args=[project.pk, item.pk]),
    ]
    for url in urls:
        page = client.get(url)
        assert page.status_code == 200, url
        assert "<strong>Reference</strong>" in page.content.decode(), url
    # A project without guidelines shows no panel.
    project.guidelines = ""
    project.save()
    page = client.get(urls[0]).content.decode()
    assert "<details" not in page.split('id="project-guidelines"')[1].split("</div>")[0]


def test_admins_edit_the_guidelines_and_the_change_is_recorded(
    client_for: Any, project: Any, users: dict[str, Any]
) -> None:
    url = reverse("benchmark:project_edit", args=[project.pk])
    assert client_for(users["reviewer"]).get(url).status_code == 403
    assert client_for(users["outsider"]).get(url).status_code == 404
    client = client_for(users["admin"])
    assert "A project for tests." in client.get(url).content.decode()
    data = {"description": "A project for tests.", "guidelines": "Read *all* documents."}
    response = client.post(url, data)
    assert response.status_code == 302
    project.refresh_from_db()
    assert project.guidelines == "Read *all* documents."
    (event,) = AuditEvent.objects.filter(action=AuditAction.PROJECT_UPDATED)
    assert event.actor == users["admin"] and event.details == {"fields": ["guidelines"]}
    client.post(url, data)  # unchanged: nothing recorded
    assert AuditEvent.objects.filter(action=AuditAction.PROJECT_UPDATED).count() == 1


def test_staff_who_are_not_members_edit_and_return_to_the_members_page(
    client_for: Any, project: Any
) -> None:
    client = client_for(UserFactory(is_staff=True))
    url = reverse("benchmark:project_edit", args=[project.pk])
    response = client.post(url, {"description": "", "guidelines": "G"})
    assert response["Location"] == reverse("benchmark:members", args=[project.pk])
    project.refresh_from_db()
    assert project.guidelines == "G" and project.description == ""
