"""Who a Label Studio import may credit with a judgment, and how Label Studio's user ids map
onto accounts.

Only members of the project who may judge the task are credited (a judging role, an active
account, and the task's own rules: not the item's author unless the task allows it, only the
items a listed task takes). Every other annotator is reported in one wording that does not
tell an account elsewhere on the site from a name nobody has. Label Studio's normal export
names annotators by numeric user id: ``--user-map 2=annotator1`` (and the import form's field)
maps them; ids with no entry are reported.
"""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.judgment_tasks.models import Judgment
from benchmark.formats import FormatError
from benchmark.formats import label_studio as ls
from benchmark.models import Role
from tests.annotation.label_studio_export import choice, expanded, normal_export, text
from tests.factories import (
    ItemFactory,
    JudgmentTaskFactory,
    MembershipFactory,
    ProjectFactory,
    TaskItemFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

LABELS = [{"value": "yes", "accept": True}, {"value": "no"}]


def _run(name: str, *args: Any) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(name, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _write(tmp_path: Path, tasks: list[dict[str, Any]], name: str = "ls.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(tasks, indent=2))
    return path


def _by_name(tmp_path: Path, names: list[str], name: str = "ls.json") -> Path:
    """An export of one task ("q1") annotated "yes" by each of ``names`` (by email or
    username, as an export made through the API with details writes them)."""
    tasks = [
        {
            "id": 1,
            "data": {"external_id": "q1", "query": "Keep?"},
            "annotations": [
                {"completed_by": {"email": n} if "@" in n else n, "result": [choice("yes")]}
                for n in names
            ],
        }
    ]
    return _write(tmp_path, tasks, name)


def _import(path: Path, *more: str, project: str = "P") -> tuple[dict[str, Any], str]:
    out, err = _run(
        "import_dataset", "--format", "label-studio", "--project", project,
        "--task", "Keep?", *more, str(path),
    )  # fmt: skip
    return json.loads(out), err


@pytest.fixture
def setup() -> dict[str, Any]:
    project = ProjectFactory(name="P")
    task = JudgmentTaskFactory(project=project, name="Keep?", scheme="nominal", labels=LABELS)
    admin = UserFactory(username="padmin")
    MembershipFactory(project=project, user=admin, role=Role.ADMIN)
    member = UserFactory(username="ann", email="ann@example.org")
    MembershipFactory(project=project, user=member, role=Role.ANNOTATOR)
    other = ProjectFactory(name="Other")
    outsider = UserFactory(username="annotator1", email="annotator1@example.org")
    MembershipFactory(project=other, user=outsider, role=Role.ANNOTATOR)
    staff = UserFactory(username="boss", email="boss@example.org", is_staff=True)
    return {"project": project, "task": task, "member": member, "outsider": outsider,
            "staff": staff}  # fmt: skip


# ------------------------------------------------------------------------- item 1


def test_accounts_outside_the_project_are_never_credited(
    setup: dict[str, Any], tmp_path: Path
) -> None:
    """A member of another project and a staff account named in the export get nothing."""
    report, err = _import(_by_name(tmp_path, ["annotator1", "boss@example.org", "ann"]))
    judged = report["judgments"]
    assert judged["judgments_created"] == 1
    assert list(Judgment.objects.values_list("user__username", flat=True)) == ["ann"]
    assert judged["users_not_importable"] == ["annotator1", "boss@example.org"]
    assert "annotator1" in err and "boss@example.org" in err


def test_a_real_account_and_a_made_up_name_are_reported_alike(
    setup: dict[str, Any], tmp_path: Path
) -> None:
    """The report, the message and the queries made are the same whether the name belongs
    to an account elsewhere on the site or to nobody."""

    def attempt(name: str, file: str) -> tuple[str, str, int]:
        setup["project"].items.all().delete()  # each attempt imports the same item anew
        path = _by_name(tmp_path, [name], file)
        with CaptureQueriesContext(connection) as queries:
            report, err = _import(path)
        assert not Judgment.objects.exists()
        return (
            json.dumps(report).replace(name, "NAME"),
            err.replace(name, "NAME"),
            len(queries),
        )

    real = attempt("annotator1@example.org", "a.json")
    made_up = attempt("nobody-at-all@example.org", "b.json")
    assert real[0] == made_up[0]
    assert real[1] == made_up[1] and "NAME" in real[1]
    assert real[2] == made_up[2]


def test_inactive_members_are_not_credited(setup: dict[str, Any], tmp_path: Path) -> None:
    setup["member"].is_active = False
    setup["member"].save()
    report, _ = _import(_by_name(tmp_path, ["ann"]))
    assert report["judgments"]["users_not_importable"] == ["ann"]
    assert not Judgment.objects.exists()


def test_the_author_of_an_item_is_not_credited_where_the_task_forbids_it(
    setup: dict[str, Any], tmp_path: Path
) -> None:
    ItemFactory(project=setup["project"], external_id="q1", provenance="user:ann")
    report, _ = _import(_by_name(tmp_path, ["ann"]))
    judged = report["judgments"]
    assert judged["judgments_created"] == 0
    assert judged["judgments_refused"] == [
        {
            "item": "q1",
            "user": "ann",
            "reason": "wrote the item; the task does not let authors judge",
        }
    ]
    assert not Judgment.objects.exists()
    setup["task"].author_may_judge = True
    setup["task"].save()
    report, _ = _import(_by_name(tmp_path, ["ann"]))
    assert report["judgments"]["judgments_created"] == 1


def test_a_task_of_listed_items_takes_judgments_of_its_items_only(
    setup: dict[str, Any], tmp_path: Path
) -> None:
    task = setup["task"]
    task.items_listed = True
    task.save()
    ItemFactory(project=setup["project"], external_id="q1")
    report, _ = _import(_by_name(tmp_path, ["ann"]))
    assert (
        report["judgments"]["judgments_refused"][0]["reason"] == "the task does not take the item"
    )
    assert not Judgment.objects.exists()
    TaskItemFactory(task=task, item=setup["project"].items.get())
    report, _ = _import(_by_name(tmp_path, ["ann"]))
    assert report["judgments"]["judgments_created"] == 1


# ------------------------------------------------------------------------- item 8


def test_numeric_ids_are_read_as_label_studio_user_ids(tmp_path: Path) -> None:
    tasks = normal_export([{"query": "q"}], {0: [(2, [choice("yes")])]})
    tasks[0]["annotations"].append(
        {"completed_by": {"id": 5, "email": "e@example.org"}, "result": [choice("no")]}
    )
    _, annotations = ls.read_tasks(_write(tmp_path, tasks))
    assert [(a.user, a.user_id) for a in annotations] == [("2", "2"), ("e@example.org", "5")]


def test_parse_user_map() -> None:
    assert ls.parse_user_map(" 2=annotator1, 3 = ann@example.org\n") == {
        "2": "annotator1",
        "3": "ann@example.org",
    }
    assert ls.parse_user_map("") == {}
    for bad, what in [("2", "ID=USER"), ("2=a,2=b", "twice"), ("=a", "ID=USER")]:
        with pytest.raises(FormatError, match=what):
            ls.parse_user_map(bad)


def _two_annotators(project: Any) -> tuple[Any, Any]:
    a1 = UserFactory(username="annotator1", email="a1@example.org")
    a2 = UserFactory(username="annotator2", email="a2@example.org")
    for user in (a1, a2):
        MembershipFactory(project=project, user=user, role=Role.ANNOTATOR)
    return a1, a2


def test_a_normal_export_round_trips_its_judgments_with_a_user_map(tmp_path: Path) -> None:
    """Benchwright's tasks go to Label Studio, two annotators (Label Studio ids 2 and 3)
    judge them there, and Label Studio's Export button's file comes back with a user map:
    every judgment arrives, credited to the mapped account, and Benchwright's export with
    judgments writes the same choices again."""
    project = ProjectFactory(name="P")
    JudgmentTaskFactory(project=project, name="Keep?", scheme="nominal", labels=LABELS)
    a1, a2 = _two_annotators(project)
    for n in range(3):
        ItemFactory(project=project, external_id=f"x{n}", query=f"Question {n}?")
    _run("export_dataset", "--format", "label-studio", "--project", "P", "--no-images",
         str(tmp_path / "to_ls.json"))  # fmt: skip
    datas = [t["data"] for t in json.loads((tmp_path / "to_ls.json").read_text())]
    judged = {
        0: [(2, [choice("yes"), text("clear")]), (3, [choice("no")])],
        1: [(3, [choice("yes")])],
        2: [(2, [choice("no")]), (4, [choice("yes")])],  # 4: nobody mapped
    }
    export = _write(tmp_path, normal_export(datas, judged), "project-3-at-2025-05-12.json")

    report, err = _import(export, "--user-map", "2=annotator1,3=annotator2")
    judgments = report["judgments"]
    assert report["items_skipped"] == 3  # the items are Benchwright's own
    assert judgments["judgments_created"] == 4
    assert judgments["user_ids_unmapped"] == ["4"]
    assert "4" in err and "--user-map" in err
    got = sorted(
        Judgment.objects.values_list("item__external_id", "user__username", "value", "comment")
    )
    assert got == [
        ("x0", "annotator1", "yes", "clear"),
        ("x0", "annotator2", "no", ""),
        ("x1", "annotator2", "yes", ""),
        ("x2", "annotator1", "no", ""),
    ]
    # ... and out again as Label Studio annotations with the same choices
    _run("export_dataset", "--format", "label-studio", "--project", "P", "--no-images",
         "--with-judgments", "Keep?", str(tmp_path / "back.json"))  # fmt: skip
    back = json.loads((tmp_path / "back.json").read_text())
    choices = [
        sorted(a["result"][0]["value"]["choices"][0] for a in t.get("annotations", []))
        for t in back
    ]
    assert choices == [["no", "yes"], ["yes"], ["no"]]
    # importing the same file again adds nothing
    again, _ = _import(export, "--user-map", "2=annotator1,3=annotator2")
    assert again["judgments"]["judgments_existing"] == 4
    assert Judgment.objects.count() == 4


def test_an_expanded_completed_by_maps_by_id_before_email(tmp_path: Path) -> None:
    project = ProjectFactory(name="P")
    JudgmentTaskFactory(project=project, name="Keep?", scheme="nominal", labels=LABELS)
    _two_annotators(project)
    tasks = normal_export([{"query": "q"}], {0: [(2, [choice("yes")]), (3, [choice("no")])]})
    # Label Studio's emails differ from Benchwright's: id 2 is mapped, id 3 is matched by email
    path = _write(tmp_path, expanded(tasks, {2: "someone@ls.example", 3: "a2@example.org"}))
    report, _ = _import(path, "--user-map", "2=annotator1")
    assert report["judgments"]["judgments_created"] == 2
    assert sorted(Judgment.objects.values_list("user__username", "value")) == [
        ("annotator1", "yes"),
        ("annotator2", "no"),
    ]


@pytest.mark.parametrize(
    ("user_map", "message"),
    [
        ("2", "ID=USER"),
        (
            "2=annotator1,3=nobody-here",
            "'nobody-here' is not a member of project 'P' who may judge",
        ),
        ("2=annotator1,3=outsider", "'outsider' is not a member of project 'P' who may judge"),
    ],
)
def test_a_bad_user_map_stops_the_import_before_anything_is_written(
    tmp_path: Path, user_map: str, message: str
) -> None:
    project = ProjectFactory(name="P")
    JudgmentTaskFactory(project=project, name="Keep?", scheme="nominal", labels=LABELS)
    _two_annotators(project)
    MembershipFactory(project=ProjectFactory(), user=UserFactory(username="outsider"))
    tasks = normal_export([{"query": "q"}], {0: [(2, [choice("yes")])]})
    with pytest.raises(CommandError, match=message):
        _import(_write(tmp_path, tasks), "--user-map", user_map)
    assert not project.items.exists() and not Judgment.objects.exists()


def test_a_user_map_goes_with_a_task(tmp_path: Path) -> None:
    ProjectFactory(name="P")
    with pytest.raises(CommandError, match="--user-map goes with --task"):
        _run("import_dataset", "--format", "label-studio", "--project", "P",
             "--user-map", "2=ann", str(_by_name(tmp_path, ["ann"])))  # fmt: skip
