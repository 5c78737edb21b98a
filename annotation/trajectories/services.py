"""Saving an item's reference trajectory (Agentic-MME) from the editor.

The editor edits the item's task document: the Agentic-MME task file exactly as the project's
export writes it (:func:`task_document`). A save lays the annotator's draft over that document
(:func:`annotation.trajectory_document.apply_draft`), derives the ground-truth images of steps
whose crop or operations changed (:func:`benchmark.image_services.image_derive`), and writes the
item's parsed fields and its ``reference`` Trajectory row in one transaction. Keys the parsed
fields do not hold (``golden_answer.tolerance``, ...) go into the item's raw JSON, so the
export carries them; the raw text is left as imported while the overlay alone reproduces it.

History: every save that changes something adds a :class:`TrajectoryVersion` holding the
whole document; nothing is overwritten. The first save first records the state before it as
version 1 (imported or edited elsewhere); a save after a change made outside the editor
(drafting, joint review, a re-import) first records that change as its own version, without
an author. A revert (:func:`trajectory_revert`) goes through the same save and validation and
adds a version with the old document.

Concurrency: a save names the version number it was made on and the fingerprint of the
document the editor was opened with (which also catches changes made outside the editor); if
either is not current, :class:`~benchmark.versions.StaleVersion` (409) carries the current document and
nothing is written.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import orjson
from django.db import IntegrityError, transaction

from annotation.trajectories import document as td
from annotation.trajectories.models import TrajectoryVersion, document_text
from annotation.trajectories.selectors import (
    FIRST_NOTE,
    OUTSIDE_NOTE,
    REFERENCE_KEY,
    VersionState,
    item_input_shas,
    reference_of,
    state_of,
    version_state,
)
from annotation.verification import services as verification
from benchmark import permissions
from benchmark.exceptions import DomainError, NotFound, ValidationFailed
from benchmark.formats._jsonio import Overlay, Where
from benchmark.formats.agentic_mme import _overlay_task, _skeleton
from benchmark.formats.base import ImageRef, ItemRecord, TrajectoryRecord
from benchmark.imaging import ops
from benchmark.models import Image, Item, Origin, Project, Trajectory
from benchmark.typing import AnyUser
from benchmark.versions import StaleVersion


class TrajectoryInvalid(ValidationFailed):
    """The draft has mistakes; ``errors`` name the step (or task part) and field of each."""

    def __init__(self, errors: list[td.FieldError]) -> None:
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors))


MAX_NOTE = 500


@dataclass(frozen=True)
class TrajectoryState:
    """The trajectory as it stands, which a stale save is shown: its document, version number
    and fingerprint, who saved it (None for a change made outside the editor) and whether the
    change is a recorded version."""

    document: dict[str, Any]
    number: int
    fingerprint: str
    author: str | None
    recorded: bool


def trajectory_stale(current: TrajectoryState, base_number: int | None) -> StaleVersion:
    """Someone saved the trajectory (or changed it elsewhere) after the editor was opened on
    ``base_number``: the one 409 of every versioned thing, carrying ``current``."""
    opened = f"version {base_number}" if base_number else "it"
    if current.recorded and current.author:
        who = f"version {current.number} was saved by {current.author} after you opened {opened}"
    elif current.number != base_number:
        who = f"this trajectory was changed outside the editor after you opened {opened}"
    else:
        who = f"this trajectory was changed after you opened {opened}"
    return StaleVersion(
        f"{who}; their version is shown, your edits are still in the form and nothing of "
        "yours was saved",
        current=current,
        base_number=base_number,
    )


@dataclass
class SaveResult:
    document: dict[str, Any]
    number: int
    fingerprint: str
    changed: bool
    warnings: list[str] = field(default_factory=list)
    version: TrajectoryVersion | None = None
    """The version the save added (None when nothing changed)."""


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


def _conflict(
    document: dict[str, Any], state: VersionState, base_number: int | None
) -> StaleVersion:
    latest = state.latest
    author = latest.author.get_username() if latest is not None and latest.author else None
    current = TrajectoryState(
        document=document,
        number=state.number,
        fingerprint=state.fingerprint,
        author=author if state.recorded else None,
        recorded=state.recorded,
    )
    return trajectory_stale(current, base_number)


def _is_current(state: VersionState, base_number: int | None, base_fingerprint: str) -> bool:
    if base_number != state.number:
        return False
    return not base_fingerprint or base_fingerprint == state.fingerprint


def _clean_note(note: str) -> str:
    note = " ".join((note or "").split())
    if len(note) > MAX_NOTE:
        raise TrajectoryInvalid(
            [td.FieldError("save", "note", f"at most {MAX_NOTE} characters ({len(note)} given)")]
        )
    return note


def trajectory_save(
    *,
    user: AnyUser,
    project: Project,
    item: Item,
    draft: td.Draft,
    base_number: int | None,
    base_fingerprint: str = "",
    tools: list[str],
    domains: list[str],
    note: str = "",
    restore: dict[str, Any] | None = None,
) -> SaveResult:
    """Save ``draft`` as the item's reference trajectory, made on version ``base_number``
    (and, when given, the document with fingerprint ``base_fingerprint``), as a new version.

    Raises :class:`TrajectoryInvalid` naming every bad field, :class:`~benchmark.versions.StaleVersion` when
    the item is no longer at that version; in both cases nothing is written. An unchanged
    draft writes nothing and adds no version. ``restore`` (a revert) is the document to store
    once ``draft`` (made from it) has passed the same checks."""
    from benchmark.images.services import image_derive  # the images helper's module

    # Annotators record trajectories; every member may edit them, except a blind verifier
    # the item's verification (a state rule) refuses.
    permissions.require(user=user, project=project, action="edit", item=item)
    note = _clean_note(note)
    reference = reference_of(item)
    document = task_document(item=item, reference=reference)
    state = version_state(item=item, document=document)
    if not _is_current(state, base_number, base_fingerprint):
        raise _conflict(document, state, base_number)
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
    if restore is not None:
        new = copy.deepcopy(restore)

    if new == document:
        return SaveResult(new, state.number, state.fingerprint, False, td.level_warnings(new))

    try:
        with transaction.atomic():
            version = _write(
                item=item,
                user=user,
                current=state,
                base_number=base_number,
                new=new,
                note=note,
            )
    except IntegrityError:
        # Another save took the same version number between our check and our write.
        fresh = Item.objects.get(pk=item.pk)
        theirs = task_document(item=fresh, reference=reference_of(fresh))
        raise _conflict(theirs, version_state(item=fresh, document=theirs), base_number) from None
    return SaveResult(
        new, version.number, version.fingerprint, True, td.level_warnings(new), version
    )


def _write(
    *,
    item: Item,
    user: AnyUser,
    current: VersionState,
    base_number: int | None,
    new: dict[str, Any],
    note: str,
) -> TrajectoryVersion:
    """Inside a transaction: check again under the row lock, record the state the save
    replaces when no version holds it, write the item's fields and the reference trajectory,
    and add the new version."""
    locked = Item.objects.select_for_update().get(pk=item.pk)
    reference = (
        Trajectory.objects.select_for_update().filter(item=locked, key=REFERENCE_KEY).first()
    )
    before = task_document(item=locked, reference=reference)
    latest = (
        TrajectoryVersion.objects.filter(item=locked)
        .select_related("author")
        .defer("document")
        .order_by("-number")
        .first()
    )
    state = state_of(latest=latest, document=before)
    if (state.number, state.fingerprint) != (current.number, current.fingerprint):
        raise _conflict(before, state, base_number)
    if not state.recorded:
        TrajectoryVersion.objects.create(
            item=locked,
            number=state.number,
            document=document_text(before),
            fingerprint=state.fingerprint,
            note=FIRST_NOTE if latest is None else OUTSIDE_NOTE,
            base_number=latest.number if latest is not None else None,
            created_at=locked.created_at if latest is None else locked.updated_at,
        )

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
    version = TrajectoryVersion(
        item=locked,
        number=state.number + 1,
        document=document_text(new),
        fingerprint=td.fingerprint(new),
        author=user if user.is_authenticated else None,
        note=note,
        base_number=state.number,
    )
    version.full_clean(exclude=["item", "author"], validate_unique=False)
    version.save()
    # A changed answer reopens a blind verification that began against the old one.
    verification.verification_reopen_if_changed(
        item=locked, user=user, where="in the trajectory editor"
    )
    return version


def trajectory_revert(
    *,
    user: AnyUser,
    project: Project,
    item: Item,
    number: int,
    base_number: int | None,
    tools: list[str],
    domains: list[str],
    note: str = "",
) -> SaveResult:
    """Make a new version whose document is version ``number``'s, through the same save and
    checks as the editor (a domain no longer in the taxonomy, say, is named). Earlier
    versions stay. ``base_number`` is the version the page was opened on."""
    permissions.require(user=user, project=project, action="edit", item=item)
    target = TrajectoryVersion.objects.filter(item=item, number=number).first()
    if target is None:
        raise NotFound(f"this trajectory has no saved version {number}")
    old = target.data
    result = trajectory_save(
        user=user,
        project=project,
        item=item,
        draft=td.draft_from_document(old),
        base_number=base_number,
        tools=tools,
        domains=domains,
        note=note.strip() or f"Reverted to version {number}",
        restore=old,
    )
    if not result.changed:
        raise ValidationFailed(
            f"version {result.number} already is version {number}: nothing to revert"
        )
    return result
