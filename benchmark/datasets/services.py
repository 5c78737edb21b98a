"""Writes to the benchmark domain. Services validate, own their transactions, and are the only
place that writes; views and serializers call them."""

from __future__ import annotations

import contextlib
import gc
import logging
import queue
import shutil
import tempfile
import threading
import zipfile
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import IO, Any

import orjson
from django.conf import settings
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import UploadedFile
from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, models, transaction
from django.utils import timezone
from django.utils.text import slugify

from benchmark import limits, permissions
from benchmark.audio.services import audio_store
from benchmark.datasets.bulk import bulk_insert, bulk_load_begin, column_of
from benchmark.datasets.interop import interop_hook
from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.fields import image_refs_expand
from benchmark.formats import (
    AttachmentRecord,
    FormatError,
    ImageRef,
    ItemRecord,
    PlanRecord,
    ResponseRecord,
    TrajectoryRecord,
    get_format,
    label_studio,
    tabular,
)
from benchmark.formats._jsonio import fill_holes, punch_holes
from benchmark.formats.audio import is_audio_name
from benchmark.images.selectors import project_images_named
from benchmark.images.services import image_store
from benchmark.job_names import IMPORT_AREA, IMPORT_KIND
from benchmark.jobs.kinds import Progress
from benchmark.jobs.services import job_start
from benchmark.jobs.uploads import UploadBudget, place_uploads, safe_filename
from benchmark.models import (
    AudioFile,
    Image,
    Item,
    ItemStatus,
    Job,
    Plan,
    Project,
    Response,
    Trajectory,
    indexing,
)
from benchmark.models.signals import items_added
from benchmark.typing import AnyUser, User

log = logging.getLogger(__name__)

BATCH_SIZE = 500

# --------------------------------------------------------------------------- images


# --------------------------------------------------------------------------- import


@dataclass
class ImportResult:
    items_created: int = 0
    items_skipped: int = 0
    attachments_created: int = 0
    attachments_skipped: int = 0
    images_stored: int = 0
    warnings: list[str] = field(default_factory=list)
    #: The image paths the records name that the upload did not hold (each once): their
    #: items are imported without them, and a later import with the files fills them in.
    images_missing: list[str] = field(default_factory=list)
    #: The audio files the records name (m&m's speech inputs) that the upload did not hold,
    #: and how many audio files were stored.
    audio_missing: list[str] = field(default_factory=list)
    audio_stored: int = 0
    #: Audio files of items already present that this import filled in.
    audio_filled: int = 0
    #: Items already present whose missing images this import filled in, and how many.
    items_filled: int = 0
    images_filled: int = 0
    #: For a release folder: the tool records it carried that were added (None otherwise).
    tool_records: int | None = None
    #: For a release folder: the model calls it carried that were added (None otherwise).
    model_calls: int | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "items_created": self.items_created,
            "items_skipped": self.items_skipped,
            "attachments_created": self.attachments_created,
            "attachments_skipped": self.attachments_skipped,
            "images_stored": self.images_stored,
            "warnings": self.warnings[:100],
            "images_missing": len(self.images_missing),
            "images_missing_paths": self.images_missing[:100],
            "audio_stored": self.audio_stored,
            "audio_missing": len(self.audio_missing),
            "audio_missing_paths": self.audio_missing[:100],
            "audio_filled": self.audio_filled,
            "items_filled": self.items_filled,
            "images_filled": self.images_filled,
            # What the job card says of the outcome: missing images or audio, or other
            # warnings make the import "done with warnings" rather than a plain success.
            "outcome": "warnings"
            if self.images_missing or self.audio_missing or self.warnings
            else "ok",
        }
        if self.tool_records is not None:
            out["tool_records"] = self.tool_records
        if self.model_calls is not None:
            out["model_calls"] = self.model_calls
        return out


#: A release folder (``review.releases``): its manifest and its items in the benchmark's own
#: format under ``data/``; the tool records of its items under ``tool_records/``, the model
#: calls its evaluations made on them under ``model_calls/``.
RELEASE_MANIFEST = "manifest.json"
RELEASE_DATA_DIR = "data"
#: Where an export writes the audio files its items name (m&m's ``mnms/execution/data``
#: layout: the files by the names the tasks use), beside the records.
RELEASE_AUDIO_DIR = "data"


def _release_parts(path: Path, fmt: Any) -> tuple[Path | None, Path]:
    """(the release folder, the data to read) for a release folder read in the project's
    format; else (None, ``path``)."""
    release = None if getattr(fmt, "interchange", False) else release_root_of(path)
    return release, path if release is None else release / RELEASE_DATA_DIR


def _release_records(
    project: Project, release: Path | None, id_by_external: dict[str, int]
) -> int | None:
    if release is None:
        return None
    count: int = interop_hook("release.tool_records_import")(
        project=project, root=release, id_by_external=id_by_external
    )
    return count


def _release_calls(
    project: Project, release: Path | None, id_by_external: dict[str, int]
) -> int | None:
    if release is None:
        return None
    count: int = interop_hook("release.model_calls_import")(
        project=project, root=release, id_by_external=id_by_external
    )
    return count


def release_root_of(path: Path) -> Path | None:
    """``path`` when it is a release folder (a manifest and ``data/``), else None."""
    if path.is_dir() and (path / RELEASE_MANIFEST).is_file() and (path / RELEASE_DATA_DIR).is_dir():
        return path
    return None


class _ImageResolver:
    """Turns ImageRefs into stored images, reading and hashing each file once per import;
    ``audio`` does the same for the audio files the records name."""

    def __init__(self, root: Path, project: Project, result: ImportResult) -> None:
        self.root = root
        self.project = project
        self.result = result
        self.audio = _AudioResolver(root, project, result)
        self.by_path: dict[str, str | None] = {}
        self.resolved: dict[tuple[tuple[str, str, int], ...], list[dict[str, Any]]] = {}
        self.shas: set[str] = set()

    def resolve(self, refs: Iterable[ImageRef], record: str) -> list[dict[str, Any]]:
        refs = list(refs)
        key = tuple((ref.path, ref.role, ref.position) for ref in refs)
        if key in self.resolved:  # records often share their images: resolve a list once
            return self.resolved[key]
        out = []
        for ref in refs:
            sha = self.sha_for(ref.path, record)
            out.append(
                {"sha256": sha, "role": ref.role, "path": ref.path, "position": ref.position}
            )
        if len(self.resolved) < 10_000:
            self.resolved[key] = out
        return out

    def sha_for(self, rel: str, record: str) -> str | None:
        """The stored image of the file at ``rel`` in the upload (stored now if new), or None
        when the upload does not hold it (counted as missing)."""
        if rel in self.by_path:
            return self.by_path[rel]
        full = (self.root / rel).resolve()
        sha: str | None = None
        if not full.is_relative_to(self.root.resolve()):
            self.result.warnings.append(f"record {record}: image path {rel!r} leaves the dataset")
        elif not full.is_file():
            self.result.images_missing.append(rel)
        else:
            try:
                image = image_store(data=full.read_bytes(), name=rel)
            except ValidationFailed as exc:
                raise FormatError(exc.message, record=record, field="images") from None
            sha = image.sha256
            if sha not in self.shas:
                self.result.images_stored += 1
            self.shas.add(sha)
        self.by_path[rel] = sha
        return sha

    def link_project(self) -> None:
        self.audio.link_project()
        through = Image.projects.through
        ids = Image.objects.filter(sha256__in=self.shas).values_list("id", flat=True)
        through.objects.bulk_create(
            [through(image_id=i, project_id=self.project.id) for i in ids],
            ignore_conflicts=True,
        )


def _attachment_fields(rec: AttachmentRecord) -> dict[str, Any]:
    return {
        "key": rec.key,
        "origin": rec.origin,
        "model_name": rec.model_name,
        "source_file": rec.source_file,
        "position": rec.position,
        "raw": rec.raw,
    }


# The models of records attached to an item.
AttachmentModel = type[Response | Plan | Trajectory]


def _attachment_row(
    rec: AttachmentRecord, item_id: int, images: _ImageResolver | ProjectImages
) -> tuple[AttachmentModel, dict[str, Any]]:
    record_within_limits(rec)
    row = {"item_id": item_id, **_attachment_fields(rec)}
    if isinstance(rec, ResponseRecord):
        return Response, {**row, "text": rec.text, "extra": rec.extra}
    if isinstance(rec, PlanRecord):
        return Plan, {
            **row,
            "form": rec.form,
            "steps": rec.steps,
            "code": rec.code,
            "is_alternative": rec.is_alternative,
        }
    if isinstance(rec, TrajectoryRecord):
        return Trajectory, {
            **row,
            "steps": rec.steps,
            "checkpoints": rec.checkpoints,
            "ordering_constraints": rec.ordering_constraints,
            "efficiency": rec.efficiency,
            "final_answer": rec.final_answer,
            "image_refs": images.resolve(rec.images, f"{rec.item_id}/{rec.key}"),
        }
    raise TypeError(f"unexpected attachment {type(rec).__name__}")  # pragma: no cover


_STATUSES = frozenset(ItemStatus.values)
# Where a format's items keep long strings that columns also hold: ``raw_fields(record)``
# gives ``(path in the raw record, value, source)`` for each, for storing them once.
RawFields = Callable[[ItemRecord], list[tuple[tuple[str | int, ...], str, Any]]]


def _texts(rec: ItemRecord | AttachmentRecord) -> Iterator[tuple[limits.Limit, str, Any]]:
    """(limit, field, value) for each text of ``rec`` that ``benchmark.limits`` bounds."""
    if isinstance(rec, ItemRecord):
        yield limits.EXTERNAL_ID, "id", rec.external_id
        yield limits.QUERY, "query", rec.query
        yield limits.EXPECTED_ANSWER, "expected_answer", rec.expected_answer
        for name in ("category", "intent", "domain"):
            yield limits.LABEL, name, getattr(rec, name)
        for i, variant in enumerate(rec.accepted_variants):
            yield limits.ACCEPTED_VARIANT, f"accepted_variants[{i}]", variant
        for i, criterion in enumerate(rec.rubric):
            yield limits.CRITERION, f"rubric[{i}].text", criterion.get("text")
        for i, document in enumerate(rec.documents):
            yield limits.DOCUMENT, f"documents[{i}].text", document.get("text")
        for i, answer in enumerate(rec.responses):
            yield limits.ANSWER, f"responses[{i}].text", answer.text
    elif isinstance(rec, ResponseRecord):
        yield limits.ANSWER, "text", rec.text
    yield limits.RECORD_BYTES, "record", rec.raw


def record_within_limits(rec: ItemRecord | AttachmentRecord) -> None:
    """Raise FormatError naming the file, record and field when a value of ``rec`` is over its
    limit (``benchmark.limits``) or holds a NUL character, which no column can store. The raw
    source text may hold the escape ``\\u0000``: it is stored as that text."""
    item_id = rec.external_id if isinstance(rec, ItemRecord) else f"{rec.item_id}/{rec.key}"

    def refuse(message: str, field: str) -> FormatError:
        return FormatError(message, file=rec.source_file or None, record=item_id, field=field)

    for limit, name, value in _texts(rec):
        if isinstance(value, str):
            if name == "record":
                size = len(value) if len(value) * 4 <= limit.limit else len(value.encode())
                if size > limit.limit:
                    raise refuse(f"is larger than {limit.limit:,} bytes ({size:,})", name)
                continue
            problem = limits.over(limit, value)
            if problem is not None:
                raise refuse(problem, name)
    parsed = {f.name: getattr(rec, f.name) for f in fields(rec) if f.name != "raw"}
    text = orjson.dumps(parsed, default=str)
    if b"\\u0000" in text:
        where = limits.nul_path(orjson.loads(text))
        if where is not None:
            raise refuse(limits.NUL_MESSAGE, where)


class _AudioResolver:
    """Turns the audio names a record uses into stored audio files, reading and hashing each
    file once per import. A name is looked for beside the records (``<root>/<name>``), then
    under ``data/`` (m&m's ``mnms/execution/data`` layout, what the export writes), then as
    the one file of that name anywhere in the upload; not there, it is counted missing."""

    def __init__(self, root: Path, project: Project, result: ImportResult) -> None:
        self.root = root
        self.project = project
        self.result = result
        self.by_name: dict[str, str] = {}
        self.shas: set[str] = set()
        self._by_file_name: dict[str, list[Path]] | None = None

    def _find(self, name: str) -> Path | None:
        root = self.root.resolve()
        for candidate in (root / name, root / RELEASE_AUDIO_DIR / name):
            full = candidate.resolve()
            if full.is_relative_to(root) and full.is_file():
                return full
        if self._by_file_name is None:
            self._by_file_name = {}
            for file in root.rglob("*"):
                if file.is_file() and is_audio_name(file.name):
                    self._by_file_name.setdefault(file.name, []).append(file)
        found = self._by_file_name.get(Path(name).name, [])
        return found[0] if len(found) == 1 else None

    def resolve(self, names: Iterable[str], record: str) -> list[dict[str, str]]:
        out = []
        for name in names:
            if name not in self.by_name:
                self.by_name[name] = self._store(name, record)
            out.append({"sha256": self.by_name[name], "path": name})
        return out

    def _store(self, name: str, record: str) -> str:
        full = self._find(name)
        if full is None:
            self.result.audio_missing.append(name)
            return ""
        try:
            audio = audio_store(data=full.read_bytes(), name=name)
        except ValidationFailed as exc:
            raise FormatError(exc.message, record=record, field="audio") from None
        if audio.sha256 not in self.shas:
            self.result.audio_stored += 1
        self.shas.add(audio.sha256)
        return audio.sha256

    def link_project(self) -> None:
        if not self.shas:
            return
        through = AudioFile.projects.through
        ids = AudioFile.objects.filter(sha256__in=self.shas).values_list("id", flat=True)
        through.objects.bulk_create(
            [through(audiofile_id=i, project_id=self.project.id) for i in ids],
            ignore_conflicts=True,
        )


def _item_row(
    rec: ItemRecord,
    project: Project,
    images: _ImageResolver | ProjectImages,
    position: int,
    raw_fields: RawFields | None = None,
) -> dict[str, Any]:
    if len(rec.external_id) > limits.EXTERNAL_ID.limit:
        raise FormatError(
            f"id is longer than {limits.EXTERNAL_ID.limit} characters",
            file=rec.source_file or None,
            record=rec.external_id[:40],
        )
    record_within_limits(rec)
    status = rec.status if rec.status in _STATUSES else ItemStatus.DRAFT
    if status == ItemStatus.DISCARDED:  # a discard needs a reason, which records do not carry
        status = ItemStatus.DRAFT
    level = rec.level
    if level is not None and not (isinstance(level, int) and 1 <= level <= 3):
        raise FormatError(f"level must be 1, 2 or 3, not {level!r}", record=rec.external_id)
    raw = rec.raw
    holes: list[list[Any]] = []
    if raw_fields is not None and raw:
        raw, holes = punch_holes(raw, raw_fields(rec))
    return {
        "project_id": project.pk,
        "external_id": rec.external_id,
        "position": position,
        "source_file": rec.source_file[:255],
        "query": rec.query,
        "modality": rec.modality,
        "documents": rec.documents,
        "image_refs": images.resolve(rec.images, rec.external_id),
        "audio_refs": images.audio.resolve(rec.audio, rec.external_id)
        if isinstance(images, _ImageResolver)
        else [{"sha256": "", "path": name} for name in rec.audio],
        "constraints": rec.constraints,
        "expected_answer": rec.expected_answer,
        "accepted_variants": rec.accepted_variants,
        "match_type": rec.match_type[:30],
        "rubric": rec.rubric,
        "category": rec.category,
        "intent": rec.intent,
        "domain": rec.domain,
        "level": level,
        "status": status,
        "discard_reason": "",
        "provenance": (rec.provenance or f"imported:{project.data_format}")[:200],
        "raw": raw,
        "raw_holes": holes,
    }


def _bulk_insert_items(
    project: Project,
    pending: list[tuple[dict[str, Any], ItemRecord]],
    id_by_external: dict[str, int],
    result: ImportResult,
    images: _ImageResolver,
) -> None:
    if not pending:
        return
    # Ids come from a sequence that only grows, and (project, external_id) is unique, so the
    # rows above the previous largest id are the ones just written.
    before = Item.objects.order_by("-id").values_list("id", flat=True).first() or 0
    bulk_insert(Item, (row for row, _ in pending))
    new_ids = dict(
        Item.objects.filter(project=project, id__gt=before).values_list("external_id", "id")
    )
    items_added.send(sender=Item, project_id=project.pk, item_ids=list(new_ids.values()))
    nested: dict[type, list[dict[str, Any]]] = {Response: [], Plan: [], Trajectory: []}
    for _, rec in pending:
        item_id = new_ids[rec.external_id]
        id_by_external[rec.external_id] = item_id
        for child in [*rec.responses, *rec.plans, *rec.trajectories]:
            model, row = _attachment_row(child, item_id, images)
            nested[model].append(row)
    for model, rows in nested.items():
        if rows:
            bulk_insert(model, rows)
            result.attachments_created += len(rows)
    result.items_created += len(pending)
    pending.clear()


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector: an import allocates hundreds of thousands of small
    containers that are not cycles, and repeated collections cost about a third of its time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def dataset_import(
    *,
    project: Project,
    path: Path,
    progress: Any = None,
    fmt: Any = None,
) -> ImportResult:
    """Import a file or folder in the project's format (or with ``fmt``, a reader of an
    interchange format such as ``formats.label_studio.Reader``: ``read`` and ``dataset_root``).
    All or nothing: a bad record raises FormatError naming the record and field, and nothing
    is written. Records already present (same id, or same attachment key) are skipped, so
    re-importing adds no duplicates. A release folder (``release_root_of``) is read from its
    ``data/``, and the tool records and model calls it carries are added to the project with
    its items (by the hooks ``release.tool_records_import`` and ``release.model_calls_import``
    that review registers), so an evaluation there is answered by the tools as recorded and
    ``evaluate --replay`` there answers the model's calls as recorded."""
    path = Path(path)
    if not path.exists():
        raise FormatError("no such file or folder", file=str(path))
    release, path = _release_parts(path, fmt)
    fmt = fmt or get_format(project.data_format)
    root = fmt.dataset_root(path)
    result = ImportResult()
    images = _ImageResolver(root, project, result)
    raw_fields: RawFields | None = getattr(fmt, "raw_fields", None)
    interchange = bool(getattr(fmt, "interchange", False))
    native_files: dict[str, str] = {}
    with _no_gc(), transaction.atomic():
        bulk_load_begin()
        deferred = indexing.bulk_begin(connection)
        id_by_external: dict[str, int] = dict(project.items.values_list("external_id", "id"))
        existing_ids = set(id_by_external)
        next_position = (
            project.items.order_by("-position").values_list("position", flat=True).first() or 0
        ) + (1 if existing_ids else 0)
        seen_in_file: set[str] = set()
        pending: list[tuple[dict[str, Any], ItemRecord]] = []
        attachments: list[AttachmentRecord] = []
        present: list[str] = []  # items already in the project, to fill in missing images
        count = 0
        for rec in fmt.read(path):
            count += 1
            if isinstance(rec, ItemRecord):
                if rec.external_id in seen_in_file:
                    raise FormatError(
                        "the same id appears twice in the import",
                        file=rec.source_file,
                        record=rec.external_id,
                    )
                seen_in_file.add(rec.external_id)
                if rec.external_id in existing_ids:  # skipped (counted by the fill-in below)
                    present.append(rec.external_id)
                    continue
                row = _item_row(rec, project, images, next_position, raw_fields)
                if interchange:
                    _as_native(row, project, native_files)
                pending.append((row, rec))
                next_position += 1
                if len(pending) >= BATCH_SIZE:
                    _bulk_insert_items(project, pending, id_by_external, result, images)
            else:
                attachments.append(rec)
            if progress is not None and count % BATCH_SIZE == 0:
                progress(count)
        _bulk_insert_items(project, pending, id_by_external, result, images)
        _insert_attachments(project, attachments, id_by_external, result, images)
        result.items_skipped = _fill_missing_images(project, present, result, images)
        images.link_project()
        indexing.bulk_end(connection, deferred)
        _release_extras(project, release, id_by_external, result)
    if progress is not None:
        progress(count)
    return result


def _release_extras(
    project: Project, release: Path | None, id_by_external: dict[str, int], result: ImportResult
) -> None:
    """What a release folder carries besides its items: its tool records and model calls."""
    result.tool_records = _release_records(project, release, id_by_external)
    result.model_calls = _release_calls(project, release, id_by_external)


def _filled_refs(
    refs: list[Any], images: _ImageResolver, locate: Callable[[str], str] | None, record: str
) -> tuple[list[Any], int]:
    """``refs`` with the hash of each image that had none and that the upload now holds,
    and how many were filled in."""
    filled = 0
    out = []
    for ref in refs:
        if isinstance(ref, dict) and not ref.get("sha256") and ref.get("path"):
            where = str(ref["path"])
            sha = images.sha_for(locate(where) if locate else where, record)
            if sha:
                ref = {**ref, "sha256": sha}
                filled += 1
        out.append(ref)
    return out, filled


def _lacks_images(refs: list[Any] | None) -> bool:
    return any(isinstance(r, dict) and not r.get("sha256") and r.get("path") for r in refs or [])


def _fill_missing_images(
    project: Project,
    external_ids: list[str],
    result: ImportResult,
    images: _ImageResolver,
    locate: Callable[[str], str] | None = None,
) -> int:
    """Items already present that an earlier import stored without some of their images (a
    ref with a path and no hash; on the item or on its trajectories, such as an agent run's
    tool images): each such path this upload holds is stored and filled in, by the path the
    item keeps (``locate`` turns it into the upload's path first). Only the images still
    missing are read, so re-importing a complete dataset reads no image twice. Answers how
    many items it looked at."""
    now = timezone.now()
    for start in range(0, len(external_ids), BATCH_SIZE):
        batch = external_ids[start : start + BATCH_SIZE]
        filled_items: set[int] = set()
        items = []
        for item in Item.objects.filter(project=project, external_id__in=batch).only(
            "id", "external_id", "image_refs"
        ):
            if _lacks_images(item.image_refs):
                item.image_refs, filled = _filled_refs(
                    item.image_refs, images, locate, item.external_id
                )
                if filled:
                    item.updated_at = now
                    items.append(item)
                    filled_items.add(item.pk)
                    result.images_filled += filled
        trajectories = []
        for traj in (
            Trajectory.objects.filter(item__project=project, item__external_id__in=batch)
            .select_related("item")
            .only("id", "key", "image_refs", "item", "item__external_id")
        ):
            if _lacks_images(traj.image_refs):
                where = f"{traj.item.external_id}/{traj.key}"
                traj.image_refs, filled = _filled_refs(traj.image_refs, images, locate, where)
                if filled:
                    trajectories.append(traj)
                    filled_items.add(traj.item_id)
                    result.images_filled += filled
        if items:
            Item.objects.bulk_update(items, ["image_refs", "updated_at"])
        if trajectories:
            Trajectory.objects.bulk_update(trajectories, ["image_refs"])
        result.items_filled += len(filled_items)
    _fill_missing_audio(project, external_ids, result, images.audio)
    return len(external_ids)


def _fill_missing_audio(
    project: Project, external_ids: list[str], result: ImportResult, audio: _AudioResolver
) -> None:
    """Items already present that lack some of their audio files (a ref with a path and no
    hash): each file this upload holds is stored and filled in, by the name the item uses."""
    for start in range(0, len(external_ids), BATCH_SIZE):
        batch = external_ids[start : start + BATCH_SIZE]
        changed = []
        for item in Item.objects.filter(project=project, external_id__in=batch).only(
            "id", "external_id", "audio_refs"
        ):
            refs = [r for r in item.audio_refs or [] if isinstance(r, dict)]
            lacking = [r["path"] for r in refs if r.get("path") and not r.get("sha256")]
            if not lacking:
                continue
            found = {
                ref["path"]: ref["sha256"]
                for ref in audio.resolve(lacking, item.external_id)
                if ref["sha256"]
            }
            if found:
                item.audio_refs = [
                    {**r, "sha256": found.get(str(r.get("path")), r.get("sha256", ""))}
                    for r in refs
                ]
                changed.append(item)
                result.audio_filled += len(found)
        if changed:
            Item.objects.bulk_update(changed, ["audio_refs"])


def _upload_paths(root: Path) -> Callable[[str], str]:
    """Finds an item's image path among the files under ``root`` (an upload of images only):
    the same relative path, else the one file whose path ends like it (or that it ends
    like), else the one file of that name; else the path itself (not there: missing)."""
    by_suffix: dict[str, list[str]] = {}
    for file in root.rglob("*"):
        if file.is_file():
            rel = file.relative_to(root).as_posix()
            parts = rel.split("/")
            for n in range(len(parts)):
                by_suffix.setdefault("/".join(parts[n:]), []).append(rel)

    def locate(path: str) -> str:
        wanted = path.replace("\\", "/").lstrip("./")
        parts = wanted.split("/")
        for n in range(len(parts)):
            found = by_suffix.get("/".join(parts[n:]), [])
            if len(found) == 1:
                return found[0]
            if len(found) > 1:
                break
        return wanted

    return locate


def dataset_images_attach(*, project: Project, path: Path) -> ImportResult:
    """Attach images to items already in the project: each image an item names by path but
    was imported without, found in the upload (a folder or an unpacked .zip of images, or
    one image) by that path, by the end of it or by its file name, is stored and filled
    in. What the items still miss is counted as missing; files no item asks for are left
    out. All at once or nothing."""
    path = Path(path)
    root = path if path.is_dir() else path.parent
    result = ImportResult()
    images = _ImageResolver(root, project, result)
    with transaction.atomic():
        external_ids = list(project.items.values_list("external_id", flat=True))
        _fill_missing_images(project, external_ids, result, images, _upload_paths(root))
        images.link_project()
    return result


def item_source_file(project: Project, values: Mapping[str, Any], external_id: str) -> str:
    """The file of its benchmark's layout that an item with ``values`` is written to on
    export: the kind's own rule (per item for Agentic-MME, per modality for LLM-I), else the
    file the project's last item came from (or the kind's default file)."""
    kind = project.benchmark
    if kind.source_file is not None:
        return kind.source_file(values, external_id)
    last = (
        Item.objects.filter(project=project)
        .exclude(source_file="")
        .order_by("-position", "-id")
        .values_list("source_file", flat=True)
        .first()
    )
    return last or kind.default_file


def _as_native(row: dict[str, Any], project: Project, files: dict[str, str]) -> None:
    """An item read from an interchange format (Label Studio, JSONL/CSV) is stored as an item
    written in the project's own format would be: no raw source record (its format is not
    the project's, and the project's export builds the record from the fields) and the file
    the project's format keeps such an item in."""
    row["raw"], row["raw_holes"] = "", []
    if project.benchmark.source_file_from_fields:
        row["source_file"] = item_source_file(project, row, row["external_id"])
    else:  # one file for all: computed once per import
        if "" not in files:
            files[""] = item_source_file(project, row, row["external_id"])
        row["source_file"] = files[""]


def _insert_attachments(
    project: Project,
    attachments: list[AttachmentRecord],
    id_by_external: dict[str, int],
    result: ImportResult,
    images: _ImageResolver,
) -> None:
    if not attachments:
        return
    existing: set[tuple[int, str]] = set()
    for model in (Response, Plan, Trajectory):
        existing.update(model.objects.filter(item__project=project).values_list("item_id", "key"))
    rows: dict[AttachmentModel, list[dict[str, Any]]] = {Response: [], Plan: [], Trajectory: []}
    for rec in attachments:
        item_id = id_by_external.get(rec.item_id)
        if item_id is None:
            raise FormatError(
                f"refers to item {rec.item_id!r}, which is neither in this import nor in the "
                f"project",
                file=rec.source_file,
                record=rec.key,
            )
        if (item_id, rec.key) in existing:
            result.attachments_skipped += 1
            continue
        existing.add((item_id, rec.key))
        model, row = _attachment_row(rec, item_id, images)
        rows[model].append(row)
        result.attachments_created += 1
    for model, batch in rows.items():
        if batch:
            bulk_insert(model, batch)


# --------------------------------------------------------------------------- one record


class ProjectImages:
    """Resolves the image paths of a record sent on its own (the API cannot read files) by
    the one rule for naming a project's images (``project_images_named``: a path its items
    already use, or ``images/<sha256>.<ext>`` of an image stored for it). An unknown path
    raises FormatError naming ``field`` (the record's field holding the path)."""

    def __init__(self, project: Project, fields: dict[str, str] | None = None) -> None:
        self.project = project
        self.fields = fields or {}  # path -> the record field it came from, for errors
        self.known: dict[str, str] = {}

    def resolve(self, refs: Iterable[ImageRef], record: str) -> list[dict[str, Any]]:
        refs = list(refs)
        named = project_images_named(
            project=self.project, names={r.path for r in refs if r.path not in self.known}
        )
        self.known.update({path: image.sha256 for path, image in named.items()})
        for ref in refs:
            if ref.path not in self.known:
                raise FormatError(
                    f"unknown image {ref.path!r}: the API cannot read files; use the path of an "
                    f"image already in the project, or images/<sha256>.<ext> of an image "
                    f"stored for it",
                    record=record,
                    field=self.fields.get(ref.path, "images"),
                )
        return [
            {
                "sha256": self.known[ref.path],
                "role": ref.role,
                "path": ref.path,
                "position": ref.position,
            }
            for ref in refs
        ]


_Resolver = _ImageResolver | ProjectImages


def item_attachments_create(
    *,
    item: Item,
    records: Iterable[AttachmentRecord],
    images: _Resolver | None = None,
) -> list[Response | Plan | Trajectory]:
    """Store records attached to ``item`` (a ground-truth answer, a plan, a trajectory) as
    the import stores them. A key the item already has raises Conflict."""
    resolver = images or ProjectImages(item.project)
    created: list[Response | Plan | Trajectory] = []
    with transaction.atomic():
        for rec in records:
            model, row = _attachment_row(rec, item.pk, resolver)
            if model.objects.filter(item_id=item.pk, key=rec.key).exists():
                raise Conflict(f"item {item.external_id!r} already has a record {rec.key!r}")
            obj = model(**row)
            obj.save()
            created.append(obj)
    return created


def item_next_position(*, project: Project) -> int:
    last = project.items.order_by("-position").values_list("position", flat=True).first()
    return 0 if last is None else last + 1


def record_create(
    *,
    project: Project,
    user: AnyUser,
    record: ItemRecord,
    images: _Resolver | None = None,
) -> Item:
    """Create one item from a record in the project's format (``fmt.parse_record``), with the
    answers, plans and trajectories the record holds, exactly as an import stores it: its raw
    JSON is kept, so the export writes it back unchanged. The item starts as a draft written
    by ``user``. Images are resolved by ``images`` (default ``ProjectImages``). A second item
    with the same id raises Conflict; a bad value FormatError naming the field."""
    permissions.require(user=user, project=project, action="edit")
    if not isinstance(user, User):
        raise Forbidden("log in to add items")
    if project.items.filter(external_id=record.external_id).exists():
        raise Conflict(f"external_id: the project already has an item {record.external_id!r}")
    resolver = images or ProjectImages(project)
    raw_fields: RawFields | None = getattr(get_format(project.data_format), "raw_fields", None)
    with transaction.atomic():
        row = _item_row(record, project, resolver, item_next_position(project=project), raw_fields)
        row.update(status=ItemStatus.DRAFT, provenance=f"written by {user.get_username()}"[:200])
        item = Item(**row)
        try:
            with transaction.atomic():
                item.save()
        except IntegrityError:
            raise Conflict(
                f"external_id: the project already has an item {record.external_id!r}"
            ) from None
        item_attachments_create(
            item=item,
            records=[*record.responses, *record.plans, *record.trajectories],
            images=resolver,
        )
    return item


# --------------------------------------------------------------------------- export


def _image_refs(refs: list[dict[str, Any]]) -> list[ImageRef]:
    return [ImageRef(path=r["path"], role=r["role"], position=r["position"]) for r in refs]


_COMMON = ["item_id", "key", "source_file", "raw", "origin", "model_name", "position"]
_ATTACHED: dict[AttachmentModel, tuple[type[AttachmentRecord], list[str]]] = {
    Response: (ResponseRecord, ["text", "extra"]),
    Plan: (PlanRecord, ["form", "steps", "code", "is_alternative"]),
    Trajectory: (
        TrajectoryRecord,
        [
            "steps",
            "checkpoints",
            "ordering_constraints",
            "efficiency",
            "final_answer",
            "image_refs",
        ],
    ),
}
_ITEM_FIELDS = [
    "external_id", "source_file", "raw", "position", "query", "modality", "documents",
    "image_refs", "constraints", "expected_answer", "accepted_variants", "match_type", "rubric",
    "category", "intent", "domain", "level", "status", "provenance",
]  # fmt: skip
EXPORT_CHUNK = 1000


def _record_hole_value(rec: ItemRecord) -> Callable[[list[Any]], Any]:
    """Looks up a hole's source (see ``Item.raw_hole_value``) in an exported record."""

    def value(source: list[Any]) -> Any:
        if source[0] == "documents":
            try:
                return rec.documents[source[1]][source[2]]
            except (IndexError, KeyError, TypeError):
                return None
        if source[0] == "response":
            for response in rec.responses:
                if response.key == source[1]:
                    return response.text
            return None
        return getattr(rec, source[0]) if source[0] in ("query", "expected_answer") else None

    return value


def _attached_records(
    model: AttachmentModel, rows: Iterable[tuple[Any, ...]], external: dict[int, str]
) -> Iterator[tuple[int, AttachmentRecord]]:
    """(item pk, record) for each row of ``model`` fetched as ``_COMMON + own`` columns."""
    record_cls, own = _ATTACHED[model]
    for row in rows:
        values = dict(zip([*_COMMON, *own], row, strict=True))
        pk = values["item_id"]
        values["item_id"] = external[pk]
        if "image_refs" in values:
            values["images"] = _image_refs(values.pop("image_refs"))
        yield pk, record_cls(**values)


def _select(
    model: type[models.Model],
    fields: list[str],
    where: str,
    params: list[Any],
    tail: str = "",
    *,
    as_text: frozenset[str] = frozenset(),
    conn: Any = connection,
) -> list[tuple[Any, ...]]:
    """Rows of ``fields`` by plain SQL, JSON decoded with orjson: an export reads every row of
    a project, and the ORM's per-value converters would cost more than the reading itself."""
    meta = model._meta
    cols = [meta.get_field(name) for name in fields]
    quote = conn.ops.quote_name
    sql = (
        f"SELECT {', '.join(quote(column_of(c)) for c in cols)} FROM {quote(meta.db_table)} "
        f"WHERE {where} {tail}"
    )
    json_at = [
        i for i, c in enumerate(cols) if isinstance(c, models.JSONField) and c.name not in as_text
    ]
    bool_at = [i for i, c in enumerate(cols) if isinstance(c, models.BooleanField)]
    # A JSON field's value, where its stored form differs (ImageRefsField's from_stored).
    expand_at = [(i, getattr(cols[i], "from_stored", None)) for i in json_at]
    with conn.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if not json_at and not bool_at:
        return rows
    loads = orjson.loads
    out = []
    for row in rows:
        row = list(row)
        for i, from_stored in expand_at:
            if isinstance(row[i], str | bytes):
                row[i] = loads(row[i])
            if from_stored is not None:
                row[i] = from_stored(row[i])
        for i in bool_at:
            row[i] = bool(row[i])
        out.append(tuple(row))
    return out


# One chunk of items as read: the item rows, and for each model the rows of the records that
# live inside those items.
_Chunk = tuple[list[tuple[Any, ...]], dict[AttachmentModel, list[tuple[Any, ...]]]]


def _selected_batches(conn: Any, project: Project, item_ids: frozenset[int]) -> Iterator[list[int]]:
    """The selected items' ids in export order, EXPORT_CHUNK at a time (the project's ids are
    read in order, one column, so no statement carries more than a chunk of ids)."""
    table = conn.ops.quote_name(Item._meta.db_table)
    with conn.cursor() as cursor:
        cursor.execute(
            f"SELECT id FROM {table} WHERE project_id = %s ORDER BY position, id", [project.pk]
        )
        ordered = [row[0] for row in cursor.fetchall() if row[0] in item_ids]
    for start in range(0, len(ordered), EXPORT_CHUNK):
        yield ordered[start : start + EXPORT_CHUNK]


def _item_chunks(
    conn: Any, project: Project, status: str | None, item_ids: frozenset[int] | None = None
) -> Iterator[_Chunk]:
    """The project's items in order (only ``item_ids`` when given), EXPORT_CHUNK at a time
    (keyset pagination)."""
    where = "project_id = %s" + (" AND status = %s" if status else "")
    base_params: list[Any] = [project.pk] + ([status] if status else [])
    batches = _selected_batches(conn, project, item_ids) if item_ids is not None else None
    after: tuple[int, int] | None = None
    while True:
        clause, params = where, list(base_params)
        if batches is not None:
            batch = next(batches, None)
            if batch is None:
                return
            clause += f" AND id IN ({', '.join(['%s'] * len(batch))})"
            params += batch
        elif after is not None:
            clause += " AND (position > %s OR (position = %s AND id > %s))"
            params += [after[0], after[0], after[1]]
        chunk = _select(
            Item, ["id", *_ITEM_FIELDS, "raw_holes"], clause, params,
            f"ORDER BY position, id LIMIT {EXPORT_CHUNK}", as_text=frozenset({"image_refs"}),
            conn=conn,
        )  # fmt: skip
        if not chunk:
            if batches is not None:
                continue
            return
        after = (chunk[-1][4], chunk[-1][0])
        # The same chunk again as a subquery: no list of a thousand parameters to send.
        chunk_ids = (
            f"SELECT id FROM {conn.ops.quote_name(Item._meta.db_table)} WHERE {clause} "
            f"ORDER BY position, id LIMIT {EXPORT_CHUNK}"
        )
        attached = {
            model: _select(
                model,
                [*_COMMON, *own],
                f"raw = '' AND item_id IN ({chunk_ids})",
                params,
                "ORDER BY item_id, position, id",
                conn=conn,
            )  # fmt: skip
            for model, (_, own) in _ATTACHED.items()
        }
        yield chunk, attached
        if batches is None and len(chunk) < EXPORT_CHUNK:
            return


_DONE = object()


def _read_ahead(make: Callable[[Any], Iterator[Any]]) -> Iterator[Any]:
    """Items of ``make(conn)``, produced one step ahead in a thread: while the caller turns one
    chunk into output, the next is read, so the database server works alongside Python. The thread uses this thread's database
    connection, so it sees the same transaction; the caller must not use the connection until
    the iteration ends, which is true of an export's item stream."""
    conn = connections[DEFAULT_DB_ALIAS]
    handoff: queue.Queue[Any] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def run() -> None:
        try:
            for value in make(conn):
                handoff.put((value, None))
                if stop.is_set():
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            handoff.put((_DONE, exc))
            return
        handoff.put((_DONE, None))

    conn.inc_thread_sharing()
    worker = threading.Thread(target=run, name="export-read-ahead", daemon=True)
    worker.start()
    try:
        while True:
            value, error = handoff.get()
            if error is not None:
                raise error
            if value is _DONE:
                return
            yield value
    finally:
        stop.set()
        while worker.is_alive():  # let a blocked put finish, then the thread sees ``stop``
            try:
                handoff.get(timeout=0.05)
            except queue.Empty:
                pass
        worker.join()
        conn.dec_thread_sharing()


def _export_items(
    project: Project,
    status: str | None,
    image_paths: dict[str, str],
    item_ids: frozenset[int] | None = None,
) -> Iterator[ItemRecord]:
    """Items in order with what their own records hold, read a chunk ahead."""
    seen_refs: dict[Any, list[ImageRef]] = {}

    def refs_of(text: Any) -> list[ImageRef]:
        """Image refs from the stored JSON, decoded once per distinct list."""
        if text in seen_refs:
            return seen_refs[text]
        refs = image_refs_expand(orjson.loads(text) if isinstance(text, str | bytes) else text)
        for ref in refs:
            if ref.get("sha256"):
                image_paths.setdefault(ref["path"], ref["sha256"])
        images = _image_refs(refs)
        if isinstance(text, str) and len(seen_refs) < 5000:
            seen_refs[text] = images
        return images

    if connection.vendor == "postgresql":  # the server works while this thread writes
        chunks = _read_ahead(lambda conn: _item_chunks(conn, project, status, item_ids))
    else:  # SQLite reads under the GIL for the most part: a thread would only add switching
        chunks = _item_chunks(connection, project, status, item_ids)
    for chunk, attached in chunks:
        external = {row[0]: row[1] for row in chunk}
        nested: dict[int, dict[type, list[AttachmentRecord]]] = {}
        for model, rows in attached.items():
            for pk, record in _attached_records(model, rows, external):
                nested.setdefault(pk, {}).setdefault(model, []).append(record)
        for row in chunk:
            values = dict(zip(_ITEM_FIELDS, row[1:-1], strict=True))
            values["images"] = refs_of(values.pop("image_refs"))
            own_records = nested.get(row[0], {})
            rec = ItemRecord(
                **values,
                responses=own_records.get(Response, []),  # type: ignore[arg-type]
                plans=own_records.get(Plan, []),  # type: ignore[arg-type]
                trajectories=own_records.get(Trajectory, []),  # type: ignore[arg-type]
            )
            if row[-1]:  # long strings stored once: put their current values back
                rec.raw = fill_holes(rec.raw, row[-1], _record_hole_value(rec))
            yield rec


def _export_attachments(
    project: Project,
    status: str | None,
    image_paths: dict[str, str],
    item_ids: frozenset[int] | None = None,
) -> Iterator[AttachmentRecord]:
    """Records that came from their own files (answers, predictions, runs), in item order."""
    for model, (_, own) in _ATTACHED.items():
        rows = model.objects.filter(item__project=project).exclude(raw="")
        if status:
            rows = rows.filter(item__status=status)
        rows = rows.order_by("item__position", "item_id", "position", "id")
        external = dict(rows.values_list("item_id", "item__external_id").distinct())
        values: Iterable[tuple[Any, ...]] = rows.values_list(*_COMMON, *own)
        if item_ids is not None:  # item_id is the first column
            values = (row for row in values if row[0] in item_ids)
        for _, rec in _attached_records(model, values, external):
            for image in getattr(rec, "images", []):
                image_paths.setdefault(image.path, "")
            yield rec


def dataset_export(
    *,
    project: Project,
    out: Path,
    status: str | None = None,
    copy_images: bool = True,
    item_ids: Collection[int] | None = None,
    fmt: Any = None,
) -> list[Path]:
    """Write the project's items (optionally only those with ``status``, only ``item_ids``)
    in its format (or with ``fmt``, a writer of an interchange format: ``write``), streaming
    from the database a chunk at a time. Returns the files written."""
    if status is not None and status not in ItemStatus.values:
        raise ValidationFailed(
            f"unknown status {status!r}; choose one of {', '.join(ItemStatus.values)}"
        )
    fmt = fmt or get_format(project.data_format)
    out = Path(out)
    item_images: dict[str, str] = {}
    run_images: dict[str, str] = {}
    selected = frozenset(item_ids) if item_ids is not None else None
    # A format whose benchmark finds images by name (Agentic-MME) says where it put each.
    names: dict[str, str] | None = {} if getattr(fmt, "NAMES_IMAGES", False) else None
    written = list(
        fmt.write(
            out,
            _export_items(project, status, item_images, selected),
            _export_attachments(project, status, run_images, selected),
            **({"image_names": names} if names is not None else {}),
        )
    )
    if names is not None:
        item_images = {new: item_images.get(old, "") for new, old in names.items()}
    targets = {**run_images, **item_images}
    if copy_images and targets:
        _copy_images(project, out.parent if out.suffix else out, targets)
    if copy_images and project.benchmark.offers.audio_inputs:  # kinds whose items name audio
        _copy_audio(project, out.parent if out.suffix else out, status, selected)
    return written


def _copy_audio(
    project: Project, root: Path, status: str | None, item_ids: frozenset[int] | None
) -> None:
    """Copy the stored audio files the exported items name to ``root/data/<name>`` (m&m's
    layout, where the import finds them again)."""
    rows = Item.objects.filter(project=project)
    if status:
        rows = rows.filter(status=status)
    wanted: dict[str, str] = {}
    for pk, refs in rows.values_list("pk", "audio_refs"):
        if item_ids is not None and pk not in item_ids:
            continue
        for ref in refs or []:
            if isinstance(ref, dict) and ref.get("sha256") and ref.get("path"):
                wanted.setdefault(str(ref["path"]), ref["sha256"])
    if not wanted:
        return
    files = dict(
        AudioFile.objects.filter(projects=project, sha256__in=set(wanted.values())).values_list(
            "sha256", "file"
        )
    )
    base = (root / RELEASE_AUDIO_DIR).resolve()
    for name, sha in wanted.items():
        target = (base / name).resolve()
        if sha not in files or not target.is_relative_to(base) or target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with default_storage.open(files[sha], "rb") as src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst)


def _copy_images(project: Project, root: Path, image_paths: dict[str, str]) -> None:
    """Copy each image to ``root/<path>`` (``image_paths``: {path: sha256, or "" for a run's
    image, looked up by its path})."""
    files = dict(Image.objects.filter(projects=project).values_list("sha256", "file"))
    run_refs: dict[str, str] = {}
    for model in (Trajectory,):
        for refs in model.objects.filter(item__project=project).values_list(
            "image_refs", flat=True
        ):
            for ref in refs:
                if ref.get("sha256"):
                    run_refs[ref["path"]] = ref["sha256"]
    root = root.resolve()
    for rel, sha in image_paths.items():
        sha = sha or run_refs.get(rel, "")
        target = (root / rel).resolve()
        if not sha or sha not in files or not target.is_relative_to(root) or target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with default_storage.open(files[sha], "rb") as src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst)


# --------------------------------------------------------------------------- projects


# --------------------------------------------------------------------------- jobs


# =========================================================================== web import/export
# Added for the import and export pages and API: starting an import job from an upload, and
# packing an export into one downloadable file. Nothing above is changed by this section.


#: Interchange formats an upload may be read in instead of the project's own.
INTERCHANGE_SOURCES = (label_studio.NAME, *tabular.NAMES)
#: The import source of an upload of images only, for items already here
#: (``dataset_images_attach``).
IMAGES_ONLY = "images"


def _interchange_reader(params: dict[str, Any]) -> Any:
    """A fresh reader of the interchange format an import job's ``params`` name, or None."""
    source = params.get("source") or ""
    if source == label_studio.NAME:
        return label_studio.Reader(params.get("mapping") or "")
    if source in tabular.NAMES:
        return tabular.Table(source, params.get("mapping") or "")
    return None


def _interchange_params(
    project: Project, source: str, mapping: str, task: str, labels: str, user_map: str = ""
) -> dict[str, Any]:
    """The job params of an interchange upload, checked: a bad mapping, a task that cannot
    take annotations, labels that do not map onto its values or a user map naming anyone
    but a member who may judge raise ValidationFailed."""
    if source == IMAGES_ONLY:
        if mapping or task or labels or user_map:
            raise ValidationFailed("source: images for items already here take no mapping")
        return {"source": IMAGES_ONLY}
    if source not in INTERCHANGE_SOURCES:
        if mapping or task or labels or user_map:
            raise ValidationFailed(
                "source: a mapping, a judgment task, labels and a user map go with Label "
                "Studio JSON (a mapping also with JSON Lines and CSV)"
            )
        return {}
    if (task or labels or user_map) and source != label_studio.NAME:
        raise ValidationFailed("task: annotations come only with Label Studio JSON")
    if labels and not task:
        raise ValidationFailed("labels: a label mapping goes with a judgment task")
    if user_map and not task:
        raise ValidationFailed("user_map: a user map goes with a judgment task")
    try:
        label_studio.parse_mapping(mapping)
    except FormatError as exc:
        raise ValidationFailed(f"mapping: {exc}") from None
    try:
        parsed = label_studio.parse_labels(labels)
        users = label_studio.parse_user_map(user_map)
    except FormatError as exc:
        raise ValidationFailed(f"{exc.field or 'labels'}: {exc.message}") from None
    if task:
        interop_hook("label_studio.judgments_check")(
            project=project, task_name=task, labels=parsed, user_map=users
        )
    params = {"source": source, "mapping": mapping, "task": task, "labels": labels}
    if user_map:
        params["user_map"] = user_map
    return params


def import_upload_start(
    *,
    project: Project,
    user: AnyUser,
    upload: UploadedFile,
    source: str = "",
    mapping: str = "",
    task: str = "",
    labels: str = "",
    user_map: str = "",
) -> Job:
    """Store an uploaded file (or safely unpack a .zip of a dataset folder) under
    MEDIA_ROOT/imports/<job id>/ and start an import job for it (the job pipeline enqueues it
    after commit). ``source`` "label-studio", "jsonl" or "csv" reads the upload in that
    interchange format with the field ``mapping`` instead of the project's format; with
    Label Studio, ``task`` names the judgment task its annotations become, and ``labels``
    maps its choices onto the task's values and ``user_map`` Label Studio's user ids onto
    members (see ``import_dataset``). Raises ValidationFailed for input a user can fix,
    Forbidden for users who may not import."""
    # Allowed first: the checks below say who is a member who may judge.
    permissions.require(user=user, project=project, action="import")
    interchange = _interchange_params(project, source, mapping, task, labels, user_map)
    if not isinstance(user, User):  # members only, so never anonymous here
        raise Forbidden("log in to import")
    max_bytes = settings.BENCHWRIGHT_MAX_UPLOAD_BYTES
    if not upload or not upload.size:
        raise ValidationFailed("the uploaded file is empty")
    if upload.size > max_bytes:
        raise ValidationFailed(
            f"the file is {upload.size / 1e6:.1f} MB; the limit is {max_bytes / 1e6:.1f} MB"
        )
    filename = safe_filename(Path(upload.name or "upload").name, "upload")
    # Unpack and check with no transaction open (on SQLite a transaction holds the write
    # lock); the job pipeline then creates the job and the staging folder becomes its folder.
    with place_uploads(IMPORT_AREA, UploadBudget(max_bytes=max_bytes)) as placed:
        upload.seek(0)
        if zipfile.is_zipfile(upload):
            path = placed.add_zip(upload, archive=Path(upload.name or filename).name)
        elif filename.lower().endswith(".zip"):
            raise ValidationFailed(f"{filename}: the file is named .zip but is not a zip archive")
        else:
            path = placed.add_file(upload, filename)

        def claim(folder: Path) -> dict[str, Any]:
            placed.move_to(folder)
            return {"path": str(placed.final(path))}

        return job_start(
            kind=IMPORT_KIND,
            user=user,
            project=project,
            params={
                "project_id": project.pk,
                "path": "",
                "filename": filename,
                **interchange,
            },
            uploads=claim,
        )


def dataset_import_job(*, job: Job, progress: Progress) -> dict[str, Any]:
    """The import kind's runner: one pass that reads, checks and writes each chunk of records
    in one transaction (all or nothing: a bad record raises FormatError naming file, record
    and field, and nothing is written). How many records were written so far is reported
    through the job's progress callback: on PostgreSQL the poll reads it while the write is
    under way; on SQLite it shows when the write commits (see ``benchmark.jobs.services.
    JobProgress``). The total is not known before the end: records are not read twice."""
    project = Project.objects.get(pk=job.params["project_id"])
    path = Path(job.params["path"])
    if job.params.get("source") == IMAGES_ONLY:
        progress(progress=0, message="attaching images")
        return dataset_images_attach(project=project, path=path).as_dict()
    fmt: Any = _interchange_reader(job.params) or get_format(project.data_format)
    done = [0]

    def report(count: int) -> None:
        done[0] = count
        progress(progress=count, message="writing")

    progress(progress=0, message="writing")
    task = job.params.get("task") or ""
    with transaction.atomic() if task else contextlib.nullcontext():
        result = dataset_import(project=project, path=path, progress=report, fmt=fmt).as_dict()
        if task:  # annotations as judgments, with the items or not at all
            result["judgments"] = interop_hook("label_studio.judgments_import")(
                project=project,
                annotations=fmt.annotations,
                task_name=task,
                labels=label_studio.parse_labels(job.params.get("labels") or ""),
                user_map=label_studio.parse_user_map(job.params.get("user_map") or ""),
            )
    progress(progress=done[0], total=done[0], message="written")
    return result


@dataclass
class ExportFile:
    """An export ready to send: an open file (its folder is already removed; POSIX keeps the
    open file readable, so closing the handle frees it), or, when ``handle`` is None, the
    file's bytes as ``chunks`` produced while the records are read (nothing on disk)."""

    handle: IO[bytes] | None
    filename: str
    content_type: str
    chunks: Iterator[bytes] | None = None


_CONTENT_TYPES = {
    ".jsonl": "application/x-ndjson",
    ".json": "application/json",
    ".zip": "application/zip",
}


def dataset_export_file(
    *,
    project: Project,
    user: AnyUser,
    status: str | None = None,
    include_images: bool = False,
    item_ids: Collection[int] | None = None,
    name_suffix: str = "",
    stream: bool = False,
    fmt: Any = None,
) -> ExportFile:
    """Export the project (optionally one status) in its format (or with ``fmt``, a writer
    of an interchange format such as :func:`label_studio_writer`'s, always zipped) into a
    temporary folder and return one file: the single file written (e.g. ATP's .jsonl), or a
    .zip of everything (multi-file formats, or when images are included). With ``stream``,
    an export that is one JSON Lines file in a format that can stream it (ATP-Bench's
    ``data.jsonl``) comes as ``chunks`` instead, the same bytes produced while the items are
    read."""
    permissions.require(user=user, project=project, action="export")
    base = slugify(project.name) or f"project-{project.pk}"
    if status:
        base = f"{base}-{status}"
    if name_suffix:
        base = f"{base}-{name_suffix}"
    if fmt is not None:
        base = f"{base}-{getattr(fmt, 'name', 'export')}"
    if stream and not include_images and fmt is None:
        streamed = _export_stream(project, status, item_ids, base)
        if streamed is not None:
            return streamed
    tmp = Path(tempfile.mkdtemp(prefix="benchwright-export-"))
    try:
        out = tmp / base
        out.mkdir()
        dataset_export(
            project=project,
            out=out,
            status=status,
            copy_images=include_images,
            item_ids=item_ids,
            fmt=fmt,
        )
        files = sorted(p for p in tmp.rglob("*") if p.is_file())
        if len(files) == 1 and not include_images and fmt is None:
            single = files[0]
            suffix = single.suffix or ".txt"
            return ExportFile(
                handle=single.open("rb"),
                filename=f"{base}{suffix}",
                content_type=_CONTENT_TYPES.get(suffix, "application/octet-stream"),
            )
        archive = tmp / f"{base}.zip"
        with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for path in files:
                zf.write(path, arcname=str(path.relative_to(tmp)))
        return ExportFile(
            handle=archive.open("rb"), filename=archive.name, content_type="application/zip"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def label_studio_writer(
    *, project: Project, mapping: str = "", with_judgments: str = "", image_base_url: str = ""
) -> label_studio.Writer:
    """The writer of a Label Studio export of ``project``: its items under ``mapping``, with
    the judgments of the task named ``with_judgments`` as annotations, image paths as URLs
    under ``image_base_url``. ValidationFailed naming the option that is wrong."""
    judgments, choices = None, []
    if with_judgments:
        judgments, choices = interop_hook("label_studio.judgments_export")(
            project=project, task_name=with_judgments
        )
    try:
        return label_studio.Writer(mapping, judgments, choices, image_base_url=image_base_url)
    except FormatError as exc:
        raise ValidationFailed(f"{exc.field or 'mapping'}: {exc.message}") from None


def _export_stream(
    project: Project, status: str | None, item_ids: Collection[int] | None, base: str
) -> ExportFile | None:
    """The export as chunks, when the project's format streams (``fmt.stream``) and the items
    selected all live in one ``.jsonl`` file with a safe name (what ``dataset_export`` would
    write as its only file); None otherwise. One query decides."""
    fmt: Any = get_format(project.data_format)
    streamer = getattr(fmt, "stream", None)
    if streamer is None:
        return None
    rows = project.items.order_by()
    if status:
        rows = rows.filter(status=status)
    if item_ids is None:
        names = list(rows.values_list("source_file", flat=True).distinct()[:2])
    else:  # in Python: a selection may hold more ids than a statement takes parameters
        wanted = frozenset(item_ids)
        names = list({name for pk, name in rows.values_list("id", "source_file") if pk in wanted})
    if len(names) > 1:
        return None
    name = (names[0] if names else "") or getattr(fmt, "DATA_FILE", "")
    parts = Path(name.replace("\\", "/")).parts
    if not name.endswith(".jsonl") or Path(name).is_absolute() or ".." in parts:
        return None
    selected = frozenset(item_ids) if item_ids is not None else None
    items = _export_items(project, status, {}, selected)
    return ExportFile(
        handle=None,
        filename=f"{base}.jsonl",
        content_type=_CONTENT_TYPES[".jsonl"],
        chunks=streamer(items),
    )
