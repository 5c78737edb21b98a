"""``manage.py create_project`` and ``import_dataset --create``."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from benchmark.models import AuditAction, AuditEvent, Item, Membership, Project, Role
from tests.factories import ProjectFactory, ToolFactory, UserFactory
from tests.shared_data import SHARED_DATA, needs_data

pytestmark = pytest.mark.django_db


def test_create_project_with_defaults() -> None:
    out = io.StringIO()
    call_command("create_project", "--name", "Plans", "--format", "mms", stdout=out)
    project = Project.objects.get(name="Plans")
    assert (project.kind, project.data_format, project.tag_syntax) == ("plan", "mms", "")
    assert project.toolset.name == "mms" and project.toolset.builtin
    assert "created project 'Plans'" in out.getvalue()
    assert not Membership.objects.filter(project=project).exists()
    (event,) = AuditEvent.objects.filter(action=AuditAction.PROJECT_CREATED)
    assert event.actor is None and event.project == project


def test_create_project_with_every_option() -> None:
    admin = UserFactory(username="lead")
    source = ProjectFactory(name="Source")
    ToolFactory(toolset=source.toolset, name="Zoom")
    call_command(
        "create_project",
        "--name",
        "Answers",
        "--format",
        "llmi",
        "--toolset",
        source.toolset.name,
        "--taxonomy",
        "llmi",
        "--description",
        "LLM-I answers",
        "--admin",
        "lead",
        stdout=io.StringIO(),
    )
    project = Project.objects.get(name="Answers")
    assert (project.kind, project.tag_syntax) == ("interleaved", "llmi")
    assert project.toolset != source.toolset  # another project's toolset is copied
    assert list(project.toolset.tools.values_list("name", flat=True)) == ["Zoom"]
    assert project.description == "LLM-I answers"
    assert Membership.objects.get(project=project).user == admin
    assert Membership.objects.get(project=project).role == Role.ADMIN


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--name", "X", "--format", "atp", "--admin", "ghost"], "--admin: nobody is called"),
        (["--name", "X", "--format", "atp", "--toolset", "nope"], "--toolset: no toolset named"),
        (["--name", "X", "--format", "atp", "--taxonomy", "nope"], "--taxonomy: no taxonomy"),
        (["--name", "Exists", "--format", "atp"], "name: a project named 'Exists' exists"),
        (["--name", " ", "--format", "atp"], "name: the project needs a name"),
    ],
)
def test_create_project_refuses_bad_input(args: list[str], message: str) -> None:
    ProjectFactory(name="Exists")
    with pytest.raises(CommandError, match=message):
        call_command("create_project", *args, stdout=io.StringIO())
    assert not Project.objects.filter(name="X").exists()


def test_create_project_refuses_an_unknown_format() -> None:
    with pytest.raises(CommandError, match="invalid choice: 'docx'"):
        call_command("create_project", "--name", "X", "--format", "docx")


def test_import_without_create_says_how(tmp_path: Any) -> None:
    with pytest.raises(CommandError, match="no project named 'New'.*add --create"):
        call_command("import_dataset", str(tmp_path), "--format", "atp", "--project", "New")


@needs_data("atp")
def test_import_dataset_create_makes_the_project_then_imports() -> None:
    UserFactory(username="lead")
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "import_dataset",
        str(SHARED_DATA / "atp"),
        "--format",
        "atp",
        "--project",
        "ATP new",
        "--create",
        "--admin",
        "lead",
        stdout=out,
        stderr=err,
    )
    project = Project.objects.get(name="ATP new")
    assert project.kind == "interleaved" and project.tag_syntax == "atp"
    assert Membership.objects.get(project=project).user.username == "lead"
    assert (
        json.loads(out.getvalue())["items_created"]
        == Item.objects.filter(project=project).count()
        > 0
    )
    assert "created project 'ATP new'" in err.getvalue()
    # Again: the project exists, --create changes nothing, records are skipped.
    call_command(
        "import_dataset",
        str(SHARED_DATA / "atp"),
        "--format",
        "atp",
        "--project",
        "ATP new",
        "--create",
        stdout=io.StringIO(),
    )
    assert Project.objects.filter(name="ATP new").count() == 1


def test_a_failed_import_keeps_no_new_project(tmp_path: Any) -> None:
    bad = tmp_path / "data.jsonl"
    bad.write_text('{"id": 1, "not": "atp"}\n', encoding="utf-8")
    with pytest.raises(CommandError, match=r"nothing imported \(and the project was not created\)"):
        call_command("import_dataset", str(bad), "--format", "atp", "--project", "Bad", "--create")
    assert not Project.objects.filter(name="Bad").exists()
    assert not AuditEvent.objects.exists()
