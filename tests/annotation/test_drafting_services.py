"""Backward-drafting services against the fake model server: sessions, crops asked about with
the same model, marks, and the drafted question written to the item."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest

from annotation.backward_drafting import services
from annotation.backward_drafting.models import (
    DraftingCrop,
    DraftingDraft,
    DraftingMark,
    DraftingSession,
)
from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.models import Image, Item, Job, ModelCall, Project, ProjectKind, Trajectory
from tests.factories import (
    DraftingSessionFactory,
    ImageFactory,
    ItemFactory,
    ModelCallFactory,
    ProjectFactory,
    TrajectoryFactory,
    image_ref,
    png_bytes,
)
from tests.llm_server import MODEL, FakeModelServer, point_at

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(db: None) -> Project:
    return ProjectFactory(
        name="Agentic sample", kind=ProjectKind.TRAJECTORY, data_format="agentic-mme"
    )


@pytest.fixture
def item(project: Project) -> Item:
    images = [ImageFactory(projects=[project], data=png_bytes(n, size=(200, 100))) for n in (5, 6)]
    return ItemFactory(
        project=project,
        query="Imported question?",
        expected_answer="imported",
        modality="image",
        image_refs=[image_ref(img, position=n, role="input") for n, img in enumerate(images)],
    )


@pytest.fixture
def source(item: Item) -> str:
    return item.image_refs[0]["sha256"]


@pytest.fixture
def served(model_project: Project, model_server: FakeModelServer) -> FakeModelServer:
    """The fake model server, which ``project`` now asks."""
    return model_server


def crop_recipe(sha: str, bbox: list[int] | None = None) -> dict[str, Any]:
    return {
        "version": 1,
        "source_sha256": sha,
        "steps": [{"op": "crop", "params": {"bbox_2d": bbox or [500, 0, 1000, 500]}}],
    }


def sent_sha(server: FakeModelServer, n: int) -> str:
    url = server.requests[n].image_urls[0]
    return hashlib.sha256(base64.b64decode(url.split(",", 1)[1])).hexdigest()


def start(item: Item, user: Any, source: str, capture: Any) -> DraftingSession:
    with capture(execute=True):
        session, _ = services.drafting_session_start(
            item=item, user=user, source_sha256=source, prompt="Describe it."
        )
    return session


# --------------------------------------------------------------------------- sessions


def test_starting_a_session_asks_the_model_to_describe_the_raw_image(
    item: Item,
    source: str,
    users: dict[str, Any],
    served: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    session = start(item, users["annotator"], source, django_capture_on_commit_callbacks)
    assert session.model == MODEL and session.endpoint == served.url
    assert session.created_by == users["annotator"]
    (call,) = ModelCall.objects.all()
    assert call.item == item and call.purpose == f"drafting:{session.pk}:describe"
    assert call.image_sha256s == [source] and call.prompt == "Describe it."
    assert call.answer == served.answer and call.prompt_tokens == 17 and call.latency_ms is not None
    assert sent_sha(served, 0) == source


def test_a_session_needs_one_of_the_item_images_and_a_prompt(
    item: Item, users: dict[str, Any], served: FakeModelServer, project: Project
) -> None:
    other = ImageFactory(projects=[project])
    with pytest.raises(ValidationFailed, match="choose one of the item's images"):
        services.drafting_session_start(
            item=item, user=users["annotator"], source_sha256=other.sha256, prompt="x"
        )
    with pytest.raises(ValidationFailed, match="prompt: write something"):
        services.drafting_session_start(
            item=item,
            user=users["annotator"],
            source_sha256=item.image_refs[0]["sha256"],
            prompt="  ",
        )
    assert not DraftingSession.objects.exists() and not Job.objects.exists()


def test_without_a_model_nothing_starts_and_the_message_says_how_to_configure(
    item: Item, source: str, users: dict[str, Any]
) -> None:
    with pytest.raises(ValidationFailed, match="BENCHWRIGHT_MODEL_BASE_URL"):
        services.drafting_session_start(
            item=item, user=users["annotator"], source_sha256=source, prompt="x"
        )
    assert not DraftingSession.objects.exists() and not Job.objects.exists()


def test_drafting_is_for_members_and_trajectory_projects(
    item: Item, source: str, users: dict[str, Any], served: FakeModelServer
) -> None:
    with pytest.raises(Forbidden):
        services.drafting_session_start(
            item=item, user=users["outsider"], source_sha256=source, prompt="x"
        )
    atp = ItemFactory()
    atp.project.memberships.create(user=users["annotator"], role="annotator")
    with pytest.raises(ValidationFailed, match="trajectory projects"):
        services.drafting_session_start(
            item=atp, user=users["annotator"], source_sha256=source, prompt="x"
        )


# --------------------------------------------------------------------------- crops


def test_asking_about_a_crop_derives_it_and_sends_it_to_the_same_model(
    item: Item,
    source: str,
    users: dict[str, Any],
    served: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    session = start(item, users["annotator"], source, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        crop, job = services.drafting_crop_ask(
            session=session,
            user=users["annotator"],
            ground_truth="  The sign reads WILLOW ST  ",
            recipe=crop_recipe(source),
            prompt="What does the sign say?",
        )
    derived = Image.objects.get(sha256=crop.image_sha256)
    assert derived.source is not None and derived.source.sha256 == source
    assert (derived.width, derived.height) == (100, 50)
    assert crop.number == 1 and crop.ground_truth == "The sign reads WILLOW ST"
    assert crop.box_px == [100, 0, 200, 50]
    assert crop.recipe["steps"][0]["params"]["bbox_2d"] == [500, 0, 1000, 500]
    job.refresh_from_db()
    assert job.params["images"] == [derived.sha256]
    call = ModelCall.objects.get(purpose=f"drafting:{session.pk}:crop")
    assert call.image_sha256s == [derived.sha256] and call.model == MODEL
    assert sent_sha(served, 1) == derived.sha256 != source

    with django_capture_on_commit_callbacks(execute=True):
        second, _ = services.drafting_crop_ask(
            session=session,
            user=users["reviewer"],
            ground_truth="WILLOW ST",
            recipe=crop_recipe(source, [600, 0, 1000, 400]),
            prompt="Read the sign.",
        )
    assert second.number == 2
    assert list(session.crops.values_list("ground_truth", flat=True)) == [
        "The sign reads WILLOW ST",
        "WILLOW ST",
    ]


@pytest.mark.parametrize(
    ("truth", "recipe", "message"),
    [
        ("", "ok", "the detail the model missed"),
        ("WILLOW", None, "draw a box on the image"),
        ("WILLOW", "other", "starts from another image"),
        ("WILLOW", "empty", "add at least one operation"),
        ("WILLOW", "outside", "crop"),
        ("WILLOW", "{not json", "not valid JSON"),
    ],
)
def test_a_bad_crop_is_refused_with_a_message_and_nothing_is_written(
    truth: str,
    recipe: Any,
    message: str,
    item: Item,
    source: str,
    users: dict[str, Any],
    served: FakeModelServer,
    project: Project,
    django_capture_on_commit_callbacks: Any,
) -> None:
    session = start(item, users["annotator"], source, django_capture_on_commit_callbacks)
    values = {
        "ok": crop_recipe(source),
        "other": crop_recipe(item.image_refs[1]["sha256"]),
        "empty": {"version": 1, "source_sha256": source, "steps": []},
        "outside": {
            "version": 1,
            "source_sha256": source,
            "steps": [{"op": "crop", "params": {"box": [150, 0, 260, 50]}}],
        },
    }
    images = Image.objects.count()
    with pytest.raises(ValidationFailed, match=message):
        services.drafting_crop_ask(
            session=session,
            user=users["annotator"],
            ground_truth=truth,
            recipe=values.get(recipe, recipe),
            prompt="Read it.",
        )
    assert not DraftingCrop.objects.exists()
    assert Job.objects.count() == 1 and Image.objects.count() == images


def test_a_session_keeps_asking_the_same_model(
    item: Item,
    source: str,
    users: dict[str, Any],
    served: FakeModelServer,
    project: Project,
    django_capture_on_commit_callbacks: Any,
) -> None:
    session = start(item, users["annotator"], source, django_capture_on_commit_callbacks)
    point_at(project, served, model="another-model")
    with pytest.raises(ValidationFailed, match="Start a new session"):
        services.drafting_crop_ask(
            session=session,
            user=users["annotator"],
            ground_truth="WILLOW",
            recipe=crop_recipe(source),
            prompt="Read it.",
        )
    with pytest.raises(ValidationFailed, match="another-model"):
        services.drafting_describe_ask(session=session, user=users["annotator"], prompt="Again")
    assert not DraftingCrop.objects.exists() and Job.objects.count() == 1


# --------------------------------------------------------------------------- marks


def test_marks_are_kept_with_who_and_when_and_the_latest_counts(
    item: Item,
    source: str,
    users: dict[str, Any],
    served: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    session = start(item, users["annotator"], source, django_capture_on_commit_callbacks)
    call = ModelCall.objects.get()
    first = services.drafting_mark_save(
        session=session, call=call, user=users["annotator"], perceives=False, verdict="unsure"
    )
    second = services.drafting_mark_save(
        session=session,
        call=call,
        user=users["reviewer"],
        perceives=True,
        verdict="hallucination",
        note="says OAK ST",
    )
    assert list(DraftingMark.objects.order_by("marked_at", "id")) == [first, second]
    assert second.marked_by == users["reviewer"] and second.marked_at >= first.marked_at
    assert second.note == "says OAK ST"


def test_a_mark_needs_an_answer_of_the_session_and_both_choices(
    item: Item,
    source: str,
    users: dict[str, Any],
    served: FakeModelServer,
    project: Project,
    django_capture_on_commit_callbacks: Any,
) -> None:
    session = start(item, users["annotator"], source, django_capture_on_commit_callbacks)
    call = ModelCall.objects.get()
    stranger = ModelCallFactory(project=project, item=item, purpose="ask")
    failed = ModelCallFactory(
        project=project, item=item, purpose=session.purpose("crop"), answer="", error="boom"
    )
    user = users["annotator"]
    cases = [
        (stranger, True, "correct", "does not belong"),
        (failed, True, "correct", "retry it first"),
        (call, None, "correct", "perceives"),
        (call, True, "maybe", "verdict"),
    ]
    for target, perceives, verdict, message in cases:
        with pytest.raises(ValidationFailed, match=message):
            services.drafting_mark_save(
                session=session, call=target, user=user, perceives=perceives, verdict=verdict
            )
    assert not DraftingMark.objects.exists()


# --------------------------------------------------------------------------- the draft


def test_the_draft_is_written_to_the_item_with_provenance_and_the_old_text_kept(
    item: Item, users: dict[str, Any], project: Project
) -> None:
    session = DraftingSessionFactory(item=item, source_sha256=item.image_refs[0]["sha256"])
    token = services.item_draft_token(item)
    draft = services.drafting_draft_save(
        session=session,
        user=users["annotator"],
        query="What street name is on the small blue sign?\r\nAnswer exactly.",
        expected_answer=" Willow St ",
        match_type="contains",
        base_token=token,
    )
    item.refresh_from_db()
    assert item.query == "What street name is on the small blue sign?\nAnswer exactly."
    assert item.expected_answer == "Willow St" and item.match_type == "contains"
    assert item.provenance == f"drafted by annotator-user with {MODEL}"
    assert draft.previous_query == "Imported question?" and draft.previous_answer == "imported"
    assert draft.created_by == users["annotator"] and draft.checkpoint_id == ""
    assert not Trajectory.objects.exists()


def test_a_stale_draft_is_refused_and_nothing_is_written(item: Item, users: dict[str, Any]) -> None:
    session = DraftingSessionFactory(item=item)
    token = services.item_draft_token(item)
    services.drafting_draft_save(
        session=session,
        user=users["reviewer"],
        query="Theirs?",
        expected_answer="theirs",
        base_token=token,
    )
    with pytest.raises(Conflict, match="someone saved"):
        services.drafting_draft_save(
            session=session,
            user=users["annotator"],
            query="Mine?",
            expected_answer="mine",
            base_token=token,
        )
    item.refresh_from_db()
    assert item.query == "Theirs?" and DraftingDraft.objects.count() == 1


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"query": " "}, "question: write something"),
        ({"expected_answer": ""}, "answer: write something"),
        ({"match_type": "fuzzy"}, "match type"),
        ({"query": "x" * (services.MAX_QUERY + 1)}, "at most"),
    ],
)
def test_a_bad_draft_says_what_to_fix(
    fields: dict[str, str], message: str, item: Item, users: dict[str, Any]
) -> None:
    session = DraftingSessionFactory(item=item)
    values = {"query": "Q?", "expected_answer": "A", "match_type": "", **fields}
    with pytest.raises(ValidationFailed, match=message):
        services.drafting_draft_save(
            session=session,
            user=users["annotator"],
            base_token=services.item_draft_token(item),
            **values,
        )
    item.refresh_from_db()
    assert item.query == "Imported question?" and not DraftingDraft.objects.exists()


def test_the_draft_can_start_the_reference_trajectory_with_a_v_checkpoint(
    item: Item,
    source: str,
    users: dict[str, Any],
    served: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    session = start(item, users["annotator"], source, django_capture_on_commit_callbacks)
    checkpoint = services.CheckpointDraft(question="What street?", expected_answer="WILLOW ST")
    with pytest.raises(ValidationFailed, match="ask the model about a crop first"):
        services.drafting_draft_save(
            session=session,
            user=users["annotator"],
            query="Q?",
            expected_answer="A",
            base_token=services.item_draft_token(item),
            checkpoint=checkpoint,
        )
    with django_capture_on_commit_callbacks(execute=True):
        crop, _ = services.drafting_crop_ask(
            session=session,
            user=users["annotator"],
            ground_truth="the sign reads WILLOW ST",
            recipe=crop_recipe(source, [769, 403, 850, 452]),
            prompt="Read it.",
        )
    draft = services.drafting_draft_save(
        session=session,
        user=users["annotator"],
        query="What street name is on the sign?",
        expected_answer="Willow St",
        base_token=services.item_draft_token(item),
        checkpoint=checkpoint,
    )
    reference = Trajectory.objects.get(item=item, key="reference")
    assert reference.origin == "ground_truth" and draft.checkpoint_id == "C1"
    (cp,) = reference.checkpoints
    assert cp["axis"] == "V" and cp["tools"] == ["crop"]
    assert cp["code_check"] == {
        "verifier": "verify_crop_ast",
        "image_index": 0,
        "bbox_2d": [769, 403, 850, 452],
    }
    assert cp["visual_check"] == {"question": "What street?", "expected_answer": "WILLOW ST"}
    assert cp["image"]["sha256"] == crop.image_sha256 and cp["image"]["recipe"] == crop.recipe
    assert "WILLOW ST" in cp["description"]

    # A second draft does not pile checkpoints onto an existing reference trajectory.
    item.refresh_from_db()
    with pytest.raises(ValidationFailed, match="trajectory editor"):
        services.drafting_draft_save(
            session=session,
            user=users["annotator"],
            query="Q2?",
            expected_answer="A2",
            base_token=services.item_draft_token(item),
            checkpoint=checkpoint,
        )
    reference.refresh_from_db()
    assert len(reference.checkpoints) == 1


def test_each_operation_of_the_recipe_becomes_a_checkpoint_like_the_task_files() -> None:
    crop = DraftingCrop(
        image_sha256="f" * 64,
        ground_truth="label reads No. 29",
        recipe={
            "version": 1,
            "source_sha256": "a" * 64,
            "steps": [
                {"op": "flip", "params": {"direction": "horizontal"}},
                {"op": "crop", "params": {"bbox_2d": [430, 408, 530, 552], "zoom_scale": 1.0}},
            ],
        },
    )
    cps = services.checkpoints_from_crop(
        crop=crop,
        source_index=0,
        n_inputs=1,
        checkpoint=services.CheckpointDraft("What atomic number?", "29"),
    )
    assert [c["id"] for c in cps] == ["C1", "C2"]
    assert cps[0]["code_check"] == {"verifier": "verify_flip_ast", "direction": "horizontal"}
    assert cps[1]["code_check"]["image_index"] == 1  # the flipped image, as in sample 0006
    assert "visual_check" not in cps[0] and cps[1]["visual_check"]["expected_answer"] == "29"


def test_an_existing_reference_trajectory_with_checkpoints_is_left_alone(
    item: Item, users: dict[str, Any]
) -> None:
    TrajectoryFactory(item=item, key="reference")
    assert services.reference_has_checkpoints(item)
