"""One limit per field everywhere (issue 22, item 5): the table in ``benchmark.limits`` is what
the item form, the API (fields and native records), the project's own format and every
interchange import (JSON Lines, CSV, Label Studio) accept. For each field and each path a
value at the limit is accepted and one character more is refused with a message naming the
field and the limit. Before, the API refused a query over 100,000 characters while an import
took 20,000,000."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.http import QueryDict
from django.test import Client
from django.utils.datastructures import MultiValueDict

from benchmark import limits
from benchmark.datasets.services import dataset_import
from benchmark.exceptions import ValidationFailed
from benchmark.formats import FormatError
from benchmark.formats.label_studio import Reader
from benchmark.formats.tabular import Table
from benchmark.items.forms import data_from_post
from benchmark.items.services import item_create
from benchmark.models import Project, Role
from tests.factories import MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

# Which benchmark each field belongs to, and the item fields (interchange names) that carry
# a value of length n in it.
FIELDS: dict[limits.Limit, tuple[str, Callable[[str], dict[str, Any]]]] = {
    limits.EXTERNAL_ID: ("atp", lambda v: {"external_id": v, "query": "q"}),
    limits.QUERY: ("atp", lambda v: {"query": v}),
    limits.DOCUMENT: ("atp", lambda v: {"query": "q", "documents": [{"text": v, "images": []}]}),
    limits.ANSWER: ("atp", lambda v: {"query": "q", "answer": v}),
    limits.LABEL: ("atp", lambda v: {"query": "q", "category": v}),
    limits.EXPECTED_ANSWER: ("agentic-mme", lambda v: {"query": "q", "expected_answer": v}),
    limits.ACCEPTED_VARIANT: (
        "agentic-mme",
        lambda v: {"query": "q", "expected_answer": "a", "accepted_variants": [v]},
    ),
    limits.CRITERION: ("llmi", lambda v: {"query": "q", "rubric": [{"key": "r1", "text": v}]}),
}


def test_the_table_lists_every_limit_once() -> None:
    assert len({limit.field for limit in limits.TABLE}) == len(limits.TABLE)
    assert set(FIELDS) | {limits.RECORD_BYTES, limits.JSON_DEPTH, limits.CSV_CELL} == set(
        limits.TABLE
    )


def test_the_docs_state_the_table() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs/reference/api.md").read_text()
    for limit in limits.TABLE:
        assert f"| {limit.field} | {limit.limit:,} {limit.unit} |" in page, limit.field


# --------------------------------------------------------------------------- the paths
# Each takes the project and the item fields and answers the refusal's text ("" = accepted).


def _interchange(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields as an interchange row: the answer travels as a response."""
    out = {"external_id": "lim1", **fields}
    if "answer" in out:
        out["responses"] = [{"key": "gt", "text": out.pop("answer")}]
    return out


def _imported(project: Project, path: Path, fmt: Any = None) -> str:
    try:
        dataset_import(project=project, path=path, fmt=fmt)
    except FormatError as exc:
        return f"{exc.field}: {exc}"
    return ""


def via_jsonl(project: Project, fields: dict[str, Any], tmp: Path) -> str:
    path = tmp / "items.jsonl"
    path.write_text(json.dumps(_interchange(fields)) + "\n")
    return _imported(project, path, Table("jsonl"))


def via_csv(project: Project, fields: dict[str, Any], tmp: Path) -> str:
    row = {k: v if isinstance(v, str) else json.dumps(v) for k, v in _interchange(fields).items()}
    path = tmp / "items.csv"
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(row), quoting=csv.QUOTE_ALL)
        writer.writeheader()
        writer.writerow(row)
    return _imported(project, path, Table("csv"))


def via_label_studio(project: Project, fields: dict[str, Any], tmp: Path) -> str:
    path = tmp / "export.json"
    path.write_text(json.dumps([{"id": 1, "data": _interchange(fields)}]))
    return _imported(project, path, Reader())


def _atp_record(fields: dict[str, Any]) -> dict[str, Any] | None:
    if set(fields) - {"external_id", "query", "documents", "answer", "category"}:
        return None
    return {
        "trace_id": fields.get("external_id", "atp_lim"),
        "query": fields["query"],
        "doc": fields.get("documents", []),
        "images": [],
        "gt": fields.get("answer", "gt"),
        "category": fields.get("category", ""),
        "intent": "",
    }


def _llmi_record(fields: dict[str, Any]) -> dict[str, Any] | None:
    rubric = fields.get("rubric")
    if rubric is None:
        return None
    return {"prompt": fields["query"], **{f"r{i}": "Includes a clear photo." for i in range(1, 11)},
            "r1": rubric[0]["text"]}  # fmt: skip


def _native(project: Project, fields: dict[str, Any]) -> dict[str, Any] | None:
    if project.data_format == "atp":
        return _atp_record(fields)
    if project.data_format == "llmi":
        return _llmi_record(fields)
    return None  # Agentic-MME's task files: their fields come through the paths above


def via_native_import(project: Project, fields: dict[str, Any], tmp: Path) -> str | None:
    record = _native(project, fields)
    if record is None or project.data_format != "atp":
        return None
    path = tmp / "data.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return _imported(project, path)


def _member(project: Project) -> Any:
    user = UserFactory()
    MembershipFactory(project=project, user=user, role=Role.ADMIN)
    return user


def _api_post(project: Project, body: dict[str, Any]) -> str:
    client = Client()
    client.force_login(_member(project))
    answer = client.post(
        f"/api/projects/{project.pk}/items/", body, content_type="application/json"
    )
    if answer.status_code == 201:
        return ""
    assert answer.status_code == 400, answer.content
    return json.dumps(answer.json())


def via_api_record(project: Project, fields: dict[str, Any], tmp: Path) -> str | None:
    record = _native(project, fields)
    return None if record is None else _api_post(project, {"record": record})


def via_api_fields(project: Project, fields: dict[str, Any], tmp: Path) -> str | None:
    return _api_post(project, fields)


FORM_NAMES = {"answer": "gt"}


def via_form(project: Project, fields: dict[str, Any], tmp: Path) -> str | None:
    post = QueryDict(mutable=True)
    for key, value in fields.items():
        if key == "documents":
            post.setlist("doc_key", ["0"])
            post.setlist("doc_text", [value[0]["text"]])
        elif key == "rubric":
            post["r1"] = value[0]["text"]
        elif key == "accepted_variants":
            post["accepted_variants"] = "\n".join(value)
        else:
            post[FORM_NAMES.get(key, key)] = value
    data, _ = data_from_post(project, post, MultiValueDict())
    try:
        item_create(project=project, user=_member(project), data=data)
    except ValidationFailed as exc:
        return exc.message
    return ""


PATHS = [via_form, via_api_fields, via_api_record, via_native_import, via_jsonl, via_csv,
         via_label_studio]  # fmt: skip


def _field_named(limit: limits.Limit, refusal: str) -> bool:
    names = {
        limits.DOCUMENT: "documents",
        limits.ANSWER: ("gt", "answer", "text"),
        limits.LABEL: "category",
        limits.EXTERNAL_ID: ("external_id", "id"),
        limits.CRITERION: ("rubric", "r1"),
    }.get(limit, limit.field)
    return any(name in refusal for name in ((names,) if isinstance(names, str) else names))


def _limit_named(limit: limits.Limit, refusal: str) -> bool:
    return str(limit.limit) in refusal.replace(",", "")


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.__name__)
@pytest.mark.parametrize("limit", list(FIELDS), ids=lambda limit: limit.field)
def test_each_path_takes_the_limit_and_refuses_one_more(
    limit: limits.Limit, path: Callable[..., str | None], tmp_path: Path
) -> None:
    data_format, make = FIELDS[limit]
    kind = {"agentic-mme": "trajectory"}.get(data_format, "interleaved")
    project = ProjectFactory(data_format=data_format, kind=kind)
    at = path(project, make("x" * limit.limit), tmp_path)
    if at is None:
        pytest.skip(f"{path.__name__} has no {limit.field} in {data_format}")
    # At the limit: accepted, or refused only for what else such a bare item lacks.
    assert not (_limit_named(limit, at) and "longer" in at), at
    project.items.all().delete()
    over = path(project, make("x" * (limit.limit + 1)), tmp_path)
    assert over, f"{path.__name__} took {limit.field} over its limit"
    assert _field_named(limit, over), over
    assert _limit_named(limit, over), over
    assert not project.items.exists()


@pytest.mark.parametrize("path", [via_jsonl, via_csv, via_label_studio, via_native_import])
def test_an_import_refuses_a_record_over_the_record_size(
    path: Callable[..., str | None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "RECORD_BYTES", limits.Limit("record", 2_000, "bytes", ""))
    project = ProjectFactory()
    assert path(project, {"query": "q" * 1_000}, tmp_path) == ""
    project.items.all().delete()
    over = path(project, {"query": "q" * 1_950, "category": "c" * 150}, tmp_path)
    assert over and "2000" in (over or "").replace(",", ""), over
    if path is via_native_import:  # the project's own format keeps the record's text
        assert over.startswith("record:")


def test_the_api_refuses_a_body_over_the_record_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "RECORD_BYTES", limits.Limit("record", 2_000, "bytes", ""))
    project = ProjectFactory()
    assert _api_post(project, {"query": "q" * 1_900}) == ""
    refusal = _api_post(project, {"query": "q" * 2_100})
    assert "request body: larger than 2,000 bytes" in refusal


def test_an_answer_edit_takes_the_answer_limit_and_refuses_one_more(project: Project) -> None:
    """Editing an answer (the tag review page) keeps the same limit as importing one."""
    from annotation.tag_review.services import response_save_version
    from tests.factories import ItemFactory, ResponseFactory

    response = ResponseFactory(item=ItemFactory(project=project), text="first")
    user = _member(project)
    at = "x" * limits.ANSWER.limit
    version = response_save_version(
        response=response, user=user, text=at, base_number=1, decisions=[]
    )
    assert version.number == 2
    with pytest.raises(ValidationFailed) as exc:
        response_save_version(
            response=response, user=user, text=at + "x", base_number=2, decisions=[]
        )
    assert exc.value.message.startswith("text: is longer than 1,000,000 characters")
    with pytest.raises(ValidationFailed, match="NUL character"):
        response_save_version(
            response=response, user=user, text="a\x00b", base_number=2, decisions=[]
        )
