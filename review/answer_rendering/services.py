"""Rendering model answers (issue 11): the providers configured, starting a rendering job, and
the "render_answers" job's runner.

The runner walks the chosen answers a chunk at a time. Per chunk it reads the answers and
their items' images, skips the answers whose newest rendering is still current (same text,
item images, providers and renderer version, and no call that failed in a way that may pass
another time), and hands the rest to ``benchmark.rendering.BatchRenderer``, which answers
calls from the per-call cache (``ToolCallCache``), executes the others concurrently (code: at
most one program per CPU) and calls back here, on this thread, to store each produced image
(by content hash, linked to the project so judges may send it) and cache each result. Then it
records a ``RenderedAnswer`` per answer whose rendering changed and sets the answer's
``extra["rendered_images"]`` (one sha256 or null per tag, in order: what the judges attach).

Cancelling stops it between two progress reports (at least every half second while calls
run); what was stored stays, and running the job again renders only what is left: finished
answers are current and every executed call is cached. Running it twice gives the same rows.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models import OuterRef, Subquery

from benchmark import permissions
from benchmark.exceptions import Conflict, ValidationFailed
from benchmark.images.services import image_store_inspected
from benchmark.imaging import ImageRejected, inspect_image
from benchmark.jobs import services as job_services
from benchmark.jobs.kinds import Progress
from benchmark.models import Image, Item, Job, JobStatus, Origin, Project, Response
from benchmark.presenters import image_entries
from benchmark.rendering import (
    AnswerInput,
    BatchRenderer,
    CallResult,
    HttpImageSearch,
    ImageEndpoint,
    Limits,
    OpenAIImageEditor,
    OpenAIImageGenerator,
    Outcome,
    Providers,
    Task,
    sandbox_code_runner,
)
from benchmark.rendering.calls import ERROR, FAILED, PLACEHOLDER, RENDERED
from benchmark.rendering.providers import CodeRunner, image_mime
from benchmark.tags import Syntax
from benchmark.typing import User
from review import job_names
from review.answer_rendering.models import RenderedAnswer, ToolCallCache
from review.judges.services import RENDERED_IMAGES, answers_import

log = logging.getLogger(__name__)

RENDER_KIND = job_names.RENDER_KIND
#: Part of every rendering's signature: bump it when a change to the renderer changes what
#: the same answer renders to, so that jobs render current answers again.
RENDERER_VERSION = "1"
#: Answers read, planned and written together.
CHUNK = 50
#: Keys looked up in one query.
LOOKUP_BATCH = 500
MAX_SELECTED_IDS = 10_000

HOW_TO_CONFIGURE = (
    "Set BENCHWRIGHT_IMAGE_GEN_BASE_URL and BENCHWRIGHT_IMAGE_GEN_MODEL (Diffusion), "
    "BENCHWRIGHT_IMAGE_EDIT_BASE_URL and BENCHWRIGHT_IMAGE_EDIT_MODEL (Edit), and "
    "BENCHWRIGHT_IMAGE_SEARCH_URL (Search), each with its _API_KEY if the service needs one, "
    "in the environment of the web server and the worker; see docs/reference/rendering.md."
)


# =========================================================================== providers


def code_runner() -> CodeRunner | None:
    """The sandbox, or None when it is not installed (tests replace this function)."""
    return sandbox_code_runner()


def providers_configured() -> Providers:
    """The providers the settings configure (see docs/reference/rendering.md)."""
    timeout = float(settings.BENCHWRIGHT_RENDER_TIMEOUT)
    generate = edit = search = None
    if settings.BENCHWRIGHT_IMAGE_GEN_BASE_URL and settings.BENCHWRIGHT_IMAGE_GEN_MODEL:
        generate = OpenAIImageGenerator(
            ImageEndpoint(
                base_url=settings.BENCHWRIGHT_IMAGE_GEN_BASE_URL,
                model=settings.BENCHWRIGHT_IMAGE_GEN_MODEL,
                api_key=settings.BENCHWRIGHT_IMAGE_GEN_API_KEY,
                timeout=timeout,
                size=settings.BENCHWRIGHT_IMAGE_GEN_SIZE,
            )
        )
    if settings.BENCHWRIGHT_IMAGE_EDIT_BASE_URL and settings.BENCHWRIGHT_IMAGE_EDIT_MODEL:
        edit = OpenAIImageEditor(
            ImageEndpoint(
                base_url=settings.BENCHWRIGHT_IMAGE_EDIT_BASE_URL,
                model=settings.BENCHWRIGHT_IMAGE_EDIT_MODEL,
                api_key=settings.BENCHWRIGHT_IMAGE_EDIT_API_KEY,
                timeout=timeout,
            )
        )
    if settings.BENCHWRIGHT_IMAGE_SEARCH_URL:
        try:
            search = HttpImageSearch(
                settings.BENCHWRIGHT_IMAGE_SEARCH_URL,
                api_key=settings.BENCHWRIGHT_IMAGE_SEARCH_API_KEY,
                param=settings.BENCHWRIGHT_IMAGE_SEARCH_PARAM or "q",
                timeout=timeout,
                allow_private=settings.BENCHWRIGHT_IMAGE_SEARCH_ALLOW_PRIVATE,
            )
        except ValueError as exc:
            raise ValidationFailed(f"BENCHWRIGHT_IMAGE_SEARCH_URL: {exc}") from None
    return Providers(generate=generate, edit=edit, search=search, code=code_runner())


def providers_summary() -> list[dict[str, str]]:
    """Per tool, what executes it (never a key) and what happens without it: for pages."""
    names = providers_configured().names()
    without = {
        "reference": "always executed: the item's document image at img_index",
        "diffusion": "a labelled placeholder showing the prompt",
        "edit": "the source image with a labelled “edit not executed: <prompt>” card",
        "search": "a labelled placeholder showing the query",
        "code": "a card saying that code execution is not available, showing the program",
    }
    rows = [
        {"tool": "reference", "provider": "the item's documents", "without": without["reference"]}
    ]
    for tool in ("diffusion", "edit", "search", "code"):
        rows.append({"tool": tool, "provider": names[tool], "without": without[tool]})
    return rows


# =========================================================================== starting


def _interleaved(project: Project) -> Syntax:
    if not project.benchmark.offers.render_answers:
        raise ValidationFailed(
            "only interleaved projects (ATP-Bench, LLM-I) have answers with tool calls to render"
        )
    return cast(Syntax, project.tag_syntax)


def _selection(project: Project, params: dict[str, Any]) -> list[int]:
    """The ids of the answers a job renders, in item order: ``response_ids``, or the model
    answers of ``models`` (all models when empty)."""
    rows = Response.objects.filter(item__project=project)
    ids = params.get("response_ids")
    if ids:
        rows = rows.filter(pk__in=[int(i) for i in ids])
    else:
        rows = rows.filter(origin=Origin.MODEL)
        if params.get("models"):
            rows = rows.filter(model_name__in=list(params["models"]))
    return list(
        rows.order_by("item__position", "item_id", "model_name", "id").values_list("pk", flat=True)
    )


def _start_params(
    *,
    project: Project,
    user: User | None,
    models: Sequence[str],
    files: Sequence[tuple[str, bytes]],
    response_ids: Sequence[int],
) -> dict[str, Any]:
    """The job's selection: named answers, or models (those of an upload imported first)."""
    params: dict[str, Any] = {"project_id": project.pk, "models": list(models)}
    if files:
        imported = answers_import(project=project, files=files, user=user)
        if not imported.models:
            shown = ", ".join(imported.unknown[:5])
            raise ValidationFailed(
                f"none of the {len(imported.unknown)} uploaded answers names an item of "
                f"this project ({shown}{', …' if len(imported.unknown) > 5 else ''})"
            )
        params["models"] = list(models) or imported.models
    if response_ids:
        if len(response_ids) > MAX_SELECTED_IDS:
            raise ValidationFailed(f"at most {MAX_SELECTED_IDS} answers at a time")
        params = {"project_id": project.pk, "response_ids": [int(i) for i in response_ids]}
    return params


def rendering_start(
    *,
    project: Project,
    user: User | None,
    models: Sequence[str] = (),
    files: Sequence[tuple[str, bytes]] = (),
    response_ids: Sequence[int] = (),
    workers: int | None = None,
    enqueue: bool = True,
) -> Job:
    """A rendering job over the project's model answers: those of ``models`` (all when none
    is named), or the answers in uploaded answer ``files`` (imported first as the project's
    model answers, as judge runs import them), or the answers ``response_ids``. With
    ``enqueue`` the job pipeline enqueues it after commit (a page); without, the caller runs
    it (``rendering_execute``: the command line). ``user`` None is the command line.
    Conflict while another rendering job of the project is queued or running."""
    if user is not None:
        permissions.require(user=user, project=project, action="score")
    _interleaved(project)
    if workers is not None and not 1 <= workers <= 64:
        raise ValidationFailed(f"workers must be between 1 and 64, got {workers}")
    with transaction.atomic():
        running = (
            Job.objects.select_for_update()
            .filter(
                kind=RENDER_KIND,
                project=project,
                status__in=[JobStatus.QUEUED, JobStatus.RUNNING],
            )
            .first()
        )
        if running is not None:
            raise Conflict(
                f"rendering job #{running.pk} of this project is still {running.status}; wait "
                "for it or cancel it"
            )
        params = _start_params(
            project=project, user=user, models=models, files=files, response_ids=response_ids
        )
        if workers is not None:
            params["workers"] = workers
        selected = _selection(project, params)
        if not selected:
            which = f" of {', '.join(params['models'])}" if params.get("models") else ""
            raise ValidationFailed(
                f"the project has no model answers{which} to render; import some first"
            )
        if response_ids and len(selected) != len(set(response_ids)):
            raise ValidationFailed("some of the chosen answers are not answers of this project")
        if enqueue:
            return job_services.job_start(
                kind=RENDER_KIND, user=user, project=project, params=params, total=len(selected)
            )
        return job_services.job_create(
            kind=RENDER_KIND, user=user, project=project, params=params, total=len(selected)
        )


def rendering_execute(*, job: Job) -> Job:
    """Run a rendering job now, in this process (the command line), through the job
    pipeline's ``job_run``; returns the job as it ended."""
    job_services.job_run(job_id=job.pk)
    return Job.objects.get(pk=job.pk)


# =========================================================================== the runner


def _documents_and_inputs(item: Item) -> tuple[list[str], list[str]]:
    """The sha256 of the item's document and input images in ``img_index`` order (as the
    item page and the tag validator number them)."""
    entries = image_entries(item.image_refs or [], {})
    documents = [e["sha256"] for e in entries if e["role"] == "document"]
    inputs = [e["sha256"] for e in entries if e["role"] == "input"]
    return documents, inputs


def signature_of(answer: AnswerInput, providers: dict[str, str], limits: Limits) -> str:
    blob = json.dumps(
        {
            "v": RENDERER_VERSION,
            "text": answer.text,
            "syntax": answer.syntax,
            "documents": list(answer.documents),
            "inputs": list(answer.inputs),
            "providers": providers,
            "limits": [limits.max_calls, limits.max_code_chars, limits.max_prompt_chars],
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _counts(calls: Sequence[dict[str, Any]]) -> dict[str, int]:
    counts = {RENDERED: 0, PLACEHOLDER: 0, FAILED: 0}
    for call in calls:
        counts[call.get("status", FAILED)] = counts.get(call.get("status", FAILED), 0) + 1
    return counts


@dataclass
class _Cache:
    """The callbacks ``BatchRenderer`` makes on this thread: cache lookups, storing what a
    provider produced, reading the image an edit starts from."""

    project: Project
    linked: set[str] = field(default_factory=set)
    stored: int = 0

    def link(self, images: Sequence[Image]) -> None:
        """Link images to the project (who may see an image follows its projects)."""
        new = [img for img in images if img.sha256 not in self.linked]
        if not new:
            return
        through = Image.projects.through
        through.objects.bulk_create(
            [through(image_id=img.pk, project_id=self.project.pk) for img in new],
            ignore_conflicts=True,
        )
        self.linked.update(img.sha256 for img in new)

    def lookup(self, tasks: Sequence[Task]) -> dict[str, CallResult]:
        keys = [t.key for t in tasks]
        out: dict[str, CallResult] = {}
        images: list[Image] = []
        for start in range(0, len(keys), LOOKUP_BATCH):
            rows = ToolCallCache.objects.filter(key__in=keys[start : start + LOOKUP_BATCH])
            for row in rows.select_related("image"):
                if row.image is not None:
                    images.append(row.image)
                out[row.key] = CallResult(
                    status=row.status,
                    reason=row.reason,
                    message=row.message,
                    image=row.image.sha256 if row.image is not None else None,
                    provider=row.provider,
                    cached=True,
                    detail=row.detail or {},
                )
        self.link(images)
        return out

    def store(self, task: Task, outcome: Outcome) -> CallResult:
        result = outcome.result
        image: Image | None = None
        if outcome.data is not None:
            try:
                image = self._image(outcome.data)
            except ImageRejected as exc:
                result = CallResult(
                    status=FAILED,
                    reason=ERROR,
                    message=f"the {task.tool} tool's output is not a usable image: {exc}",
                    provider=task.provider,
                    detail=result.detail,
                )
            else:
                result = replace(result, image=image.sha256)
        if not result.retry:
            try:
                with transaction.atomic():
                    ToolCallCache.objects.create(
                        key=task.key,
                        tool=task.tool,
                        provider=task.provider[:300],
                        input_sha256=task.input_sha256,
                        status=result.status,
                        reason=result.reason,
                        message=result.message,
                        image=image,
                        detail=result.detail,
                    )
            except IntegrityError:  # cached meanwhile by another job
                pass
        return result

    def _image(self, data: bytes) -> Image:
        if image_mime(data) is None:
            raise ImageRejected("only PNG, JPEG, GIF and WebP images are kept")
        info = inspect_image(
            data,
            max_pixels=settings.BENCHWRIGHT_MAX_IMAGE_PIXELS,
            max_bytes=settings.BENCHWRIGHT_MAX_UPLOAD_BYTES,
        )
        image, _ = image_store_inspected(data=data, info=info, project=self.project)
        self.linked.add(image.sha256)
        self.stored += 1
        return image

    def load(self, sha256: str) -> bytes | None:
        image = Image.objects.filter(sha256=sha256).only("file").first()
        if image is None or not image.file or not image.file.name:
            return None
        try:
            with default_storage.open(image.file.name, "rb") as handle:
                return bytes(handle.read())
        except OSError:
            return None


def _chunks(ids: Sequence[int], n: int) -> Iterator[Sequence[int]]:
    for start in range(0, len(ids), n):
        yield ids[start : start + n]


def _newest(ids: Sequence[int]) -> dict[int, RenderedAnswer]:
    newest = (
        RenderedAnswer.objects.filter(response=OuterRef("pk"))
        .order_by("-created_at", "-id")
        .values("pk")[:1]
    )
    chosen = (
        Response.objects.filter(pk__in=list(ids))
        .annotate(newest=Subquery(newest))
        .values_list("newest", flat=True)
    )
    rows = RenderedAnswer.objects.filter(pk__in=[pk for pk in chosen if pk is not None]).defer(
        "text"
    )
    return {row.response_id: row for row in rows}


def _current(row: RenderedAnswer | None, signature: str) -> bool:
    return (
        row is not None
        and row.signature == signature
        and not any(c.get("retry") for c in row.calls or [])
    )


@dataclass
class _Totals:
    answers: int = 0
    rendered_answers: int = 0
    unchanged: int = 0
    not_rendered: int = 0
    calls: dict[str, int] = field(default_factory=lambda: {RENDERED: 0, PLACEHOLDER: 0, FAILED: 0})


def _record(
    *,
    job: Job,
    rows: dict[int, Response],
    answers: list[AnswerInput],
    outcomes: list[list[CallResult] | str],
    signatures: dict[int, str],
    newest: dict[int, RenderedAnswer],
    totals: _Totals,
) -> None:
    """Keep each answer's rendering (a new row unless it equals the newest) and its images."""
    new_rows: list[RenderedAnswer] = []
    images: dict[int, list[str | None]] = {}
    for answer, outcome in zip(answers, outcomes, strict=True):
        error = outcome if isinstance(outcome, str) else ""
        calls = [] if isinstance(outcome, str) else [r.as_dict() for r in outcome]
        counts = _counts(calls)
        for status, n in counts.items():
            totals.calls[status] = totals.calls.get(status, 0) + n
        if error:
            totals.not_rendered += 1
        else:
            images[answer.id] = [c["image"] if c["status"] == RENDERED else None for c in calls]
        previous = newest.get(answer.id)
        same = (
            previous is not None
            and previous.signature == signatures[answer.id]
            and previous.error == error
            and [_comparable(c) for c in previous.calls or []] == [_comparable(c) for c in calls]
        )
        if same:
            totals.unchanged += 1
            continue
        totals.rendered_answers += 1
        new_rows.append(
            RenderedAnswer(
                response_id=answer.id,
                text=answer.text,
                syntax=answer.syntax,
                signature=signatures[answer.id],
                calls=calls,
                n_rendered=counts[RENDERED],
                n_placeholder=counts[PLACEHOLDER],
                n_failed=counts[FAILED],
                error=error,
                job=job,
                created_by=job.created_by,
            )
        )
    with transaction.atomic():
        RenderedAnswer.objects.bulk_create(new_rows)
        _set_images(rows, images)


def _comparable(call: dict[str, Any]) -> tuple[Any, ...]:
    """A call's result without ``cached`` (a repeat comes from the cache, and is the same)."""
    return tuple(
        sorted((k, json.dumps(v, sort_keys=True)) for k, v in call.items() if k != "cached")
    )


def _set_images(rows: dict[int, Response], images: dict[int, list[str | None]]) -> None:
    """``extra["rendered_images"]`` of each answer whose text is still the rendered one
    (re-read under a lock, so a concurrent change to ``extra`` is kept)."""
    if not images:
        return
    changed = []
    locked = Response.objects.select_for_update().filter(pk__in=list(images)).only("text", "extra")
    for response in locked:
        rendered = rows.get(response.pk)
        if rendered is None or rendered.text != response.text:
            continue  # the answer changed while it was rendered: its images would not match
        extra = dict(response.extra or {})
        if extra.get(RENDERED_IMAGES) == images[response.pk]:
            continue
        extra[RENDERED_IMAGES] = images[response.pk]
        response.extra = extra
        changed.append(response)
    if changed:
        Response.objects.bulk_update(changed, ["extra"])


def render_job(*, job: Job, progress: Progress) -> dict[str, Any]:
    """The "render_answers" job's runner (see the module docstring)."""
    project = Project.objects.get(pk=job.params["project_id"])
    syntax = _interleaved(project)
    ids = _selection(project, job.params)
    total = len(ids)
    done = 0
    progress(progress=0, total=total, message="rendering")
    providers = providers_configured()
    names = providers.names()
    limits = Limits()
    cache = _Cache(project=project)
    workers = job.params.get("workers") or settings.BENCHWRIGHT_RENDER_WORKERS or None
    renderer = BatchRenderer(
        providers=providers,
        lookup=cache.lookup,
        store=cache.store,
        load=cache.load,
        workers=workers,
        limits=limits,
        tick=lambda: progress(progress=done, total=total),
    )
    totals = _Totals()
    for chunk in _chunks(ids, CHUNK):
        rows = {
            r.pk: r
            for r in Response.objects.filter(pk__in=list(chunk))
            .select_related("item")
            .only("text", "extra", "item__image_refs")
        }
        newest = _newest(chunk)
        answers: list[AnswerInput] = []
        signatures: dict[int, str] = {}
        stale_extra: dict[int, list[str | None]] = {}
        stored = _stored_shas(rows.values())
        for pk in chunk:
            response = rows.get(pk)
            if response is None:
                continue  # deleted meanwhile
            documents, inputs = _documents_and_inputs(response.item)
            answer = AnswerInput(
                id=pk,
                text=response.text,
                syntax=syntax,
                documents=tuple(s if s in stored else None for s in documents),
                inputs=tuple(s if s in stored else None for s in inputs),
            )
            signature = signature_of(answer, names, limits)
            previous = newest.get(pk)
            if _current(previous, signature):
                assert previous is not None
                totals.unchanged += 1
                if (
                    not previous.error
                    and (response.extra or {}).get(RENDERED_IMAGES) != previous.images
                ):
                    stale_extra[pk] = previous.images
                continue
            answers.append(answer)
            signatures[pk] = signature
        totals.answers += len(chunk)
        if stale_extra:
            with transaction.atomic():
                _set_images(rows, stale_extra)
        if answers:
            outcomes = renderer.render(answers)
            _record(
                job=job,
                rows=rows,
                answers=answers,
                outcomes=outcomes,
                signatures=signatures,
                newest=newest,
                totals=totals,
            )
        done += len(chunk)
        progress(progress=done, total=total, message=f"{done} of {total} answers")
    stats = renderer.stats
    return {
        "project_id": project.pk,
        "answers": totals.answers,
        "rendered": totals.rendered_answers,
        "unchanged": totals.unchanged,
        "not_rendered": totals.not_rendered,
        "calls": {
            **totals.calls,
            "executed": stats.executed,
            "cached": stats.cached + stats.shared,
        },
        "images_stored": cache.stored,
        "providers": {k: v for k, v in names.items() if v},
    }


def _stored_shas(rows: Any) -> set[str]:
    wanted: set[str] = set()
    for response in rows:
        for ref in response.item.image_refs or []:
            if isinstance(ref, dict) and ref.get("sha256"):
                wanted.add(str(ref["sha256"]))
    if not wanted:
        return set()
    return set(Image.objects.filter(sha256__in=wanted).values_list("sha256", flat=True))


def rendering_selection_ids(*, project: Project, params: dict[str, Any]) -> list[int]:
    """The answers a job with ``params`` renders (the command writes their files)."""
    return _selection(project, params)
