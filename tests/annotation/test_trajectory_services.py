"""Saving reference trajectories: every Agentic-MME sample round-trips through the editor's save
service; edits reach the exported task file and re-import to the same thing; a stale save is a
conflict; a bad draft writes nothing; a changed crop stores a derived image with its recipe."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from annotation.trajectories import document as td
from annotation.trajectories.selectors import (
    editor_choices,
    reference_of,
    trajectory_item_get,
    version_state,
)
from annotation.trajectories.services import (
    TrajectoryInvalid,
    task_document,
    trajectory_save,
)
from benchmark.builtin import taxonomies_ensure, toolsets_ensure
from benchmark.datasets import services
from benchmark.models import Image, Item, Project, Role
from benchmark.versions import StaleVersion
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

SHARED = Path(
    os.environ.get(
        "BENCHWRIGHT_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"
    )
)
SOURCE = SHARED / "agentic-mme"
TASK_FILES = sorted((SOURCE / "json").glob("*.json"))
needs_data = pytest.mark.skipif(not TASK_FILES, reason="shared sample data not found")


@pytest.fixture
def mme(db: None) -> dict[str, Any]:
    project = Project.objects.create(
        name="Agentic-MME sample",
        kind="trajectory",
        data_format="agentic-mme",
        toolset=toolsets_ensure()["agentic-mme"],
        taxonomy=taxonomies_ensure()["agentic-mme"],
    )
    services.dataset_import(project=project, path=SOURCE)
    user = UserFactory(username="annotator-e")
    MembershipFactory(project=project, user=user, role=Role.ANNOTATOR)
    return {"project": project, "user": user}


def _save(
    mme: dict[str, Any],
    external_id: str,
    edit: Any = None,
    version: tuple[int, str] | None = None,
    **kwargs: Any,
):
    """Save ``external_id`` as the editor would, made on ``version`` (number, fingerprint;
    default: the current one)."""
    project, user = mme["project"], kwargs.pop("user", mme["user"])
    item = trajectory_item_get(
        user=user, project=project, pk=Item.objects.get(external_id=external_id).pk
    )
    document = task_document(item=item, reference=reference_of(item))
    if version is None:
        state = version_state(item=item, document=document)
        version = (state.number, state.fingerprint)
    draft = td.draft_from_document(document)
    if edit is not None:
        edit(draft)
    choices = editor_choices(user=user, project=project, item=item, extra_shas=[])
    return trajectory_save(
        user=user,
        project=project,
        item=item,
        draft=draft,
        base_number=version[0],
        base_fingerprint=version[1],
        tools=choices.tools,
        domains=choices.domains,
        **kwargs,
    )


def _export(project: Project, out: Path) -> Path:
    services.dataset_export(project=project, out=out, copy_images=False)
    return out


@needs_data
def test_every_sample_task_saved_unchanged_exports_byte_identical(
    mme: dict[str, Any], tmp_path: Path
) -> None:
    for path in TASK_FILES:
        result = _save(mme, path.stem)
        assert result.changed is False, path.name
        assert result.warnings == [], path.name
    out = _export(mme["project"], tmp_path / "out")
    for path in TASK_FILES:
        assert (out / "json" / path.name).read_bytes() == path.read_bytes(), path.name


@needs_data
def test_edits_reach_the_export_and_reimport_to_the_same_thing(
    mme: dict[str, Any], tmp_path: Path
) -> None:
    def edit(draft: td.Draft) -> None:
        draft.question = "Which element is in the brown bottle?"
        draft.tolerance = "0"
        draft.variants = "copper"
        draft.steps[2].urls = "https://en.wikipedia.org/wiki/Copper"
        draft.steps = [
            draft.steps[0],
            draft.steps[1],
            draft.steps[3],
            draft.steps[2],
            draft.steps[4],
        ]
        draft.orderings[1].sequence = "C4, C3"
        draft.penalty_per_extra_call = "0.2"

    result = _save(mme, "0006", edit)
    assert result.changed is True
    out = _export(mme["project"], tmp_path / "out")
    exported = json.loads((out / "json" / "0006.json").read_text())
    assert exported == result.document
    assert exported["input"]["prompt"] == (
        "Which element is in the brown bottle? Answer with its chemical symbol only."
    )
    assert exported["golden_answer"]["tolerance"] == 0
    assert exported["golden_answer"]["accepted_variants"] == ["copper"]
    cps = exported["process_evaluation"]["checkpoints"]
    assert [c["id"] for c in cps] == ["C1", "C2", "C4", "C3", "C5"]
    assert cps[3]["search_check"]["urls"] == ["https://en.wikipedia.org/wiki/Copper"]
    assert exported["process_evaluation"]["efficiency"]["penalty_per_extra_call"] == 0.2
    # Untouched tasks still come out byte for byte.
    assert (out / "json" / "0001.json").read_bytes() == (SOURCE / "json" / "0001.json").read_bytes()

    # Re-import the exported file into a fresh project: the same fields, and the same document.
    again = Project.objects.create(
        name="re-import",
        kind="trajectory",
        data_format="agentic-mme",
        toolset=mme["project"].toolset,
    )
    (out / "images").mkdir(exist_ok=True)
    services.dataset_import(project=again, path=out / "json" / "0006.json")
    first = Item.objects.get(project=mme["project"], external_id="0006")
    second = Item.objects.get(project=again, external_id="0006")
    for name in ("query", "expected_answer", "match_type", "accepted_variants", "level", "domain"):
        assert getattr(second, name) == getattr(first, name), name
    ref1, ref2 = reference_of(first), reference_of(second)
    assert ref1 is not None and ref2 is not None
    for name in ("checkpoints", "ordering_constraints", "efficiency"):
        assert getattr(ref2, name) == getattr(ref1, name), name
    assert task_document(item=second, reference=ref2) == result.document


@needs_data
def test_a_stale_save_is_a_conflict_and_writes_nothing(mme: dict[str, Any]) -> None:
    item = Item.objects.get(external_id="0003")
    document = task_document(item=item, reference=reference_of(item))
    old_version = (1, td.fingerprint(document))

    def theirs(draft: td.Draft) -> None:
        draft.expected = "318"

    _save(mme, "0003", theirs)

    def mine(draft: td.Draft) -> None:
        draft.domain = "Life"

    with pytest.raises(StaleVersion) as caught:
        _save(mme, "0003", mine, version=old_version)
    assert caught.value.status_code == 409
    assert caught.value.current.document["golden_answer"]["value"] == "318"
    item.refresh_from_db()
    assert item.expected_answer == "318"
    assert item.domain == "Society"


@needs_data
def test_a_bad_draft_writes_nothing_and_names_step_and_field(mme: dict[str, Any]) -> None:
    item = Item.objects.get(external_id="0005")
    before = (item.raw, item.query, reference_of(item).checkpoints)  # type: ignore[union-attr]

    def edit(draft: td.Draft) -> None:
        draft.question = "A new question?"
        draft.steps[3].urls = "not a url"

    with pytest.raises(TrajectoryInvalid) as caught:
        _save(mme, "0005", edit)
    assert [str(e) for e in caught.value.errors] == [
        "step 4 (C4) · reference URLs: 'not a url' contains spaces"
    ]
    item.refresh_from_db()
    assert (item.raw, item.query, reference_of(item).checkpoints) == before  # type: ignore[union-attr]


@needs_data
def test_a_new_crop_stores_the_derived_image_with_recipe_and_box(mme: dict[str, Any]) -> None:
    item = Item.objects.get(external_id="0001")
    source = item.image_refs[0]["sha256"]
    recipe = {
        "version": 1,
        "source_sha256": source,
        "steps": [{"op": "crop", "params": {"bbox_2d": [760, 400, 860, 460]}}],
    }

    def edit(draft: td.Draft) -> None:
        draft.steps[0].recipe = json.dumps(recipe)
        draft.steps[0].source = source

    result = _save(mme, "0001", edit)
    cp = result.document["process_evaluation"]["checkpoints"][0]
    assert cp["code_check"]["bbox_2d"] == [760, 400, 860, 460]
    stored = cp["reference_image"]
    image = Image.objects.get(sha256=stored["sha256"])
    assert image.source is not None and image.source.sha256 == source
    assert stored["recipe"] == image.recipe
    src = image.source
    assert stored["box_px"] == [
        int(760 / 1000 * src.width),
        int(400 / 1000 * src.height),
        int(860 / 1000 * src.width),
        int(460 / 1000 * src.height),
    ]
    assert image.projects.filter(pk=mme["project"].pk).exists()

    # Saved again unchanged: no new derive, nothing written.
    def same(draft: td.Draft) -> None:
        pass

    assert _save(mme, "0001", same).changed is False


@needs_data
def test_a_crop_outside_the_image_names_the_step(mme: dict[str, Any]) -> None:
    item = Item.objects.get(external_id="0001")
    recipe = {
        "version": 1,
        "source_sha256": item.image_refs[0]["sha256"],
        "steps": [{"op": "crop", "params": {"box": [10, 10, 90000, 90000]}}],
    }

    def edit(draft: td.Draft) -> None:
        draft.steps[0].recipe = json.dumps(recipe)

    with pytest.raises(TrajectoryInvalid) as caught:
        _save(mme, "0001", edit)
    [error] = caught.value.errors
    assert error.where == "step 1 (C1)" and error.field == "image"
    assert Image.objects.filter(source__isnull=False).count() == 0
