"""Writes to the benchmark domain. Services validate, own their transactions, and are the only
place that writes; views and serializers call them."""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.base import ContentFile
from django.db import transaction
from django.utils import timezone

from benchmark.exceptions import ValidationFailed
from benchmark.formats import (
    AttachmentRecord,
    FormatError,
    ImageRef,
    ItemRecord,
    PlanRecord,
    ResponseRecord,
    TrajectoryRecord,
    get_format,
)
from benchmark.imaging import ImageRejected, inspect_image, make_thumbnail
from benchmark.models import (
    Image,
    Item,
    ItemStatus,
    Job,
    JobStatus,
    Membership,
    Plan,
    Project,
    Response,
    Role,
    Trajectory,
)

BATCH_SIZE = 500

# --------------------------------------------------------------------------- images


def image_store(*, data: bytes, name: str = "", project: Project | None = None) -> Image:
    """Store image bytes once by sha256 (verified by Pillow), with a thumbnail."""
    try:
        info = inspect_image(
            data,
            max_pixels=settings.BENCHWRIGHT_MAX_IMAGE_PIXELS,
            max_bytes=settings.BENCHWRIGHT_MAX_UPLOAD_BYTES,
        )
    except ImageRejected as exc:
        raise ValidationFailed(f"{name or 'upload'}: {exc}") from None
    image = Image.objects.filter(sha256=info.sha256).first()
    if image is None:
        image = Image(
            sha256=info.sha256,
            format=info.format,
            width=info.width,
            height=info.height,
            size_bytes=info.size_bytes,
        )
        shard = f"{info.sha256[:2]}/{info.sha256}"
        image.file.save(f"{shard}.{info.extension}", ContentFile(data), save=False)
        try:
            image.thumbnail.save(f"{shard}.png", ContentFile(make_thumbnail(data)), save=False)
        except Exception:  # noqa: BLE001 - a thumbnail is a convenience; the image is kept
            pass
        image.save()
    if project is not None:
        image.projects.add(project)
    return image


# --------------------------------------------------------------------------- import


@dataclass
class ImportResult:
    items_created: int = 0
    items_skipped: int = 0
    attachments_created: int = 0
    attachments_skipped: int = 0
    images_stored: int = 0
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "items_created": self.items_created,
            "items_skipped": self.items_skipped,
            "attachments_created": self.attachments_created,
            "attachments_skipped": self.attachments_skipped,
            "images_stored": self.images_stored,
            "warnings": self.warnings[:100],
        }


class _ImageResolver:
    """Turns ImageRefs into stored images, reading and hashing each file once per import."""

    def __init__(self, root: Path, project: Project, result: ImportResult) -> None:
        self.root = root
        self.project = project
        self.result = result
        self.by_path: dict[str, str | None] = {}
        self.shas: set[str] = set()

    def resolve(self, refs: Iterable[ImageRef], record: str) -> list[dict[str, Any]]:
        out = []
        for ref in refs:
            sha = self._sha_for(ref.path, record)
            out.append(
                {"sha256": sha, "role": ref.role, "path": ref.path, "position": ref.position}
            )
        return out

    def _sha_for(self, rel: str, record: str) -> str | None:
        if rel in self.by_path:
            return self.by_path[rel]
        full = (self.root / rel).resolve()
        sha: str | None = None
        if not full.is_relative_to(self.root.resolve()):
            self.result.warnings.append(f"record {record}: image path {rel!r} leaves the dataset")
        elif not full.is_file():
            self.result.warnings.append(f"record {record}: image {rel!r} not found")
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


def _attachment_row(
    rec: AttachmentRecord, item_id: int, images: _ImageResolver
) -> Response | Plan | Trajectory:
    common = {"item_id": item_id, **_attachment_fields(rec)}
    if isinstance(rec, ResponseRecord):
        return Response(text=rec.text, extra=rec.extra, **common)
    if isinstance(rec, PlanRecord):
        return Plan(
            form=rec.form,
            steps=rec.steps,
            code=rec.code,
            is_alternative=rec.is_alternative,
            **common,
        )
    if isinstance(rec, TrajectoryRecord):
        return Trajectory(
            steps=rec.steps,
            checkpoints=rec.checkpoints,
            ordering_constraints=rec.ordering_constraints,
            efficiency=rec.efficiency,
            final_answer=rec.final_answer,
            image_refs=images.resolve(rec.images, f"{rec.item_id}/{rec.key}"),
            **common,
        )
    raise TypeError(f"unexpected attachment {type(rec).__name__}")  # pragma: no cover


def _item_row(rec: ItemRecord, project: Project, images: _ImageResolver, position: int) -> Item:
    status = rec.status if rec.status in ItemStatus.values else ItemStatus.DRAFT
    item = Item(
        project=project,
        external_id=rec.external_id,
        position=position,
        source_file=rec.source_file,
        query=rec.query,
        modality=rec.modality,
        documents=rec.documents,
        image_refs=images.resolve(rec.images, rec.external_id),
        constraints=rec.constraints,
        expected_answer=rec.expected_answer,
        accepted_variants=rec.accepted_variants,
        match_type=rec.match_type,
        rubric=rec.rubric,
        category=rec.category,
        intent=rec.intent,
        domain=rec.domain,
        level=rec.level,
        status=status if status != ItemStatus.DISCARDED else ItemStatus.DRAFT,
        provenance=rec.provenance or f"imported:{project.data_format}",
        raw=rec.raw,
    )
    if len(rec.external_id) > 255:
        raise FormatError("id is longer than 255 characters", record=rec.external_id[:40])
    return item


def _bulk_insert_items(
    project: Project,
    pending: list[tuple[Item, ItemRecord]],
    id_by_external: dict[str, int],
    result: ImportResult,
    images: _ImageResolver,
) -> None:
    if not pending:
        return
    Item.objects.bulk_create([item for item, _ in pending], batch_size=BATCH_SIZE)
    nested: dict[type, list[Any]] = {Response: [], Plan: [], Trajectory: []}
    for item, rec in pending:
        id_by_external[item.external_id] = item.pk
        for child in [*rec.responses, *rec.plans, *rec.trajectories]:
            row = _attachment_row(child, item.pk, images)
            nested[type(row)].append(row)
    for model, rows in nested.items():
        if rows:
            model.objects.bulk_create(rows, batch_size=BATCH_SIZE)
    result.items_created += len(pending)
    pending.clear()


def dataset_import(
    *,
    project: Project,
    path: Path,
    progress: Any = None,
) -> ImportResult:
    """Import a file or folder in the project's format. All or nothing: a bad record raises
    FormatError naming the record and field, and nothing is written. Records already present
    (same id, or same attachment key) are skipped, so re-importing adds no duplicates."""
    path = Path(path)
    if not path.exists():
        raise FormatError("no such file or folder", file=str(path))
    fmt = get_format(project.data_format)
    root = path if path.is_dir() else path.parent
    result = ImportResult()
    images = _ImageResolver(root, project, result)
    with transaction.atomic():
        id_by_external: dict[str, int] = dict(
            project.items.values_list("external_id", "id")
        )
        existing_ids = set(id_by_external)
        next_position = (project.items.order_by("-position").values_list("position", flat=True).first() or 0) + (1 if existing_ids else 0)
        seen_in_file: set[str] = set()
        pending: list[tuple[Item, ItemRecord]] = []
        attachments: list[AttachmentRecord] = []
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
                if rec.external_id in existing_ids:
                    result.items_skipped += 1
                    continue
                pending.append((_item_row(rec, project, images, next_position), rec))
                next_position += 1
                if len(pending) >= BATCH_SIZE:
                    _bulk_insert_items(project, pending, id_by_external, result, images)
            else:
                attachments.append(rec)
            if progress is not None and count % BATCH_SIZE == 0:
                progress(count)
        _bulk_insert_items(project, pending, id_by_external, result, images)
        _insert_attachments(project, attachments, id_by_external, result, images)
        images.link_project()
    if progress is not None:
        progress(count)
    return result


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
        existing.update(
            model.objects.filter(item__project=project).values_list("item_id", "key")
        )
    rows: dict[type, list[Any]] = {Response: [], Plan: [], Trajectory: []}
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
        row = _attachment_row(rec, item_id, images)
        rows[type(row)].append(row)
        result.attachments_created += 1
    for model, batch in rows.items():
        if batch:
            model.objects.bulk_create(batch, batch_size=BATCH_SIZE)


# --------------------------------------------------------------------------- export


def _image_refs(refs: list[dict[str, Any]]) -> list[ImageRef]:
    return [ImageRef(path=r["path"], role=r["role"], position=r["position"]) for r in refs]


def _response_record(r: Response, external_id: str) -> ResponseRecord:
    return ResponseRecord(
        item_id=external_id,
        key=r.key,
        source_file=r.source_file,
        raw=r.raw,
        origin=r.origin,
        model_name=r.model_name,
        position=r.position,
        text=r.text,
        extra=r.extra,
    )


def _plan_record(p: Plan, external_id: str) -> PlanRecord:
    return PlanRecord(
        item_id=external_id,
        key=p.key,
        source_file=p.source_file,
        raw=p.raw,
        origin=p.origin,
        model_name=p.model_name,
        position=p.position,
        form=p.form,
        steps=p.steps,
        code=p.code,
        is_alternative=p.is_alternative,
    )


def _trajectory_record(t: Trajectory, external_id: str) -> TrajectoryRecord:
    return TrajectoryRecord(
        item_id=external_id,
        key=t.key,
        source_file=t.source_file,
        raw=t.raw,
        origin=t.origin,
        model_name=t.model_name,
        position=t.position,
        steps=t.steps,
        checkpoints=t.checkpoints,
        ordering_constraints=t.ordering_constraints,
        efficiency=t.efficiency,
        final_answer=t.final_answer,
        images=_image_refs(t.image_refs),
    )


def _item_record(item: Item) -> ItemRecord:
    own = lambda rows: [r for r in rows if not r.raw]  # noqa: E731 - kept inside the record
    return ItemRecord(
        external_id=item.external_id,
        source_file=item.source_file,
        raw=item.raw,
        position=item.position,
        query=item.query,
        modality=item.modality,
        documents=item.documents,
        images=_image_refs(item.image_refs),
        constraints=item.constraints,
        expected_answer=item.expected_answer,
        accepted_variants=item.accepted_variants,
        match_type=item.match_type,
        rubric=item.rubric,
        category=item.category,
        intent=item.intent,
        domain=item.domain,
        level=item.level,
        status=item.status,
        provenance=item.provenance,
        responses=[_response_record(r, item.external_id) for r in own(item.responses.all())],
        plans=[_plan_record(p, item.external_id) for p in own(item.plans.all())],
        trajectories=[
            _trajectory_record(t, item.external_id) for t in own(item.trajectories.all())
        ],
    )


def dataset_export(
    *, project: Project, out: Path, status: str | None = None, copy_images: bool = True
) -> list[Path]:
    """Write the project's items (optionally only those with ``status``) in its format,
    streaming from the database. Returns the files written."""
    if status is not None and status not in ItemStatus.values:
        raise ValidationFailed(
            f"unknown status {status!r}; choose one of {', '.join(ItemStatus.values)}"
        )
    fmt = get_format(project.data_format)
    out = Path(out)
    items = project.items.order_by("position", "id").prefetch_related(
        "responses", "plans", "trajectories"
    )
    if status:
        items = items.filter(status=status)
    image_paths: dict[str, str] = {}

    def item_records() -> Iterator[ItemRecord]:
        for item in items.iterator(chunk_size=2000):
            for ref in item.image_refs:
                if ref.get("sha256"):
                    image_paths.setdefault(ref["path"], ref["sha256"])
            yield _item_record(item)

    def attachment_records() -> Iterator[AttachmentRecord]:
        for model, convert in (
            (Response, _response_record),
            (Plan, _plan_record),
            (Trajectory, _trajectory_record),
        ):
            rows = model.objects.filter(item__project=project).exclude(raw="")
            if status:
                rows = rows.filter(item__status=status)
            for row in rows.select_related("item").order_by("item__position", "position", "id"):
                for ref in getattr(row, "image_refs", []):
                    if ref.get("sha256"):
                        image_paths.setdefault(ref["path"], ref["sha256"])
                yield convert(row, row.item.external_id)

    written = list(fmt.write(out, item_records(), attachment_records()))
    if copy_images and image_paths:
        root = out.parent if out.suffix else out
        files = dict(Image.objects.filter(sha256__in=set(image_paths.values())).values_list("sha256", "file"))
        for rel, sha in image_paths.items():
            target = (root / rel).resolve()
            if not target.is_relative_to(root.resolve()) or sha not in files:
                continue
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(Path(settings.MEDIA_ROOT) / files[sha], target)
    return written


# --------------------------------------------------------------------------- projects


def membership_set(*, project: Project, user: AbstractBaseUser, role: str) -> Membership:
    if role not in Role.values:
        raise ValidationFailed(f"unknown role {role!r}")
    membership, _ = Membership.objects.update_or_create(
        project=project, user=user, defaults={"role": role}
    )
    return membership


# --------------------------------------------------------------------------- jobs


def job_create(
    *,
    kind: str,
    user: AbstractBaseUser | None = None,
    project: Project | None = None,
    params: dict[str, Any] | None = None,
    total: int = 0,
) -> Job:
    return Job.objects.create(
        kind=kind, created_by=user, project=project, params=params or {}, total=total
    )


def job_progress(*, job_id: int, progress: int, total: int | None = None, message: str = "") -> None:
    fields: dict[str, Any] = {"progress": progress}
    if total is not None:
        fields["total"] = total
    if message:
        fields["message"] = message[:500]
    Job.objects.filter(pk=job_id).update(**fields)


def job_start(*, job_id: int) -> bool:
    """Mark a queued job running. False when it is not queued (a repeat delivery)."""
    return bool(
        Job.objects.filter(pk=job_id, status=JobStatus.QUEUED).update(
            status=JobStatus.RUNNING, started_at=timezone.now()
        )
    )


def job_finish(*, job_id: int, result: dict[str, Any] | None = None, error: str = "") -> None:
    job = Job.objects.get(pk=job_id)
    job.status = JobStatus.FAILED if error else JobStatus.SUCCEEDED
    job.error = error
    job.result = result or {}
    if not error and job.total:
        job.progress = job.total
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "error", "result", "progress", "finished_at"])
