"""Evaluation runs: choosing the items and settings, starting a run (one job, or one job per
chunk of items for a large run), the "evaluate" job's runner, resuming, and the summary.

The runner evaluates the items its job was given that the run has not finished, with
``workers`` model calls out at once (and a spare thread per ``SPARE_PER`` workers that reads,
prepares and scores items meanwhile, ``ModelChat``'s slots). Worker threads only talk to the model and the tool providers (and read
image files); every database read and write happens on the runner's thread: before an item
runs its recorded model calls and tool records are loaded (the cache and the replay record),
after it the result, the new calls and records are stored. A protocol's ``EvaluationError``
is that item's error, not the run's; a cancelled job stops handing out items and keeps what
finished. A resumed run (or a chunk taken again after its worker died) skips the items the
run has finished.

The protocol is the project's benchmark kind's ``evaluation`` object (``benchmark.kinds``,
``benchmark.evaluation.base``): nothing here knows which benchmark it runs."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from benchmark import permissions
from benchmark.audio.selectors import project_audio_files
from benchmark.evaluation.base import (
    EvalItem,
    EvalProtocol,
    EvalSettings,
    EvaluationError,
    Outcome,
    Provider,
    Status,
    ToolLayer,
)
from benchmark.exceptions import Conflict, DomainError, ValidationFailed
from benchmark.jobs import services as job_services
from benchmark.jobs.kinds import Progress
from benchmark.kinds import kind_for
from benchmark.kinds.base import resolve
from benchmark.llm.client import ChatClient, ModelConfig, ModelError
from benchmark.llm.services import HOW_TO_CONFIGURE, model_resolve
from benchmark.models import (
    AudioFile,
    Image,
    Item,
    ItemStatus,
    ItemVersion,
    Job,
    JobStatus,
    Project,
)
from benchmark.saved_filters.selectors import PREFIX as FILTER_PREFIX
from benchmark.saved_filters.selectors import saved_filter_item_ids
from benchmark.typing import User
from review import job_names
from review.evaluation.chat import ItemCalls, ModelChat
from review.evaluation.models import EvaluationResult, EvaluationRun, ItemChoice
from review.evaluation.records import (
    ItemTools,
    call_scope,
    files_read,
    files_store,
    items_records_load,
    items_records_store,
)

log = logging.getLogger(__name__)

EVALUATE_KIND = job_names.EVALUATE_KIND
MAX_WORKERS = 32
#: A command-line run of more items than this is split into chunks, one job each (its
#: processes split it further, ``processes_for``). A run started or resumed from the page
#: (``enqueue``) is split into chunks of ``settings.EVALUATION_CHUNK_ITEMS`` (default 50), so
#: several Celery workers share it; its progress is still one figure (``run_progress``).
CHUNK_ITEMS = 500
#: Progress is reported at most this often (seconds), and after the last item.
PROGRESS_SECONDS = 0.5
#: While no item finishes, progress is still reported this often (the job's heartbeat: the
#: sweep takes a chunk silent for ``review.job_names.EVALUATE_SILENT_LIMIT`` as lost).
HEARTBEAT_SECONDS = 30.0
#: Items handed to the worker threads ahead of them, per thread.
WINDOW_PER_WORKER = 2
#: Worker threads beyond the run's workers, per ``SPARE_PER`` workers (at least one): the
#: run's workers are its model calls at once (``ModelChat``'s slots), and the spare threads
#: read, prepare and score items meanwhile, so no call slot waits for that work.
SPARE_PER = 4
#: Finished items are stored together, in one transaction, once this many wait (or once
#: PROGRESS_SECONDS have passed since the last store), not one transaction an item.
STORE_ITEMS = 50
#: Worker threads one process keeps busy: the harness's image work (PNG encoding) and the
#: model client's request building hold the GIL, so past this many threads a process gains
#: nothing. A command-line run with more workers splits its items into that many chunk jobs
#: more (at most one a CPU) and runs them in processes of their own (``processes_for``).
PROCESS_WORKERS = 4
#: No chunk of a run split across processes is smaller than this (a process costs its start).
PROCESS_MIN_ITEMS = 40

MODES = ("atm", "gen")
PLAN_FORMATS = ("json", "code")
STRATEGIES = ("multi-step", "step-by-step")
FEEDBACK = ("parse", "verify", "execute")

# =========================================================================== the protocol


def protocol_of(project: Project) -> EvalProtocol:
    """The protocol of the project's benchmark kind; ValidationFailed naming the kind when it
    has none yet."""
    kind = kind_for(project)
    if not kind.evaluation:
        raise ValidationFailed(
            f"{kind.label} has no evaluation protocol yet: models cannot be evaluated on "
            f"project {project.name!r}"
        )
    try:
        return resolve(kind.evaluation)  # type: ignore[no-any-return]
    except (ImportError, AttributeError) as exc:
        raise ValidationFailed(
            f"{kind.label}'s evaluation protocol {kind.evaluation!r} cannot be loaded: {exc}"
        ) from exc


def _int(raw: Mapping[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = raw.get(name, default)
    if value in (None, ""):
        return default
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValidationFailed(f"{name}: {value!r} is not a whole number") from None
    if not low <= number <= high:
        raise ValidationFailed(f"{name}: must be between {low} and {high}, got {number}")
    return number


def _choice(raw: Mapping[str, Any], name: str, default: str, choices: Sequence[str]) -> str:
    value = str(raw.get(name) or default)
    if value not in choices:
        raise ValidationFailed(f"{name}: {value!r} is not one of {', '.join(choices)}")
    return value


def settings_clean(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The protocol settings as stored on a run, checked; ValidationFailed naming the setting."""
    feedback = raw.get("feedback") or ()
    if isinstance(feedback, str):
        feedback = [part.strip() for part in feedback.split(",") if part.strip()]
    unknown = [f for f in feedback if f not in FEEDBACK]
    if unknown:
        raise ValidationFailed(f"feedback: {unknown[0]!r} is not one of {', '.join(FEEDBACK)}")
    return {
        "mode": _choice(raw, "mode", "atm", MODES),
        "plan_format": _choice(raw, "plan_format", "json", PLAN_FORMATS),
        "strategy": _choice(raw, "strategy", "multi-step", STRATEGIES),
        "feedback": [f for f in FEEDBACK if f in feedback],
        "shots": _int(raw, "shots", 0, 0, 16),
        "max_rounds": _int(raw, "max_rounds", 15, 1, 100),
        "max_tool_calls": _int(raw, "max_tool_calls", 15, 0, 200),
    }


def settings_extra(project: Project) -> dict[str, Any]:
    """What a protocol reads in ``EvalSettings.extra`` from the project, asked of its kind:
    for a kind whose items hold plans (m&m's), the project's toolset (``tools``: the plan
    verifier's form, with each tool's description) and a ``Chat`` for the tools that are
    models (``tool_chat``: the project's configured model, when it has one)."""
    from benchmark.toolsets.specs import plan_toolset
    from review.evaluation.chat import ToolChat

    extra: dict[str, Any] = {}
    if not kind_for(project).plans:
        return extra
    if project.toolset_id is not None and project.toolset is not None:
        tools = plan_toolset(project.toolset)
        described = dict(project.toolset.tools.values_list("name", "description"))
        for name, spec in tools["tools"].items():
            if described.get(name):
                spec["description"] = described[name]
        tools["edges"] = [list(edge) for edge in tools["edges"]]
        extra["tools"] = tools
    try:
        resolved = model_resolve(project=project)
    except ModelError:
        resolved = None
    if resolved is not None:
        extra["tool_chat"] = ToolChat(
            ChatClient(resolved.config, mode="off"), params=resolved.params
        )
    return extra


def eval_settings(
    run: EvaluationRun,
    examples: tuple[EvalItem, ...] = (),
    extra: Mapping[str, Any] | None = None,
) -> EvalSettings:
    s = settings_clean(run.settings or {})
    return EvalSettings(
        mode=s["mode"],
        plan_format=s["plan_format"],
        strategy=s["strategy"],
        feedback=tuple(s["feedback"]),
        shots=s["shots"],
        max_rounds=s["max_rounds"],
        max_tool_calls=s["max_tool_calls"],
        examples=examples,
        extra=dict(extra or {}),
    )


# =========================================================================== items


def items_selected(*, project: Project, items: str, user: User | None = None) -> list[int]:
    """The ids, in item order, of ``verified`` items, ``all`` (but discarded ones), the
    items of ``release:NAME``, or those the project's saved filter ``filter:NAME`` gives (the
    item list's result for its query, as ``user`` sees it; None: the command line);
    ValidationFailed naming what is wrong."""
    if items.startswith(FILTER_PREFIX) and items[len(FILTER_PREFIX) :].strip():
        name = items[len(FILTER_PREFIX) :].strip()
        try:
            return saved_filter_item_ids(user=user, project=project, name=name)
        except ValidationFailed as exc:
            raise ValidationFailed(f"items: {exc.message}") from None
    rows = Item.objects.filter(project=project).order_by("position", "id")
    if items == ItemChoice.VERIFIED:
        return list(rows.filter(status=ItemStatus.VERIFIED).values_list("pk", flat=True))
    if items == ItemChoice.ALL:
        return list(rows.exclude(status=ItemStatus.DISCARDED).values_list("pk", flat=True))
    if items.startswith("release:") and items[len("release:") :].strip():
        from review.releases.models import Release

        name = items[len("release:") :].strip()
        release = Release.objects.filter(project=project, name=name).first()
        if release is None:
            raise ValidationFailed(f"items: project {project.name!r} has no release {name!r}")
        ids = {int(pair[0]) for pair in release.fingerprints or []}
        return [pk for pk in rows.values_list("pk", flat=True) if pk in ids]
    raise ValidationFailed(f"items: {items!r} is not verified, all, release:NAME or filter:NAME")


def item_versions(item_ids: Iterable[int]) -> dict[str, int]:
    """``{item id: newest version number}`` (0: no version row) of the items."""
    ids = list(item_ids)
    newest = dict(
        ItemVersion.objects.filter(item_id__in=ids)
        .values("item_id")
        .annotate(n=Max("number"))
        .values_list("item_id", "n")
    )
    return {str(pk): int(newest.get(pk) or 0) for pk in ids}


def _record(item: Item) -> dict[str, Any]:
    """The item's record in the benchmark's own format: its source JSON (with long strings
    put back), or for an item written in the app, its fields."""
    try:
        record = item.raw_record
    except ValueError:
        record = None
    if isinstance(record, dict):
        return record
    return {
        "id": item.external_id,
        "query": item.query,
        "documents": item.documents,
        "constraints": item.constraints,
        "expected_answer": item.expected_answer,
        "accepted_variants": item.accepted_variants,
        "rubric": item.rubric,
        "category": item.category,
        "intent": item.intent,
        "level": item.level,
    }


@dataclass
class _Loaded:
    """An item ready to run: its row, its record and the files to read (by record name): its
    images and its audio files (m&m's speech inputs, which the executor tells by their name)."""

    item: Item
    record: dict[str, Any]
    images: dict[str, Image | AudioFile]


def _load_items(project_id: int, ids: Sequence[int]) -> list[_Loaded]:
    """The items ``ids`` (in that order) with their images' and audio files' rows: three
    queries, four when the items name stored audio."""
    items = {
        i.pk: i
        for i in Item.objects.filter(project_id=project_id, pk__in=list(ids)).prefetch_related(
            "responses"
        )
    }
    shas = {
        ref.get("sha256")
        for item in items.values()
        for ref in (item.image_refs or [])
        if ref.get("sha256")
    }
    stored = {
        img.sha256: img
        for img in Image.objects.filter(sha256__in=shas, projects=project_id).only("sha256", "file")
    }
    audio = project_audio_files(
        project_id=project_id,
        shas={
            str(ref["sha256"])
            for item in items.values()
            for ref in (item.audio_refs or [])
            if isinstance(ref, dict) and ref.get("sha256")
        },
    )
    out = []
    for pk in ids:
        item = items.get(pk)
        if item is None:
            continue
        images: dict[str, Image | AudioFile] = {}
        for ref in item.image_refs or []:
            image = stored.get(ref.get("sha256") or "")
            if image is not None:
                images[str(ref.get("path") or image.sha256)] = image
        for ref in item.audio_refs or []:
            sound = audio.get(ref.get("sha256") or "") if isinstance(ref, dict) else None
            if sound is not None:
                images[str(ref.get("path") or sound.sha256)] = sound
        out.append(_Loaded(item=item, record=_record(item), images=images))
    return out


def _read_images(images: Mapping[str, Image | AudioFile]) -> dict[str, bytes]:
    """In a worker thread: the images' (and audio files') bytes by record name (no query)."""
    out = {}
    for name, image in images.items():
        try:
            if not image.file.name:
                raise FileNotFoundError(image.sha256)
            with image.file.storage.open(image.file.name, "rb") as handle:
                out[name] = handle.read()
        except (FileNotFoundError, OSError, ValueError):
            raise EvaluationError(
                f"the file of {'audio' if isinstance(image, AudioFile) else 'image'} {name} "
                f"({image.sha256[:12]}) is missing"
            ) from None
    return out


def _examples(project: Project, shots: int) -> tuple[EvalItem, ...]:
    """N-shot examples: the verified items the project names in its settings
    (``{"evaluation": {"examples": [external ids]}}``), else its first verified items."""
    if not shots:
        return ()
    named = ((project.settings or {}).get("evaluation") or {}).get("examples") or []
    rows = Item.objects.filter(project=project, status=ItemStatus.VERIFIED)
    if named:
        rows = rows.filter(external_id__in=[str(n) for n in named])
    ids = list(rows.order_by("position", "id").values_list("pk", flat=True)[:shots])
    return tuple(
        EvalItem(id=lo.item.external_id, record=lo.record, images=_read_images(lo.images))
        for lo in _load_items(project.pk, ids)
    )


# =========================================================================== the model


def model_config(project: Project, base_url: str = "", model: str = "") -> tuple[ModelConfig, dict]:
    """The model under test: the project's (or the environment's) with ``base_url`` / ``model``
    overriding. The configured API key goes only to its own endpoint."""
    try:
        resolved = model_resolve(project=project)
    except ModelError as exc:
        raise ValidationFailed(str(exc)) from exc
    base = resolved.config if resolved is not None else None
    url = (base_url or (base.base_url if base else "")).strip()
    name = (model or (base.model if base else "")).strip()
    if not url or not name:
        raise ValidationFailed(
            "No model to evaluate: give a base URL and a model name, or configure the "
            "project's model. " + HOW_TO_CONFIGURE
        )
    if not url.startswith(("http://", "https://")):
        raise ValidationFailed(f"base URL: {url!r} is not an http(s) URL")
    if base is not None and base.base_url.rstrip("/") == url.rstrip("/"):
        return dataclasses.replace(base, model=name), dict(resolved.params if resolved else {})
    # An endpoint given for this run has no configured concurrency limit: the run's workers
    # are its limit (not the client's default of 4, which would quietly halve 8 workers).
    return ModelConfig(base_url=url, model=name, concurrency=MAX_WORKERS), {}


def tool_providers(project: Project) -> list[Provider]:
    """The tool providers for the project's runs: each factory the operator lists in
    EVALUATION_TOOL_PROVIDERS (dotted paths of ``factory(project) -> Provider | None``) that
    gives one. With none, tools answer "not available here" (and a replay answers from the
    record)."""
    from django.conf import settings as django_settings
    from django.utils.module_loading import import_string

    providers = []
    for path in getattr(django_settings, "EVALUATION_TOOL_PROVIDERS", ()) or ():
        provider = import_string(path)(project)
        if provider is not None:
            providers.append(provider)
    return providers


# =========================================================================== the price

#: The largest price per million tokens a run takes (the project's model settings' limit).
PRICE_MAX = 100_000.0
#: The project's model settings that hold its price per million input / output tokens.
PRICE_SETTINGS = ("price_per_m_input", "price_per_m_output")


def price_clean(price_in: Any, price_out: Any) -> dict[str, float] | None:
    """``{"input", "output"}`` per million tokens, checked; None when neither is given.
    ValidationFailed naming the price when only one is, or one is not a number in range."""
    given = [p not in (None, "") for p in (price_in, price_out)]
    if not any(given):
        return None
    if not all(given):
        raise ValidationFailed(
            "price: give both the price per million input tokens and the price per million "
            "output tokens, or neither (then the cost is unknown)"
        )
    out = {}
    for name, value in (("input", price_in), ("output", price_out)):
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValidationFailed(
                f"price per million {name} tokens: {value!r} is not a number"
            ) from None
        if not 0 <= number <= PRICE_MAX:  # also refuses NaN
            raise ValidationFailed(
                f"price per million {name} tokens: must be between 0 and {PRICE_MAX:g}"
            )
        out[name] = number
    return out


def project_price(project: Project, config: ModelConfig) -> dict[str, float] | None:
    """The price per million tokens of the project's model settings, when the run calls the
    project's model (its endpoint and model name); else None."""
    raw = (project.settings or {}).get("model")
    if not isinstance(raw, dict):
        return None
    try:
        resolved = model_resolve(project=project)
    except ModelError:
        return None
    if resolved is None or (resolved.config.base_url.rstrip("/"), resolved.config.model) != (
        config.base_url.rstrip("/"),
        config.model,
    ):
        return None
    try:
        return price_clean(*(raw.get(name) for name in PRICE_SETTINGS))
    except ValidationFailed:
        return None  # only one of the two set: no price


# =========================================================================== starting


def _check_workers(workers: int) -> None:
    if not 1 <= workers <= MAX_WORKERS:
        raise ValidationFailed(f"workers: must be between 1 and {MAX_WORKERS}, got {workers}")


def processes_for(workers: int) -> int:
    """How many processes a run in this process (the command line) should use for
    ``workers`` worker threads: one per ``PROCESS_WORKERS`` threads, at most one per CPU this
    process may use; 1 where processes cannot share the database (an in-memory SQLite
    database lives in its connection) or cannot be forked."""
    import multiprocessing
    import os

    from django.db import connection

    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    if connection.vendor == "sqlite" and getattr(connection, "is_in_memory_db", lambda: True)():
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(cpus or 1, -(-workers // PROCESS_WORKERS)))


def evaluation_run_create(
    *,
    project: Project,
    user: User | None,
    model: str = "",
    base_url: str = "",
    items: str = ItemChoice.VERIFIED,
    settings: Mapping[str, Any] | None = None,
    workers: int = 4,
    replay: bool = False,
    enqueue: bool = False,
    chunk_items: int | None = None,
    price_in: float | None = None,
    price_out: float | None = None,
    processes: int = 1,
) -> tuple[EvaluationRun, list[Job]]:
    """An evaluation run and its job(s) (one per ``chunk_items`` items; default
    ``chunk_size(enqueue)``). With ``enqueue`` the jobs are enqueued after commit (the page);
    without, the caller runs them (``evaluation_run_execute``, the command line). ``user`` None is the command line. The
    run's price per million input and output tokens (for its cost so far) is ``price_in``
    and ``price_out``, else the project's model settings' when the run calls that model,
    else none (the cost is unknown).

    ``processes`` (the command line, ``processes_for``): the run is split into at least that
    many chunk jobs (none under ``PROCESS_MIN_ITEMS`` items), each with its share of the
    workers and of the endpoint's limits, for ``evaluation_run_execute`` to run side by
    side."""
    if user is not None:
        permissions.require(user=user, project=project, action="evaluate")
    protocol_of(project)
    _check_workers(workers)
    chosen = settings_clean(settings or {})
    tool_providers(project)  # a wrong provider setting is refused now, naming it
    config, _ = model_config(project, base_url, model)
    price = price_clean(price_in, price_out) or project_price(project, config)
    ids = items_selected(project=project, items=items, user=user)
    if not ids:
        raise ValidationFailed(f"items: project {project.name!r} has no {items} items to evaluate")
    with transaction.atomic():
        run = EvaluationRun.objects.create(
            project=project,
            model=config.model[:200],
            base_url=config.base_url[:500],
            settings={**chosen, "workers": workers, **({"price": price} if price else {})},
            items=items[:220],
            item_versions=item_versions(ids),
            item_count=len(ids),
            replay=replay,
            created_by=user,
        )
        share = max(1, min(processes, len(ids) // PROCESS_MIN_ITEMS))
        chunk_items = chunk_items or chunk_size(enqueue)
        if share > 1:
            chunk_items = min(chunk_items, -(-len(ids) // share))
        jobs = _jobs(run, user, ids, workers, enqueue, chunk_items, share=share)
    return run, jobs


def chunk_size(enqueue: bool) -> int:
    """Items per chunk job: for jobs any Celery worker takes (``enqueue``, the page) the
    ``EVALUATION_CHUNK_ITEMS`` setting, so several workers share a run; for the command line
    ``CHUNK_ITEMS``."""
    from django.conf import settings

    if not enqueue:
        return CHUNK_ITEMS
    size = int(getattr(settings, "EVALUATION_CHUNK_ITEMS", 50) or 50)
    return max(1, size)


def _jobs(
    run: EvaluationRun,
    user: User | None,
    ids: Sequence[int],
    workers: int,
    enqueue: bool,
    chunk_items: int,
    *,
    share: int = 1,
) -> list[Job]:
    """The run's jobs. ``share`` > 1: the jobs run side by side in that many processes, so
    each gets that share of the workers (and its runner of the endpoint's limits)."""
    size = max(1, chunk_items)
    chunks = [list(ids[i : i + size]) for i in range(0, len(ids), size)] or [[]]
    jobs = []
    for n, chunk in enumerate(chunks, 1):
        params: dict[str, Any] = {
            "project_id": run.project_id,
            "run_id": run.pk,
            "workers": workers if share == 1 else max(1, -(-workers // share)),
        }
        if share > 1:
            params["processes"] = share
        if len(chunks) > 1:
            params.update(items=chunk, chunk=n, chunks=len(chunks))
        start = job_services.job_start if enqueue else job_services.job_create
        jobs.append(
            start(
                kind=EVALUATE_KIND, user=user, project=run.project, params=params, total=len(chunk)
            )
        )
    run.job = jobs[0]
    run.job_ids = [job.pk for job in jobs]
    run.save(update_fields=["job", "job_ids"])
    return jobs


def evaluation_run_resume(
    *, run: EvaluationRun, user: User | None, workers: int | None = None, enqueue: bool = False
) -> list[Job]:
    """New jobs for a run whose jobs have ended (failed, cancelled, or their worker died):
    only the items the run has not finished are evaluated. Conflict while a job of the run,
    or a judge job on its outputs, is still queued or running. A run its judges had judged
    (the S/V judges of agent runs, or the answer judges' runs) has what the resume adds
    judged by the same judges once it finishes
    (``review.evaluation.judges.evaluation_judge_follow``)."""
    from review.evaluation.judges import judge_jobs_of

    if user is not None:
        permissions.require(user=user, project=run.project, action="evaluate")
    workers = workers or int((run.settings or {}).get("workers") or 4)
    _check_workers(workers)
    with transaction.atomic():
        run = EvaluationRun.objects.select_for_update().get(pk=run.pk)
        running = Job.objects.filter(
            pk__in=run.job_ids or [], status__in=[JobStatus.QUEUED, JobStatus.RUNNING]
        )
        if running.exists():
            raise Conflict(f"evaluation #{run.pk} is still running; wait for its jobs")
        if judge_jobs_of(run=run).filter(status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).exists():
            raise Conflict(
                f"judges are still running on evaluation #{run.pk}; resume it once they "
                "have finished"
            )
        ids = [int(pk) for pk in (run.item_versions or {})]
        done = set(
            EvaluationResult.objects.filter(run=run)
            .exclude(status=Status.ERROR)
            .values_list("item_id", flat=True)
        )
        todo = [pk for pk in ids if pk not in done]
        if not todo:
            raise Conflict(f"evaluation #{run.pk} has a result for every item; nothing to resume")
        run.finished_at = None
        run.save(update_fields=["finished_at"])
        return _jobs(run, user, todo, workers, enqueue, chunk_size(enqueue))


def evaluation_run_cancel(*, run: EvaluationRun, user: User) -> int:
    """Cancel every job of the run that has not ended; how many were asked to stop."""
    permissions.require(user=user, project=run.project, action="evaluate")
    asked = 0
    for job in Job.objects.filter(pk__in=run.job_ids or []):
        if not job.done:
            job_services.job_cancel(job=job, user=user)
            asked += 1
    return asked


# =========================================================================== running


def _outcome_failed(item: str, message: str) -> Outcome:
    return Outcome(item=item, status=Status.ERROR, error=message)


def _evaluate(
    *,
    protocol: EvalProtocol,
    loaded: _Loaded,
    settings: EvalSettings,
    client: ChatClient,
    params: Mapping[str, Any],
    calls: ItemCalls,
    tools: ItemTools,
    providers: Sequence[Provider],
    replay: bool,
    slots: threading.Semaphore | None = None,
) -> tuple[Outcome, int, dict[str, str]]:
    """In a worker thread: one item through the protocol. Touches no database. Returns the
    outcome, the milliseconds it took and its files as stored (``{path: sha256}``: written
    here, by content hash, so the runner's thread does not; the outcome then drops their
    bytes)."""
    external_id = loaded.item.external_id
    started = time.monotonic()
    try:
        item = EvalItem(id=external_id, record=loaded.record, images=_read_images(loaded.images))
        chat = ModelChat(client, item=external_id, calls=calls, params=params, slots=slots)
        layer = ToolLayer(providers, records=tools, replay=replay)
        outcome = protocol.run_item(
            item, settings=settings, chat=chat, tools=layer, truth=loaded.record
        )
    except EvaluationError as exc:
        outcome = _outcome_failed(external_id, str(exc))
    except Exception as exc:  # noqa: BLE001 - one item's failure is that item's error
        log.exception("evaluation of item %s failed", external_id)
        outcome = _outcome_failed(
            external_id, f"unexpected error ({exc.__class__.__name__}: {exc}) on this item"
        )
    try:
        stored = files_store(outcome.files or {})
    except OSError as exc:
        outcome, stored = _outcome_failed(external_id, f"its files could not be stored: {exc}"), {}
    outcome.files = {}
    return outcome, int((time.monotonic() - started) * 1000), stored


def _jsonable(value: Any) -> Any:
    import json

    return json.loads(json.dumps(value, default=str))


def result_store(
    *, run: EvaluationRun, item_id: int, outcome: Outcome, latency_ms: int
) -> EvaluationResult:
    """Store (or replace, for an item made again) the item's result."""
    fields = {
        "status": outcome.status,
        "output": _jsonable(outcome.output),
        "scores": _jsonable(outcome.scores or {}),
        "files": files_store(outcome.files or {}),
        "trace": _jsonable(outcome.trace or []),
        "model_calls": outcome.model_calls,
        "tool_calls": outcome.tool_calls,
        "prompt_tokens": outcome.prompt_tokens,
        "completion_tokens": outcome.completion_tokens,
        "latency_ms": latency_ms,
        "error": outcome.error or "",
    }
    result, _ = EvaluationResult.objects.update_or_create(run=run, item_id=item_id, defaults=fields)
    return result


#: What storing an item's result again writes over (all but the run, the item and the id).
_RESULT_FIELDS = (
    "status", "output", "scores", "files", "trace", "model_calls", "tool_calls",
    "prompt_tokens", "completion_tokens", "latency_ms", "error", "created_at",
)  # fmt: skip


def results_store(
    *, run: EvaluationRun, results: Sequence[tuple[int, Outcome, int, Mapping[str, str]]]
) -> None:
    """Store (or replace, for items made again) several items' results, each ``(item id,
    outcome, milliseconds, its files as stored)``: one insert that replaces a result the
    item has (``ON CONFLICT ... DO UPDATE``, on SQLite and PostgreSQL alike).

    A result the run has finished is never replaced by an error: only the same chunk run
    twice at once stores an item twice (a worker the sweep took for lost that was still
    alive, and the worker that took its chunk again), and what one of them finished is kept.
    Two such stores at the same moment wait for each other on PostgreSQL instead of failing
    on the unique (run, item) constraint, which a delete-then-insert did."""
    ids = [item_id for item_id, *_ in results]
    with transaction.atomic():
        finished = set(
            EvaluationResult.objects.select_for_update()
            .filter(run=run, item_id__in=ids)
            .exclude(status=Status.ERROR)
            .values_list("item_id", flat=True)
        )
        rows = [
            EvaluationResult(
                run=run,
                item_id=item_id,
                status=outcome.status,
                output=_jsonable(outcome.output),
                scores=_jsonable(outcome.scores or {}),
                files=dict(files),
                trace=_jsonable(outcome.trace or []),
                model_calls=outcome.model_calls,
                tool_calls=outcome.tool_calls,
                prompt_tokens=outcome.prompt_tokens,
                completion_tokens=outcome.completion_tokens,
                latency_ms=ms,
                error=outcome.error or "",
            )
            for item_id, outcome, ms, files in results
            if not (outcome.status == Status.ERROR and item_id in finished)
        ]
        EvaluationResult.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["run", "item"],
            update_fields=list(_RESULT_FIELDS),
        )


#: What a stored result gives its outcome; the trace (the largest field) only with files.
_OUTCOME_FIELDS = (
    "item__external_id", "status", "output", "scores", "files", "error", "model_calls",
    "tool_calls", "prompt_tokens", "completion_tokens",
)  # fmt: skip


def _outcome(row: Mapping[str, Any], *, files: bool) -> Outcome:
    """A stored result (its ``_OUTCOME_FIELDS`` and, with ``files``, its trace) as the
    protocol's ``Outcome`` (for ``summarize``, ``write_outputs``)."""
    return Outcome(
        item=row["item__external_id"],
        status=row["status"],
        output=row["output"],
        scores=dict(row["scores"] or {}),
        files=files_read(row["files"] or {}) if files else {},
        error=row["error"],
        model_calls=row["model_calls"],
        tool_calls=row["tool_calls"],
        prompt_tokens=row["prompt_tokens"],
        completion_tokens=row["completion_tokens"],
        trace=list(row.get("trace") or []),
    )


def run_outcomes(run: EvaluationRun, *, files: bool = False) -> list[Outcome]:
    """The run's stored results as outcomes, in item order: read as rows, not as model
    objects (a run's summary reads every result, and building a thousand model objects with
    their items took most of its time); the summary needs neither the trace nor the files."""
    fields = [*_OUTCOME_FIELDS, *(("trace",) if files else ())]
    rows = (
        EvaluationResult.objects.filter(run=run)
        .order_by("item__position", "item_id")
        .values_list(*fields)
    )
    return [
        _outcome(dict(zip(fields, row, strict=True)), files=files)
        for row in rows.iterator(chunk_size=500)
    ]


#: Bootstrap resamples of a run's items for the leaderboard's intervals, and their seed (the
#: same run always gives the same interval).
BOOTSTRAP_RESAMPLES = 200
BOOTSTRAP_SEED = 2024


def figure(summary: Mapping[str, Any], key: str) -> float | None:
    """The number at ``key`` of a summary (``a.b`` reads nested dicts), or None."""
    value: Any = summary
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def bootstrap_intervals(
    protocol: EvalProtocol,
    outcomes: Sequence[Outcome],
    keys: Sequence[str],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> dict[str, list[float]]:
    """``{key: [low, high]}``: the percentile 95 % interval of each figure over items: the
    figure as the protocol's own ``summarize`` gives it on each of ``resamples`` resamples of
    the outcomes (drawn with replacement, seeded: the same run always gives the same
    interval); a figure missing from more than half the resamples has none.

    A figure the protocol gives as a ratio of per-item sums (``ratios``, see
    ``benchmark.evaluation.base.RatioFigures``: a mean over items, a pooled rate) is
    resampled as arrays: each resample's numerators and denominators are summed together,
    all resamples at once, instead of running ``summarize`` on each. Any other figure (a
    macro average, a rounded share) is taken from ``summarize`` on each resample."""
    import numpy as np

    if len(outcomes) < 2 or not keys:
        return {}
    rng = np.random.default_rng(seed)
    n = len(outcomes)
    # One row of item indices per resample, drawn one resample at a time as always.
    samples = np.stack([rng.integers(0, n, n) for _ in range(resamples)])
    listed = list(outcomes)
    ratios_of = getattr(protocol, "ratios", None)
    ratios = ratios_of(listed) if callable(ratios_of) else {}
    draws: dict[str, list[float]] = {}
    for key in keys:
        ratio = ratios.get(key)
        if ratio is None:
            continue
        if len(ratio.numerators) != n or len(ratio.denominators) != n:
            raise ValueError(f"{key}: the protocol's ratio has not one pair per item")
        nums = np.asarray(ratio.numerators, dtype=float)[samples].sum(axis=1)
        dens = np.asarray(ratio.denominators, dtype=float)[samples].sum(axis=1)
        kept = dens != 0
        draws[key] = list(ratio.scale * nums[kept] / dens[kept])
    rest = [key for key in keys if key not in draws]
    if rest:
        draws.update({key: [] for key in rest})
        for row in samples:
            summary = protocol.summarize([listed[i] for i in row])
            for key in rest:
                value = figure(summary, key)
                if value is not None:
                    draws[key].append(value)
    out = {}
    for key in keys:
        values = draws[key]
        if len(values) >= resamples // 2:
            low, high = np.percentile(values, [2.5, 97.5])
            out[key] = [round(float(low), 6), round(float(high), 6)]
    return out


def run_summarize(*, run: EvaluationRun) -> dict[str, Any]:
    """The protocol's summary over the run's results, once every item has a result: stored
    on the run with the bootstrap intervals of the leaderboard's columns. Before that (a
    chunk that does not finish the run) nothing is read and the summary is empty: figures
    over whichever items happen to be done would mean nothing."""
    protocol = protocol_of(run.project)
    if EvaluationResult.objects.filter(run=run).count() < run.item_count:
        return {}
    outcomes = run_outcomes(run)
    summary = _jsonable(protocol.summarize(outcomes)) if outcomes else {}
    if len(outcomes) >= run.item_count:
        answers_store(run=run)
        keys = [column.key for column in protocol.columns]
        run.summary = summary
        run.intervals = bootstrap_intervals(protocol, outcomes, keys)
        run.finished_at = timezone.now()
        run.save(update_fields=["summary", "intervals", "finished_at"])
        # Routing by doubt: the items the models got wrong are more in doubt now.
        from annotation.judgment_tasks.doubt.services import project_doubt_recompute

        project = run.project
        transaction.on_commit(lambda: project_doubt_recompute(project=project))
    return summary


ANSWER_KEY_PREFIX = "model:"


def answers_store(*, run: EvaluationRun) -> int:
    """For a kind whose answers are texts (``kind.answer_text``: ATP-Bench, LLM-I), keep the
    run's text outputs as the model's answers to the items (a Response with key
    ``model:<model>``, as uploaded answers are kept), so the judges, human evaluation and
    rendering take them like any other answer. A changed text replaces the stored one.
    Returns how many answers were written."""
    from benchmark.models import Origin, Response

    if not kind_for(run.project).answer_text:
        return 0
    key = f"{ANSWER_KEY_PREFIX}{run.model}"[:255]
    texts = {
        item_id: output
        for item_id, output in EvaluationResult.objects.filter(
            run=run, status=Status.OK
        ).values_list("item_id", "output")
        if isinstance(output, str)
    }
    existing = {r.item_id: r for r in Response.objects.filter(item_id__in=list(texts), key=key)}
    new, changed = [], []
    for item_id, text in texts.items():
        row = existing.get(item_id)
        if row is None:
            new.append(
                Response(
                    item_id=item_id, key=key, origin=Origin.MODEL, model_name=run.model[:200],
                    source_file=f"evaluation #{run.pk}"[:255], text=text, position=1000,
                )
            )  # fmt: skip
        elif row.text != text:
            row.text, row.source_file = text, f"evaluation #{run.pk}"[:255]
            changed.append(row)
    with transaction.atomic():
        # Chunks of a run finishing together (processes, Celery workers) may each see every
        # item done and store the same answers: whichever comes second finds them there.
        Response.objects.bulk_create(new, ignore_conflicts=True)
        Response.objects.bulk_update(changed, ["text", "source_file"])
    return len(new) + len(changed)


#: What a worker gives back for an item: its outcome, milliseconds and stored files.
_Done = tuple[Outcome, int, dict[str, str]]


@dataclass
class _Counts:
    total: int = 0
    done: int = 0
    errors: int = 0
    tool_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class _Runner:
    """Evaluates a job's items: loads each item and its records on this thread, hands the
    item to a worker thread, stores its result as it finishes, reports progress."""

    def __init__(self, *, run: EvaluationRun, job: Job, progress: Progress) -> None:
        self.run = run
        self.progress = progress
        self.protocol = protocol_of(run.project)
        self.workers = int(job.params.get("workers") or 4)
        self.config, self.params = model_config(run.project, run.base_url, run.model)
        share = int(job.params.get("processes") or 1)
        if share > 1:  # side by side with other processes: this one's part of the limits
            self.config = dataclasses.replace(
                self.config,
                concurrency=max(1, self.config.concurrency // share),
                rpm=max(1, self.config.rpm // share) if self.config.rpm else 0,
            )
        shots = int((run.settings or {}).get("shots") or 0)
        self.settings = eval_settings(
            run, _examples(run.project, shots), settings_extra(run.project)
        )
        self.providers = tool_providers(run.project)
        self.scope = call_scope(run.project_id)
        #: One kept connection pool for every item's calls (``execute`` opens and closes it).
        self.transport = ChatClient(self.config, mode="off", scope=self.scope)
        self.counts = _Counts()
        self.reported = 0.0
        self.started = time.monotonic()
        self.made = 0
        #: Finished items not stored yet: ((item id, calls, tools), outcome, ms, files).
        self.pending: list[tuple[tuple[int, ItemCalls, ItemTools], Outcome, int, dict]] = []
        self.stored_at = time.monotonic()

    def client(self, calls: ItemCalls) -> ChatClient:
        """The item's client: its record as the cache, the runner's connection pool."""
        return self.transport.sharing(cache=calls, mode="replay" if self.run.replay else "use")

    def execute(self, ids: Sequence[int]) -> None:
        finished = set(
            EvaluationResult.objects.filter(run=self.run, item_id__in=list(ids))
            .exclude(status=Status.ERROR)
            .values_list("item_id", flat=True)
        )
        todo = [pk for pk in ids if pk not in finished]
        self.counts.total = len(ids)
        self.counts.done = len(ids) - len(todo)
        self.tick(force=True)
        workers = max(1, min(self.workers, self.config.concurrency))
        slots = threading.BoundedSemaphore(workers)
        threads = workers + max(1, workers // SPARE_PER)
        window = threads * WINDOW_PER_WORKER
        pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="evaluate")
        self.transport.keep_open()
        inflight: dict[Future[_Done], tuple[int, ItemCalls, ItemTools]] = {}
        try:
            for start in range(0, len(todo), 100):
                batch = _load_items(self.run.project_id, todo[start : start + 100])
                records = items_records_load(
                    project_id=self.run.project_id, item_ids=[lo.item.pk for lo in batch]
                )
                for loaded in batch:
                    while len(inflight) >= window:
                        self.collect(inflight)
                    calls, tools = records.pop(loaded.item.pk)
                    future = pool.submit(
                        _evaluate,
                        protocol=self.protocol,
                        loaded=loaded,
                        settings=self.settings,
                        client=self.client(calls),
                        params=self.params,
                        calls=calls,
                        tools=tools,
                        providers=self.providers,
                        replay=self.run.replay,
                        slots=slots,
                    )
                    inflight[future] = (loaded.item.pk, calls, tools)
            while inflight:
                self.collect(inflight)
            self.flush()
        except BaseException:
            # Cancelled (progress raised) or broken: hand out nothing more, keep what finished.
            pool.shutdown(wait=False, cancel_futures=True)
            for future, todo_item in list(inflight.items()):
                if future.done() and not future.cancelled() and future.exception() is None:
                    self.pending.append((todo_item, *future.result()))
            try:
                self.flush()
            except Exception:
                log.exception("evaluation %s: could not store results", self.run.pk)
            raise
        finally:
            self.transport.close()
        pool.shutdown(wait=True)
        self.tick(force=True)

    def collect(self, inflight: dict[Future[_Done], tuple[int, ItemCalls, ItemTools]]) -> None:
        # Finished items waiting to be stored are stored within PROGRESS_SECONDS even while
        # the others take long, so the progress bar moves as items finish.
        timeout = PROGRESS_SECONDS if self.pending else HEARTBEAT_SECONDS
        finished, _ = wait(inflight, timeout=timeout, return_when=FIRST_COMPLETED)
        if not finished:  # long items: still alive (the heartbeat), and a cancel is seen
            self.flush()
            self.tick(force=True)
            return
        for future in finished:
            self.pending.append((inflight.pop(future), *future.result()))
        if (
            len(self.pending) >= STORE_ITEMS
            or time.monotonic() - self.stored_at >= PROGRESS_SECONDS
        ):
            self.flush()
        self.tick()

    def flush(self) -> None:
        """Store the finished items waiting (their new calls, tool records and results) in
        one transaction, and count them."""
        self.stored_at = time.monotonic()
        if not self.pending:
            return
        pending, self.pending = self.pending, []
        with transaction.atomic():
            items_records_store(
                run=self.run,
                endpoint=self.config.base_url,
                items=[todo for todo, *_ in pending],
            )
            results_store(
                run=self.run,
                results=[(todo[0], outcome, ms, files) for todo, outcome, ms, files in pending],
            )
        for _, outcome, _, _ in pending:
            self.counts.done += 1
            self.made += 1
            self.counts.errors += outcome.status == Status.ERROR
            self.counts.tool_calls += outcome.tool_calls
            self.counts.prompt_tokens += outcome.prompt_tokens
            self.counts.completion_tokens += outcome.completion_tokens

    def tick(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.reported < PROGRESS_SECONDS:
            return
        self.reported = now
        c = self.counts
        message = (
            f"{c.done} of {c.total} items · {c.tool_calls} tool calls · {c.tokens} tokens · "
            f"cost {cost_text(self.run.cost(c.prompt_tokens, c.completion_tokens))}"
        )
        if c.errors:
            message += f" · {c.errors} error{'s' if c.errors != 1 else ''}"
        elapsed = now - self.started
        if self.made >= 3 and c.done < c.total and elapsed > 0:
            left = (c.total - c.done) * elapsed / self.made
            message += (
                f" · about {max(1, round(left))} s left"
                if left < 90
                else (f" · about {round(left / 60)} min left")
            )
        self.progress(progress=c.done, total=c.total, message=message)


def evaluation_run_job(*, job: Job, progress: Progress) -> dict[str, Any]:
    """The "evaluate" job's runner: the job's items (a chunk, or the whole run), then the
    run's summary once every item of the run has a result."""
    try:
        run = EvaluationRun.objects.select_related("project").get(pk=job.params["run_id"])
    except (EvaluationRun.DoesNotExist, KeyError):
        raise DomainError("the evaluation run of this job no longer exists") from None
    try:
        runner = _Runner(run=run, job=job, progress=progress)
    except (ModelError, EvaluationError) as exc:
        raise DomainError(str(exc)) from exc
    ids = [int(pk) for pk in (job.params.get("items") or list(run.item_versions or {}))]
    runner.execute(ids)
    summary = run_summarize(run=run)
    judged: list[Job] = []
    if run.finished_at is not None:  # a run the judges judged before it was resumed: again
        from review.evaluation.judges import evaluation_judge_follow

        judged = evaluation_judge_follow(run=run, user=job.created_by, follows=job.pk)
    c = runner.counts
    return {
        "run_id": run.pk,
        "items": c.total,
        "done": c.done,
        "errors": c.errors,
        "tool_calls": c.tool_calls,
        "tokens": c.tokens,
        "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.completion_tokens,
        "cost": run.cost(c.prompt_tokens, c.completion_tokens),
        "summary": summary,
        **({"judge_jobs": [j.pk for j in judged]} if judged else {}),
    }


def cost_text(cost: float | None) -> str:
    """A cost as the progress message says it: "unknown" without a price."""
    return "unknown" if cost is None else f"{cost:,.4f}"


def evaluation_run_execute(
    *, run: EvaluationRun, jobs: Sequence[Job], processes: int = 1
) -> EvaluationRun:
    """Run the run's jobs now, through the job pipeline (the command line): one after the
    other in this process, or with ``processes`` > 1 up to that many at a time, each in a
    process forked from this one with its own database connection (as Celery workers would
    take the chunks). A chunk whose process died is failed naming it; resuming the run
    evaluates only what it had not finished."""
    from django.db import connection

    # Inside a transaction, other connections could not see the jobs yet: run them here.
    if processes > 1 and len(jobs) > 1 and not connection.in_atomic_block:
        _jobs_in_processes([job.pk for job in jobs], processes, sdk=not run.replay)
    else:
        for job in jobs:
            job_services.job_run(job_id=job.pk)
    run.refresh_from_db()
    return run


def _job_in_child(job_id: int) -> None:
    """A forked process's work: one job through the pipeline, on a connection of its own."""
    from django.db import connections

    try:
        job_services.job_run(job_id=job_id)
    finally:
        connections.close_all()


def _preload_for_chunks(*, sdk: bool) -> None:
    """Import, once and before forking, what every chunk's process would otherwise import on
    its own: NumPy with the parts the summary's bootstrap uses that NumPy loads only when first
    used (``numpy.random``, and ``numpy.ma`` for percentiles: ~0.08 s of CPU at the end of the
    last chunk, while nothing else runs) and, with ``sdk`` (not a replay, which calls no
    model), the model SDK (its first model call, ~0.6 s of CPU while the worker threads
    wait) and its TLS context (``benchmark.llm.client.tls_context``: the CA bundle read once,
    not once a chunk). The forked processes share them."""
    import gc

    # Importing makes long-lived objects and almost no garbage cycles (~500 objects for all
    # of these): the collector's passes over them meanwhile (~0.07 s of CPU) find nothing.
    # The caller then freezes what was made (``_jobs_in_processes``).
    collecting = gc.isenabled()
    gc.disable()
    try:
        import numpy.ma  # noqa: F401
        import numpy.random  # noqa: F401

        if sdk:
            import openai  # noqa: F401

            from benchmark.llm.client import tls_context

            tls_context()
    finally:
        if collecting:
            gc.enable()


def _jobs_in_processes(job_ids: Sequence[int], processes: int, *, sdk: bool = True) -> None:
    import gc
    import multiprocessing

    from django.db import connections

    context = multiprocessing.get_context("fork")
    _preload_for_chunks(sdk=sdk)
    connections.close_all()  # a forked child must not share this process's connection
    # What this process has made so far (settings, apps, the SDK: ~140,000 objects the
    # collector tracks) lives as long as the children: out of the collector's reach, a
    # child's full collections walk only what the child made, and write to none of the
    # pages it shares with this process (each such write copies a page).
    gc.freeze()
    try:
        _fork_jobs(context, list(job_ids), processes)
    finally:
        gc.unfreeze()


def _fork_jobs(context: Any, waiting: list[int], processes: int) -> None:
    """Run the jobs ``waiting``, each in a child process, up to ``processes`` at a time."""
    from multiprocessing.connection import wait as wait_for

    running: dict[int, Any] = {}
    while waiting or running:
        while waiting and len(running) < processes:
            job_id = waiting.pop(0)
            child = context.Process(target=_job_in_child, args=(job_id,), name=f"job-{job_id}")
            child.start()
            running[job_id] = child
        wait_for([child.sentinel for child in running.values()])
        for job_id, child in list(running.items()):
            if child.is_alive():
                continue
            child.join()
            del running[job_id]
            if child.exitcode:
                _job_died(job_id, child.exitcode)


def _job_died(job_id: int, exitcode: int) -> None:
    """Fail a job whose process ended without finishing it (killed, out of memory)."""
    if Job.objects.filter(pk=job_id, status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).exists():
        job_services.job_finish(
            job_id=job_id,
            error=(
                f"the process running job #{job_id} stopped (exit status {exitcode}) before "
                "it finished; resume the run to evaluate the items it had not finished"
            ),
        )


def job_failed_messages(jobs: Sequence[Job]) -> list[str]:
    return [
        job.error
        for job in Job.objects.filter(pk__in=[j.pk for j in jobs]).order_by("pk")
        if job.error
    ]
