"""New items with what belongs to them from the start: the ground-truth answer (ATP-Bench,
LLM-I: a Response "gt") or the gold plan (m&m's: a Plan "gold", its code form generated from
the steps), and the images they show.

Two ways in, for the API and scripts: the item's fields (``item_create_with_records``, which
creates the item through ``item_create``), or one record in the benchmark's own format
(``item_create_from_record``, parsed by the format's ``parse_record`` and stored as an import
stores it). Either way the item starts as a draft "written by <user>".
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction

from benchmark import permissions
from benchmark.datasets.services import (
    ProjectImages,
    item_attachments_create,
    item_next_position,
    record_create,
)
from benchmark.exceptions import Conflict, ValidationFailed
from benchmark.formats import FormatError, ImageRef, PlanRecord, ResponseRecord, get_format
from benchmark.items.services import item_create
from benchmark.models import Item, Modality, Origin, Project
from benchmark.plans.parse import plan_to_solve_code
from benchmark.typing import User

#: Formats whose items carry a ground-truth answer text, and those whose items carry a plan.
ANSWER_FORMATS = frozenset({"atp", "llmi"})
PLAN_FORMATS = frozenset({"mms"})
ANSWER_KEY = "gt"
PLAN_KEY = "gold"
IMAGE_ROLES = ("query", "document", "input")
# Where each format's records name their images, by role: the field an unknown path is in.
_IMAGE_FIELDS = {
    "atp": {"query": "image_query", "document": "images"},
    "llmi": {"input": "images"},
    "agentic-mme": {"input": "input.image"},
}


def item_create_with_records(
    *,
    project: Project,
    user: User,
    data: dict[str, Any],
    answer: str | None = None,
    plan: list[dict[str, Any]] | None = None,
    images: list[dict[str, Any]] | None = None,
) -> Item:
    """Create a draft item from its fields (``data``: ``item_create``'s), with its
    ground-truth ``answer`` (ATP-Bench, LLM-I) or gold ``plan`` steps (m&m's) and its
    ``images`` ([{path, role, position}], paths the project already holds: see
    ``ProjectImages``; ATP-Bench document images named in ``documents`` are added)."""
    permissions.require(user=user, project=project, action="edit")
    kind = project.data_format
    if answer and kind not in ANSWER_FORMATS:
        raise ValidationFailed(
            f"answer: {kind} items have no answer text; use expected_answer"
            if kind == "agentic-mme"
            else f"answer: {kind} items have no answer text; give the plan"
        )
    if plan is not None and kind not in PLAN_FORMATS:
        raise ValidationFailed(f"plan: only m&m's items have a plan, not {kind} items")
    steps = _plan_steps(plan) if plan is not None else None
    external_id = str(data.get("external_id") or "")
    if external_id and project.items.filter(external_id=external_id).exists():
        raise Conflict(f"external_id: the project already has an item {external_id!r}")
    named = _image_refs(images or [], data.get("documents") or [], kind)
    refs = [ref for ref, _ in named]
    resolver = ProjectImages(project, fields={ref.path: field for ref, field in reversed(named)})
    try:
        image_refs = resolver.resolve(refs, external_id or "new item")
    except FormatError as exc:
        raise ValidationFailed(f"{exc.field}: {exc.message}") from None
    data = {**data, "image_refs": image_refs}
    if not data.get("modality"):
        shown = any(ref.role in ("query", "input") for ref in refs)
        data["modality"] = Modality.IMAGE if shown else Modality.TEXT
    position = item_next_position(project=project)
    with transaction.atomic():
        try:
            item = item_create(project=project, user=user, data=data)
        except DjangoValidationError as exc:
            field, messages = next(iter(exc.message_dict.items()))
            raise ValidationFailed(f"{field}: {' '.join(messages)}") from None
        if item.position != position:
            Item.objects.filter(pk=item.pk).update(position=position)
            item.position = position
        records: list[ResponseRecord | PlanRecord] = []
        common: dict[str, Any] = {"item_id": item.external_id, "origin": Origin.GROUND_TRUTH}
        if answer:
            records.append(ResponseRecord(key=ANSWER_KEY, text=answer, **common))
        if steps:
            code = plan_to_solve_code(steps)
            records.append(PlanRecord(key=PLAN_KEY, form="json", steps=steps, code=code, **common))
        item_attachments_create(item=item, records=records, images=resolver)
    return item


def item_create_from_record(
    *, project: Project, user: User, record: Any, data_format: str | None = None
) -> Item:
    """Create a draft item from one record in the project's format, given as its parsed JSON
    object or its JSON text (one ATP-Bench ``data.jsonl`` line, one LLM-I row, one m&m's task
    row, one Agentic-MME task file). ``data_format``, if given, must be the project's. A bad
    record raises FormatError naming the field."""
    permissions.require(user=user, project=project, action="edit")
    if data_format and data_format != project.data_format:
        raise ValidationFailed(
            f"format: this project's records are {project.data_format}, not {data_format}"
        )
    fmt = get_format(project.data_format)
    parsed = fmt.parse_record(record)
    if project.data_format == "llmi":  # LLM-I ids name their row: the next row of its file
        rows = project.items.filter(source_file=parsed.source_file).count()
        parsed = fmt.parse_record(record, source_file=parsed.source_file, position=rows)
    if project.data_format == "agentic-mme" and (
        project.items.filter(source_file=parsed.source_file).exists()
    ):  # one file per task
        raise Conflict(f"task_id: the project already has a task file {parsed.source_file}")
    where = _IMAGE_FIELDS.get(project.data_format, {})
    fields = {ref.path: where.get(ref.role, "images") for ref in parsed.images}
    images = ProjectImages(project, fields=fields)
    return record_create(project=project, user=user, record=parsed, images=images)


def _plan_steps(plan: Any) -> list[dict[str, Any]]:
    """The plan's steps, each {id, name, args}: a tool name and an object of arguments."""
    if not isinstance(plan, list) or not plan:
        raise ValidationFailed("plan: give at least one step, as a list of {id, name, args}")
    steps = []
    for i, step in enumerate(plan):
        if not isinstance(step, dict):
            raise ValidationFailed(f"plan[{i}]: must be an object {{id, name, args}}")
        name = step.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ValidationFailed(f"plan[{i}].name: give the tool's name")
        args = step.get("args", {})
        if not isinstance(args, dict):
            raise ValidationFailed(f"plan[{i}].args: must be an object of argument values")
        ident = step.get("id", i)
        if isinstance(ident, bool) or not isinstance(ident, int):
            raise ValidationFailed(f"plan[{i}].id: must be a whole number")
        steps.append({"id": ident, "name": name, "args": args})
    return steps


def _image_refs(
    images: list[dict[str, Any]], documents: list[dict[str, Any]], kind: str
) -> list[tuple[ImageRef, str]]:
    """The item's images, each with the field naming it: ``images`` as given, then ATP-Bench
    document images named only in ``documents``."""
    refs: list[tuple[ImageRef, str]] = []

    def next_position(role: str) -> int:
        return sum(1 for ref, _ in refs if ref.role == role)

    for i, image in enumerate(images):
        path = image.get("path")
        if not isinstance(path, str) or not path:
            raise ValidationFailed(f"images[{i}].path: give the image's path")
        role = image.get("role") or ("input" if kind != "atp" else "document")
        if role not in IMAGE_ROLES:
            raise ValidationFailed(f"images[{i}].role: choose one of {', '.join(IMAGE_ROLES)}")
        position = image.get("position")
        position = next_position(role) if position is None else int(position)
        refs.append((ImageRef(path=path, role=role, position=position), f"images[{i}].path"))
    listed = {(ref.path, ref.role) for ref, _ in refs}
    for j, document in enumerate(documents):
        for path in document.get("images") or []:
            if (path, "document") not in listed:
                ref = ImageRef(path=path, role="document", position=next_position("document"))
                refs.append((ref, f"documents[{j}].images"))
                listed.add((path, "document"))
    return refs
