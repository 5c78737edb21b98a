"""Label Studio task JSON, in and out. Pure Python: no Django.

Label Studio is an interchange format, not a benchmark's own format: any project can take
items from a Label Studio export and give its items back as Label Studio tasks.

Reading: a Label Studio export is a JSON array of tasks
``{"id", "data": {...}, "annotations": [{"completed_by", "result": [...]}], "predictions": [...]}``.
A field mapping says which ``data`` key feeds which item field (``{"question": "query"}``);
each record's raw is the task's exact JSON text (``dataset_import`` does not store it for an
``interchange`` format: the item is stored in the project's own format's shape).
Annotations come back as plain :class:`Annotation` tuples, one per result entry.

Writing: items become tasks whose ``data`` holds every item field (under the same mapping,
reversed), optionally with annotations (``choices`` / ``textarea`` results), and a labeling
config (``<View><Text name="query" value="$query"/><Choices ...>``) written beside the file.
See https://labelstud.io/guide/task_format.html for the task format. The labeling view shows
what Benchwright's judge page shows: besides the query, its images and the documents' images
(``<Image valueList>`` over URLs Label Studio can load: each stored path under a base URL,
by default Label Studio's local-files serving ``/data/local-files/?d=``), the documents'
text, the plan under judgment as numbered steps and the answers (``<Paragraphs>``), under
data keys of their own (:data:`VIEW_KEYS`) that reading ignores; a task with nothing to show
under a key others have gets a placeholder (Label Studio 1.23.2's labeling view fails on an
empty list there). The config is checked against the tasks written (well-formed; every
``$key`` it shows is a data key of every task, and no list it shows is empty).

The work beyond the item travels in ``data`` too, as JSON lists under the keys
``responses`` (answers: key, origin, model_name, position, text, extra), ``plans`` (key,
origin, model_name, position, form, steps, code, is_alternative) and ``trajectories`` (key,
origin, model_name, position, steps, checkpoints, ordering_constraints, efficiency,
final_answer, images). Label Studio 1.23 keeps any JSON value in a task's data and shows
each data key as a column of its Data Manager; the labeling view shows the answers as a
``<Paragraphs>`` object (one paragraph per answer, its key as the speaker, under
:data:`ANSWERS_KEY`), when any task has one. Predictions are not used: Label Studio would take
them for pre-annotations of the verdict. Reading the same keys restores the records (the
source record's raw text of an answer read from its own file is not carried: an
interchange import stores fields, not raw records), so a second export is identical.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import quote
from xml.etree import ElementTree
from xml.sax.saxutils import quoteattr

from ._jsonio import Where, dataset_root, dumps, existing, iter_json_array, write_file
from .base import (
    AttachmentRecord,
    FormatError,
    ImageRef,
    ItemRecord,
    PlanRecord,
    ResponseRecord,
    TrajectoryRecord,
)

NAME = "label-studio"
#: Item fields a Label Studio data key may feed, and how their values are checked.
FIELDS: dict[str, str] = {
    "external_id": "str",
    "query": "str",
    "modality": "str",
    "documents": "list",
    "images": "images",
    "constraints": "dict",
    "expected_answer": "str",
    "accepted_variants": "list",
    "match_type": "str",
    "rubric": "list",
    "category": "str",
    "intent": "str",
    "domain": "str",
    "level": "level",
    "status": "str",
    "provenance": "str",
    "responses": "responses",
    "plans": "plans",
    "trajectories": "trajectories",
}
#: The attachment kinds, their record classes and the fields written for each (besides
#: the common key, origin, model_name and position).
ATTACHMENT_FIELDS: dict[str, tuple[type[AttachmentRecord], tuple[str, ...]]] = {
    "responses": (ResponseRecord, ("text", "extra")),
    "plans": (PlanRecord, ("form", "steps", "code", "is_alternative")),
    "trajectories": (
        TrajectoryRecord,
        ("steps", "checkpoints", "ordering_constraints", "efficiency", "final_answer", "images"),
    ),
}
_COMMON = ("key", "origin", "model_name", "position")
#: The labeling config's object names: the text shown and the verdict given.
TEXT_NAME = "query"
VERDICT_NAME = "verdict"
COMMENT_NAME = "comment"
ANSWERS_NAME = "answers"

#: Data keys written for the labeling view only, never read back (the item's own keys keep
#: every field for the round trip): image URLs Label Studio can load, the documents, the plan
#: under judgment as numbered steps and the answers as paragraphs. Every task of an export
#: has each key some task of it has something to show under: Label Studio 1.23's labeling
#: view fails on a task whose ``<Image valueList>`` or ``<Paragraphs>`` list is empty, so a
#: task with nothing to show there gets :data:`VIEW_PLACEHOLDERS`' entry.
QUERY_IMAGES_KEY = "query_image_urls"
DOCUMENT_IMAGES_KEY = "document_image_urls"
DOCUMENTS_KEY = "document_paragraphs"
PLAN_KEY = "plan_steps"
ANSWERS_KEY = "answer_paragraphs"
VIEW_KEYS = (QUERY_IMAGES_KEY, DOCUMENTS_KEY, DOCUMENT_IMAGES_KEY, PLAN_KEY, ANSWERS_KEY)


def _placeholder_image(text: str) -> str:
    """A small grey picture saying ``text``, as a data URL (no file to serve)."""
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="480" height="48">'
        '<rect width="480" height="48" fill="#f2f2f2"/><text x="12" y="30" '
        f'font-family="sans-serif" font-size="16" fill="#555">{text}</text></svg>'
    )
    return "data:image/svg+xml," + quote(svg)


VIEW_PLACEHOLDERS: dict[str, list[Any]] = {
    QUERY_IMAGES_KEY: [_placeholder_image("(no query image)")],
    DOCUMENTS_KEY: [{"document": "-", "text": "(no documents)"}],
    DOCUMENT_IMAGES_KEY: [_placeholder_image("(no document images)")],
    PLAN_KEY: [{"step": "-", "text": "(no plan)"}],
    ANSWERS_KEY: [{"key": "-", "text": "(no answers)"}],
}
#: Image URLs by default: Label Studio's local-files serving, the path relative to its
#: ``LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT`` (the export folder, unless a base says more).
DEFAULT_IMAGE_BASE = "/data/local-files/?d="
#: Image roles shown with the query (the rest are the documents' images, in img_index order).
QUERY_ROLES = ("query", "input")


class Annotation(NamedTuple):
    """One result of one Label Studio annotation: the task's item id, the annotator (their
    email, username or Label Studio user id, as the export gives it), the control's name
    (``from_name``), its type (``choices``, ``labels``, ``textarea`` ...) and its values.
    ``user_id`` is the annotator's numeric Label Studio user id when the export gives one:
    Label Studio's normal export writes ``"completed_by": 2``, an API snapshot with details
    ``{"id": 2, "email": ...}`` (then ``user`` is the email)."""

    item_id: str
    user: str
    from_name: str
    kind: str
    values: tuple[str, ...]
    task_id: str = ""  # the Label Studio task's id, for messages
    user_id: str = ""


@dataclasses.dataclass
class JudgmentOut:
    """A judgment to write as an annotation: the item's external id, the verdict label and an
    optional comment."""

    item_id: str
    value: Any
    comment: str = ""


# ------------------------------------------------------------------------------ mapping


def parse_mapping(text: str | Mapping[str, str] | None) -> dict[str, str]:
    """``"question=query,cat=category"`` (or a dict) as ``{Label Studio key: item field}``.
    Empty: every item field under its own name. An unknown field raises FormatError naming
    the key."""
    if text is None or text == "":
        return {name: name for name in FIELDS}
    if isinstance(text, Mapping):
        pairs = list(text.items())
    else:
        pairs = []
        for part in re.split(r"[,\n]", text):
            part = part.strip()
            if not part:
                continue
            key, sep, value = part.partition("=")
            if not sep or not key.strip() or not value.strip():
                raise FormatError(f"expected KEY=FIELD, got {part!r}", field="map")
            pairs.append((key.strip(), value.strip()))
    mapping: dict[str, str] = {}
    seen: dict[str, str] = {}
    for key, target in pairs:
        if target not in FIELDS:
            raise FormatError(
                f"{key!r} maps to unknown item field {target!r}; choose one of {', '.join(FIELDS)}",
                field=key,
            )
        if target in seen:
            raise FormatError(f"{key!r} and {seen[target]!r} both map to {target!r}", field=key)
        seen[target] = key
        mapping[key] = target
    return mapping


def parse_labels(text: str | Mapping[str, str] | None) -> dict[str, str]:
    """``"Correct=yes,Incorrect=no"`` (or a dict) as ``{Label Studio choice: judgment
    value}``: how choices that differ from a judgment task's values map onto them. Empty:
    ``{}`` (choices are taken as they are)."""
    if not text:
        return {}
    if isinstance(text, Mapping):
        return {str(k): str(v) for k, v in text.items()}
    labels: dict[str, str] = {}
    for part in re.split(r"[,\n]", text):
        part = part.strip()
        if not part:
            continue
        key, sep, value = part.rpartition("=")
        if not sep or not key.strip() or not value.strip():
            raise FormatError(f"expected LABEL=VALUE, got {part!r}", field="labels")
        if key.strip() in labels:
            raise FormatError(f"{key.strip()!r} is mapped twice", field="labels")
        labels[key.strip()] = value.strip()
    return labels


def parse_user_map(text: str | Mapping[str, str] | None) -> dict[str, str]:
    """``"2=annotator1,3=ann@example.org"`` (or a dict) as ``{Label Studio user: Benchwright
    account}``: Label Studio's normal export names annotators by numeric user id, which a
    Benchwright account (username or email) does not know. A key is a Label Studio user id,
    or the email or username the export gives (kept lower-cased: matched ignoring case).
    Empty: ``{}``. A malformed entry or a key given twice raises FormatError naming it."""
    if not text:
        return {}
    if isinstance(text, Mapping):
        parts = [f"{k}={v}" for k, v in text.items()]
    else:
        parts = [p.strip() for p in re.split(r"[,\n]", text) if p.strip()]
    users: dict[str, str] = {}
    for part in parts:
        key, _, value = (s.strip() for s in part.partition("="))
        if not key or not value:
            raise FormatError(
                f"expected ID=USER (a Label Studio user id, then a username or email), got "
                f"{part!r}",
                field="user_map",
            )
        if key.lower() in users:
            raise FormatError(f"Label Studio user {key!r} is mapped twice", field="user_map")
        users[key.lower()] = value
    return users


# ------------------------------------------------------------------------------ reading


def _user(value: Any) -> tuple[str, str]:
    """(the annotator's name: email, username or else id; their numeric Label Studio id or
    "") from an annotation's ``completed_by``."""
    if isinstance(value, dict):
        uid = value.get("id")
        uid = str(uid) if isinstance(uid, int) and not isinstance(uid, bool) else ""
        for key in ("email", "username"):
            if isinstance(value.get(key), str) and value[key].strip():
                return value[key].strip(), uid
        return uid, uid
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value), str(value)
    return ("" if value is None else str(value).strip()), ""


def _images(value: Any, where: Where, key: str) -> list[ImageRef]:
    if not isinstance(value, list):
        raise where.error("expected a list of image paths", key)
    refs: list[ImageRef] = []
    for i, entry in enumerate(value):
        if isinstance(entry, str):
            refs.append(ImageRef(path=entry, position=i))
        elif isinstance(entry, dict) and isinstance(entry.get("path"), str):
            refs.append(
                ImageRef(
                    path=entry["path"],
                    role=str(entry.get("role") or "document"),
                    position=int(entry.get("position", i) or 0),
                )
            )
        else:
            raise where.error(f"image {i} is neither a path nor {{'path': ...}}", key)
    return refs


def _attachment_entry(kind: str, entry: Any, i: int, where: Where, key: str) -> AttachmentRecord:
    """One answer, plan or trajectory from its JSON object (an answer may be plain text)."""
    if kind == "responses" and isinstance(entry, str):
        entry = {"text": entry}
    if not isinstance(entry, dict):
        raise where.error(f"{kind} entry {i} is not a JSON object", key)
    cls, own = ATTACHMENT_FIELDS[kind]
    defaults = {f.name: f for f in dataclasses.fields(cls)}
    fields: dict[str, Any] = {
        "item_id": "",
        "key": str(entry.get("key") or f"{kind[:-1]}-{i + 1}"),
        "position": i,
    }
    for name in (*_COMMON[1:], *own):
        got = entry.get(name)
        if got is None:
            continue
        if name == "images":
            got = _images(got, where, f"{key}[{i}].images")
        else:
            field = defaults[name]
            sample = (
                field.default_factory()  # type: ignore[misc,operator]
                if field.default is dataclasses.MISSING
                else field.default
            )
            bool_for_number = isinstance(got, bool) and not isinstance(sample, bool)
            if bool_for_number or not isinstance(got, type(sample)):
                raise where.error(f"{kind} entry {i}: {name} must be {type(sample).__name__}", key)
        fields[name] = got
    return cls(source_file="", raw="", **fields)


def _attachments(kind: str, value: Any, where: Where, key: str) -> list[AttachmentRecord]:
    """Answers, plans or trajectories from their JSON list: objects of the fields
    :data:`ATTACHMENT_FIELDS` names; the item id is filled in by :func:`mapped_record`."""
    if not isinstance(value, list):
        raise where.error(f"expected a list of {kind}", key)
    records: list[AttachmentRecord] = []
    keys: set[str] = set()
    for i, entry in enumerate(value):
        rec = _attachment_entry(kind, entry, i, where, key)
        if rec.key in keys:
            raise where.error(f"{kind} entry {i}: key {rec.key!r} appears twice", key)
        keys.add(rec.key)
        records.append(rec)
    return records


def convert_value(kind: str, value: Any, where: Where, key: str) -> Any:
    if kind == "str":
        if isinstance(value, dict | list):
            raise where.error("expected text, got a JSON object or list", key)
        return "" if value is None else str(value)
    if kind == "list":
        if not isinstance(value, list):
            raise where.error("expected a list", key)
        return value
    if kind == "dict":
        if not isinstance(value, dict):
            raise where.error("expected a JSON object", key)
        return value
    if kind == "images" or kind in ATTACHMENT_FIELDS:
        return (
            _images(value, where, key)
            if kind == "images"
            else _attachments(kind, value, where, key)
        )
    # level
    if value in (None, ""):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise where.error(f"expected a level 1-3, got {value!r}", key) from None


def _results(task: dict[str, Any], item_id: str, where: Where) -> Iterator[Annotation]:
    annotations = task.get("annotations") or []
    if not isinstance(annotations, list):
        raise where.error("expected a list", "annotations")
    for annotation in annotations:
        if not isinstance(annotation, dict) or annotation.get("was_cancelled"):
            continue
        user, user_id = _user(annotation.get("completed_by"))
        for result in annotation.get("result") or []:
            if not isinstance(result, dict):
                continue
            kind = str(result.get("type") or "")
            value = result.get("value") or {}
            raw = value.get(kind) if isinstance(value, dict) else None
            if raw is None and isinstance(value, dict):  # e.g. "text" for textarea
                raw = value.get("text", value.get("choices", value.get("labels")))
            values = tuple(str(v) for v in raw) if isinstance(raw, list) else ()
            if isinstance(raw, str | int | float) and not isinstance(raw, bool):
                values = (str(raw),)
            yield Annotation(
                item_id,
                user,
                str(result.get("from_name") or ""),
                kind,
                values,
                str(task.get("id", "")),
                user_id,
            )


def read_tasks(
    path: str | Path, mapping: Mapping[str, str] | str | None = None
) -> tuple[list[ItemRecord], list[Annotation]]:
    """Items and annotations of a Label Studio JSON export (a file)."""
    items: list[ItemRecord] = []
    annotations: list[Annotation] = []
    reader = Reader(mapping)
    for rec in reader.read(path):
        items.append(rec)
    annotations.extend(reader.annotations)
    return items, annotations


def mapped_record(
    mapping: Mapping[str, str],
    values: dict[str, Any],
    row: Mapping[str, Any],
    where: Where,
    *,
    default_id: str,
    raw: str,
    position: int,
    provenance: str,
) -> ItemRecord:
    """An item record from one source record's mapped ``values``; a missing key mapped to
    the query raises FormatError naming it and the keys the record has."""
    wanted = next((k for k, v in mapping.items() if v == "query"), None)
    if wanted is not None and "query" not in values:
        raise where.error(
            f"no {wanted!r} in the record (mapped to query); "
            f"it has {', '.join(sorted(row)) or 'nothing'}",
            wanted,
        )
    values = dict(values)
    external_id = values.pop("external_id", "") or default_id
    where.record = external_id
    rec = ItemRecord(external_id=external_id, source_file=where.file, raw=raw, position=position)
    for field_name, value in values.items():
        if field_name in ATTACHMENT_FIELDS:
            for child in value:
                child.item_id = external_id
                child.source_file = where.file
        setattr(rec, field_name, value)
    if not rec.provenance:
        rec.provenance = provenance
    return rec


class Reader:
    """A format object for ``dataset_import(fmt=...)``: ``read`` yields the items, and keeps
    the annotations met in ``annotations``."""

    #: Not the project's own format: the import stores no raw record (see dataset_import).
    interchange = True

    def __init__(self, mapping: Mapping[str, str] | str | None = None) -> None:
        self.mapping = parse_mapping(mapping)
        self.annotations: list[Annotation] = []

    @staticmethod
    def dataset_root(path: str | Path) -> Path:
        return dataset_root(path)

    def read(self, path: str | Path) -> Iterator[ItemRecord]:
        p = existing(path)
        if p.is_dir():
            raise FormatError("expected a Label Studio JSON export file, got a folder", file=str(p))
        name = p.name
        for index, raw, task in iter_json_array(p, name):
            where = Where(name, task.get("id", index) if isinstance(task, dict) else index)
            if not isinstance(task, dict):
                raise where.error("expected a task object")
            data = task.get("data")
            if not isinstance(data, dict):
                raise where.error("expected an object", "data")
            values = {
                target: convert_value(FIELDS[target], data[key], where, key)
                for key, target in self.mapping.items()
                if key in data
            }
            rec = mapped_record(
                self.mapping,
                values,
                data,
                where,
                default_id=str(task.get("id", index + 1)),
                raw=raw,
                position=index,
                provenance="imported:label-studio",
            )
            external_id = rec.external_id
            self.annotations.extend(_results(task, external_id, where))
            yield rec


# ------------------------------------------------------------------------------ writing


#: Keys written first, in this order, wherever they occur (a plan step reads ``id, name, args``
#: as m&m's writes it); every other key follows in the order PostgreSQL's jsonb keeps.
LEADING_KEYS = ("id", "name", "args")


def canonical_keys(value: Any) -> Any:
    """``value`` with every object's keys in one fixed order, so an export is the same bytes
    whichever database held the JSON (SQLite keeps the order written, PostgreSQL's jsonb
    orders keys by length, then bytes)."""
    if isinstance(value, list):
        return [canonical_keys(v) for v in value]
    if not isinstance(value, dict):
        return value

    def rank(key: Any) -> tuple[int, int, bytes]:
        text = str(key)
        if text in LEADING_KEYS:
            return (0, LEADING_KEYS.index(text), b"")
        raw = text.encode()
        return (1, len(raw), raw)

    return {k: canonical_keys(value[k]) for k in sorted(value, key=rank)}


def field_value(rec: ItemRecord, name: str) -> Any:
    value = getattr(rec, name)
    if name == "images":
        return [dataclasses.asdict(ref) for ref in value]
    if name in ATTACHMENT_FIELDS:
        own = ATTACHMENT_FIELDS[name][1]
        return [
            {
                **{f: getattr(child, f) for f in _COMMON},
                **{
                    f: [dataclasses.asdict(r) for r in child.images]  # type: ignore[attr-defined]
                    if f == "images"
                    else canonical_keys(getattr(child, f))
                    for f in own
                },
            }
            for child in value
        ]
    return value


def with_attachments(
    items: Iterable[ItemRecord], attachments: Iterable[Any]
) -> Iterator[ItemRecord]:
    """``items`` with the answers, plans and trajectories that an export gives apart (those
    read from their own files) put back into their item's lists, after its own. The
    attachments are read first, so the item stream is not interleaved with another read."""
    by_item: dict[str, list[AttachmentRecord]] = {}
    for child in attachments:
        by_item.setdefault(child.item_id, []).append(child)
    for rec in items:
        for child in by_item.pop(rec.external_id, ()):
            if isinstance(child, ResponseRecord):
                rec.responses = [*rec.responses, child]
            elif isinstance(child, PlanRecord):
                rec.plans = [*rec.plans, child]
            elif isinstance(child, TrajectoryRecord):
                rec.trajectories = [*rec.trajectories, child]
        yield rec


def image_base(url: str | None) -> str:
    """The base that image paths are appended to: ``url`` checked (an ``http(s)://`` URL or a
    path on the Label Studio server such as ``/data/local-files/?d=bw/``, with no spaces or
    quotes), ending in ``/`` or ``=``; :data:`DEFAULT_IMAGE_BASE` when empty."""
    url = (url or "").strip()
    if not url:
        return DEFAULT_IMAGE_BASE
    if not url.startswith(("http://", "https://", "/")) or re.search(r"[\s\"'<>\\]", url):
        raise FormatError(
            f"image base URL {url!r} must be an http:// or https:// URL, or a path on the "
            "Label Studio server starting with / (e.g. /data/local-files/?d=), with no spaces "
            "or quotes",
            field="image_base_url",
        )
    return url if url.endswith(("/", "=")) else url + "/"


def image_url(base: str, path: str) -> str:
    """The URL of a stored image path under ``base`` (see :func:`image_base`)."""
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return base + quote(path.lstrip("/"), safe="/")


def _args_text(args: Any) -> str:
    if isinstance(args, dict):
        return ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    return "" if args in (None, "") else json.dumps(args, ensure_ascii=False)


def plan_paragraphs(plans: Iterable[PlanRecord]) -> list[dict[str, str]]:
    """The plans under judgment (the ground truth and its alternatives, not a model's
    predictions), one paragraph per step, numbered from 1: ``1. tool(arg="value")``; a plan
    given as code only shows its code."""
    out: list[dict[str, str]] = []
    for plan in plans:
        if plan.origin == "model":
            continue
        label = "Alternative plan" if plan.is_alternative else "Ground truth"
        if not plan.steps:
            if plan.code:
                out.append({"step": label, "text": plan.code})
            continue
        for n, step in enumerate(canonical_keys(plan.steps), 1):
            if isinstance(step, dict):
                name = step.get("name") or step.get("tool") or step.get("tool_name") or ""
                text = f"{n}. {name}({_args_text(step.get('args'))})"
            else:
                text = f"{n}. {json.dumps(step, ensure_ascii=False)}"
            out.append({"step": label, "text": text})
    return out


def view_data(rec: ItemRecord, base: str) -> dict[str, list[Any]]:
    """What the labeling view shows of an item beyond its query (:data:`VIEW_KEYS`): the
    query's images and the documents' images as URLs under ``base`` (the documents' in
    img_index order), the documents' text, the plan's steps and the answers (key and text).
    Only keys with something to show are returned."""
    ordered = sorted(rec.images, key=lambda ref: ref.position)
    documents: list[dict[str, str]] = []
    for n, doc in enumerate(rec.documents, 1):
        text = doc.get("text", "") if isinstance(doc, dict) else doc
        if not isinstance(text, str):
            text = json.dumps(text, ensure_ascii=False)
        documents.append({"document": f"Document {n}", "text": text})
    view: dict[str, list[Any]] = {
        QUERY_IMAGES_KEY: [image_url(base, r.path) for r in ordered if r.role in QUERY_ROLES],
        DOCUMENTS_KEY: documents,
        DOCUMENT_IMAGES_KEY: [
            image_url(base, r.path) for r in ordered if r.role not in (*QUERY_ROLES, "artifact")
        ],
        PLAN_KEY: plan_paragraphs(rec.plans),
        ANSWERS_KEY: [{"key": r.key, "text": r.text} for r in rec.responses],
    }
    return {key: value for key, value in view.items() if value}


def task_of(
    rec: ItemRecord,
    mapping: Mapping[str, str],
    judgments: Iterable[JudgmentOut] = (),
    *,
    base: str | None = None,
) -> dict[str, Any]:
    """One item as a Label Studio task (``data`` under the mapping's keys, and with ``base``
    what the labeling view shows: :func:`view_data`)."""
    data = {key: field_value(rec, target) for key, target in mapping.items()}
    if base is not None:
        data.update(view_data(rec, base))
    task: dict[str, Any] = {"data": data}
    annotations = []
    for judgment in judgments:
        result: list[dict[str, Any]] = [
            {
                "from_name": VERDICT_NAME,
                "to_name": TEXT_NAME,
                "type": "choices",
                "value": {"choices": [str(judgment.value)]},
            }
        ]
        if judgment.comment:
            result.append(
                {
                    "from_name": COMMENT_NAME,
                    "to_name": TEXT_NAME,
                    "type": "textarea",
                    "value": {"text": [judgment.comment]},
                }
            )
        annotations.append({"result": result})
    if annotations:
        task["annotations"] = annotations
    return task


def labeling_config(
    choices: Iterable[Any] = (),
    *,
    text_key: str = "query",
    comment: bool = True,
    answers_key: str = "",
    views: Collection[str] = (),
) -> str:
    """The labeling config matching the tasks written: the query as text, its images, the
    documents and their images, the plan's steps, the answers (each of :data:`VIEW_KEYS` in
    ``views``; or the answers under ``answers_key``, a data key holding them), the verdict
    as choices (when there are any) and a free comment."""

    def attr(value: str) -> str:
        return quoteattr(value)

    lines = ["<View>", f"  <Text name={attr(TEXT_NAME)} value={attr('$' + text_key)}/>"]
    if QUERY_IMAGES_KEY in views:
        lines.append(f'  <Image name="query_images" valueList="${QUERY_IMAGES_KEY}"/>')
    if DOCUMENTS_KEY in views:
        lines.append('  <Header value="Documents"/>')
        lines.append(
            f'  <Paragraphs name="documents" value="${DOCUMENTS_KEY}" nameKey="document" '
            'textKey="text"/>'
        )
    if DOCUMENT_IMAGES_KEY in views:
        lines.append('  <Header value="Document images, in img_index order (from 0)"/>')
        lines.append(f'  <Image name="document_images" valueList="${DOCUMENT_IMAGES_KEY}"/>')
    if PLAN_KEY in views:
        lines.append('  <Header value="Plan"/>')
        lines.append(
            f'  <Paragraphs name="plan" value="${PLAN_KEY}" nameKey="step" textKey="text"/>'
        )
    if ANSWERS_KEY in views:
        answers_key = ANSWERS_KEY
    if answers_key:
        lines.append(
            f"  <Paragraphs name={attr(ANSWERS_NAME)} value={attr('$' + answers_key)} "
            'nameKey="key" textKey="text" layout="dialogue"/>'
        )
    values = [str(c) for c in choices]
    if values:
        lines.append(f'  <Choices name="{VERDICT_NAME}" toName="{TEXT_NAME}" choice="single">')
        lines.extend(f"    <Choice value={attr(v)}/>" for v in values)
        lines.append("  </Choices>")
    if comment:
        lines.append(f'  <TextArea name="{COMMENT_NAME}" toName="{TEXT_NAME}"/>')
    lines.append("</View>")
    return "\n".join(lines) + "\n"


def check_config(config: str, tasks_data: Iterable[Mapping[str, Any]]) -> None:
    """Check a labeling config against the ``data`` of the tasks it goes with: well-formed
    XML, every ``toName`` naming a tag of the config, every ``$key`` of a ``value`` or
    ``valueList`` a key of every task's data, and what an ``<Image valueList>`` or a
    ``<Paragraphs>`` shows a non-empty list (Label Studio 1.23.2's labeling view fails on an
    empty one). FormatError naming what is wrong."""
    try:
        root = ElementTree.fromstring(config)  # noqa: S314 - a config this module wrote
    except ElementTree.ParseError as exc:
        raise FormatError(f"the labeling config is not well-formed XML: {exc}") from None
    names = {el.get("name") for el in root.iter() if el.get("name")}
    variables: list[tuple[str, bool]] = []  # ($key, must be a non-empty list)
    for el in root.iter():
        target = el.get("toName")
        if target is not None and target not in names:
            raise FormatError(
                f"<{el.tag} name={el.get('name')!r}> has toName {target!r}, which names no "
                "tag of the labeling config"
            )
        for attribute in ("value", "valueList"):
            value = el.get(attribute) or ""
            if value.startswith("$"):
                variables.append((value, attribute == "valueList" or el.tag == "Paragraphs"))
    for n, data in enumerate(tasks_data, 1):
        for variable, listed in variables:
            if variable[1:] not in data:
                raise FormatError(
                    f"the labeling config shows {variable}, which task {n} has no data key for"
                )
            got = data[variable[1:]]
            if listed and not (isinstance(got, list) and got):
                raise FormatError(
                    f"the labeling config shows {variable} as a list, which task {n} has "
                    "empty or not as a list"
                )


def write(
    out: str | Path,
    items: Iterable[ItemRecord],
    attachments: Iterable[Any] = (),
    *,
    mapping: Mapping[str, str] | str | None = None,
    judgments: Mapping[str, list[JudgmentOut]] | None = None,
    choices: Iterable[Any] = (),
    image_base_url: str | None = None,
) -> list[Path]:
    """Write ``items`` as a Label Studio JSON task list at ``out`` (a ``.json`` file, or
    ``tasks.json`` in a folder) and its labeling config beside it (``<stem>.config.xml``),
    checked against the tasks (:func:`check_config`). Attachments (answers, plans,
    trajectories read from their own files) join their items' data, as the item's own do.
    What the labeling view shows beyond the item's fields (:data:`VIEW_KEYS`) is written
    under its own keys: image paths become URLs under ``image_base_url`` (default
    :data:`DEFAULT_IMAGE_BASE`: Label Studio's local-files serving of the export folder)."""
    out = Path(out)
    path = out if out.suffix.lower() == ".json" else out / "tasks.json"
    fields = parse_mapping(mapping)
    taken = sorted(set(fields) & set(VIEW_KEYS))
    if taken:
        raise FormatError(
            f"{taken[0]!r} is a data key the labeling view uses; map the field to another key",
            field=taken[0],
        )
    base = image_base(image_base_url)
    text_key = next((k for k, v in fields.items() if v == "query"), "query")
    judgments = judgments or {}
    tasks: list[tuple[str, dict[str, Any]]] = []
    views: set[str] = set()
    for rec in with_attachments(items, attachments):
        task = task_of(rec, fields, judgments.get(rec.external_id, ()), base=base)
        views.update(k for k in VIEW_KEYS if k in task["data"])
        tasks.append((rec.external_id, task))
    where = Where(path.name)
    parts: list[bytes] = []
    for external_id, task in tasks:
        where.record = external_id
        for key in VIEW_KEYS:  # every task has the keys the config shows, none empty
            if key in views and key not in task["data"]:
                task["data"][key] = VIEW_PLACEHOLDERS[key]
        parts.append(dumps(task, where))
    data = b"[\n" + b",\n".join(parts) + (b"\n]\n" if parts else b"]\n")
    config_text = labeling_config(choices, text_key=text_key, views=views)
    check_config(config_text, (task["data"] for _, task in tasks))
    config = path.with_name(f"{path.stem}.config.xml")
    return [write_file(path, data), write_file(config, config_text.encode())]


class Writer:
    """A format object for ``dataset_export(fmt=...)``: :func:`write` with its options."""

    name = NAME

    def __init__(
        self,
        mapping: Mapping[str, str] | str | None = None,
        judgments: Mapping[str, list[JudgmentOut]] | None = None,
        choices: Iterable[Any] = (),
        image_base_url: str | None = None,
    ) -> None:
        self.mapping = parse_mapping(mapping)
        self.judgments = judgments
        self.choices = list(choices)
        self.image_base_url = image_base(image_base_url)

    def write(
        self, out: str | Path, items: Iterable[ItemRecord], attachments: Iterable[Any] = ()
    ) -> list[Path]:
        return write(
            out,
            items,
            attachments,
            mapping=self.mapping,
            judgments=self.judgments,
            choices=self.choices,
            image_base_url=self.image_base_url,
        )
