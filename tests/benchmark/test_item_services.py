"""Items from scratch: per-kind validation (each message names its field), ids in the format's
style, images through the image service, versions, 409 on a stale save, revert."""

from __future__ import annotations

from typing import Any

import pytest

from benchmark.exceptions import Conflict, Forbidden, NotFound, ValidationFailed
from benchmark.formats.agentic_mme import split_prompt
from benchmark.items.services import (
    ItemInvalid,
    criterion_warnings,
    item_create,
    item_revert,
    item_update,
)
from benchmark.models import Item, ItemStatus, ItemVersion, ProjectKind, Response, Role, TermKind
from benchmark.versions import StaleVersion
from tests.factories import (
    ImageFactory,
    ItemFactory,
    MembershipFactory,
    ProjectFactory,
    TaxonomyFactory,
    TaxonomyTermFactory,
    ToolFactory,
    UserFactory,
    png_bytes,
)

pytestmark = pytest.mark.django_db

TEN = [f"The answer shows a chart of the sales in year {n}." for n in range(1, 11)]


def _member(project: Any, role: str = Role.ANNOTATOR) -> Any:
    user = UserFactory()
    MembershipFactory(project=project, user=user, role=role)
    return user


def _errors(project: Any, user: Any, data: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ItemInvalid) as info:
        item_create(project=project, user=user, data=data)
    assert isinstance(info.value, ValidationFailed)
    for field, message in info.value.errors.items():
        assert f"{field}: {message}" in info.value.message
    return info.value.errors


@pytest.fixture
def atp() -> Any:
    taxonomy = TaxonomyFactory()
    academic = TaxonomyTermFactory(taxonomy=taxonomy, kind=TermKind.CATEGORY, name="Academic")
    manual = TaxonomyTermFactory(taxonomy=taxonomy, kind=TermKind.CATEGORY, name="Manual")
    TaxonomyTermFactory(taxonomy=taxonomy, kind=TermKind.INTENT, name="Framework", parent=academic)
    TaxonomyTermFactory(taxonomy=taxonomy, kind=TermKind.INTENT, name="Repair", parent=manual)
    project = ProjectFactory(taxonomy=taxonomy)
    ToolFactory(toolset=project.toolset, name="search")
    return project


def _llmi() -> Any:
    project = ProjectFactory(data_format="llmi")
    ToolFactory(toolset=project.toolset, name="diffusion")
    ToolFactory(toolset=project.toolset, name="code")
    return project


# --------------------------------------------------------------------------- ATP-Bench


def test_atp_item_is_a_draft_written_by_the_user_with_the_importer_shape(atp: Any) -> None:
    user = _member(atp)
    image = ImageFactory(projects=[atp])
    item = item_create(
        project=atp,
        user=user,
        data={
            "query": "How does the framework turn an image into a caption?",
            "category": "Academic",
            "intent": "Framework",
            "documents": [
                {"text": "First document.", "images": [image.sha256, ("b.png", png_bytes(901))]},
                {"text": "Second document.", "images": []},
            ],
            "gt": "It encodes, retrieves and decodes.",
        },
    )
    assert item.status == ItemStatus.DRAFT
    assert item.provenance == f"written by {user.username}"
    assert item.modality == "text"
    assert [d["text"] for d in item.documents] == ["First document.", "Second document."]
    paths = item.documents[0]["images"]
    assert len(paths) == 2 and all(p.startswith("images/") for p in paths)
    assert item.documents[1]["images"] == []
    refs = item.image_refs
    assert [(r["role"], r["position"], r["path"]) for r in refs] == [
        ("document", 0, paths[0]),
        ("document", 1, paths[1]),
    ]
    assert refs[0]["sha256"] == image.sha256
    assert atp.images.filter(sha256=refs[1]["sha256"]).exists()  # stored for the project
    gt = Response.objects.get(item=item, key="gt")
    assert gt.origin == "ground_truth" and gt.text == "It encodes, retrieves and decodes."
    assert item.external_id == "new_0001" and item.source_file == "data.jsonl"


def test_atp_ids_follow_the_projects_own_style(atp: Any) -> None:
    ItemFactory(project=atp, external_id="atp_0007", position=3)
    ItemFactory(project=atp, external_id="atp_0012", position=4)
    item = item_create(project=atp, user=_member(atp), data={"query": "A question?"})
    assert item.external_id == "atp_0013"
    assert item.position == 5


def test_atp_refuses_each_bad_field_by_name(atp: Any) -> None:
    errors = _errors(
        atp,
        _member(atp),
        {
            "query": "  ",
            "category": "Cooking",
            "intent": "Repair",
            "documents": [{"text": "fine", "images": []}, {"text": "", "images": []}, 7],
            "modality": "image",
        },
    )
    assert errors["query"] == "write the query"
    assert "'Cooking' is not a category" in errors["category"]
    assert "documents[1].text" in errors and "documents[2]" in errors


def test_atp_intent_must_be_under_its_category(atp: Any) -> None:
    errors = _errors(atp, _member(atp), {"query": "Q?", "category": "Academic", "intent": "Repair"})
    assert "not an intent of the category 'Academic'" in errors["intent"]


def test_atp_image_query_needs_an_image_and_gets_role_query(atp: Any) -> None:
    user = _member(atp)
    errors = _errors(atp, user, {"query": "What is this?", "modality": "image"})
    assert "query_images" in errors
    item = item_create(
        project=atp,
        user=user,
        data={
            "query": "What is this?",
            "modality": "image",
            "query_images": [("q.png", png_bytes(77))],
        },
    )
    assert item.modality == "image"
    assert [r["role"] for r in item.image_refs] == ["query"]


def test_free_text_category_without_a_taxonomy() -> None:
    project = ProjectFactory()
    item = item_create(
        project=project, user=_member(project), data={"query": "Q?", "category": "Anything"}
    )
    assert item.category == "Anything"


def test_a_bad_upload_names_the_field_and_the_file(atp: Any) -> None:
    errors = _errors(
        atp,
        _member(atp),
        {"query": "Q?", "documents": [{"text": "t", "images": [("broken.png", b"not an image")]}]},
    )
    assert "broken.png" in errors["documents[0].images"]
    assert not Item.objects.filter(project=atp).exists()


def test_gt_tag_findings_are_warnings_and_the_draft_is_saved(atp: Any) -> None:
    item = item_create(
        project=atp,
        user=_member(atp),
        data={"query": "Q?", "gt": 'Look: <tool>{"tool_name": "search", "params": </tool>'},
    )
    assert any(w.startswith("gt: ") for w in item.warnings)
    assert Response.objects.get(item=item, key="gt").text.startswith("Look:")


def test_a_taken_id_is_refused(atp: Any) -> None:
    ItemFactory(project=atp, external_id="mine")
    errors = _errors(atp, _member(atp), {"query": "Q?", "external_id": "mine"})
    assert "already an item" in errors["external_id"]


def test_outsiders_may_not_create() -> None:
    project = ProjectFactory()
    with pytest.raises(Forbidden):
        item_create(project=project, user=UserFactory(), data={"query": "Q?"})


# --------------------------------------------------------------------------- LLM-I


def test_llmi_rubric_constraint_and_tools() -> None:
    project = _llmi()
    item = item_create(
        project=project,
        user=_member(project),
        data={
            "query": "Draw a cat.",
            "rubric": TEN,
            "image_num": "at_least_one",
            "tools": ["Diffusion"],
        },
    )
    assert item.rubric[0] == {"key": "r1", "text": TEN[0]} and len(item.rubric) == 10
    assert item.constraints["image_count"] == {"kind": "at_least_one", "n": None}
    assert item.constraints["tools"] == ["diffusion"]
    assert [w.split(":")[0] for w in item.warnings] == ["image_num"]  # no rubric in training rows
    assert item.external_id == "train_sample#1"


@pytest.mark.parametrize(
    ("value", "kind", "n"), [("-1", "none", None), (0, "any", None), ("3", "exact", 3)]
)
def test_llmi_image_number_constraints(value: Any, kind: str, n: Any) -> None:
    project = _llmi()
    item = item_create(
        project=project,
        user=_member(project),
        data={"query": "P", "rubric": TEN, "image_num": value},
    )
    assert item.constraints["image_count"] == {"kind": kind, "n": n}


def test_llmi_refusals_name_their_field() -> None:
    project = _llmi()
    errors = _errors(
        project,
        _member(project),
        {
            "query": "",
            "rubric": [*TEN[:2], "", TEN[3]],
            "image_num": "lots",
            "tools": ["hammer"],
        },
    )
    assert errors["query"] == "write the prompt"
    assert "rubric.r3" in errors
    assert "image_num" in errors
    assert "hammer" in errors["tools"]
    assert "rubric" in _errors(project, _member(project), {"query": "P", "rubric": TEN + ["x"]})


def test_llmi_vague_criteria_and_fewer_than_ten_are_warnings() -> None:
    project = _llmi()
    item = item_create(
        project=project,
        user=_member(project),
        data={
            "query": "P",
            "rubric": ["Good image.", "Nice colours and a lovely overall composition"],
        },
    )
    assert item.pk is not None and item.external_id == "text_only#1"
    assert any(w.startswith("rubric.r1: vague: fewer than") for w in item.warnings)
    assert any(w.startswith("rubric.r2: vague: no verb") for w in item.warnings)
    assert any(w.startswith("rubric: 2 criteria") for w in item.warnings)


@pytest.mark.parametrize(
    ("text", "vague"),
    [
        ("The answer includes at least two generated images of cats.", False),
        ("Each generated image matches the paragraph that precedes it.", False),
        ("The response explained the recipe in numbered steps.", False),
        ("Good.", True),
        ("Beautiful images of cats and dogs in the garden", True),
    ],
)
def test_criterion_heuristic(text: str, vague: bool) -> None:
    assert bool(criterion_warnings(text)) is vague


# --------------------------------------------------------------------------- Agentic-MME


def _agentic() -> Any:
    return ProjectFactory(kind=ProjectKind.TRAJECTORY, data_format="agentic-mme")


def test_agentic_task_fields() -> None:
    project = _agentic()
    item = item_create(
        project=project,
        user=_member(project),
        data={
            "query": "What street name is on the sign?",
            "format_instruction": "Answer with the name only.",
            "images": [("photo.png", png_bytes(5))],
            "expected_answer": "Willow St",
            "match_type": "contains",
            "accepted_variants": "Willow Street\n",
            "level": "2",
            "domain": "Life",
        },
    )
    assert item.query == "What street name is on the sign? Answer with the name only."
    assert split_prompt(item.query) == (
        "What street name is on the sign?",
        "Answer with the name only.",
    )
    assert item.accepted_variants == ["Willow Street"] and item.level == 2
    assert [r["role"] for r in item.image_refs] == ["input"]
    assert item.external_id == "0001" and item.source_file == "json/0001.json"


def test_agentic_refusals_name_their_field() -> None:
    project = _agentic()
    errors = _errors(
        project,
        _member(project),
        {"query": "Q?", "match_type": "fuzzy", "level": 4, "format_instruction": "be brief"},
    )
    assert set(errors) >= {"images", "expected_answer", "match_type", "level", "format_instruction"}


# --------------------------------------------------------------------------- m&m's


def test_mms_request_and_input_files() -> None:
    project = ProjectFactory(kind=ProjectKind.PLAN, data_format="mms")
    ItemFactory(project=project, external_id="9002", source_file="tasks.json")
    item = item_create(
        project=project,
        user=_member(project),
        data={
            "query": "Caption image.jpg and read speech.wav aloud.",
            "images": [("image.jpg", png_bytes(9))],
            "input_files": ["speech.wav"],
        },
    )
    assert item.external_id == "9003" and item.source_file == "tasks.json"
    assert item.constraints == {"input_files": ["speech.wav"]}
    assert item.modality == "image"
    assert "query" in _errors(project, _member(project), {"query": ""})


# --------------------------------------------------------------------------- versions


def test_first_save_writes_version_one_then_two(atp: Any) -> None:
    author = _member(atp)
    editor = _member(atp)
    item = item_create(project=atp, user=author, data={"query": "Old?", "category": "Academic"})
    updated = item_update(
        item=item, user=editor, changes={"query": "New?"}, base_version=1, note="clearer"
    )
    assert updated.query == "New?" and updated.provenance == f"written by {author.username}"
    one, two = ItemVersion.objects.filter(item=item).order_by("number")
    assert one.author is None and one.fields["query"] == "Old?"
    assert two.author == editor and two.fields["query"] == "New?" and two.base_number == 1
    assert two.note == "clearer"


def test_stale_save_is_a_409_naming_who_saved_what(atp: Any) -> None:
    item = item_create(project=atp, user=_member(atp), data={"query": "Q?"})
    alice = _member(atp)
    item_update(item=item, user=alice, changes={"query": "Alice's?"}, base_version=1)
    with pytest.raises(StaleVersion) as info:
        item_update(item=item, user=_member(atp), changes={"query": "Bob's?"}, base_version=1)
    assert isinstance(info.value, Conflict)
    assert alice.username in info.value.message and "query" in info.value.message
    assert info.value.current.number == 2
    assert Item.objects.get(pk=item.pk).query == "Alice's?"


def test_nothing_to_save_and_invalid_changes(atp: Any) -> None:
    item = item_create(project=atp, user=_member(atp), data={"query": "Q?"})
    user = _member(atp)
    with pytest.raises(ValidationFailed, match="nothing to save"):
        item_update(item=item, user=user, changes={"query": "Q?"}, base_version=1)
    with pytest.raises(ItemInvalid) as info:
        item_update(item=item, user=user, changes={"category": "Nope"}, base_version=1)
    assert list(info.value.errors) == ["category"]
    assert not ItemVersion.objects.filter(item=item, number__gt=1).exists()


def test_documents_reordered_by_an_edit(atp: Any) -> None:
    user = _member(atp)
    item = item_create(
        project=atp,
        user=user,
        data={
            "query": "Q?",
            "documents": [
                {"text": "A", "images": [("a.png", png_bytes(31))]},
                {"text": "B", "images": [("b.png", png_bytes(32))]},
            ],
        },
    )
    a_path, b_path = item.documents[0]["images"][0], item.documents[1]["images"][0]
    shas = {r["path"]: r["sha256"] for r in item.image_refs}
    updated = item_update(
        item=item,
        user=user,
        changes={
            "documents": [
                {"text": "B", "images": [b_path]},
                {"text": "A", "images": [shas[a_path]]},
            ]
        },
        base_version=None,
    )
    assert [d["text"] for d in updated.documents] == ["B", "A"]
    assert updated.documents[0]["images"] == [b_path]
    assert [(r["path"], r["position"]) for r in updated.image_refs] == [(b_path, 0), (a_path, 1)]


def test_revert_writes_a_new_version_equal_to_the_old(atp: Any) -> None:
    user = _member(atp)
    item = item_create(project=atp, user=user, data={"query": "One?"})
    item_update(item=item, user=user, changes={"query": "Two?"}, base_version=1)
    reverted = item_revert(item=item, user=user, number=1, base_version=2)
    assert reverted.query == "One?"
    three = ItemVersion.objects.get(item=item, number=3)
    assert three.fields["query"] == "One?" and three.note == "Reverted to version 1"
    with pytest.raises(ValidationFailed):
        item_revert(item=item, user=user, number=1, base_version=3)
    with pytest.raises(NotFound):
        item_revert(item=item, user=user, number=9, base_version=3)
    with pytest.raises(StaleVersion):
        item_revert(item=item, user=user, number=2, base_version=2)


def test_imported_item_keeps_its_odd_fields_when_another_is_edited(atp: Any) -> None:
    item = ItemFactory(project=atp, category="Legacy", intent="Old")
    updated = item_update(
        item=item, user=_member(atp, Role.REVIEWER), changes={"query": "Better?"}, base_version=1
    )
    assert updated.category == "Legacy" and updated.query == "Better?"


def test_image_refs_are_accepted_and_other_projects_images_are_not() -> None:
    project = _llmi()
    user = _member(project)
    mine = ImageFactory(projects=[project])
    theirs = ImageFactory(projects=[ProjectFactory()])
    item = item_create(
        project=project,
        user=user,
        data={
            "query": "P",
            "rubric": TEN,
            "image_refs": [{"sha256": mine.sha256, "role": "input"}],
        },
    )
    assert [(r["sha256"], r["role"], r["position"]) for r in item.image_refs] == [
        (mine.sha256, "input", 0)
    ]
    assert item.modality == "image" and item.source_file == "mm_input.json"
    errors = _errors(project, user, {"query": "P", "rubric": TEN, "images": [theirs.sha256]})
    assert "no image" in errors["images[0]"]


def test_update_by_columns_as_the_api_and_drafting_pass_them() -> None:
    project = _llmi()
    user = _member(project)
    item = item_create(project=project, user=user, data={"query": "P", "rubric": TEN})
    image = ImageFactory(projects=[project])
    updated = item_update(
        item=item,
        user=user,
        changes={
            "constraints": {"image_num": 2},
            "image_refs": [{"sha256": image.sha256, "role": "input"}],
            "rubric": [{"key": "r1", "text": "The answer includes two images of the cycle."}],
        },
        base_version=None,
    )
    assert updated.constraints["image_count"] == {"kind": "exact", "n": 2}
    assert [r["sha256"] for r in updated.image_refs] == [image.sha256]
    assert len(updated.rubric) == 1 and updated.modality == "image"
