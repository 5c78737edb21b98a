"""Scoring uploaded model answers of an interleaved project against its verified ground truth.

Nothing of the answers is stored: uploads up to INLINE_BYTES are scored in the request; larger
ones (up to MAX_UPLOAD_MB) are kept on disk only until a scoring Job has read them, and the
figures are the job's result. The figures and their definitions come from
``benchmark.metrics.tag_scores``; this module finds the project's items, their verified
ground-truth answers (the newest saved version of the ground-truth response, else its
imported text), LLM-I image-number constraints and input image counts, and matches each
uploaded answer to its item.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db.models import OuterRef, Subquery

from annotation.tag_review.models import ResponseVersion
from benchmark import permissions
from benchmark.exceptions import Forbidden, ValidationFailed
from benchmark.formats.base import FormatError
from benchmark.jobs import services as job_services
from benchmark.jobs import uploads as job_uploads
from benchmark.metrics.tag_scores import (
    AnswerRecord,
    ItemIndex,
    ItemInfo,
    ResolvedAnswer,
    read_answer_file,
    score_answers,
)
from benchmark.models import Item, ItemStatus, Job, Origin, Project, Response
from benchmark.tags import Syntax, builtin_toolset, parse_image_num
from benchmark.toolsets.specs import tag_toolset
from benchmark.typing import AnyUser, User
from review import job_names

#: Uploads up to this size are scored in the request (figures in the same response, nothing
#: written); larger ones run as a job with a progress bar, up to MAX_UPLOAD_MB.
INLINE_BYTES = 2 * 1024 * 1024
SCORE_KIND = job_names.ANSWERS_SCORE_KIND
MAX_FILES = 20
#: How many unknown item ids the result lists.
UNKNOWN_SHOWN = 10


def ground_truth_texts(*, project: Project) -> dict[str, str]:
    """``{external id: text}`` of the verified items' ground-truth answers: per item its
    first ground-truth response, as its newest saved version (one query)."""
    latest = (
        ResponseVersion.objects.filter(response=OuterRef("pk")).order_by("-number").values("text")
    )
    rows = (
        Response.objects.filter(
            item__project=project,
            item__status=ItemStatus.VERIFIED,
            origin=Origin.GROUND_TRUTH,
        )
        .annotate(latest_text=Subquery(latest[:1]))
        .order_by("item_id", "position", "id")
        .values_list("item__external_id", "text", "latest_text")
    )
    out: dict[str, str] = {}
    for external_id, text, latest_text in rows:
        if external_id not in out:
            out[external_id] = latest_text if latest_text is not None else text
    return out


def _image_num(value: Any) -> Any:
    if value is None:
        return None
    try:
        parse_image_num(value)
    except ValueError:
        return None
    return value


def _items(project: Project, *, only_verified: bool) -> tuple[ItemIndex, dict[str, ItemInfo]]:
    rows = Item.objects.filter(project=project)
    if only_verified:
        rows = rows.filter(status=ItemStatus.VERIFIED)
    values = list(
        rows.order_by("position", "id").values_list(
            "external_id", "source_file", "query", "constraints", "image_refs"
        )
    )
    gold = ground_truth_texts(project=project)
    llmi = project.benchmark.image_count_rule
    infos: dict[str, ItemInfo] = {}
    for external_id, _, _, constraints, refs in values:
        infos[external_id] = ItemInfo(
            gold=gold.get(external_id),
            image_num=_image_num((constraints or {}).get("image_num")) if llmi else None,
            input_images=sum(
                1 for r in refs or [] if isinstance(r, dict) and r.get("role") == "input"
            )
            if llmi
            else 0,
        )
    return ItemIndex((e, s, q) for e, s, q, _, _ in values), infos


def _tools(project: Project) -> tuple[dict[str, Any] | None, list[str]]:
    rows = tag_toolset(project.toolset)
    if rows:
        return rows, list(rows)
    return None, list(builtin_toolset(cast(Syntax, project.tag_syntax)))


def read_uploads(
    files: Sequence[tuple[str, bytes]], *, max_files: int | None = MAX_FILES
) -> list[AnswerRecord]:
    """Every answer of every ``(file name, content)``; a bad file raises ValidationFailed
    naming file, line and field."""
    if not files:
        raise ValidationFailed("choose at least one answer file")
    if max_files is not None and len(files) > max_files:
        raise ValidationFailed(f"{len(files)} files; at most {max_files} at a time")
    records: list[AnswerRecord] = []
    for name, data in files:
        try:
            records.extend(read_answer_file(name, data))
        except FormatError as exc:
            raise ValidationFailed(str(exc)) from None
    return records


def answers_score(
    *,
    project: Project,
    records: Sequence[AnswerRecord],
    only_verified: bool = False,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """The figures of ``benchmark.metrics.tag_scores.score_answers`` for answers read with
    ``read_uploads``, plus what could not be matched: answers naming items the project does
    not have (or, with ``only_verified``, items that are not verified). A model answering
    the same item twice raises ValidationFailed naming both places."""
    if not project.benchmark.offers.score_answers:
        raise ValidationFailed(
            "only interleaved projects (ATP-Bench, LLM-I) have tool tags to score"
        )
    syntax = cast(Syntax, project.tag_syntax)
    index, infos = _items(project, only_verified=only_verified)
    resolved: list[ResolvedAnswer] = []
    unknown: list[str] = []
    first_at: dict[tuple[str, str], AnswerRecord] = {}
    files: dict[str, dict[str, Any]] = {}
    for record in records:
        entry = files.setdefault(record.file, {"file": record.file, "n_answers": 0, "models": []})
        entry["n_answers"] += 1
        if record.model not in entry["models"]:
            entry["models"].append(record.model)
        item_id = index.resolve(record)
        if item_id is None:
            unknown.append(record.label)
            continue
        key = (record.model, item_id)
        if key in first_at:
            first = first_at[key]
            raise ValidationFailed(
                f"{record.file}, {record.where}: model {record.model!r} answers item {item_id} "
                f"a second time (first in {first.file}, {first.where}); keep one answer per "
                "item and model"
            )
        first_at[key] = record
        resolved.append(ResolvedAnswer(record.model, item_id, record.text))
    toolset, tool_names = _tools(project)
    result = score_answers(
        resolved, infos, syntax=syntax, toolset=toolset, tools=tool_names, progress=progress
    )
    result.update(
        {
            "project": project.name,
            "only_verified": only_verified,
            "files": list(files.values()),
            "n_read": len(records),
            "n_scored": len(resolved),
            "n_unknown": len(unknown),
            "unknown_ids": unknown[:UNKNOWN_SHOWN],
            "tool_order": [t.lower() for t in tool_names],
        }
    )
    return result


def _ordered_block(block: dict[str, Any], tool_order: list[str]) -> dict[str, Any]:
    rank = {t: i for i, t in enumerate(tool_order)}

    def tools_first(items: dict[str, Any]) -> dict[str, Any]:
        return dict(sorted(items.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0])))

    out = dict(block)
    for key in ("per_tool", "adoption"):
        if isinstance(out.get(key), dict):
            out[key] = tools_first(out[key])
    calls = out.get("calls_per_answer")
    if isinstance(calls, dict) and isinstance(calls.get("histogram"), dict):
        histogram = calls["histogram"]
        ordered = sorted(histogram.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else 0)
        out["calls_per_answer"] = {**calls, "histogram": dict(ordered)}
    return out


def answers_result_ordered(result: dict[str, Any]) -> dict[str, Any]:
    """A result read back from a job's row in the order ``answers_score`` made it: PostgreSQL's
    jsonb keeps no key order, so models by name, tools in the toolset's order (then the others
    by name) and the histogram by number of calls."""
    order = list(result.get("tool_order") or [])
    out = dict(result)
    models = result.get("models") or {}
    out["models"] = {name: _ordered_block(models[name], order) for name in sorted(models)}
    for key in ("overall", "ground_truth"):
        if isinstance(result.get(key), dict):
            out[key] = _ordered_block(result[key], order)
    return out


# =========================================================================== as a job


def max_score_bytes() -> int:
    """The largest upload (all files together) the page takes."""
    return int(settings.BENCHWRIGHT_MAX_UPLOAD_BYTES)


def _require_scorable(project: Project, user: AnyUser) -> User:
    permissions.require(user=user, project=project, action="score")
    if not isinstance(user, User):
        raise Forbidden("log in to score answers")
    if not project.benchmark.offers.score_answers:
        raise ValidationFailed(
            "only interleaved projects (ATP-Bench, LLM-I) have tool tags to score"
        )
    return user


UPLOAD_AREA = job_names.ANSWERS_UPLOAD_AREA


def uploads_check(uploads: Sequence[UploadedFile]) -> int:
    """The uploads' total size; ValidationFailed for none, too many or too large."""
    uploads = [u for u in uploads if u is not None]
    if not uploads:
        raise ValidationFailed("choose at least one answer file")
    if len(uploads) > MAX_FILES:
        raise ValidationFailed(f"{len(uploads)} files; at most {MAX_FILES} at a time")
    size = sum(u.size or 0 for u in uploads)
    limit = max_score_bytes()
    if size > limit:
        raise ValidationFailed(
            f"the files add up to {size / 2**20:.1f} MB; the page scores up to "
            f"{limit // 2**20} MB at a time (use fewer files, or `manage.py score_responses` "
            "for larger runs)"
        )
    return size


def answers_score_start(
    *,
    project: Project,
    user: AnyUser,
    uploads: Sequence[UploadedFile],
    only_verified: bool = False,
) -> Job:
    """Keep the uploaded answer files under MEDIA_ROOT/answers-upload/<job>/ and start the
    scoring job (the job pipeline enqueues it after commit and removes the files once the job
    has run)."""
    reviewer = _require_scorable(project, user)
    uploads_check(uploads)
    names = [Path(u.name or "answers").name for u in uploads]
    label = ", ".join(names)[:200]
    # Write the files with no transaction open (on SQLite a transaction holds the write
    # lock); the job pipeline then creates the job and the staging folder becomes its folder.
    budget = job_uploads.UploadBudget(max_bytes=max_score_bytes())
    with job_uploads.place_uploads(UPLOAD_AREA, budget) as placed:
        placed_files: list[tuple[str, Path]] = []
        for n, (upload, name) in enumerate(zip(uploads, names, strict=True)):
            stored = f"{n}-{job_uploads.safe_filename(name, 'answers')}"
            placed_files.append((name, placed.add_file(upload, stored)))

        def claim(root: Path) -> dict[str, Any]:
            placed.move_to(root)
            files = [[name, str(placed.final(path))] for name, path in placed_files]
            return {"files": files, "path": str(root)}

        return job_services.job_start(
            kind=SCORE_KIND,
            user=reviewer,
            project=project,
            params={"project_id": project.pk, "name": label, "only_verified": only_verified},
            uploads=claim,
        )


def answers_score_job(*, job: Job, progress: Callable[..., None] | None = None) -> dict[str, Any]:
    """The scoring job's work: read every kept file (a bad one raises ValidationFailed naming
    file, line and field), then score; the result is ``answers_score``'s."""
    tick = progress or (lambda **k: None)
    project = Project.objects.get(pk=job.params["project_id"])
    files = job.params.get("files") or []
    records: list[AnswerRecord] = []
    for n, (name, path) in enumerate(files, start=1):
        tick(progress=0, message=f"reading {name} ({n} of {len(files)})")
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise ValidationFailed(f"{name}: the uploaded file cannot be read ({exc})") from None
        records.extend(read_uploads([(name, data)], max_files=None))
    tick(progress=0, total=len(records), message="scoring")
    return answers_score(
        project=project,
        records=records,
        only_verified=bool(job.params.get("only_verified")),
        progress=lambda n: tick(progress=min(n, len(records))),
    )
