"""``POST /api/projects/<id>/items/``: an item from its fields or from one record in the
benchmark's own format, for each of the four formats; and exports of new items that import
again byte for byte (issue 12's "Done when" for exports)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from django.test import Client

from benchmark import permissions
from benchmark.builtin import taxonomies_ensure, toolsets_ensure
from benchmark.datasets.services import dataset_export, dataset_import
from benchmark.models import Image, Item, ItemStatus, Plan, Project, ProjectKind, Role
from benchmark.models import Response as ResponseModel
from tests.factories import ImageFactory, MembershipFactory, ProjectFactory, UserFactory
from tests.shared_data import SHARED_DATA, needs_data

pytestmark = pytest.mark.django_db

KINDS = {
    "atp": ProjectKind.INTERLEAVED,
    "llmi": ProjectKind.INTERLEAVED,
    "mms": ProjectKind.PLAN,
    "agentic-mme": ProjectKind.TRAJECTORY,
}
FORMATS = list(KINDS)


def make_project(data_format: str, name: str = "") -> Project:
    """A project as the app sets one up: the format's built-in toolset and taxonomy (so
    LLM-I's required tools and ATP-Bench's categories are checked against real ones)."""
    return ProjectFactory(
        name=name or f"{data_format} project",
        kind=KINDS[data_format],
        data_format=data_format,
        toolset=toolsets_ensure()[data_format],
        taxonomy=taxonomies_ensure()[data_format],
    )


@pytest.fixture
def author() -> Any:
    return UserFactory(username="writer")


def member_client(project: Project, user: Any, role: str = Role.ANNOTATOR) -> Client:
    MembershipFactory(project=project, user=user, role=role)
    client = Client()
    client.force_login(user)
    return client


def post(client: Client, project: Project, body: Any) -> Any:
    return client.post(
        f"/api/projects/{project.pk}/items/", json.dumps(body), content_type="application/json"
    )


def image_path(image: Image) -> str:
    return f"images/{image.sha256}.png"


def field_bodies(data_format: str, images: list[Image]) -> list[dict[str, Any]]:
    """Items of every shape the format has, as the New item form gives them."""
    one, two = (image_path(i) for i in images[:2])
    rubric = [
        {"key": f"r{i}", "text": f"Does the answer state fact number {i} clearly?"}
        for i in range(1, 11)
    ]
    if data_format == "atp":
        return [
            {
                "query": "How does the framework turn an image into a caption?",
                "documents": [
                    {"text": "Figure 1 shows the pipeline.", "images": [one]},
                    {"text": "Table 2 lists the ablations.", "images": []},
                ],
                "category": "Academic",
                "intent": "Framework",
                "answer": "The encoder feeds the retriever. <tool>{'type': 'doc', 'index': 0}</tool>",
            },
            {
                "external_id": "atp_new_2",
                "query": "Which haircut suits the face in this photo?",
                "images": [{"path": two, "role": "query"}],
                "category": "Fashion",
                "intent": "Hairstyle",
                "answer": "A layered bob.",
            },
        ]
    if data_format == "llmi":
        return [
            {"query": "Write a brief on monthly coffee sales with a chart.", "rubric": rubric},
            {
                "query": "Repaint the wall in this room terracotta.",
                "images": [{"path": one}],
                "rubric": rubric,
            },
            {
                "query": "Compare rainfall in Bergen and Oslo at a glance.",
                "constraints": {"image_num": 1, "tools": ["code"]},
            },
        ]
    if data_format == "mms":
        return [
            {
                "external_id": "9100",
                "query": "Caption image 17320.jpg and then summarize the caption.",
                "plan": [
                    {"id": 0, "name": "image captioning", "args": {"image": "17320.jpg"}},
                    {"id": 1, "name": "text summarization", "args": {"text": "<node-0>.text"}},
                ],
            }
        ]
    return [
        {
            "external_id": "0100",
            "query": "What street name is on the blue sign? Answer exactly as written.",
            "images": [{"path": one}],
            "expected_answer": "Willow St",
            "accepted_variants": ["Willow Street"],
            "match_type": "contains",
            "level": 1,
            "domain": "Life",
        }
    ]


# --------------------------------------------------------------------------- fields


@pytest.mark.parametrize("data_format", FORMATS)
def test_items_from_fields_are_drafts_written_by_the_user(data_format: str, author: Any) -> None:
    project = make_project(data_format)
    images = [ImageFactory(projects=[project]) for _ in range(2)]
    client = member_client(project, author)
    for body in field_bodies(data_format, images):
        response = post(client, project, body)
        assert response.status_code == 201, response.content
        out = response.json()
        assert out["status"] == ItemStatus.DRAFT
        assert out["provenance"] == "written by writer"
        assert out["query"] == body["query"]
        assert response["Location"].endswith(f"/api/items/{out['id']}/")
        item = Item.objects.get(pk=out["id"])
        if "answer" in body:
            gt = ResponseModel.objects.get(item=item, key="gt")
            assert gt.text == body["answer"] and gt.origin == "ground_truth"
        if "plan" in body:
            gold = Plan.objects.get(item=item, key="gold")
            assert [s["name"] for s in gold.steps] == [s["name"] for s in body["plan"]]
            assert gold.code.startswith("def solve():")
            assert "image_captioning(image=" in gold.code
        for ref in item.image_refs:
            assert ref["sha256"] in {i.sha256 for i in images}
    assert project.items.count() == len(field_bodies(data_format, images))
    positions = list(project.items.order_by("id").values_list("position", flat=True))
    assert positions == sorted(set(positions))  # each new item goes after the last


def test_an_image_query_makes_an_image_item(author: Any) -> None:
    project = make_project("atp")
    images = [ImageFactory(projects=[project]) for _ in range(2)]
    client = member_client(project, author)
    out = post(client, project, field_bodies("atp", images)[1]).json()
    assert out["modality"] == "image"
    assert out["image_refs"][0]["role"] == "query"


@pytest.mark.parametrize(
    ("data_format", "body", "field"),
    [
        ("atp", {"category": "Academic"}, "query"),
        ("atp", {"query": "q", "level": 5}, "level"),
        ("atp", {"query": "q", "rubric": [{"key": "x1", "text": "t"}]}, "rubric"),
        ("atp", {"query": "q", "documents": [{"images": []}]}, "documents"),
        ("atp", {"query": "q", "colour": "red"}, "colour"),
        ("atp", {"query": "q", "images": [{"path": "p.png", "role": "face"}]}, "images"),
        ("mms", {"query": "q", "plan": [{"id": 0, "args": {}}]}, "plan"),
        ("mms", {"query": "q", "plan": "not a list"}, "plan"),
    ],
)
def test_bad_fields_answer_400_naming_the_field(
    data_format: str, body: dict[str, Any], field: str, author: Any
) -> None:
    project = make_project(data_format)
    response = post(member_client(project, author), project, body)
    assert response.status_code == 400
    assert field in response.json(), response.json()
    assert not project.items.exists()


@pytest.mark.parametrize(
    ("data_format", "body", "named"),
    [
        ("atp", {"query": "q", "plan": [{"id": 0, "name": "t", "args": {}}]}, "plan:"),
        ("mms", {"query": "q", "answer": "text"}, "answer:"),
        ("agentic-mme", {"query": "q", "answer": "text"}, "answer:"),
        ("atp", {"query": "q", "images": [{"path": "images/nowhere.png"}]}, "images[0].path:"),
        ("atp", {"query": "q", "documents": [{"text": "t", "images": ["x.png"]}]}, "documents[0]"),
    ],
)
def test_fields_the_format_does_not_have_answer_400(
    data_format: str, body: dict[str, Any], named: str, author: Any
) -> None:
    project = make_project(data_format)
    response = post(member_client(project, author), project, body)
    assert response.status_code == 400
    assert response.json()["detail"].startswith(named), response.json()
    assert not project.items.exists()


def test_an_image_of_another_project_is_unknown(author: Any) -> None:
    project = make_project("agentic-mme")
    theirs = ImageFactory(projects=[make_project("atp", "theirs")])
    body = {
        **field_bodies("agentic-mme", [theirs, theirs])[0],
        "images": [{"path": image_path(theirs)}],
    }
    response = post(member_client(project, author), project, body)
    assert response.status_code == 400
    assert "images[0].path" in response.json()["detail"]


@pytest.mark.parametrize(
    ("data_format", "images", "documents", "named"),
    [
        ("atp", [{"path": "x", "role": "input"}], [], "images[0].role:"),
        ("llmi", [{"path": "x", "role": "query"}], [], "images[0].role:"),
        ("atp", [{"path": "SHA"}], [{"text": "t", "images": []}], "images[0].path:"),
    ],
)
def test_images_take_the_roles_of_the_format(
    data_format: str,
    images: list[dict[str, Any]],
    documents: list[Any],
    named: str,
    author: Any,
) -> None:
    project = make_project(data_format)
    sha = ImageFactory(projects=[project]).sha256
    images = [{**i, "path": sha} if i["path"] == "SHA" else i for i in images]
    body = {"query": "q", "images": images, "documents": documents}
    response = post(member_client(project, author), project, body)
    assert response.status_code == 400
    assert response.json()["detail"].startswith(named), response.json()
    assert not project.items.exists()


@needs_data("atp")
def test_fields_may_name_images_by_the_paths_the_project_uses(author: Any) -> None:
    """The one rule item_create names images by: an imported path is kept, a hash (bare or
    as images/<sha256>.<ext>) gets the app's own path."""
    project = make_project("atp")
    dataset_import(project=project, path=SHARED_DATA / "atp")
    imported = next(i for i in project.items.all() if len(i.image_refs) >= 2)
    first, second = imported.image_refs[:2]
    client = member_client(project, author)
    body = {
        "query": "Which of the two figures shows the pipeline?",
        "documents": [{"text": "Figure 1.", "images": [first["path"], second["sha256"]]}],
        "category": "Academic",
        "intent": "Framework",
    }
    response = post(client, project, body)
    assert response.status_code == 201, response.content
    refs = Item.objects.get(pk=response.json()["id"]).image_refs
    assert [(r["sha256"], r["role"]) for r in refs] == [
        (first["sha256"], "document"),
        (second["sha256"], "document"),
    ]
    assert refs[0]["path"] == first["path"]
    assert refs[1]["path"].startswith(f"images/{second['sha256'][:16]}")


def test_a_duplicate_external_id_answers_409(author: Any) -> None:
    project = make_project("mms")
    client = member_client(project, author)
    body = {"external_id": "9100", "query": "q"}
    assert post(client, project, body).status_code == 201
    again = post(client, project, body)
    assert again.status_code == 409
    assert "9100" in again.json()["detail"]
    assert project.items.count() == 1


# --------------------------------------------------------------------------- native records


def real_record(data_format: str) -> Any:
    if data_format == "atp":
        return orjson.loads((SHARED_DATA / "atp" / "data.jsonl").read_bytes().splitlines()[0])
    if data_format == "llmi":
        return orjson.loads((SHARED_DATA / "llmi" / "text_only.json").read_bytes())[0]
    if data_format == "mms":
        return orjson.loads((SHARED_DATA / "mms" / "tasks.json").read_bytes())[0]
    return orjson.loads((SHARED_DATA / "agentic-mme" / "json" / "0001.json").read_bytes())


def without_images(data_format: str, record: dict[str, Any]) -> dict[str, Any]:
    record = dict(record)
    if data_format == "atp":
        record["images"] = []
        record["doc"] = [{**d, "images": []} for d in record["doc"]]
    if data_format == "agentic-mme":
        record["input"] = {**record["input"], "image": None}
    return record


@needs_data()
@pytest.mark.parametrize("data_format", FORMATS)
def test_a_native_record_becomes_an_item_with_its_attachments(
    data_format: str, author: Any
) -> None:
    project = make_project(data_format)
    client = member_client(project, author)
    record = without_images(data_format, real_record(data_format))
    response = post(client, project, {"record": record})
    assert response.status_code == 201, response.content
    out = response.json()
    item = Item.objects.get(pk=out["id"])
    assert item.status == ItemStatus.DRAFT
    assert item.provenance == "written by writer"
    assert item.raw_record == record  # kept, so the export is lossless
    if data_format == "atp":
        assert item.external_id == record["trace_id"]
        assert ResponseModel.objects.get(item=item, key="gt").text == record["gt"]
    if data_format == "llmi":
        assert item.external_id == "text_only#1"
        assert [c["key"] for c in item.rubric] == [f"r{i}" for i in range(1, 11)]
        second = post(client, project, {"record": {"prompt": "Another prompt", "r1": "ok?"}})
        assert second.json()["external_id"] == "text_only#2"
    if data_format == "mms":
        assert item.external_id == "8"
        assert Plan.objects.get(item=item, key="gold").code == record["code_str"]
    if data_format == "agentic-mme":
        assert item.trajectories.get(key="reference").checkpoints
        assert item.level == 1


@needs_data()
def test_a_record_may_be_sent_as_its_json_text(author: Any) -> None:
    project = make_project("atp")
    line = orjson.dumps(without_images("atp", real_record("atp"))).decode()
    response = post(member_client(project, author), project, {"record": line})
    assert response.status_code == 201, response.content
    assert Item.objects.get(pk=response.json()["id"]).raw_source == line


@pytest.mark.parametrize(
    ("data_format", "record", "field"),
    [
        ("atp", {"trace_id": "x"}, "query"),
        ("atp", {"trace_id": "x", "query": "q", "doc": 3}, "doc"),
        ("llmi", {"prompt": 5}, "prompt"),
        ("llmi", {"sample_index": 1, "prompt": "p", "answer": "a"}, "answer"),
        ("mms", {"id": 1, "user_request": "u"}, "plan_str"),
        ("agentic-mme", {"task_id": "t", "input": {"prompt": "p"}, "meta": {"level": 7}}, None),
    ],
)
def test_a_bad_record_answers_400_naming_the_field(
    data_format: str, record: dict[str, Any], field: str | None, author: Any
) -> None:
    project = make_project(data_format)
    response = post(member_client(project, author), project, {"record": record})
    assert response.status_code == 400
    body = response.json()
    assert body["field"] == (field or "meta.level"), body
    assert not project.items.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"record": 5}, "record"),
        ({"record": {"trace_id": "x"}, "query": "q"}, "query"),
        ({"record": {"trace_id": "x", "query": "q"}, "format": "mms"}, "format"),
    ],
)
def test_a_record_body_is_a_record_only(body: dict[str, Any], field: str, author: Any) -> None:
    project = make_project("atp")
    response = post(member_client(project, author), project, body)
    assert response.status_code == 400
    body = response.json()
    assert field in body or body["detail"].startswith(f"{field}:"), body
    assert not project.items.exists()


@needs_data("atp")
def test_record_images_must_be_known_to_the_project(author: Any) -> None:
    project = make_project("atp")
    client = member_client(project, author)
    record = real_record("atp")
    response = post(client, project, {"record": record})
    assert response.status_code == 400
    assert response.json()["field"] == "images"
    assert "unknown image" in response.json()["detail"]
    query_image = {**without_images("atp", record), "image_query": "images/q.png"}
    response = post(client, project, {"record": query_image})
    assert response.json()["field"] == "image_query"
    # Once imported, the same paths name the project's images.
    dataset_import(project=project, path=SHARED_DATA / "atp")
    again = post(client, project, {"record": record})
    assert again.status_code == 409  # same trace_id as the imported line
    response = post(client, project, {"record": {**record, "trace_id": "atp_9001"}})
    assert response.status_code == 201, response.content
    imported = project.items.get(external_id=record["trace_id"])
    assert Item.objects.get(pk=response.json()["id"]).image_refs == imported.image_refs


# --------------------------------------------------------------------------- who may


def test_outsiders_get_404_and_anonymous_users_are_refused(
    project: Project, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    body = {"query": "q"}
    assert post(clients["outsider"], project, body).status_code == 404
    assert post(Client(), project, body).status_code in (401, 403)
    for role in ("admin", "reviewer", "annotator"):  # "edit" is every member's action
        assert post(clients[role], project, {"query": f"by {role}"}).status_code == 201
    assert not project.items.filter(provenance="written by outsider-user").exists()


def test_staff_who_are_not_members_get_404(project: Project, users: dict[str, Any]) -> None:
    staff = UserFactory(username="staff-user", is_staff=True)
    client = Client()
    client.force_login(staff)
    assert post(client, project, {"query": "q"}).status_code == 404
    assert not project.items.exists()


def test_members_whose_role_may_not_edit_get_403(
    project: Project, clients: dict[str, Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every role may "edit" today; the view checks the action, so narrowing it refuses.
    monkeypatch.setitem(permissions.ACTIONS, "edit", {Role.ADMIN})
    response = post(clients["annotator"], project, {"query": "q"})
    assert response.status_code == 403
    response = post(clients["annotator"], project, {"record": {"trace_id": "x", "query": "q"}})
    assert response.status_code == 403
    assert post(clients["admin"], project, {"query": "q"}).status_code == 201
    assert project.items.count() == 1


def test_session_auth_keeps_csrf(project: Project, users: dict[str, Any]) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(users["annotator"])
    response = post(client, project, {"query": "q"})
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]


def test_schema_documents_both_bodies(clients: dict[str, Client]) -> None:
    import yaml

    schema = yaml.safe_load(clients["annotator"].get("/api/schema/").content)
    operation = schema["paths"]["/api/projects/{id}/items/"]["post"]
    assert "201" in operation["responses"]
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/ItemCreate"}
    one_of = schema["components"]["schemas"]["ItemCreate"]["oneOf"]
    assert {ref["$ref"].rsplit("/", 1)[1] for ref in one_of} == {
        "ItemFieldsInput",
        "ItemRecordInput",
    }


# --------------------------------------------------------------------------- round trip


def files_of(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.mark.parametrize("data_format", FORMATS)
def test_new_items_export_import_and_export_byte_for_byte(
    data_format: str, author: Any, tmp_path: Path
) -> None:
    project = make_project(data_format)
    images = [ImageFactory(projects=[project]) for _ in range(2)]
    client = member_client(project, author)
    for body in field_bodies(data_format, images):
        assert post(client, project, body).status_code == 201
    first = tmp_path / "first"
    dataset_export(project=project, out=first)
    fresh = make_project(data_format, "fresh")
    result = dataset_import(project=fresh, path=first)
    assert result.items_created == project.items.count()
    assert not result.warnings
    second = tmp_path / "second"
    dataset_export(project=fresh, out=second)
    assert files_of(first) == files_of(second)
    if data_format != "mms":  # m&m's items name media files, not stored images
        assert any(name.startswith("images/") for name in files_of(first))


@needs_data()
@pytest.mark.parametrize("data_format", FORMATS)
def test_new_items_have_the_shape_of_the_real_files(
    data_format: str, author: Any, tmp_path: Path
) -> None:
    """Keys, their order and their types as in the shared sample files."""
    project = make_project(data_format)
    images = [ImageFactory(projects=[project]) for _ in range(2)]
    client = member_client(project, author)
    for body in field_bodies(data_format, images):
        assert post(client, project, body).status_code == 201
    out = tmp_path / "out"
    dataset_export(project=project, out=out, copy_images=False)
    for new, real in _pairs(data_format, out):
        assert _shape(new) == _shape(real), (new, real)


def _shape(value: Any) -> Any:
    if isinstance(value, dict):
        return [(k, _shape(v)) for k, v in value.items() if k not in ("tolerance",)]
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return type(value).__name__ if value is not None else "null"


def _pairs(data_format: str, out: Path) -> list[tuple[Any, Any]]:
    if data_format == "atp":
        new = [orjson.loads(line) for line in (out / "data.jsonl").read_bytes().splitlines()]
        real = orjson.loads((SHARED_DATA / "atp" / "data.jsonl").read_bytes().splitlines()[0])
        image_query = next(
            orjson.loads(line)
            for line in (SHARED_DATA / "atp" / "data.jsonl").read_bytes().splitlines()
            if orjson.loads(line)["image_query"]
        )
        # The first new item has one document image, the real one several: compare one.
        real = {**real, "doc": real["doc"][:1], "images": real["images"][:1]}
        image_query = {**image_query, "doc": [], "images": []}
        new[1]["doc"] = []
        return [(new[0], real), (new[1], image_query)]
    if data_format == "llmi":
        pairs = []
        for file in ("text_only.json", "mm_input.json", "train_sample.json"):
            new = orjson.loads((out / file).read_bytes())[0]
            real = orjson.loads((SHARED_DATA / "llmi" / file).read_bytes())
            real = next(r for r in real if isinstance(r["prompt"], str))
            if "images" in real and isinstance(real["images"][0], str):
                real = {**real, "images": real["images"][:1]}
            pairs.append((new, real))
        return pairs
    if data_format == "mms":
        new = orjson.loads((out / "tasks.json").read_bytes())[0]
        # A new task's alt_plans_str is the list the evaluator reads ("[]" when empty), as in
        # the sample rows that have alternatives (rows without any have null there).
        real = orjson.loads((SHARED_DATA / "mms" / "tasks.json").read_bytes())
        return [(new, next(r for r in real if isinstance(r["alt_plans_str"], str)))]
    new = orjson.loads((out / "json" / "0100.json").read_bytes())
    real = orjson.loads((SHARED_DATA / "agentic-mme" / "json" / "0001.json").read_bytes())
    real["golden_answer"]["accepted_variants"] = ["Willow Street"]
    # A task written in the app has no reference trajectory until the trajectory editor.
    real["process_evaluation"] = {"checkpoints": [], "ordering_constraints": [], "efficiency": {}}
    return [(new, real)]


def test_creating_an_item_takes_a_bounded_number_of_queries(
    author: Any, django_assert_max_num_queries: Any
) -> None:
    project = make_project("atp")
    images = [ImageFactory(projects=[project]) for _ in range(2)]
    client = member_client(project, author)
    body = field_bodies("atp", images)[0]
    # 28: the session, user, project and role; the API's id check; item_create's taxonomy
    # terms (category, intent), images, id, source file, position, model checks, the item and
    # its "gt"; the toolset for the gt's tag findings; the created item as the selector reads it
    # (the hiding rules, then the row: benchmark.visibility.item_visible_get); 29: routing by
    # doubt gives a new item its doubt row in the project's tasks that route by doubt (one
    # statement finding them: annotation.judgment_tasks.doubt.signals).
    for i in range(3):  # a project with more items takes no more queries
        with django_assert_max_num_queries(29):
            assert post(client, project, {**body, "external_id": f"n{i}"}).status_code == 201


def test_a_model_check_in_item_create_answers_400_naming_the_field(
    author: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.core.exceptions import ValidationError

    from benchmark.items import records

    def refuse(**kwargs: Any) -> Item:
        raise ValidationError({"category": ["not a category of the taxonomy"]})

    monkeypatch.setattr(records, "item_create", refuse)
    project = make_project("atp")
    response = post(member_client(project, author), project, {"query": "q", "category": "X"})
    assert response.status_code == 400
    assert response.json()["detail"] == "category: not a category of the taxonomy"
