"""A new benchmark kind is one object registered (docs/howto/new-benchmark-kind.md, issue 23):
a toy fifth kind defined here, with its own item fields and no edit anywhere else, is offered
on the new-project form and by ``project_create``; its project page shows only the links its
offers name; its new-item form asks its fields and the item is created, checked and shown
on the item page and its history; its judgment task is added from the task list; and
``makemigrations`` finds nothing to do (``Project.data_format`` takes its choices from the
registry)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command
from django.http import QueryDict
from django.test import Client
from django.urls import reverse
from django.utils.datastructures import MultiValueDict

from annotation.judgment_tasks.models import JudgmentTask
from benchmark.items.forms import DocumentRow
from benchmark.kinds import BenchmarkKind, DefaultTask, Offers, kind_for, register, unregister
from benchmark.models import Item, Project, Role
from benchmark.projects.forms import benchmark_choices
from benchmark.projects.services import project_create
from tests.factories import MembershipFactory, TaxonomyFactory, ToolsetFactory, UserFactory

pytestmark = pytest.mark.django_db


def toy_fields(
    post: QueryDict, files: MultiValueDict[str, Any], data: dict[str, Any], docs: list[DocumentRow]
) -> None:
    """The toy kind's own item fields: its input images and other input files."""
    data["images"] = [*post.getlist("keep_images"), *files.getlist("images")]
    data["input_files"] = post.get("input_files", "").splitlines()


TOY = BenchmarkKind(
    name="toy-plans",
    label="Toy plans",
    choice_label="Toy plans (a benchmark registered by a test)",
    project_kind="plan",
    tag_syntax="",
    toolset=None,
    taxonomy=None,
    format="benchmark.formats.mms",
    item_form_fields=f"{__name__}.toy_fields",
    item_checks="benchmark.items.services.clean_mms",
    stats_tables="benchmark.datastats.mms.mms_tables",
    query_label="Toy request",
    item_form_template="benchmark/items/form/mms.html",
    item_templates=("benchmark/items/plans.html",),
    offers=Offers(edit_plan=True),
    default_task=DefaultTask(
        name="Toy check",
        button="toy check task",
        settings={"question": "Is the toy plan fine?", "scheme": "binary", "overlap": 1},
    ),
    plans=True,
    id_prefix="toy_",
    id_width=3,
)


@pytest.fixture
def toy() -> Iterator[BenchmarkKind]:
    register(TOY)
    yield TOY
    unregister(TOY)


@pytest.fixture
def project(toy: BenchmarkKind) -> Project:
    return project_create(
        user=None,
        name="Toy project",
        data_format=toy.name,
        toolset=ToolsetFactory(),
        taxonomy=TaxonomyFactory(),
    )


@pytest.fixture
def admin(project: Project) -> Client:
    user = UserFactory()
    MembershipFactory(project=project, user=user, role=Role.ADMIN)
    client = Client()
    client.force_login(user)
    return client


def test_a_registered_kind_makes_projects(toy: BenchmarkKind, project: Project) -> None:
    assert (toy.name, toy.choice_label) in benchmark_choices()
    assert (project.kind, project.tag_syntax) == ("plan", "")
    assert project.benchmark is toy is kind_for(project)
    project.full_clean()  # its name is one of data_format's choices


def test_without_a_built_in_toolset_the_creator_chooses_one(toy: BenchmarkKind) -> None:
    from benchmark.exceptions import ValidationFailed

    with pytest.raises(ValidationFailed, match="toolset: toy-plans has no built-in toolset"):
        project_create(user=None, name="No toolset", data_format=toy.name)


def test_the_project_page_offers_what_the_kind_offers(project: Project, admin: Client) -> None:
    page = admin.get(reverse("benchmark:project_detail", args=[project.pk])).content.decode()
    for absent in ("Draft queries", "Judge plans", "Score agent runs", "Oracle testing"):
        assert absent not in page


def test_an_item_is_created_checked_and_shown(project: Project, admin: Client) -> None:
    url = reverse("benchmark:item_new", args=[project.pk])
    form = admin.get(url).content.decode()
    assert "Toy request" in form and 'name="input_files"' in form
    refused = admin.post(url, {"query": "", "input_files": "a.wav"})
    assert refused.status_code == 200 and Item.objects.count() == 0
    answer = admin.post(url, {"query": "Plan a toy", "input_files": "a.wav\nb.txt"})
    assert answer.status_code == 302, answer.content.decode()[:500]
    item = Item.objects.get(project=project)
    assert item.external_id == "toy_001"  # the kind's id style
    assert item.constraints == {"input_files": ["a.wav", "b.txt"]}
    page = admin.get(reverse("benchmark:item_detail", args=[project.pk, item.pk]))
    assert page.status_code == 200
    assert 'id="edit-plan"' in page.content.decode()  # its offers: the plan editor
    history = admin.get(reverse("benchmark:item_history", args=[project.pk, item.pk]))
    assert "its plans" in history.content.decode()


def test_its_judgment_task_is_added_from_the_task_list(project: Project, admin: Client) -> None:
    page = admin.get(reverse("annotation:task_list", args=[project.pk])).content.decode()
    assert "Add the toy check task" in page
    admin.post(reverse("annotation:task_defaults", args=[project.pk]))
    task = JudgmentTask.objects.get(project=project)
    assert (task.name, task.scheme, task.overlap) == ("Toy check", "binary", 1)


def test_no_migration_is_needed(toy: BenchmarkKind) -> None:
    out = io.StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()
