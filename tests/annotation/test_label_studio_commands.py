"""import_dataset / export_dataset --format label-studio: items into a project of any format,
annotations as judgments of a named task by existing accounts, and back out."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from annotation.judgment_tasks.models import Judgment
from benchmark.models import ProjectKind
from tests.benchmark.formats.test_label_studio_format import EXPORT
from tests.factories import (
    ItemFactory,
    JudgmentFactory,
    JudgmentTaskFactory,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

LABELS = [{"value": "yes", "accept": True}, {"value": "no"}]


def _run(name: str, *args: Any) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(name, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _export(tmp_path: Path) -> Path:
    path = tmp_path / "ls.json"
    path.write_text(json.dumps(EXPORT))
    return path


def test_import_maps_fields_into_a_project_of_another_format(tmp_path: Path) -> None:
    project = ProjectFactory(name="P")
    out, _ = _run(
        "import_dataset", "--format", "label-studio", "--project", "P",
        "--map", "question=query,cat=category,ref=expected_answer", str(_export(tmp_path)),
    )  # fmt: skip
    assert json.loads(out)["items_created"] == 3
    items = {i.external_id: i for i in project.items.all()}
    assert items["101"].query == "What is the capital of France?"
    assert items["101"].category == "geo"
    assert items["101"].expected_answer == "Paris"
    assert items["101"].provenance == "imported:label-studio"
    # stored as an item written in the project's format: no Label Studio raw record
    assert items["101"].raw == "" and items["101"].source_file == "data.jsonl"
    project.refresh_from_db()
    assert project.data_format == "atp"  # the project keeps its own format


def test_a_bad_mapping_names_the_key_and_imports_nothing(tmp_path: Path) -> None:
    project = ProjectFactory(name="P")
    with pytest.raises(CommandError, match="'cat'.*'kategorie'"):
        _run(
            "import_dataset", "--format", "label-studio", "--project", "P",
            "--map", "question=query,cat=kategorie", str(_export(tmp_path)),
        )  # fmt: skip
    assert not project.items.exists()


def test_annotations_become_judgments_by_existing_users(tmp_path: Path) -> None:
    project = ProjectFactory(name="P")
    task = JudgmentTaskFactory(project=project, name="Keep?", scheme="nominal", labels=LABELS)
    ann = UserFactory(username="ann", email="Ann@Example.org")
    MembershipFactory(project=project, user=ann)  # only members who may judge are credited
    out, err = _run(
        "import_dataset", "--format", "label-studio", "--project", "P",
        "--map", "question=query,cat=category", "--task", "Keep?", str(_export(tmp_path)),
    )  # fmt: skip
    report = json.loads(out)["judgments"]
    assert report["judgments_created"] == 2
    assert report["user_ids_unmapped"] == ["8"]  # a bare Label Studio id, no --user-map
    assert "8" in err
    judgments = Judgment.objects.filter(task=task).order_by("item__external_id")
    assert [(j.item.external_id, j.user, j.value) for j in judgments] == [
        ("101", ann, "yes"),
        ("102", ann, "yes"),
    ]
    assert judgments[0].comment == "fine"  # the text area of the same annotation
    # importing again adds nothing
    out, _ = _run(
        "import_dataset", "--format", "label-studio", "--project", "P",
        "--map", "question=query,cat=category", "--task", "Keep?", str(_export(tmp_path)),
    )  # fmt: skip
    again = json.loads(out)
    assert again["items_skipped"] == 3
    assert again["judgments"]["judgments_existing"] == 2
    assert Judgment.objects.filter(task=task).count() == 2


def test_choices_that_are_not_labels_of_the_task_are_not_judgments(tmp_path: Path) -> None:
    project = ProjectFactory(name="P")
    task = JudgmentTaskFactory(project=project, name="Keep?", scheme="binary")  # labels 1 / 0
    UserFactory(username="ann", email="ann@example.org")
    out, _ = _run(
        "import_dataset", "--format", "label-studio", "--project", "P",
        "--map", "question=query", "--task", "Keep?", str(_export(tmp_path)),
    )  # fmt: skip
    assert json.loads(out)["judgments"]["results_unmapped"] == 3
    assert not Judgment.objects.filter(task=task).exists()


def test_an_unknown_task_is_named_and_nothing_is_imported(tmp_path: Path) -> None:
    project = ProjectFactory(name="P")
    with pytest.raises(CommandError, match="task.*'Nope'"):
        _run(
            "import_dataset", "--format", "label-studio", "--project", "P",
            "--map", "question=query", "--task", "Nope", str(_export(tmp_path)),
        )  # fmt: skip
    assert not project.items.exists()


def test_export_with_judgments_and_config(tmp_path: Path) -> None:
    project = ProjectFactory(name="P")
    task = JudgmentTaskFactory(project=project, name="Keep?", scheme="nominal", labels=LABELS)
    item = ItemFactory(project=project, external_id="x1", query="Q?", category="c")
    ItemFactory(project=project, external_id="x2")
    JudgmentFactory(task=task, item=item, value="no", comment="unclear")
    out, _ = _run(
        "export_dataset", "--format", "label-studio", "--project", "P",
        "--with-judgments", "Keep?", "--no-images", str(tmp_path / "tasks.json"),
    )  # fmt: skip
    assert out.split() == [str(tmp_path / "tasks.json"), str(tmp_path / "tasks.config.xml")]
    tasks = json.loads((tmp_path / "tasks.json").read_text())
    assert [t["data"]["external_id"] for t in tasks] == ["x1", "x2"]
    assert tasks[0]["data"]["query"] == "Q?"
    assert tasks[0]["annotations"] == [
        {
            "result": [
                {"from_name": "verdict", "to_name": "query", "type": "choices",
                 "value": {"choices": ["no"]}},
                {"from_name": "comment", "to_name": "query", "type": "textarea",
                 "value": {"text": ["unclear"]}},
            ]
        }
    ]  # fmt: skip
    config = (tmp_path / "tasks.config.xml").read_text()
    assert '<Choice value="yes"/>' in config and '<Text name="query" value="$query"/>' in config


def test_round_trip_through_label_studio_keeps_every_field(tmp_path: Path) -> None:
    source = ProjectFactory(name="A")
    item = ItemFactory(
        project=source, external_id="r1", query="Find it", category="cat", intent="i",
        domain="d", level=2, expected_answer="42", accepted_variants=["forty-two"],
        constraints={"k": 1}, rubric=[{"key": "r1", "text": "t"}], status="verified",
        provenance="human:bob", documents=[{"text": "doc", "images": []}],
    )  # fmt: skip
    _run("export_dataset", "--format", "label-studio", "--project", "A", "--no-images",
         str(tmp_path / "t.json"))  # fmt: skip
    target = ProjectFactory(name="B")
    _run("import_dataset", "--format", "label-studio", "--project", "B", str(tmp_path / "t.json"))
    back = target.items.get()
    for name in (
        "external_id", "query", "modality", "documents", "image_refs", "constraints",
        "expected_answer", "accepted_variants", "match_type", "rubric", "category", "intent",
        "domain", "level", "status", "provenance",
    ):  # fmt: skip
        assert getattr(back, name) == getattr(item, name), name


def test_map_without_label_studio_is_refused(tmp_path: Path) -> None:
    ProjectFactory(name="P")
    with pytest.raises(CommandError, match="--map"):
        _run("import_dataset", "--format", "atp", "--project", "P", "--map", "a=query",
             str(_export(tmp_path)))  # fmt: skip


@pytest.mark.parametrize(
    ("fmt", "kind"),
    [
        ("atp", ProjectKind.INTERLEAVED),
        ("llmi", ProjectKind.INTERLEAVED),
        ("agentic-mme", ProjectKind.TRAJECTORY),
        ("mms", ProjectKind.PLAN),
    ],
)
def test_the_projects_own_export_writes_imported_items_in_its_format(
    tmp_path: Path, fmt: str, kind: str
) -> None:
    ProjectFactory(
        name="P", data_format=fmt, kind=kind, **({"tag_syntax": ""} if fmt == "mms" else {})
    )
    _run("import_dataset", "--format", "label-studio", "--project", "P", "--map",
         "question=query", str(_export(tmp_path)))  # fmt: skip
    out = tmp_path / ("o.jsonl" if fmt == "atp" else "o")
    _run("export_dataset", "--format", fmt, "--project", "P", "--no-images", str(out))
    files = [f for f in (out.rglob("*") if out.is_dir() else [out]) if f.is_file()]
    text = "".join(f.read_text() for f in files)
    assert "What is the capital of France?" in text
    assert '"annotations"' not in text and '"data"' not in text
    if fmt == "agentic-mme":
        assert len(files) == 3  # one task file per item
