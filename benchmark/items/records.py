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
from benchmark.datasets.services import ProjectImages, item_attachments_create, record_create
from benchmark.exceptions import Conflict, ValidationFailed
from benchmark.formats import PlanRecord, ResponseRecord, get_format
from benchmark.formats.mms import GOLD_PLAN_KEY
from benchmark.items.services import ItemInvalid, item_create
from benchmark.kinds import BenchmarkKind
from benchmark.models import Item, Origin, Project
from benchmark.plans.parse import plan_to_solve_code
from benchmark.typing import User

ANSWER_KEY = "gt"
#: The gold plan's key: the one m&m's importer gives a task's plan_str (plan_save's default
#: key is another).
PLAN_KEY = GOLD_PLAN_KEY
# The API's name of the fields item_create names otherwise.
_API_FIELDS = {
    "gt": "answer",
    "query_images": "images",
    "image_num": "constraints.image_num",
    "tools": "constraints.tools",
    "input_files": "constraints.input_files",
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
    ``images`` ([{path, role, position}]: images of the project, named as ``item_create``
    names them; ATP-Bench document images belong to the documents that name them). Errors
    name the API's fields (``images[i].path``, ``constraints.tools``, ``answer``)."""
    permissions.require(user=user, project=project, action="edit")
    benchmark = project.benchmark
    kind = benchmark.name
    if answer and not benchmark.answer_text:
        raise ValidationFailed(
            f"answer: {kind} items have no answer text; use expected_answer"
            if benchmark.trajectories
            else f"answer: {kind} items have no answer text; give the plan"
        )
    if plan is not None and not benchmark.plans:
        raise ValidationFailed(f"plan: only m&m's items have a plan, not {kind} items")
    steps = _plan_steps(plan) if plan is not None else None
    external_id = str(data.get("external_id") or "")
    if external_id and project.items.filter(external_id=external_id).exists():
        raise Conflict(f"external_id: the project already has an item {external_id!r}")
    fields, names = _item_fields(data, images or [], benchmark)
    if answer and benchmark.answer_in_item:
        fields["gt"] = answer  # item_create stores ATP-Bench's "gt" (and warns on its tags)
    with transaction.atomic():
        try:
            item = item_create(project=project, user=user, data=fields)
        except ItemInvalid as exc:
            raise ItemInvalid(
                {names.get(f, _API_FIELDS.get(f, f)): m for f, m in exc.errors.items()}
            ) from None
        except DjangoValidationError as exc:
            field, messages = next(iter(exc.message_dict.items()))
            raise ValidationFailed(f"{field}: {' '.join(messages)}") from None
        records: list[ResponseRecord | PlanRecord] = []
        common: dict[str, Any] = {"item_id": item.external_id, "origin": Origin.GROUND_TRUTH}
        if answer and not benchmark.answer_in_item:
            records.append(ResponseRecord(key=ANSWER_KEY, text=answer, **common))
        if steps:
            code = plan_to_solve_code(steps)
            records.append(PlanRecord(key=PLAN_KEY, form="json", steps=steps, code=code, **common))
        if records:
            item_attachments_create(item=item, records=records)
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
    if project.benchmark.ids_by_row:  # (LLM-I) ids name their row: the next row of its file
        rows = project.items.filter(source_file=parsed.source_file).count()
        parsed = fmt.parse_record(record, source_file=parsed.source_file, position=rows)
    if project.benchmark.one_file_per_item and (
        project.items.filter(source_file=parsed.source_file).exists()
    ):  # one file per task
        raise Conflict(f"task_id: the project already has a task file {parsed.source_file}")
    where = project.benchmark.record_image_fields
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


def _item_fields(
    data: dict[str, Any], images: list[dict[str, Any]], benchmark: BenchmarkKind
) -> tuple[dict[str, Any], dict[str, str]]:
    """``item_create``'s field dict for the API's fields and ``images``, and the API's name of
    each image field ``item_create`` may name in an error (``images[0]`` -> ``images[2].path``).
    Query images go to ``query_images``, input images to ``images``; an ATP-Bench document
    image belongs to the document naming it (with no documents, to one document of its own)."""
    kind = benchmark.name
    roles = benchmark.image_roles
    by_role: dict[str, list[tuple[int, int, str]]] = {}
    for i, image in enumerate(images):
        role = image.get("role") or roles[0]
        if role not in roles:
            raise ValidationFailed(
                f"images[{i}].role: {kind} items have {' or '.join(roles)} images, not {role}"
            )
        entries = by_role.setdefault(role, [])
        position = image.get("position")
        entries.append((len(entries) if position is None else int(position), i, image["path"]))
    fields = dict(data)
    names: dict[str, str] = {}

    def put(key: str, entries: list[tuple[int, int, str]], prefix: str = "") -> list[str]:
        names.update(
            {f"{prefix}{key}[{k}]": f"images[{i}].path" for k, (_, i, _) in enumerate(entries)}
        )
        return [path for _, _, path in entries]

    for role, key in (("query", "query_images"), ("input", "images")):
        if role in by_role:
            fields[key] = put(key, sorted(by_role[role]))
    documents = fields.get("documents") or []
    listed = {path for document in documents for path in document.get("images") or []}
    loose = [entry for entry in sorted(by_role.get("document", [])) if entry[2] not in listed]
    if loose and documents:
        raise ValidationFailed(
            f"images[{loose[0][1]}].path: a document image belongs to a document: name it in "
            f"that document's images (documents[j].images)"
        )
    if loose:
        fields["documents"] = [{"text": "", "images": put("images", loose, "documents[0].")}]
    return fields, names
