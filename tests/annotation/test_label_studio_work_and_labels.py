"""Label Studio and JSONL/CSV interchange, beyond the item: choice labels mapped onto a
judgment task's values (``--labels``), and answers, plans and trajectories carried out and
back in (Label Studio task data, table columns)."""

from __future__ import annotations

import copy
import json
from io import StringIO
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from django.core.management import CommandError, call_command

from annotation.judgment_tasks.models import Judgment
from benchmark.formats import ImageRef, ItemRecord, ResponseRecord, TrajectoryRecord
from benchmark.formats import label_studio as ls
from benchmark.formats.tabular import Table
from tests.benchmark.formats.test_label_studio_format import EXPORT, _check_task
from tests.factories import (
    ItemFactory,
    JudgmentTaskFactory,
    MembershipFactory,
    PlanFactory,
    ProjectFactory,
    ResponseFactory,
    TrajectoryFactory,
    UserFactory,
)

LABELS = [{"value": "yes", "accept": True}, {"value": "no"}]
RENAMED = {"yes": "Correct", "no": "Incorrect"}


def _run(name: str, *args: Any) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(name, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _relabelled(tmp_path: Path, extra: str | None = None) -> Path:
    """EXPORT with Label Studio's own labels ("Correct"/"Incorrect"), and optionally one
    more choice on task 102."""
    tasks = copy.deepcopy(EXPORT)
    for task in tasks:
        for annotation in task.get("annotations", []):
            for result in annotation["result"]:
                if result["type"] == "choices":
                    result["value"]["choices"] = [RENAMED[c] for c in result["value"]["choices"]]
    if extra:
        tasks[1]["annotations"][0]["result"][0]["value"]["choices"] = [extra]
    path = tmp_path / "ls.json"
    path.write_text(json.dumps(tasks))
    return path


def _import(path: Path, *more: str) -> tuple[str, str]:
    return _run(
        "import_dataset", "--format", "label-studio", "--project", "P",
        "--map", "question=query", "--task", "Keep?", *more, str(path),
    )  # fmt: skip


# ------------------------------------------------------------------------- labels


def test_label_studio_labels_map_onto_the_tasks_values(db: None, tmp_path: Path) -> None:
    project = ProjectFactory(name="P")
    task = JudgmentTaskFactory(project=project, name="Keep?", scheme="nominal", labels=LABELS)
    ann = UserFactory(username="ann", email="ann@example.org")
    MembershipFactory(project=project, user=ann)
    MembershipFactory(project=project, user=UserFactory(username="8"))
    out, _ = _import(
        _relabelled(tmp_path), "--labels", "Correct=yes, Incorrect=no", "--user-map", "8=8"
    )
    assert json.loads(out)["judgments"]["judgments_created"] == 3
    got = Judgment.objects.filter(task=task).order_by("item__external_id", "user__username")
    assert [(j.item.external_id, j.user.username, j.value) for j in got] == [
        ("101", "8", "no"),
        ("101", ann.username, "yes"),
        ("102", ann.username, "yes"),
    ]


def test_without_a_mapping_other_labels_are_not_judgments(db: None, tmp_path: Path) -> None:
    project = ProjectFactory(name="P")
    task = JudgmentTaskFactory(project=project, name="Keep?", scheme="nominal", labels=LABELS)
    UserFactory(username="ann", email="ann@example.org")
    out, _ = _import(_relabelled(tmp_path))
    assert json.loads(out)["judgments"]["results_unmapped"] == 3
    assert not Judgment.objects.filter(task=task).exists()


def test_an_unmapped_label_names_task_and_label_and_imports_nothing(
    db: None, tmp_path: Path
) -> None:
    project = ProjectFactory(name="P")
    task = JudgmentTaskFactory(project=project, name="Keep?", scheme="nominal", labels=LABELS)
    UserFactory(username="ann", email="ann@example.org")
    with pytest.raises(CommandError) as exc:
        _import(_relabelled(tmp_path, extra="Unsure"), "--labels", "Correct=yes,Incorrect=no")
    message = str(exc.value)
    assert "nothing imported" in message
    assert "Label Studio task 102" in message and "'Unsure'" in message
    assert not project.items.exists()
    assert not Judgment.objects.filter(task=task).exists()


def test_a_label_mapped_to_no_value_of_the_task_is_named(db: None, tmp_path: Path) -> None:
    project = ProjectFactory(name="P")
    JudgmentTaskFactory(project=project, name="Keep?", scheme="nominal", labels=LABELS)
    with pytest.raises(CommandError, match=r"'Correct' maps to 'maybe'.*values: yes, no"):
        _import(_relabelled(tmp_path), "--labels", "Correct=maybe")
    assert not project.items.exists()


def test_binary_tasks_take_labels_mapped_to_1_and_0(db: None, tmp_path: Path) -> None:
    project = ProjectFactory(name="P")
    task = JudgmentTaskFactory(project=project, name="Keep?", scheme="binary")
    MembershipFactory(project=project, user=UserFactory(username="ann", email="ann@example.org"))
    _import(_relabelled(tmp_path), "--labels", "Correct=1,Incorrect=0")
    assert sorted(Judgment.objects.filter(task=task).values_list("value", flat=True)) == [1, 1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--labels", "Correct=yes"], "--labels goes with --task"),
        (["--task", "Keep?", "--labels", "Correct"], "LABEL=VALUE"),
    ],
)
def test_labels_misuse_is_refused(db: None, tmp_path: Path, args: list[str], message: str) -> None:
    project = ProjectFactory(name="P")
    JudgmentTaskFactory(project=project, name="Keep?", scheme="nominal", labels=LABELS)
    with pytest.raises(CommandError, match=message):
        _run("import_dataset", "--format", "label-studio", "--project", "P", *args,
             str(_relabelled(tmp_path)))  # fmt: skip
    assert not project.items.exists()


def test_parse_labels() -> None:
    assert ls.parse_labels("Correct=yes, Not quite=no\n") == {"Correct": "yes", "Not quite": "no"}
    assert ls.parse_labels("") == {}


# ------------------------------------------------------------------------- the work


def _worked_item(project: Any) -> Any:
    item = ItemFactory(
        project=project, external_id="w1", query="Plan it", category="c", provenance="human:x"
    )
    ResponseFactory(item=item, key="gt", text="Answer <tool>{}</tool>", extra={"n": 1})
    ResponseFactory(
        item=item,
        key="m1",
        origin="model",
        model_name="gpt",
        text="Other",
        raw='{"id": "w1", "answer": "Other"}',
        source_file="answers.jsonl",
    )  # fmt: skip  (read from its own file: the export gives it apart)
    PlanFactory(item=item, key="p1", is_alternative=True)
    TrajectoryFactory(item=item, key="t1", final_answer="WILLOW ST", efficiency={"steps": 2})
    ItemFactory(project=project, external_id="w2", query="Nothing yet", provenance="human:y")
    return item


def _work(item: Any) -> dict[str, list[tuple[Any, ...]]]:
    return {
        "responses": sorted(
            item.responses.values_list("key", "origin", "model_name", "text", "extra")
        ),
        "plans": sorted(item.plans.values_list("key", "form", "steps", "is_alternative")),
        "trajectories": sorted(
            item.trajectories.values_list(
                "key",
                "steps",
                "checkpoints",
                "ordering_constraints",
                "efficiency",
                "final_answer",
            )
        ),  # fmt: skip
    }


def test_label_studio_export_carries_the_work_and_round_trips(db: None, tmp_path: Path) -> None:
    item = _worked_item(ProjectFactory(name="A"))
    _run("export_dataset", "--format", "label-studio", "--project", "A", "--no-images",
         str(tmp_path / "t.json"))  # fmt: skip
    tasks = json.loads((tmp_path / "t.json").read_text())
    config = ElementTree.fromstring((tmp_path / "t.config.xml").read_text())
    for task in tasks:
        _check_task(task, config)  # still Label Studio's documented task format
    data = tasks[0]["data"]
    assert [(r["key"], r["text"]) for r in data["responses"]] == [
        ("gt", "Answer <tool>{}</tool>"),
        ("m1", "Other"),
    ]
    assert data["plans"][0]["key"] == "p1" and data["plans"][0]["is_alternative"] is True
    assert data["trajectories"][0]["final_answer"] == "WILLOW ST"
    assert tasks[1]["data"]["responses"] == []
    # the answers show in the labeling view: paragraphs of the responses' key and text, under
    # a key of their own (an item with none shows a placeholder: Label Studio 1.23.2's view
    # fails on an empty list)
    (paragraphs,) = [p for p in config.iter("Paragraphs") if p.get("name") == "answers"]
    assert paragraphs.get("value") == f"${ls.ANSWERS_KEY}"
    assert (paragraphs.get("nameKey"), paragraphs.get("textKey")) == ("key", "text")
    assert [(p["key"], p["text"]) for p in data[ls.ANSWERS_KEY]] == [
        ("gt", "Answer <tool>{}</tool>"),
        ("m1", "Other"),
    ]
    assert tasks[1]["data"][ls.ANSWERS_KEY] == ls.VIEW_PLACEHOLDERS[ls.ANSWERS_KEY]

    target = ProjectFactory(name="B")
    out, _ = _run(
        "import_dataset", "--format", "label-studio", "--project", "B", str(tmp_path / "t.json")
    )
    assert json.loads(out)["attachments_created"] == 4
    back = target.items.get(external_id="w1")
    assert _work(back) == _work(item)
    # a second export is the same file
    _run("export_dataset", "--format", "label-studio", "--project", "B", "--no-images",
         str(tmp_path / "again.json"))  # fmt: skip
    assert (tmp_path / "again.json").read_bytes() == (tmp_path / "t.json").read_bytes()


@pytest.mark.parametrize("kind", ["jsonl", "csv"])
def test_table_export_has_work_columns_and_round_trips(db: None, tmp_path: Path, kind: str) -> None:
    item = _worked_item(ProjectFactory(name="A"))
    out = tmp_path / f"items.{kind}"
    _run("export_dataset", "--format", kind, "--project", "A", "--no-images", str(out))
    text = out.read_text()
    assert "responses" in text.splitlines()[0] and "trajectories" in text.splitlines()[0]
    assert "WILLOW ST" in text
    target = ProjectFactory(name="B")
    _run("import_dataset", "--format", kind, "--project", "B", str(out))
    assert _work(target.items.get(external_id="w1")) == _work(item)
    again = tmp_path / f"again.{kind}"
    _run("export_dataset", "--format", kind, "--project", "B", "--no-images", str(again))
    assert again.read_bytes() == out.read_bytes()


def test_a_bad_work_entry_names_the_key_and_entry(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps([{"id": 5, "data": {"query": "q", "plans": [{"steps": "x"}]}}]))
    with pytest.raises(ls.FormatError) as exc:
        ls.read_tasks(path)
    assert exc.value.field == "plans" and "steps must be list" in str(exc.value)
    assert exc.value.record == 5  # the Label Studio task id


def test_pure_round_trip_of_answers_and_runs(tmp_path: Path) -> None:
    rec = ItemRecord(
        external_id="i", source_file="x", raw="{}", query="q",
        responses=[ResponseRecord(item_id="i", key="a", text="t", extra={"x": [1]})],
        trajectories=[TrajectoryRecord(
            item_id="i", key="t", steps=[{"tool": "crop"}], final_answer="f",
            images=[ImageRef(path="s.png", role="artifact", position=1)],
        )],
    )  # fmt: skip
    for fmt in (ls.Writer(), Table("jsonl"), Table("csv")):
        (path, *_) = fmt.write(tmp_path / f"o-{type(fmt).__name__}-{id(fmt)}", [rec])
        reader: Any = ls.Reader() if isinstance(fmt, ls.Writer) else fmt
        (back,) = list(reader.read(path))
        for name in ("responses", "plans", "trajectories"):
            assert ls.field_value(back, name) == ls.field_value(rec, name), (fmt, name)
        assert back.responses[0].item_id == "i"
