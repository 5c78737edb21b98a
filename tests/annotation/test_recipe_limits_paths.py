"""The recipe limits hold on the other paths that derive a posted ``<prefix>recipe``: the
drafting crop and the trajectory editor's save. Each refuses before any pixel work, naming the
step and the limit, and writes nothing."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from annotation.backward_drafting import services as drafting_services
from annotation.backward_drafting.models import DraftingCrop, DraftingSession
from annotation.trajectories import document as td
from annotation.trajectories.selectors import (
    editor_choices,
    reference_of,
    trajectory_item_get,
    version_state,
)
from annotation.trajectories.services import TrajectoryInvalid, task_document, trajectory_save
from benchmark.builtin import taxonomies_ensure, toolsets_ensure
from benchmark.datasets import services
from benchmark.exceptions import ValidationFailed
from benchmark.imaging import ops
from benchmark.models import Image, Item, Job, Project, ProjectKind, Role
from tests.factories import (
    ImageFactory,
    ItemFactory,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    image_ref,
    png_bytes,
)
from tests.llm_server import FakeModelServer
from tests.shared_data import SHARED_DATA

pytestmark = pytest.mark.django_db

MME = SHARED_DATA / "agentic-mme"
needs_mme = pytest.mark.skipif(
    not (MME / "json" / "0001.json").exists(), reason="shared sample data not found"
)


def huge(sha: str) -> dict[str, Any]:
    return {
        "version": 1,
        "source_sha256": sha,
        "steps": [
            {"op": "crop", "params": {"bbox_2d": [0, 0, 500, 500]}},
            {"op": "resize", "params": {"width": 10000, "height": 10000}},
            {"op": "denoise", "params": {"strength": 30}},
        ],
    }


HUGE = "step 2 (resize): the output would be 10000×10000 = 100 MP, over the 40 MP limit"


@pytest.fixture
def no_pixel_work(monkeypatch: pytest.MonkeyPatch) -> None:
    def spy(image: Any, op: str, params: Any = None) -> Any:
        raise AssertionError(f"{op} ran: the recipe should have been refused before any work")

    monkeypatch.setattr(ops, "apply", spy)


# --------------------------------------------------------------------------- drafting


@pytest.fixture
def project(db: None) -> Project:
    return ProjectFactory(
        name="Agentic sample", kind=ProjectKind.TRAJECTORY, data_format="agentic-mme"
    )


@pytest.fixture
def item(project: Project) -> Item:
    image = ImageFactory(projects=[project], data=png_bytes(5, size=(200, 100)))
    return ItemFactory(
        project=project,
        query="Imported question?",
        expected_answer="imported",
        modality="image",
        image_refs=[image_ref(image, position=0, role="input")],
    )


def test_a_drafting_crop_over_the_limits_is_refused_naming_the_step(
    item: Item,
    users: dict[str, Any],
    model_project: Project,
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
    no_pixel_work: None,
) -> None:
    source = item.image_refs[0]["sha256"]
    with django_capture_on_commit_callbacks(execute=True):
        session, _ = drafting_services.drafting_session_start(
            item=item, user=users["annotator"], source_sha256=source, prompt="Describe it."
        )
    images = Image.objects.count()
    too_many = {
        "version": 1,
        "source_sha256": source,
        "steps": [{"op": "flip", "params": {}}] * 21,
    }
    for recipe, message in ((huge(source), HUGE), (too_many, "over the limit of 20 steps")):
        with pytest.raises(ValidationFailed, match=re.escape(message)):
            drafting_services.drafting_crop_ask(
                session=session,
                user=users["annotator"],
                ground_truth="WILLOW",
                recipe=recipe,
                prompt="Read it.",
            )
    assert not DraftingCrop.objects.exists()
    assert Image.objects.count() == images and Job.objects.count() == 1
    assert DraftingSession.objects.count() == 1


# --------------------------------------------------------------------------- trajectory editor


@needs_mme
def test_a_trajectory_step_image_over_the_limits_names_the_step(no_pixel_work: None) -> None:
    project = Project.objects.create(
        name="Agentic-MME sample",
        kind="trajectory",
        data_format="agentic-mme",
        toolset=toolsets_ensure()["agentic-mme"],
        taxonomy=taxonomies_ensure()["agentic-mme"],
    )
    services.dataset_import(project=project, path=MME)
    user = UserFactory(username="annotator-limits")
    MembershipFactory(project=project, user=user, role=Role.ANNOTATOR)
    item = trajectory_item_get(
        user=user, project=project, pk=Item.objects.get(external_id="0001").pk
    )
    document = task_document(item=item, reference=reference_of(item))
    state = version_state(item=item, document=document)
    draft = td.draft_from_document(document)
    draft.steps[0].recipe = json.dumps(huge(item.image_refs[0]["sha256"]))
    choices = editor_choices(user=user, project=project, item=item, extra_shas=[])
    derived = Image.objects.filter(source__isnull=False).count()
    with pytest.raises(TrajectoryInvalid) as caught:
        trajectory_save(
            user=user,
            project=project,
            item=item,
            draft=draft,
            base_number=state.number,
            base_fingerprint=state.fingerprint,
            tools=choices.tools,
            domains=choices.domains,
        )
    [error] = caught.value.errors
    assert (error.where, error.field, error.message) == ("step 1 (C1)", "image", HUGE)
    assert Image.objects.filter(source__isnull=False).count() == derived
