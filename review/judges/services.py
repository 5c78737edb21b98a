"""Judge runs: storing model answers, starting a run, and the "judge" job's runner, one for
every judge (``review.judges.specs``: answers, plans).

The runner asks the run's judge spec for the calls of each thing it rates (answers, or
plans), skips the calls this run already finished (a resumed run), answers from the cache the
calls any run of the project finished with the same key (endpoint + template version + model +
inputs), sends the rest concurrently (``workers`` threads, bounded by the endpoint's limit),
retries an unparseable output once (``review.judges.calls``), and stores every call. A judge
with a second stage (ATP-Bench MAM's Chief Judge) gets its later calls built from the first
stage's stored judgments. Worker threads only talk to the model (and read image files); every
database read and write happens on the runner's thread.

Images: a call carries its images as ``sha256:`` references (stored as such in the call's
``messages``, and part of its key); the runner looks them up among the project's images and a
worker thread sends them as data URLs (``review.judges.inputs``). A call whose image is not
stored, or with more than JUDGE_MAX_IMAGES images, fails with a message (and is made again by a
later run or a resume). Rate limits: every thread passes the endpoint's shared ``RateGate`` (a
429's Retry-After holds them all; the model's ``rpm`` caps requests a minute).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Model, Q

from benchmark import permissions
from benchmark.exceptions import Conflict, DomainError, ValidationFailed
from benchmark.jobs import services as job_services
from benchmark.jobs.kinds import Progress
from benchmark.judge_prompts import Call, Judgment, Template
from benchmark.llm.client import ChatClient, ChatRequest, ModelConfig, ModelError
from benchmark.llm.services import HOW_TO_CONFIGURE, image_input, model_resolve
from benchmark.metrics.tag_scores import AnswerRecord, ItemIndex
from benchmark.models import Image, Item, Job, Origin, Project, Response
from benchmark.typing import User
from review import job_names
from review.answers.services import read_uploads
from review.judges.calls import (
    Outcome,
    call_ask,
    call_failed,
    call_key,
    parsed_json,
    stored_judgment,
)
from review.judges.inputs import (
    IMAGE_REF_PREFIX,
    RENDERED_IMAGES,
    query_images,
    rendered_answer,
    rendered_images,
)
from review.judges.models import CallRecord, JudgeRun
from review.judges.run_settings import judge_templates_for
from review.judges.selectors import judge_run_report
from review.judges.specs import JudgeSpec, judge_spec
from review.judges.specs.subjects import answers_for

__all__ = [
    "IMAGE_REF_PREFIX",
    "RENDERED_IMAGES",
    "Outcome",
    "answers_for",
    "answers_import",
    "call_key",
    "first_calls",
    "judge_run_create",
    "judge_run_execute",
    "judge_run_job",
    "judge_run_resume",
    "judge_run_start",
    "query_images",
    "rendered_answer",
    "rendered_images",
]

log = logging.getLogger(__name__)

JUDGE_KIND = job_names.JUDGE_KIND
MAX_WORKERS = 32
RESPONSE_KEY_PREFIX = "model:"

# =========================================================================== answers


@dataclass(frozen=True)
class ImportReport:
    created: int
    updated: int
    unchanged: int
    unknown: list[str]
    #: The models whose answers were matched to items (what the import stored or kept).
    models: list[str] = dataclasses.field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _response_key(model: str) -> str:
    return f"{RESPONSE_KEY_PREFIX}{model}"[:255]


def answers_import(
    *, project: Project, files: Sequence[tuple[str, bytes]], user: User | None = None
) -> ImportReport:
    """Store model answers read from answer files (the formats ``score_responses`` reads) as
    the project's model Responses: one per item and model (key ``model:<name>``), matched to
    items as ``score_responses`` matches them. Importing the same files again changes
    nothing; a changed answer text replaces the stored one. Scores a record already carries
    (LLM-I's released ``scores``/``justifications``) are kept in the Response's ``extra``
    under those keys, as the LLM-I dataset import keeps them. ``user`` None is the command
    line. A bad file, or a model answering an item twice, raises ValidationFailed naming the
    file and line; answers naming items the project does not have are counted in
    ``unknown``."""
    if user is not None:
        permissions.require(user=user, project=project, action="run_judges")
    records = read_uploads(files, max_files=None)
    items = list(
        Item.objects.filter(project=project)
        .order_by("position", "id")
        .values_list("pk", "external_id", "source_file", "query")
    )
    index = ItemIndex((e, s, q) for _, e, s, q in items)
    pk_of = {external_id: pk for pk, external_id, _, _ in items}
    unknown: list[str] = []
    chosen: dict[tuple[int, str], AnswerRecord] = {}
    for record in records:
        external_id = index.resolve(record)
        if external_id is None:
            unknown.append(record.label)
            continue
        slot = (pk_of[external_id], _response_key(record.model))
        if slot in chosen:
            first = chosen[slot]
            raise ValidationFailed(
                f"{record.file}, {record.where}: model {record.model!r} answers item "
                f"{external_id} a second time (first in {first.file}, {first.where}); keep one "
                "answer per item and model"
            )
        chosen[slot] = record
    created = updated = unchanged = 0
    with transaction.atomic():
        existing = {
            (r.item_id, r.key): r
            for r in Response.objects.filter(
                item__project=project, key__startswith=RESPONSE_KEY_PREFIX
            )
        }
        for (item_pk, key), record in chosen.items():
            row = existing.get((item_pk, key))
            if row is None:
                row = Response(
                    item_id=item_pk,
                    key=key,
                    origin=Origin.MODEL,
                    model_name=record.model[:200],
                    source_file=record.file[:255],
                    text=record.text,
                    position=1000,
                    extra=dict(record.released or {}),
                )
                row.full_clean(validate_unique=False, validate_constraints=False)
                row.save()
                created += 1
            elif (
                row.text != record.text
                or row.origin != Origin.MODEL
                or any(row.extra.get(k) != v for k, v in (record.released or {}).items())
            ):
                changed_text = row.text != record.text
                row.text, row.origin, row.source_file = record.text, Origin.MODEL, record.file[:255]
                row.extra = {**row.extra, **(record.released or {})}
                if changed_text:  # the images rendered from the old text no longer belong
                    row.extra.pop(RENDERED_IMAGES, None)
                row.save(update_fields=["text", "origin", "source_file", "extra"])
                updated += 1
            else:
                unchanged += 1
    return ImportReport(
        created=created,
        updated=updated,
        unchanged=unchanged,
        unknown=unknown,
        models=sorted({record.model[:200] for record in chosen.values()}),
    )


# =========================================================================== starting


def judge_config(
    *, project: Project, base_url: str = "", model: str = ""
) -> tuple[ModelConfig, dict]:
    """The judge model a run would call (``base_url``/``model`` over the project's), and its
    sampling parameters; ValidationFailed saying how to configure one when there is none."""
    return _config(project, base_url, model)


def _config(project: Project, base_url: str = "", model: str = "") -> tuple[ModelConfig, dict]:
    """The judge model: the project's (or the environment's) with ``base_url``/``model``
    overriding. The configured API key goes only to its own endpoint."""
    try:
        resolved = model_resolve(project=project)
    except ModelError as exc:
        raise ValidationFailed(str(exc)) from exc
    base = resolved.config if resolved is not None else None
    url = base_url or (base.base_url if base else "")
    name = model or (base.model if base else "")
    if not url or not name:
        raise ValidationFailed(
            "No judge model: give a base URL and a model name, or configure the project's "
            "model. " + HOW_TO_CONFIGURE
        )
    if base is not None and base.base_url.rstrip("/") == url.rstrip("/"):
        config = dataclasses.replace(base, model=name)
    else:
        config = ModelConfig(base_url=url, model=name)
    return config, dict(resolved.params) if resolved is not None else {}


def _templates(project: Project, judge: str) -> dict[str, str]:
    """``{template id: version}`` of the templates a new run uses: the project's own text
    where it has one, else the built-in (``review.judge_settings``)."""
    chosen = judge_templates_for(project=project, judge=judge)
    return {t.id: t.version for t in chosen.values()}


def _check_workers(workers: int) -> None:
    if not 1 <= workers <= MAX_WORKERS:
        raise ValidationFailed(f"workers must be between 1 and {MAX_WORKERS}, got {workers}")


def judge_run_create(
    *,
    project: Project,
    user: User | None,
    judge: str,
    base_url: str = "",
    model: str = "",
    models: Sequence[str] = (),
    workers: int = 4,
    enqueue: bool = False,
    evaluation_run: int | None = None,
    units: Sequence[str] = (),
    templates: Mapping[str, str] | None = None,
    selection: Mapping[str, Any] | None = None,
) -> tuple[JudgeRun, Job]:
    """A JudgeRun of any runnable judge and its job, over the things the judge rates (the
    project's model answers, or its plans) of ``models`` (none: every model's answers, or the
    ground-truth plans). With ``enqueue`` the job pipeline enqueues the job after commit (a
    page); without, the caller runs it (``judge_run_execute``, the command line). ``user``
    None is the command line. ``evaluation_run``: the evaluation run whose answers are judged
    (kept in the run's selection and its job's params, so the evaluation's page lists it).
    ``units``: only the calls whose unit (``JudgeSpec.call_unit``) is one of these are made (a
    held-back run, ``review.agreement.judge_examples``). ``templates``: the ``{template id: version}``
    the run uses instead of the project's current ones. ``selection``: what else the run's
    subject reads (``Subject.run_things``: the pairs of a comparison of two models)."""
    if user is not None:
        permissions.require(user=user, project=project, action="run_judges")
    spec = judge_spec(judge)
    if not spec.runnable:
        raise ValidationFailed(f"the {spec.label} is not run on its own: it runs {spec.runs_in}")
    _check_workers(workers)
    config, _ = _config(project, base_url, model)
    chosen = {
        **(selection or {}),
        "models": list(models),
        **({"evaluation_run": evaluation_run} if evaluation_run else {}),
        **({"units": sorted(units)} if units else {}),
    }
    chosen = dict(spec.rates.run_selection(project=project, selection=chosen))
    if not spec.rates.run_things(project=project, selection=chosen):
        raise ValidationFailed(spec.rates.nothing_to_judge(models))
    with transaction.atomic():
        run = JudgeRun.objects.create(
            project=project,
            judge=spec.name,
            base_url=config.base_url[:500],
            model=config.model[:200],
            templates=dict(templates) if templates else _templates(project, spec.name),
            weights=spec.run_settings(project),
            selection=chosen,
            created_by=user,
        )
        job = _job(run, user, workers, enqueue, evaluation_run=evaluation_run)
        run.job = job
        run.save(update_fields=["job"])
    return run, job


def _job(
    run: JudgeRun,
    user: User | None,
    workers: int,
    enqueue: bool,
    *,
    evaluation_run: int | None = None,
    follows: int | None = None,
) -> Job:
    params: dict[str, Any] = {"project_id": run.project_id, "run_id": run.pk, "workers": workers}
    if evaluation_run:
        params["evaluation_run"] = evaluation_run
    if follows is not None:
        params["follows"] = follows
    if enqueue:
        return job_services.job_start(
            kind=JUDGE_KIND, user=user, project=run.project, params=params
        )
    return job_services.job_create(kind=JUDGE_KIND, user=user, project=run.project, params=params)


def judge_run_start(
    *,
    project: Project,
    user: User,
    judge: str,
    base_url: str = "",
    model: str = "",
    models: Sequence[str] = (),
    files: Sequence[tuple[str, bytes]] = (),
    workers: int = 4,
) -> tuple[JudgeRun, Job]:
    """The "Judge answers" page: import the uploaded answer files (if any), then start a run
    as a job (enqueued after commit), all or nothing. With files and no ``models`` named, the
    run judges the uploaded files' models."""
    permissions.require(user=user, project=project, action="run_judges")
    with transaction.atomic():
        if files:
            imported = answers_import(project=project, files=files, user=user)
            if not imported.models:
                shown = ", ".join(imported.unknown[:5])
                raise ValidationFailed(
                    f"none of the {len(imported.unknown)} uploaded answers names an item of "
                    f"this project ({shown}{', …' if len(imported.unknown) > 5 else ''})"
                )
            models = list(models) or imported.models
        return judge_run_create(
            project=project,
            user=user,
            judge=judge,
            base_url=base_url,
            model=model,
            models=models,
            workers=workers,
            enqueue=True,
        )


def judge_run_resume(
    *, run: JudgeRun, user: User | None, workers: int = 4, enqueue: bool = False
) -> Job:
    """A new job for an existing run whose job has ended (its worker died and the sweep failed
    it, it failed, or it was cancelled): only the calls the run has not finished are made,
    with the template versions the run recorded. Conflict while the run's job is still queued
    or running."""
    if user is not None:
        permissions.require(user=user, project=run.project, action="run_judges")
    _check_workers(workers)
    return _run_again(run=run, user=user, workers=workers, enqueue=enqueue)


def judge_run_follow(*, run: JudgeRun, user: User | None, follows: int | None) -> Job:
    """The run again, as a job enqueued after commit, because what it judges grew (an
    evaluation whose answers it judged was resumed and finished: ``follows`` is the job that
    finished it; ``review.evaluation.judges``): the calls of the things it judged are kept,
    only the new things' are made. Started by the system for the run its judges' starter
    chose, so no permission is asked again; ``user`` is who set it off (the job's owner)."""
    workers = int(((run.job.params or {}) if run.job else {}).get("workers") or 4)
    return _run_again(run=run, user=user, workers=workers, enqueue=True, follows=follows)


def _run_again(
    *, run: JudgeRun, user: User | None, workers: int, enqueue: bool, follows: int | None = None
) -> Job:
    with transaction.atomic():
        run = (
            JudgeRun.objects.select_for_update(of=("self",))
            .select_related("job", "project")
            .get(pk=run.pk)
        )
        if run.job is not None and not run.job.done:
            raise Conflict(f"judge run #{run.pk} is still {run.job.status}; wait for its job")
        job = _job(
            run, user, workers, enqueue,
            evaluation_run=(run.selection or {}).get("evaluation_run"), follows=follows,
        )  # fmt: skip
        run.job = job
        run.save(update_fields=["job"])
    return job


def _judged_ids(run: JudgeRun, spec: JudgeSpec) -> set[int]:
    """The ids of the things the run has stored a call of."""
    return set(spec.rates.calls(run).values_list(spec.rates.fk_id, flat=True).distinct())


def judge_run_unjudged(*, run: JudgeRun) -> int:
    """How many of the things the run judges (its selection read now: an evaluation's
    answers grow when it is resumed) it has no call of and would make calls for (a thing
    the judge makes no call of, such as an answer without a reference for the pairwise
    judge, is not waiting to be judged)."""
    spec = judge_spec(run.judge)
    things = spec.rates.run_things(project=run.project, selection=run.selection or {})
    judged = _judged_ids(run, spec)
    rest = [thing for thing in things if thing.pk not in judged]
    if not rest:
        return 0
    templates = judge_templates_for(
        project=run.project, judge=run.judge, versions=run.templates or None
    )
    return sum(1 for thing in rest if spec.first_calls(thing, run.model, templates))


# =========================================================================== running

#: Calls looked up together (finished by this run? answered by the cache?).
CHUNK_CALLS = 500
#: Results are stored, and progress reported, when this many wait or this often (seconds).
FLUSH_ROWS = 500
FLUSH_SECONDS = 1.0
#: Calls handed to the worker threads ahead of them, per thread.
WINDOW_PER_WORKER = 4


def first_calls(
    judge: str,
    subject: Any,
    model: str,
    templates: Mapping[str, Template] | None = None,
) -> list[Call]:
    """The calls of one thing the judge rates that need no other call's result, built with
    ``templates`` (by id; the judge's built-in templates where one is not given)."""
    spec = judge_spec(judge)
    builtin = {t.id: t for t in spec.templates}
    return spec.first_calls(subject, model, {**builtin, **(templates or {})})


def _run_call(
    client: ChatClient,
    call: Call,
    parse: Callable[[str], Any],
    params: dict[str, Any],
    images: Sequence[Image] = (),
) -> Outcome:
    """In a worker thread: read the images, ask, parse, ask once more when the output did
    not parse. Touches no database."""
    try:
        request = ChatRequest.from_messages(
            call.messages, images=[image_input(image) for image in images], params=params
        )
        return call_ask(client=client, call=call, parse=parse, request=request)
    except ModelError as exc:
        return call_failed(call, str(exc))
    finally:
        connection.close()


def _chunks(pairs: Iterable[tuple[Any, Call]], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for pair in pairs:
        chunk.append(pair)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _eta(seconds: float) -> str:
    if seconds < 90:
        return f"about {max(1, round(seconds))} s left"
    return f"about {round(seconds / 60)} min left"


#: What a cached call copies from the call that answered it.
_CACHED_FIELDS = (
    "outputs",
    "parsed",
    "ok",
    "error",
    "latency_ms",
    "prompt_tokens",
    "completion_tokens",
)
#: What storing a call again (a resumed run redoing a failed call) replaces.
_UPDATE_FIELDS = [
    "label",
    "template_id",
    "template_version",
    "messages",
    *_CACHED_FIELDS,
    "transport_error",
    "cached",
]


#: A call to store: the thing it judges, the call, its stored key and its place in the run's
#: order.
_Todo = tuple[Model, Call, str, int]


class _Runner:
    """Makes a run's calls: streams them in chunks (so memory holds one chunk, not the run),
    skips the ones this run finished, copies the cache's answers, hands the rest to a pool
    of worker threads a window at a time, and stores results in batches (an upsert on
    run/thing/key, which also replaces a call a resumed run made again). Progress is
    reported with each batch, at most every FLUSH_SECONDS; any
    exception it raises (a cancelled job) stops the run: nothing more is handed out, queued
    calls are dropped, and what has finished is stored before the exception goes on."""

    def __init__(
        self,
        *,
        run: JudgeRun,
        job: Job,
        progress: Progress,
        spec: JudgeSpec,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.run = run
        self.spec = spec
        self.subject = spec.rates
        call_model = self.subject.call_model
        assert call_model is not None, f"{spec.name} stores no judge calls"
        self.call_model: type[Any] = call_model
        self.progress = progress
        self.workers = int(job.params.get("workers") or 4)
        config, params = _config(run.project, run.base_url, run.model)
        self.config = config
        self.params = params
        self.max_images = int(settings.JUDGE_MAX_IMAGES)
        self.clock = clock
        self.started = clock()
        self.flushed_at = self.started
        self.rows: list[tuple[int, CallRecord]] = []
        self.seq = 0  # the order calls are handed out in, which is the order rows are stored in
        self.images: dict[str, Image | None] = {}
        self.project_runs = set(
            JudgeRun.objects.filter(project_id=run.project_id).values_list("pk", flat=True)
        )
        self.total = 0
        self.done = 0
        self.made = 0
        self.cached = 0
        self.reused = 0

    # ---------------------------------------------------------------- looking up

    def lookup(self, keys: list[str]) -> tuple[set[tuple[int, str]], dict[str, dict[str, Any]]]:
        """For ``keys``: the (thing, key) of the calls this run has finished, and the newest
        finished call of the project made (not itself copied from the cache) with each key,
        by any run. One query through the key's index; the runs are checked here, since a
        join on the run leads SQLite to scan every call of the project."""
        fk_id = self.subject.fk_id
        rows = (
            self.call_model._default_manager.filter(key__in=keys, transport_error=False)
            .filter(Q(cached=False) | Q(run=self.run))
            .order_by("id")
            .values("run_id", fk_id, "key", *_CACHED_FIELDS)
        )
        finished: set[tuple[int, str]] = set()
        hits: dict[str, dict[str, Any]] = {}
        for row in rows:
            if row["run_id"] == self.run.pk:
                finished.add((row[fk_id], row["key"]))
            if row["run_id"] in self.project_runs:
                hits[row["key"]] = row
        return finished, hits

    def triage(self, chunk: list[tuple[Model, Call]]) -> list[_Todo]:
        """The chunk's calls still to make; finished ones are counted, cached ones stored."""
        keyed = [(t, c, call_key(c, self.config.base_url)) for t, c in chunk]
        finished, hits = self.lookup(list(dict.fromkeys(key for _, _, key in keyed)))
        todo = []
        for thing, call, key in keyed:
            self.seq += 1
            if (thing.pk, key) in finished:
                self.reused += 1
                self.done += 1
            elif key in hits:
                self.store((thing, call, key, self.seq), hit=hits[key])
                self.cached += 1
                self.done += 1
            else:
                todo.append((thing, call, key, self.seq))
        self.resolve_images([call for _, call, _, _ in todo])
        return todo

    def resolve_images(self, calls: list[Call]) -> None:
        """Look up, in one query, the stored images the calls refer to that are not known yet
        (only the project's images may be sent)."""
        shas = {
            ref[len(IMAGE_REF_PREFIX) :]
            for call in calls
            for ref in call.image_refs
            if ref.startswith(IMAGE_REF_PREFIX)
        }
        missing = sorted(shas - self.images.keys())
        for start in range(0, len(missing), CHUNK_CALLS):
            part = missing[start : start + CHUNK_CALLS]
            found = {
                image.sha256: image
                for image in Image.objects.filter(
                    sha256__in=part, projects=self.run.project_id
                ).only("sha256", "file")
            }
            self.images.update({sha: found.get(sha) for sha in part})

    def images_of(self, call: Call) -> tuple[list[Image], str]:
        """The stored images of the call's image references, in order, or why it cannot be
        sent."""
        refs = call.image_refs
        if len(refs) > self.max_images:
            return [], (
                f"this call would send {len(refs)} images, more than JUDGE_MAX_IMAGES = "
                f"{self.max_images}; the server's operator can raise that setting"
            )
        images = []
        for ref in refs:
            sha = ref[len(IMAGE_REF_PREFIX) :] if ref.startswith(IMAGE_REF_PREFIX) else ""
            image = self.images.get(sha) if sha else None
            if image is None:
                return [], (
                    f"image {(sha or ref)[:12]} is not stored (or not an image of this "
                    "project), so the call cannot send it"
                )
            images.append(image)
        return images, ""

    # ---------------------------------------------------------------- running

    def execute(self, pairs: Iterable[tuple[Model, Call]]) -> None:
        """Store every (thing, call) of ``pairs``: finished ones are skipped, cached ones
        copied, the rest sent concurrently."""
        workers = max(1, min(self.workers, self.config.concurrency))
        window = workers * WINDOW_PER_WORKER
        client = ChatClient(self.config, mode="off").keep_open()
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge")
        inflight: dict[Future[Outcome], _Todo] = {}
        try:
            for chunk in _chunks(pairs, CHUNK_CALLS):
                for todo in self.triage(chunk):
                    thing, call = todo[0], todo[1]
                    images, problem = self.images_of(call)
                    if problem:
                        self.store(todo, outcome=call_failed(call, problem))
                        self.made += 1
                        self.done += 1
                        continue
                    while len(inflight) >= window:
                        self.collect(inflight)
                    parse = self.spec.parser(call.label, thing)
                    future = pool.submit(_run_call, client, call, parse, self.params, images)
                    inflight[future] = todo
                self.maybe_flush()
            while inflight:
                self.collect(inflight)
            self.flush()
            self.tick()
        except BaseException:
            # Cancelled (progress raised) or broken: hand out nothing more, drop what is
            # queued, keep what finished. Calls in flight end on their own; their answers
            # are not kept (a resume makes them again).
            pool.shutdown(wait=False, cancel_futures=True)
            self.salvage(inflight)
            raise
        pool.shutdown(wait=True)
        client.close()

    def collect(self, inflight: dict[Future[Outcome], _Todo]) -> None:
        """Wait for at least one call in flight to finish; store the finished ones."""
        finished, _ = wait(inflight, return_when=FIRST_COMPLETED)
        for future in finished:
            self.store(inflight.pop(future), outcome=future.result())
            self.made += 1
            self.done += 1
        self.maybe_flush()

    def salvage(self, inflight: dict[Future[Outcome], _Todo]) -> None:
        for future, todo in list(inflight.items()):
            if future.done() and not future.cancelled() and future.exception() is None:
                self.store(todo, outcome=future.result())
        try:
            self.flush()
        except Exception:
            log.exception("judge run %s: could not store its finished calls", self.run.pk)

    def store(
        self,
        todo: _Todo,
        *,
        outcome: Outcome | None = None,
        hit: dict[str, Any] | None = None,
    ) -> None:
        thing, call, key, seq = todo
        fields: dict[str, Any] = {
            "label": call.label,
            "template_id": call.template_id,
            "template_version": call.template_version,
            "messages": call.messages,
        }
        if hit is not None:
            fields.update({name: hit[name] for name in _CACHED_FIELDS})
            fields.update(transport_error=False, cached=True)
        else:
            assert outcome is not None
            judgment = outcome.judgment
            fields.update(
                outputs=outcome.outputs,
                parsed=parsed_json(judgment.value),
                ok=judgment.ok,
                error=outcome.transport_error or judgment.error or "",
                transport_error=bool(outcome.transport_error),
                cached=False,
                latency_ms=outcome.latency_ms,
                prompt_tokens=outcome.prompt_tokens,
                completion_tokens=outcome.completion_tokens,
            )
        row = self.subject.call_row(run=self.run, thing=thing, key=key, **fields)
        self.rows.append((seq, row))

    def maybe_flush(self) -> None:
        if len(self.rows) >= FLUSH_ROWS or self.clock() - self.flushed_at >= FLUSH_SECONDS:
            self.flush()
            self.tick()

    def flush(self) -> None:
        """Store the waiting results (insert, or replace the row of a call made again)."""
        self.flushed_at = self.clock()
        if not self.rows:
            return
        fk_id = self.subject.fk_id
        rows = list(
            {
                (getattr(r, fk_id), r.key): r
                for _, r in sorted(self.rows, key=lambda pair: pair[0])
            }.values()
        )
        self.rows = []
        self.call_model._default_manager.bulk_create(
            rows,
            batch_size=FLUSH_ROWS,
            update_conflicts=True,
            unique_fields=["run", self.subject.fk, "key"],
            update_fields=_UPDATE_FIELDS,
        )

    def tick(self) -> None:
        done = min(self.done, self.total)
        message = f"{done} of {self.total} calls"
        elapsed = self.clock() - self.started
        if self.made >= 20 and elapsed > 0 and done < self.total:
            message += f", {_eta((self.total - done) * elapsed / self.made)}"
        self.progress(progress=done, total=self.total, message=message)

    # ---------------------------------------------------------------- stages

    def later_pairs(
        self, things: Sequence[Model], model: str, templates: Mapping[str, Template]
    ) -> list[tuple[Model, Call]]:
        """The second stage's calls, built from the first stage's stored judgments; a thing
        whose first stage failed gets none (and the total drops by what it would have made)."""
        fk_id = self.subject.fk_id
        rows: dict[int, list[CallRecord]] = {}
        for row in self.subject.calls(self.run).defer("messages").order_by("id"):
            rows.setdefault(getattr(row, fk_id), []).append(row)
        pairs: list[tuple[Model, Call]] = []
        for thing in things:
            judgments: dict[str, Judgment[Any]] = {
                row.label: stored_judgment(row, self.spec.parser(row.label, thing))
                for row in rows.get(thing.pk, [])
            }
            calls = self.spec.later_calls(thing, judgments, model, templates)
            self.total -= self.spec.later_call_count - len(calls)
            pairs += [(thing, call) for call in calls]
        return pairs


def _first_pairs(
    spec: JudgeSpec, things: Sequence[Any], model: str, templates: Mapping[str, Template]
) -> Iterator[tuple[Any, Call]]:
    for thing in things:
        for call in spec.first_calls(thing, model, templates):
            yield thing, call


def judge_run_job(*, job: Job, progress: Progress) -> dict[str, Any]:
    """The "judge" job's runner, for every judge; the result is the run's summary
    (``review.judges.selectors.judge_run_report``)."""
    run = JudgeRun.objects.select_related("project").get(pk=job.params["run_id"])
    spec = judge_spec(run.judge)
    try:
        runner = _Runner(run=run, job=job, progress=progress, spec=spec)
    except ModelError as exc:
        raise DomainError(str(exc)) from exc
    things = spec.rates.run_things(project=run.project, selection=run.selection or {})
    # What the run had judged before this job (a resumed or followed run keeps it).
    judged_before = _judged_ids(run, spec)
    ids = {thing.pk for thing in things}
    kept_before = len(ids & judged_before)
    model = runner.config.model
    # The very template versions the run recorded when it was created (a resumed run makes
    # the calls it made before, even if the project's text changed since).
    templates = judge_templates_for(
        project=run.project, judge=run.judge, versions=run.templates or None
    )
    started = time.monotonic()
    units = set(run.selection.get("units") or [])
    if units:
        # A held-back run: only the calls of its units (a small set, built at once).
        first = [
            (t, c)
            for t, c in _first_pairs(spec, things, model, templates)
            if spec.call_unit(t, c) in units
        ]
        things = list({id(t): t for t, _ in first}.values())
        runner.total = len(first) + spec.later_call_count * len(things)
        runner.execute(first)
        if spec.later_call_count:
            later = runner.later_pairs(things, model, templates)
            kept = [(t, c) for t, c in later if spec.call_unit(t, c) in units]
            runner.total -= len(later) - len(kept)
            runner.execute(kept)
    else:
        # The calls are built as they are sent: memory holds one chunk of them, not the run.
        runner.total = sum(spec.first_call_count(t) + spec.later_call_count for t in things)
        runner.execute(_first_pairs(spec, things, model, templates))
        if spec.later_call_count:
            runner.execute(runner.later_pairs(things, model, templates))
    judged = len(ids & _judged_ids(run, spec)) - kept_before
    summary = judge_run_report(run=run)["summary"]
    # Routing by doubt: where this judge disagrees with the people, items are more in doubt.
    from annotation.judgment_tasks.doubt.services import project_doubt_recompute

    project_doubt_recompute(project=run.project)
    summary["calls"] = {
        "total": runner.total,
        "made": runner.made,
        "cached": runner.cached,
        "reused": runner.reused,
        "seconds": round(time.monotonic() - started, 3),
    }
    return {
        "run_id": run.pk,
        "summary": summary,
        "judged": judged,
        "already_judged": kept_before,
    }


def judge_run_execute(*, job: Job) -> Job:
    """Run a judge job now, in this process (the command line), through the job pipeline's
    ``job_run``; returns the job as it ended."""
    job_services.job_run(job_id=job.pk)
    return Job.objects.get(pk=job.pk)
