"""Judge runs: storing model answers, starting a run, and the "judge" job's runner.

The runner builds every :class:`benchmark.judges.Call` of the run for the chosen answers,
skips the calls this run already finished (a resumed run), answers from the cache the calls
any run of the project finished with the same key (endpoint + template version + model +
inputs), sends the rest concurrently (``workers`` threads, bounded by the endpoint's limit),
retries an unparseable output once, and stores every call. ATP-Bench MAM runs in two stages:
the Precision and Recall Inspectors first, then the Chief Judge with their reports. Worker
threads only talk to the model (and read image files); every database read and write happens
on the runner's thread.

Images: a call carries its images as ``sha256:`` references (stored as such in
``JudgeCall.messages``, and part of its key); the runner looks them up among the project's
images and a worker thread sends them as data URLs. The MAM agents get the item's images; the
rubric and MLLM judges get a rendered answer's images (``rendered_images``). A call whose image
is not stored, or with more than JUDGE_MAX_IMAGES images, fails with a message (and is made
again by a later run or a resume). Rate limits: every thread passes the endpoint's shared
``RateGate`` (a 429's Retry-After holds them all; the model's ``rpm`` caps requests a minute).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q

from benchmark import judges, permissions
from benchmark.exceptions import Conflict, DomainError, ValidationFailed
from benchmark.jobs import services as job_services
from benchmark.jobs.kinds import Progress
from benchmark.judges import Call, Judgment, Template, mam
from benchmark.judges import llmi as llmi_judge
from benchmark.judges import rubric as rubric_judge
from benchmark.llm.client import ChatClient, ChatRequest, ModelConfig, ModelError
from benchmark.llm.services import HOW_TO_CONFIGURE, image_input, model_resolve
from benchmark.metrics.tag_scores import AnswerRecord, ItemIndex
from benchmark.models import Image, Item, Job, Origin, Project, Response
from benchmark.tags import parse as parse_tags
from benchmark.typing import User
from review import job_names
from review.answers.services import read_uploads
from review.judge_settings.selectors import judge_templates_for, judge_weights_for
from review.judges.models import JudgeCall, JudgeName, JudgeRun
from review.judges.selectors import judge_run_report, judgment_of, parser_for

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
        permissions.require(user=user, project=project, action="review")
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


def answers_for(*, project: Project, models: Sequence[str] = ()) -> list[Response]:
    """The project's model answers (of the named models, or all), in item order."""
    rows = Response.objects.filter(item__project=project, origin=Origin.MODEL).select_related(
        "item"
    )
    if models:
        rows = rows.filter(model_name__in=list(models))
    return list(rows.order_by("item__position", "item_id", "model_name", "id"))


# =========================================================================== starting


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


def _weights(project: Project, judge: str) -> dict[str, Any]:
    """The LLM-I reward weights a new ``llmi-mllm`` run records (the project's, else equal)."""
    if judge != JudgeName.LLMI_MLLM:
        return {}
    return judge_weights_for(project=project).as_record()


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
) -> tuple[JudgeRun, Job]:
    """A JudgeRun and its job. With ``enqueue`` the job pipeline enqueues the job after
    commit (a page); without, the caller runs it (``judge_run_execute``, the command line).
    ``user`` None is the command line."""
    if judge == JudgeName.MMS_PLAN:  # judges plans, not answers
        from review.judges import plan_judge

        return plan_judge.plan_judge_run_create(
            project=project,
            user=user,
            base_url=base_url,
            model=model,
            models=models,
            workers=workers,
            enqueue=enqueue,
        )
    if user is not None:
        permissions.require(user=user, project=project, action="review")
    if judge not in JudgeName.values:
        raise ValidationFailed(f"unknown judge {judge!r}; choose one of {', '.join(JudgeName)}")
    if not 1 <= workers <= MAX_WORKERS:
        raise ValidationFailed(f"workers must be between 1 and {MAX_WORKERS}, got {workers}")
    config, _ = _config(project, base_url, model)
    if not answers_for(project=project, models=models):
        which = f" of {', '.join(models)}" if models else ""
        raise ValidationFailed(f"the project has no model answers{which} to judge; import some")
    with transaction.atomic():
        run = JudgeRun.objects.create(
            project=project,
            judge=judge,
            base_url=config.base_url[:500],
            model=config.model[:200],
            templates=_templates(project, judge),
            weights=_weights(project, judge),
            selection={"models": list(models)},
            created_by=user,
        )
        job = _job(run, user, workers, enqueue)
        run.job = job
        run.save(update_fields=["job"])
    return run, job


def _job(run: JudgeRun, user: User | None, workers: int, enqueue: bool) -> Job:
    params = {"project_id": run.project_id, "run_id": run.pk, "workers": workers}
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
    permissions.require(user=user, project=project, action="review")
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
        permissions.require(user=user, project=run.project, action="review")
    if not 1 <= workers <= MAX_WORKERS:
        raise ValidationFailed(f"workers must be between 1 and {MAX_WORKERS}, got {workers}")
    with transaction.atomic():
        run = (
            JudgeRun.objects.select_for_update(of=("self",))
            .select_related("job", "project")
            .get(pk=run.pk)
        )
        if run.job is not None and not run.job.done:
            raise Conflict(f"judge run #{run.pk} is still {run.job.status}; wait for its job")
        job = _job(run, user, workers, enqueue)
        run.job = job
        run.save(update_fields=["job"])
    return job


# =========================================================================== running

#: Where a rendered answer's images live (see ``rendered_images``).
RENDERED_IMAGES = "rendered_images"
IMAGE_REF_PREFIX = "sha256:"
#: Calls looked up together (finished by this run? answered by the cache?).
CHUNK_CALLS = 500
#: Results are stored, and progress reported, when this many wait or this often (seconds).
FLUSH_ROWS = 500
FLUSH_SECONDS = 1.0
#: Calls handed to the worker threads ahead of them, per thread.
WINDOW_PER_WORKER = 4


def rendered_images(response: Response) -> list[str | None] | None:
    """A rendered answer's images: ``Response.extra["rendered_images"]``, one entry per image
    tag of the answer (LLM-I ``<imgen>``, ATP-Bench ``<tool>``), in order: the sha256 of the
    image that tag produced (an image of the project), or null where it produced none. None
    when the answer has not been rendered (no such key). Rendering (issue 11) fills it, and so
    may an answer import whose format carries the images. The rubric and MLLM judges attach
    the produced images, in this order."""
    value = (response.extra or {}).get(RENDERED_IMAGES)
    if not isinstance(value, list):
        return None
    return [v if isinstance(v, str) and v else None for v in value]


def rendered_answer(text: str, images: Sequence[str | None] | None = None) -> str:
    """An LLM-I answer with each ``<imgen>`` tag replaced by ``[image k]``. With ``images``
    (the answer's ``rendered_images``) k counts the images produced, which is the order they
    are attached in, and a tag that produced none becomes ``[image not produced]``."""
    tools = parse_tags(text, "llmi").tools
    out, cursor, shown = [], 0, 0
    for n, tool in enumerate(tools):
        out.append(text[cursor : tool.start])
        if images is None:
            out.append(f"[image {n + 1}]")
        elif n < len(images) and images[n]:
            shown += 1
            out.append(f"[image {shown}]")
        else:
            out.append("[image not produced]")
        cursor = tool.end
    out.append(text[cursor:])
    return "".join(out)


def _refs(shas: Sequence[str | None]) -> list[str]:
    return [f"{IMAGE_REF_PREFIX}{sha}" for sha in shas if sha]


def query_images(item: Item) -> tuple[list[str], str]:
    """ATP-Bench MAM: the item's images as the item page shows them (the documents' images in
    ``img_index`` order, then the query's own image) as references, and a line naming each
    attached image, added to the query the agents read. ("", no images) for an item without
    stored images."""
    refs = [r for r in item.image_refs or [] if isinstance(r, dict) and r.get("sha256")]

    def position(ref: dict[str, Any]) -> int:
        value = ref.get("position", 0)
        return value if isinstance(value, int) else 0

    documents = sorted(
        (r for r in refs if (r.get("role") or "document") == "document"), key=position
    )
    query = sorted((r for r in refs if r.get("role") == "query"), key=position)
    names = [f"img_index {position(r)}" for r in documents] + ["the query's image"] * len(query)
    if not names:
        return [], ""
    legend = "\n\n(Images attached, in order: " + "; ".join(
        f"{n} = {name}" for n, name in enumerate(names, start=1)
    )
    return _refs([r["sha256"] for r in documents + query]), legend + ".)"


def first_calls(
    judge: str,
    response: Response,
    model: str,
    templates: Mapping[str, Template] | None = None,
) -> list[Call]:
    """The calls of one answer that need no other call's result, built with ``templates``
    (by id; the built-in templates where one is not given)."""
    t = dict(judges.TEMPLATES, **(templates or {}))
    item = response.item
    if judge == JudgeName.LLMI_RUBRIC:
        criteria = rubric_judge.criteria_of({"rubric": item.rubric or []})
        rendered = rendered_images(response)
        return rubric_judge.rubric_calls(
            prompt=item.query,
            answer=response.text if rendered is None else rendered_answer(response.text, rendered),
            criteria=criteria,
            model=model,
            images=_refs(rendered or []),
            template=t[rubric_judge.RUBRIC_TEMPLATE.id],
        )
    llm = t[llmi_judge.LLM_TEMPLATE.id]
    if judge == JudgeName.LLMI_LLM:
        return [
            llmi_judge.llm_call(prompt=item.query, answer=response.text, model=model, template=llm)
        ]
    if judge == JudgeName.LLMI_MLLM:
        rendered = rendered_images(response)
        return [
            llmi_judge.llm_call(prompt=item.query, answer=response.text, model=model, template=llm),
            llmi_judge.mllm_call(
                prompt=item.query,
                rendered_answer=rendered_answer(response.text, rendered),
                images=_refs(rendered or []),
                model=model,
                template=t[llmi_judge.MLLM_TEMPLATE.id],
            ),
        ]
    images, legend = query_images(item)
    return mam.first_stage_calls(
        query=item.query + legend,
        answer=response.text,
        model=model,
        images=images,
        precision_template=t[mam.PRECISION_TEMPLATE.id],
        recall_template=t[mam.RECALL_TEMPLATE.id],
    )


def call_key(call: Call, base_url: str) -> str:
    """The stored key: the judges' key (template version, model, inputs, image hashes) and
    the endpoint."""
    blob = f"{base_url.strip().rstrip('/')}\n{call.key}"
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass
class Outcome:
    """What a worker thread brings back for one call."""

    outputs: list[str]
    judgment: Judgment[Any]
    transport_error: str = ""
    latency_ms: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


def _failed(call: Call, message: str, outputs: list[str] | None = None) -> Outcome:
    """A call that got no answer (the endpoint failed, or an image could not be sent): a
    later run or a resume makes it again."""
    judgment: Judgment[Any] = Judgment(
        label=call.label,
        value=None,
        attempts=(judges.Attempt(raw="", error=message),),
        key=call.key,
        template_id=call.template_id,
        template_version=call.template_version,
    )
    return Outcome(outputs=outputs or [], judgment=judgment, transport_error=message)


def _run_call(
    client: ChatClient,
    call: Call,
    parse: Callable[[str], Any],
    params: dict[str, Any],
    images: Sequence[Image] = (),
) -> Outcome:
    """In a worker thread: read the images, ask, parse, ask once more when the output did
    not parse. Touches no database."""
    outputs: list[str] = []
    latency = prompt_tokens = completion_tokens = 0
    try:
        request = ChatRequest.from_messages(
            call.messages, images=[image_input(image) for image in images], params=params
        )
        while True:
            result = client.complete(request)
            outputs.append(result.text)
            latency += result.latency_ms
            prompt_tokens += result.prompt_tokens or 0
            completion_tokens += result.completion_tokens or 0
            judgment = judges.judgment_from_outputs(call, outputs, parse)
            if not judges.should_retry(judgment):
                break
    except ModelError as exc:
        return _failed(call, str(exc), outputs)
    finally:
        connection.close()
    return Outcome(
        outputs=outputs,
        judgment=judgment,
        latency_ms=latency,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )


def _parsed_json(value: Any) -> Any:
    if value is None:
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _chunks(pairs: Iterable[tuple[Response, Call]], size: int) -> Iterator[list[Any]]:
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


#: A call to store: its answer, the call, its stored key and its place in the run's order.
_Todo = tuple[Response, Call, str, int]


class _Runner:
    """Makes a run's calls: streams them in chunks (so memory holds one chunk, not the run),
    skips the ones this run finished, copies the cache's answers, hands the rest to a pool
    of worker threads a window at a time, and stores results in batches (an upsert on
    run/response/key, which also replaces a call a resumed run made again). Progress is
    reported with each batch, at most every FLUSH_SECONDS; any exception it raises (a
    cancelled job) stops the run: nothing more is handed out, queued calls are dropped, and
    what has finished is stored before the exception goes on."""

    def __init__(
        self,
        *,
        run: JudgeRun,
        job: Job,
        progress: Progress,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.run = run
        self.progress = progress
        self.workers = int(job.params.get("workers") or 4)
        config, params = _config(run.project, run.base_url, run.model)
        self.config = config
        self.params = params
        self.max_images = int(settings.JUDGE_MAX_IMAGES)
        self.clock = clock
        self.started = clock()
        self.flushed_at = self.started
        self.rows: list[tuple[int, JudgeCall]] = []
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
        """For ``keys``: the (response, key) of the calls this run has finished, and the
        newest finished call of the project made (not itself copied from the cache) with each
        key, by any run. One query through the key's index; the runs are checked here, since
        a join on the run leads SQLite to scan every call of the project."""
        rows = (
            JudgeCall.objects.filter(key__in=keys, transport_error=False)
            .filter(Q(cached=False) | Q(run=self.run))
            .order_by("id")
            .values("run_id", "response_id", "key", *_CACHED_FIELDS)
        )
        finished: set[tuple[int, str]] = set()
        hits: dict[str, dict[str, Any]] = {}
        for row in rows:
            if row["run_id"] == self.run.pk:
                finished.add((row["response_id"], row["key"]))
            if row["run_id"] in self.project_runs:
                hits[row["key"]] = row
        return finished, hits

    def triage(self, chunk: list[tuple[Response, Call]]) -> list[_Todo]:
        """The chunk's calls still to make; finished ones are counted, cached ones stored."""
        keyed = [(r, c, call_key(c, self.config.base_url)) for r, c in chunk]
        finished, hits = self.lookup(list(dict.fromkeys(key for _, _, key in keyed)))
        todo = []
        for response, call, key in keyed:
            self.seq += 1
            if (response.pk, key) in finished:
                self.reused += 1
                self.done += 1
            elif key in hits:
                self.store((response, call, key, self.seq), hit=hits[key])
                self.cached += 1
                self.done += 1
            else:
                todo.append((response, call, key, self.seq))
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

    def execute(self, pairs: Iterable[tuple[Response, Call]]) -> None:
        """Store every (answer, call) of ``pairs``: finished ones are skipped, cached ones
        copied, the rest sent concurrently."""
        workers = max(1, min(self.workers, self.config.concurrency))
        window = workers * WINDOW_PER_WORKER
        client = ChatClient(self.config, mode="off").keep_open()
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge")
        inflight: dict[Future[Outcome], _Todo] = {}
        try:
            for chunk in _chunks(pairs, CHUNK_CALLS):
                for todo in self.triage(chunk):
                    response, call = todo[0], todo[1]
                    images, problem = self.images_of(call)
                    if problem:
                        self.store(todo, outcome=_failed(call, problem))
                        self.made += 1
                        self.done += 1
                        continue
                    while len(inflight) >= window:
                        self.collect(inflight)
                    parse = parser_for(call.label, response)
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
        response, call, key, seq = todo
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
                parsed=_parsed_json(judgment.value),
                ok=judgment.ok,
                error=outcome.transport_error or judgment.error or "",
                transport_error=bool(outcome.transport_error),
                cached=False,
                latency_ms=outcome.latency_ms,
                prompt_tokens=outcome.prompt_tokens,
                completion_tokens=outcome.completion_tokens,
            )
        self.rows.append((seq, JudgeCall(run=self.run, response=response, key=key, **fields)))

    def maybe_flush(self) -> None:
        if len(self.rows) >= FLUSH_ROWS or self.clock() - self.flushed_at >= FLUSH_SECONDS:
            self.flush()
            self.tick()

    def flush(self) -> None:
        """Store the waiting results (insert, or replace the row of a call made again)."""
        self.flushed_at = self.clock()
        if not self.rows:
            return
        rows = list(
            {
                (r.response_id, r.key): r for _, r in sorted(self.rows, key=lambda pair: pair[0])
            }.values()
        )
        self.rows = []
        JudgeCall.objects.bulk_create(
            rows,
            batch_size=FLUSH_ROWS,
            update_conflicts=True,
            unique_fields=["run", "response", "key"],
            update_fields=_UPDATE_FIELDS,
        )

    def tick(self) -> None:
        done = min(self.done, self.total)
        message = f"{done} of {self.total} calls"
        elapsed = self.clock() - self.started
        if self.made >= 20 and elapsed > 0 and done < self.total:
            message += f", {_eta((self.total - done) * elapsed / self.made)}"
        self.progress(progress=done, total=self.total, message=message)


def first_call_count(judge: str, response: Response) -> int:
    """How many calls ``first_calls`` makes for the answer, without building them (for the
    progress total; building them twice would cost a second pass over every prompt)."""
    if judge == JudgeName.LLMI_RUBRIC:
        return len(rubric_judge.criteria_of({"rubric": response.item.rubric or []}))
    if judge == JudgeName.LLMI_LLM:
        return 1
    if judge == JudgeName.LLMI_MLLM:
        return 2
    return 2 if mam.tool_calls_of(response.text) else 1


def _first_pairs(
    judge: str,
    answers: Sequence[Response],
    model: str,
    templates: Mapping[str, Template] | None = None,
) -> Iterator[tuple[Response, Call]]:
    for response in answers:
        for call in first_calls(judge, response, model, templates):
            yield response, call


def judge_run_job(*, job: Job, progress: Progress) -> dict[str, Any]:
    """The "judge" job's runner; the result is the run's summary
    (``review.judges.selectors.judge_run_report``)."""
    run = JudgeRun.objects.select_related("project").get(pk=job.params["run_id"])
    if run.judge == JudgeName.MMS_PLAN:  # judges plans, not answers
        from review.judges import plan_judge

        return plan_judge.plan_judge_job(job=job, progress=progress)
    try:
        runner = _Runner(run=run, job=job, progress=progress)
    except ModelError as exc:
        raise DomainError(str(exc)) from exc
    answers = answers_for(project=run.project, models=run.selection.get("models") or [])
    model = runner.config.model
    # The very template versions the run recorded when it was created (a resumed run makes
    # the calls it made before, even if the project's text changed since).
    templates = judge_templates_for(
        project=run.project, judge=run.judge, versions=run.templates or None
    )
    # The calls are built as they are sent: memory holds one chunk of them, not the run.
    runner.total = sum(first_call_count(run.judge, r) for r in answers)
    if run.judge == JudgeName.ATP_MAM:
        runner.total += len(answers)  # one Chief Judge call per answer at most
    started = time.monotonic()
    runner.execute(_first_pairs(run.judge, answers, model, templates))
    if run.judge == JudgeName.ATP_MAM:
        rows = {(c.response_id, c.label): c for c in run.calls.defer("messages")}
        chief: list[tuple[Response, Call]] = []
        for response in answers:
            recall = rows.get((response.pk, "recall"))
            precision = rows.get((response.pk, "precision"))
            recall_value = judgment_of(recall, response).value if recall else None
            if mam.tool_calls_of(response.text):
                precision_value = judgment_of(precision, response).value if precision else None
            else:
                precision_value = mam.PrecisionReport(calls=())
            if recall_value is None or precision_value is None:
                runner.total -= 1
                continue
            images, legend = query_images(response.item)
            chief.append(
                (
                    response,
                    mam.chief_call(
                        query=response.item.query + legend,
                        answer=response.text,
                        precision=precision_value,
                        recall=recall_value,
                        model=model,
                        template=templates[mam.CHIEF_TEMPLATE.id],
                        images=images,
                    ),
                )
            )
        runner.execute(chief)
    report = judge_run_report(run=run)
    summary = report["summary"]
    summary["calls"] = {
        "total": runner.total,
        "made": runner.made,
        "cached": runner.cached,
        "reused": runner.reused,
        "seconds": round(time.monotonic() - started, 3),
    }
    return {"run_id": run.pk, "summary": summary}


def judge_run_execute(*, job: Job) -> Job:
    """Run a judge job now, in this process (the command line), through the job pipeline's
    ``job_run``; returns the job as it ended."""
    job_services.job_run(job_id=job.pk)
    return Job.objects.get(pk=job.pk)
