"""Saving an item's reference trajectory (Agentic-MME) from the editor.

The editor edits the item's task document: the Agentic-MME task file exactly as the project's
export writes it (:func:`task_document`). A save lays the annotator's draft over that document
(:func:`annotation.trajectory_document.apply_draft`), derives the ground-truth images of steps
whose crop or operations changed (:func:`benchmark.image_services.image_derive`), and writes the
item's parsed fields and its ``reference`` Trajectory row in one transaction. Keys the parsed
fields do not hold (``golden_answer.tolerance``, ...) go into the item's raw JSON, so the
export carries them; the raw text is left as imported while the overlay alone reproduces it.

Concurrency: a save names the version it was made on (the fingerprint of the document the
editor was opened with); if someone saved in between, :class:`TrajectoryConflict` (409)
carries their document and nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

import orjson
from django.db import transaction

from annotation import trajectory_document as td
from annotation.trajectory_selectors import REFERENCE_KEY, item_input_shas, reference_of
from benchmark import permissions
from benchmark.exceptions import Conflict, DomainError, ValidationFailed
from benchmark.formats._jsonio import Overlay, Where
from benchmark.formats.agentic_mme import _overlay_task, _skeleton
from benchmark.formats.base import ImageRef, ItemRecord, TrajectoryRecord
from benchmark.imaging import ops
from benchmark.models import Image, Item, Origin, Project, Trajectory
from benchmark.typing import AnyUser


class TrajectoryInvalid(ValidationFailed):
    """The draft has mistakes; ``errors`` name the step (or task part) and field of each."""

    def __init__(self, errors: list[td.FieldError]) -> None:
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors))


class TrajectoryConflict(Conflict):
    """Someone saved the trajectory after the editor was opened."""

    def __init__(self, *, document: dict[str, Any], version: str) -> None:
        self.document = document
        self.version = version
        super().__init__(
            "someone else saved this trajectory after you opened it; their version is shown, "
            "your edits are still in the form"
        )


@dataclass
class SaveResult:
    document: dict[str, Any]
    version: str
    changed: bool
    warnings: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- the document


def _record(item: Item, reference: Trajectory | None) -> ItemRecord:
    refs = sorted(item.image_refs or [], key=lambda r: r.get("position", 0))
    record = ItemRecord(
        external_id=item.external_id,
        source_file=item.source_file,
        raw=item.raw,
        query=item.query,
        images=[
            ImageRef(path=r.get("path", ""), role=r.get("role", "input"), position=i)
            for i, r in enumerate(refs)
        ],
        expected_answer=item.expected_answer,
        accepted_variants=list(item.accepted_variants or []),
        match_type=item.match_type,
        domain=item.domain,
        level=item.level,
    )
    if reference is not None:
        record.trajectories.append(
            TrajectoryRecord(
                item_id=item.external_id,
                key=REFERENCE_KEY,
                checkpoints=list(reference.checkpoints or []),
                ordering_constraints=list(reference.ordering_constraints or []),
                efficiency=dict(reference.efficiency or {}),
            )
        )
    return record


def _overlaid(record: ItemRecord) -> dict[str, Any]:
    where = Where(record.source_file or f"json/{record.external_id}.json", record.external_id)
    overlay = Overlay(record.raw, where, partial(_skeleton, record))
    _overlay_task(overlay, record)
    return overlay.value


def task_document(*, item: Item, reference: Trajectory | None) -> dict[str, Any]:
    """The item's Agentic-MME task file as the export writes it (a fresh dict)."""
    return _overlaid(_record(item, reference))


def trajectory_version(*, item: Item, reference: Trajectory | None) -> str:
    return td.fingerprint(task_document(item=item, reference=reference))


def prefill_recipes(*, item: Item, document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """For each crop step with a ``bbox_2d`` on the input image but no stored ground-truth
    image (as imported), the recipe that shows that box in the image editor."""
    shas = item_input_shas(item)
    if not shas:
        return {}
    out: dict[str, dict[str, Any]] = {}
    process = td.as_object(document.get("process_evaluation"))
    for cp in td.as_items(process.get("checkpoints")):
        if not isinstance(cp, dict) or "reference_image" in cp:
            continue
        tools = td.as_items(cp.get("tools"))
        code = td.as_object(cp.get("code_check"))
        index = code.get("image_index", 0)
        if not tools or tools[0] != "crop" or code.get("bbox_2d") is None or index not in (0,):
            continue
        recipe = td.normalized_recipe(
            {
                "version": 1,
                "source_sha256": shas[0],
                "steps": [{"op": "crop", "params": {"bbox_2d": code["bbox_2d"]}}],
            }
        )
        if recipe is not None:
            out[str(cp.get("id"))] = recipe
    return out


# --------------------------------------------------------------------------- fields


def _fields(doc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Item and reference-trajectory field values from a task document, as the Agentic-MME
    reader parses them."""
    meta = td.as_object(doc.get("meta"))
    task_input = td.as_object(doc.get("input"))
    golden = td.as_object(doc.get("golden_answer"))
    process = td.as_object(doc.get("process_evaluation"))
    value = golden.get("value")
    item_fields = {
        "query": str(task_input.get("prompt") or ""),
        "expected_answer": ""
        if value is None
        else (value if isinstance(value, str) else str(value)),
        "match_type": str(golden.get("match_type") or ""),
        "accepted_variants": list(golden.get("accepted_variants") or []),
        "level": meta.get("level"),
        "domain": str(meta.get("domain") or ""),
    }
    trajectory_fields = {
        "checkpoints": list(process.get("checkpoints") or []),
        "ordering_constraints": list(process.get("ordering_constraints") or []),
        "efficiency": dict(process.get("efficiency") or {}),
    }
    return item_fields, trajectory_fields


def _box_px(image: Image, source: Image | None, recipe: dict[str, Any]) -> list[int] | None:
    """The crop's pixel box on the source when the crop is the first geometric step."""
    if source is None:
        return None
    for step in recipe.get("steps") or []:
        if step.get("op") == "crop":
            params = step.get("params") or {}
            if params.get("box") is not None:
                return [int(v) for v in params["box"]]
            try:
                return list(ops.bbox_to_pixels(params["bbox_2d"], (source.width, source.height)))
            except (ops.OpError, KeyError):
                return None
        if ops.OPS.get(step.get("op", ""), None) is not None and ops.OPS[step["op"]].geometric:
            return None
    return None


# --------------------------------------------------------------------------- saving


def trajectory_save(
    *,
    user: AnyUser,
    project: Project,
    item: Item,
    draft: td.Draft,
    version: str,
    tools: list[str],
    domains: list[str],
) -> SaveResult:
    """Save ``draft`` as the item's reference trajectory. Raises :class:`TrajectoryInvalid`
    naming every bad field, :class:`TrajectoryConflict` when ``version`` is not the current
    one; in both cases nothing is written."""
    from benchmark.image_services import image_derive  # the images helper's module

    # Annotators record trajectories; every member of the project may edit them.
    permissions.require(user=user, project=project, action="view")
    reference = reference_of(item)
    document = task_document(item=item, reference=reference)
    current = td.fingerprint(document)
    if version != current:
        raise TrajectoryConflict(document=document, version=current)
    applied = td.apply_draft(
        document,
        draft,
        tools=tools,
        domains=domains,
        prefill=prefill_recipes(item=item, document=document),
    )
    if applied.errors:
        raise TrajectoryInvalid(applied.errors)
    new = applied.document

    # Derive the changed ground-truth images before taking the row lock: pixel work is slow.
    errors: list[td.FieldError] = []
    for change in applied.image_changes:
        label = f"step {change.step + 1} ({change.step_id})"
        try:
            image = image_derive(project=project, user=user, recipe=change.recipe)
        except DomainError as exc:
            errors.append(td.FieldError(label, "image", exc.message, step=change.step))
            continue
        recipe = image.recipe or change.recipe
        source = Image.objects.filter(sha256=recipe.get("source_sha256")).first()
        box = change.box_px or _box_px(image, source, recipe)
        td.set_reference_image(new, change.step, sha256=image.sha256, recipe=recipe, box_px=box)
    if errors:
        raise TrajectoryInvalid(errors)

    if new == document:
        return SaveResult(new, current, False, td.level_warnings(new))

    with transaction.atomic():
        locked = Item.objects.select_for_update().get(pk=item.pk)
        reference = (
            Trajectory.objects.select_for_update().filter(item=locked, key=REFERENCE_KEY).first()
        )
        if td.fingerprint(task_document(item=locked, reference=reference)) != current:
            theirs = task_document(item=locked, reference=reference)
            raise TrajectoryConflict(document=theirs, version=td.fingerprint(theirs))
        item_fields, trajectory_fields = _fields(new)
        for name, value in item_fields.items():
            setattr(locked, name, value)
        if reference is None:
            reference = Trajectory(
                item=locked,
                key=REFERENCE_KEY,
                origin=Origin.GROUND_TRUTH,
                source_file=locked.source_file,
            )
        for name, value in trajectory_fields.items():
            setattr(reference, name, value)
        # What the export would write from the raw text with the new fields; the raw text
        # takes the new document only when that is not already it (e.g. a new tolerance).
        if _overlaid(_record(locked, reference)) != new:
            locked.raw = orjson.dumps(new, option=orjson.OPT_INDENT_2).decode() + "\n"
        locked.clean_fields(exclude=["raw"])
        locked.save()
        reference.full_clean(exclude=["item"], validate_unique=False)
        reference.save()
    return SaveResult(new, td.fingerprint(new), True, td.level_warnings(new))
