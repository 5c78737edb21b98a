"""Bad input answers 400 naming what and where, never a server error (issue 22, item 4): JSON
nested deeper than the limit in any JSON body, a NUL character in a record or any text, a CSV
cell longer than the csv module's default cap, and two admins changing each other's role at
once (a deadlock on PostgreSQL before the role change locked the project first)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, connections
from django.test import Client
from drf_spectacular.generators import SchemaGenerator

from benchmark import limits
from benchmark.datasets.services import dataset_import
from benchmark.exceptions import DomainError
from benchmark.formats import FormatError
from benchmark.formats.tabular import Table
from benchmark.models import Item, Membership, Project, Role
from benchmark.people.services import member_role_set
from tests.factories import (
    ItemFactory,
    JudgmentTaskFactory,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

DEEP = "[" * 2000 + "]" * 2000


@pytest.fixture
def world(project: Project) -> dict[str, Any]:
    admin = UserFactory(username="bad-input-admin")
    MembershipFactory(project=project, user=admin, role=Role.ADMIN)
    item = ItemFactory(project=project)
    task = JudgmentTaskFactory(project=project)
    solve = JudgmentTaskFactory(project=project, solve=True)
    client = Client()
    client.force_login(admin)
    return {"client": client, "project": project, "item": item, "task": task, "solve": solve}


def _json_operations() -> list[tuple[str, str]]:
    """Every API operation that takes a JSON body, by the schema."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return [
        (method.upper(), path)
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if "application/json" in (operation.get("requestBody") or {}).get("content", {})
    ]


def _url(path: str, world: dict[str, Any]) -> str:
    task = world["solve"] if "audit" in path else world["task"]
    first = task.pk if path.startswith("/api/judgment-tasks/") else world["project"].pk
    return path.replace("{id}", str(first)).replace("{item_id}", str(world["item"].pk))


def test_every_json_operation_is_in_the_walk() -> None:
    walked = {path for _, path in _json_operations()}
    assert {
        "/api/projects/{id}/items/",
        "/api/judgment-tasks/{id}/judgments/",
        "/api/judgment-tasks/{id}/items/{item_id}/audit/",
    } <= walked


def test_next_ignores_a_deeply_nested_body(world: dict[str, Any]) -> None:
    answer = world["client"].post(
        f"/api/judgment-tasks/{world['task'].pk}/next/", DEEP, content_type="application/json"
    )
    assert answer.status_code == 200
    assert answer.json()["item"] == world["item"].pk


@pytest.mark.parametrize(("method", "path"), _json_operations())
def test_deeply_nested_json_is_a_400_naming_the_depth(
    world: dict[str, Any], method: str, path: str
) -> None:
    answer = world["client"].generic(
        method, _url(path, world), DEEP, content_type="application/json"
    )
    assert answer.status_code == 400, answer.content
    assert "nested deeper than 64 levels" in answer.json()["detail"]
    assert "char 64" in answer.json()["detail"]  # where: the 65th bracket


@pytest.mark.parametrize("view", ["image_preview", "image_derive"])
def test_deeply_nested_json_to_the_image_editor_is_a_400(world: dict[str, Any], view: str) -> None:
    url = f"/projects/{world['project'].pk}/images/{view.split('_')[1]}/"
    answer = world["client"].post(url, DEEP, content_type="application/json")
    assert answer.status_code == 400
    assert "nested deeper than 64 levels" in answer.content.decode()


def test_json_at_the_depth_limit_is_parsed(world: dict[str, Any]) -> None:
    """64 levels are fine: the answer is about the content, not the depth."""
    body = json.dumps({"record": json.loads("[" * 63 + "]" * 63)})
    answer = world["client"].post(
        f"/api/projects/{world['project'].pk}/items/", body, content_type="application/json"
    )
    assert answer.status_code == 400
    assert "nested" not in answer.content.decode()
    assert "record" in answer.json()


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"query": "[" * 500 + "{" * 500})
    assert limits.json_too_deep(text) is None
    assert limits.json_too_deep(text.encode()) is None
    assert limits.json_too_deep("[" * 65 + "]" * 65) == 64
    assert limits.json_too_deep("[" * 64 + "]" * 64) is None


# --------------------------------------------------------------------------- NUL characters

ATP_RECORD = {"trace_id": "atp_nul", "query": "a\u0000b", "doc": [], "images": [], "gt": "x"}


@pytest.mark.parametrize("as_text", [False, True])
def test_a_nul_in_a_record_is_a_400_naming_the_field(world: dict[str, Any], as_text: bool) -> None:
    record: Any = json.dumps(ATP_RECORD) if as_text else ATP_RECORD
    answer = world["client"].post(
        f"/api/projects/{world['project'].pk}/items/",
        {"record": record},
        content_type="application/json",
    )
    assert answer.status_code == 400, answer.content
    assert "NUL character" in answer.content.decode()
    assert "query" in answer.content.decode()
    assert not Item.objects.filter(external_id="atp_nul").exists()


def test_a_nul_in_an_item_field_is_a_400_naming_it(world: dict[str, Any]) -> None:
    answer = world["client"].post(
        f"/api/projects/{world['project'].pk}/items/",
        {"query": "fine", "constraints": {"note": "x\u0000"}},
        content_type="application/json",
    )
    assert answer.status_code == 400
    assert answer.json() == {"constraints.note": [limits.NUL_MESSAGE]}


def test_a_nul_in_a_judgment_value_is_a_400(world: dict[str, Any]) -> None:
    answer = world["client"].post(
        f"/api/judgment-tasks/{world['task'].pk}/judgments/",
        {"item": world["item"].pk, "value": 1, "comment": "ok", "extra": ["\u0000"]},
        content_type="application/json",
    )
    assert answer.status_code == 400
    assert "extra[0]" in answer.json()


def test_a_nul_in_an_imported_record_names_it_and_writes_nothing(
    project: Project, tmp_path: Path
) -> None:
    path = tmp_path / "data.jsonl"
    good = {**ATP_RECORD, "trace_id": "atp_good", "query": "fine"}
    path.write_text(json.dumps(good) + "\n" + json.dumps(ATP_RECORD) + "\n")
    with pytest.raises(FormatError) as exc:
        dataset_import(project=project, path=path)
    assert exc.value.record == "atp_nul" and exc.value.field == "query"
    assert "NUL character" in str(exc.value)
    assert not project.items.exists()  # the good record before it is not half-written


def test_the_escape_in_raw_text_alone_is_kept(project: Project, tmp_path: Path) -> None:
    """A field no column holds may have the six characters \\u0000 written as text: the raw
    record keeps them as text, which every database stores."""
    path = tmp_path / "data.jsonl"
    record = {**ATP_RECORD, "query": "fine", "note": "back\\u0000slash"}
    path.write_text(json.dumps(record) + "\n")
    dataset_import(project=project, path=path)
    assert project.items.get().query == "fine"


# --------------------------------------------------------------------------- CSV cells

DEFAULT_CSV_CAP = 131_072


def test_a_csv_cell_over_the_csv_modules_cap_is_read(project: Project, tmp_path: Path) -> None:
    """Before: csv.Error "field larger than field limit", an unexpected error in the job."""
    path = tmp_path / "sheet.csv"
    long_document = "d" * (DEFAULT_CSV_CAP + 10)
    docs = json.dumps([{"text": long_document, "images": []}])
    path.write_text('"id","q","docs"\n' + f'"c1","fine","{docs.replace(chr(34), chr(34) * 2)}"\n')
    dataset_import(
        project=project, path=path, fmt=Table("csv", "id=external_id,q=query,docs=documents")
    )
    assert project.items.get().documents[0]["text"] == long_document


def test_a_csv_cell_over_the_limit_names_file_row_and_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "CSV_CELL", limits.Limit("CSV cell", 10, "characters", ""))
    path = tmp_path / "sheet.csv"
    path.write_text('"id","q"\n"c1","short"\n"c2","' + "x" * 11 + '"\n')
    with pytest.raises(FormatError) as exc:
        list(Table("csv", "id=external_id,q=query").read(path))
    assert exc.value.file == "sheet.csv"
    assert exc.value.record == "row 2 (line 3)"
    assert exc.value.field == "q"
    assert "longer than 10 characters" in str(exc.value)


# --------------------------------------------------------------------------- role changes


@pytest.mark.django_db(transaction=True)
def test_two_admins_changing_each_others_role_at_once_never_deadlock() -> None:
    """Each change locks the project row first, then the memberships: the two wait for one
    another. Before, each locked its target's membership, then every admin's: a deadlock
    whenever both held their first lock."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks are proven on PostgreSQL")
    project = ProjectFactory(name="two admins")
    a, b, c = (UserFactory(username=name) for name in ("adm-a", "adm-b", "adm-c"))
    ma = MembershipFactory(project=project, user=a, role=Role.ADMIN)
    mb = MembershipFactory(project=project, user=b, role=Role.ADMIN)
    MembershipFactory(project=project, user=c, role=Role.ADMIN)
    errors: list[BaseException] = []

    def change(actor: Any, target: Membership, role: str, barrier: threading.Barrier) -> None:
        try:
            barrier.wait()
            member_role_set(project=project, actor=actor, membership_id=target.pk, role=role)
        except DomainError:  # the other change went first and took this admin's right
            pass
        except BaseException as exc:  # noqa: BLE001  (a deadlock: OperationalError)
            errors.append(exc)
        finally:
            connections.close_all()

    role = Role.REVIEWER
    for _ in range(12):
        barrier = threading.Barrier(2)
        threads = [
            threading.Thread(target=change, args=(a, mb, role, barrier)),
            threading.Thread(target=change, args=(b, ma, role, barrier)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        Membership.objects.filter(pk__in=[ma.pk, mb.pk]).update(role=Role.ADMIN)
