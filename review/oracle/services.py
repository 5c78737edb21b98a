"""Step-wise oracle testing (Agentic-MME §2.4): starting a run, and the "oracle" job's runner.

The runner takes the run's items (every item of the project with a reference trajectory, not
discarded; or the chosen ones), skips those this run already tested (a resumed run), and for
each of the rest, on the runner's thread: builds the item's task document and the oracle
conversation (``review.oracle.conversation``), derives and stores the ground-truth images the
task file defines but nobody stored, reads the image files, and keys the request as the model
client does. A request whose key the project's recorded model calls already answered is
answered from them (``ModelCallCache``; not in cache mode "off"); the rest go to the model
concurrently, up to the endpoint's limit. Each answer is scored with the item's matcher
(``benchmark.metrics.agentic_mme.final_answer_correct``: match type, tolerance, accepted
variants) and stored as the item's ``OracleResult``; each new answer is also recorded as a
ModelCall (purpose "oracle test"), which is what answers identical calls later.

An item that cannot be tested (no reference trajectory, no expected answer, a step whose
ground-truth observation is missing, an image file gone from storage, the endpoint failing)
gets a result with outcome "error" saying why; the job goes on with the next item. A resumed
run tests again only the items without a solved or failed result. Worker threads only talk to
the model; every database read and write happens on the runner's thread.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction
from django.db.models import Prefetch

from annotation.trajectories import document as td
from annotation.trajectories.selectors import REFERENCE_KEY, item_input_shas, reference_of
from annotation.trajectories.services import task_document
from benchmark import permissions
from benchmark.exceptions import Conflict, DomainError, ValidationFailed
from benchmark.images.services import image_derive_for_job
from benchmark.jobs import services as job_services
from benchmark.jobs.kinds import Progress
from benchmark.llm.client import (
    CacheMode,
    ChatClient,
    ChatRequest,
    ChatResult,
    ImageInput,
    ModelConfig,
    ModelError,
    image_mime,
)
from benchmark.llm.services import HOW_TO_CONFIGURE, ModelCallCache, model_resolve
from benchmark.metrics import agentic_mme as mme
from benchmark.models import (
    Image,
    Item,
    ItemStatus,
    Job,
    ModelCall,
    Project,
    Trajectory,
)
from benchmark.typing import User
from review import job_names
from review.oracle import conversation as oc
from review.oracle.models import OracleOutcome, OracleResult, OracleRun

ORACLE_KIND = job_names.ORACLE_KIND
ORACLE_PURPOSE = "oracle test"
MAX_ITEMS_CHOSEN = 5000


# =========================================================================== the model


@dataclass(frozen=True)
class OracleModel:
    config: ModelConfig
    params: dict[str, Any]
    cache_mode: CacheMode


def _same_endpoint(a: str, b: str) -> bool:
    return a.strip().rstrip("/") == b.strip().rstrip("/")


def oracle_model(*, project: Project, base_url: str = "", model: str = "") -> OracleModel:
    """The model to test with: the project's (or the environment's) with ``base_url`` and
    ``model`` overriding. The configured API key, sampling parameters and cache mode go with
    the configured endpoint only; another endpoint gets no key and the default parameters."""
    try:
        resolved = model_resolve(project=project)
    except ModelError as exc:
        raise ValidationFailed(str(exc)) from exc
    base = resolved.config if resolved is not None else None
    url = (base_url or "").strip() or (base.base_url if base else "")
    name = (model or "").strip() or (base.model if base else "")
    if not url or not name:
        raise ValidationFailed(
            "No model to test with: give a base URL and a model name, or configure the "
            "project's model. " + HOW_TO_CONFIGURE
        )
    if resolved is not None and base is not None and _same_endpoint(base.base_url, url):
        return OracleModel(
            config=dataclasses.replace(base, model=name),
            params=dict(resolved.params),
            cache_mode=resolved.cache_mode,
        )
    try:
        config = ModelConfig(base_url=url, model=name)
    except ModelError as exc:
        raise ValidationFailed(str(exc)) from exc
    return OracleModel(config=config, params={}, cache_mode="use")


# =========================================================================== items


def _reference_items(project: Project) -> Any:
    rows = Trajectory.objects.filter(key=REFERENCE_KEY)
    return (
        Item.objects.filter(project=project)
        .prefetch_related(Prefetch("trajectories", queryset=rows, to_attr="reference_rows"))
        .order_by("position", "id")
    )


def parse_item_ids(text: str) -> list[str]:
    """Item ids typed in a form: separated by commas, spaces or new lines; repeats dropped."""
    parts = text.replace(",", " ").split()
    return list(dict.fromkeys(p.strip() for p in parts if p.strip()))


def oracle_items(*, project: Project, ids: Sequence[str] = ()) -> list[Item]:
    """The items a run tests, in the project's order, with their reference rows prefetched:
    the chosen ones (by external id; unknown ids are refused, naming them), else every item
    with a reference trajectory that is not discarded."""
    items = _reference_items(project)
    if ids:
        if len(ids) > MAX_ITEMS_CHOSEN:
            raise ValidationFailed(f"choose at most {MAX_ITEMS_CHOSEN} items")
        chosen = list(items.filter(external_id__in=list(ids)))
        unknown = sorted(set(ids) - {item.external_id for item in chosen})
        if unknown:
            shown = ", ".join(unknown[:10]) + (" …" if len(unknown) > 10 else "")
            raise ValidationFailed(
                f"project {project.name!r} has no item with the id {shown} (use the item ids "
                "shown on the project's page, e.g. the task_id of an Agentic-MME task)"
            )
        return chosen
    return list(
        items.filter(trajectories__key=REFERENCE_KEY)
        .exclude(status=ItemStatus.DISCARDED)
        .distinct()
    )


# =========================================================================== starting


def _require(user: User | None, project: Project, model: OracleModel, base_url: str) -> None:
    if user is None:
        return
    permissions.require(user=user, project=project, action="run_judges")
    if base_url.strip():
        try:
            resolved = model_resolve(project=project)
        except ModelError:
            resolved = None
        configured = resolved.config.base_url if resolved is not None else ""
        if not _same_endpoint(configured, model.config.base_url):
            permissions.require(user=user, project=project, action="manage")


def oracle_run_create(
    *,
    project: Project,
    user: User | None,
    base_url: str = "",
    model: str = "",
    items: Sequence[str] = (),
    enqueue: bool = False,
) -> tuple[OracleRun, Job]:
    """An OracleRun and its job. With ``enqueue`` the job pipeline enqueues the job after
    commit (a page); without, the caller runs it (``oracle_run_execute``, the command line).
    ``user`` None is the command line. Reviewers and admins start runs; another endpoint
    than the project's configured one only admins (the server would send requests there)."""
    if not project.benchmark.offers.oracle_testing:
        raise ValidationFailed(
            "oracle testing walks a model through reference trajectories: only trajectory "
            f"(Agentic-MME) projects have them, and {project.name!r} holds "
            f"{project.get_kind_display().lower()}"
        )
    chosen = oracle_model(project=project, base_url=base_url, model=model)
    _require(user, project, chosen, base_url)
    ids = list(dict.fromkeys(str(i).strip() for i in items if str(i).strip()))
    found = oracle_items(project=project, ids=ids)
    if not found:
        raise ValidationFailed(
            f"no item of {project.name!r} has a reference trajectory yet: record one in the "
            "trajectory editor (or import the tasks) first"
        )
    with transaction.atomic():
        run = OracleRun.objects.create(
            project=project,
            base_url=chosen.config.base_url[:500],
            model=chosen.config.model[:200],
            selection={"items": ids},
            prompt_version=oc.PROMPT_VERSION,
            created_by=user,
        )
        job = _job(run, user, len(found), enqueue)
        run.job = job
        run.save(update_fields=["job"])
    return run, job


def _job(run: OracleRun, user: User | None, total: int, enqueue: bool) -> Job:
    params = {"project_id": run.project_id, "run_id": run.pk, "model": run.model}
    if enqueue:
        return job_services.job_start(
            kind=ORACLE_KIND, user=user, project=run.project, params=params, total=total
        )
    return job_services.job_create(
        kind=ORACLE_KIND, user=user, project=run.project, params=params, total=total
    )


def oracle_run_resume(*, run: OracleRun, user: User | None, enqueue: bool = False) -> Job:
    """A new job for a run whose job has ended (failed, lost its worker, or left items
    untested): only the items without a solved or failed result are tested. Conflict while
    the run's job is still queued or running."""
    if user is not None:
        permissions.require(user=user, project=run.project, action="run_judges")
    with transaction.atomic():
        run = (
            OracleRun.objects.select_for_update(of=("self",))
            .select_related("job", "project")
            .get(pk=run.pk)
        )
        if run.job is not None and not run.job.done:
            raise Conflict(f"oracle run #{run.pk} is still {run.job.status}; wait for its job")
        total = len(oracle_items(project=run.project, ids=run.selection.get("items") or []))
        job = _job(run, user, total, enqueue)
        run.job = job
        run.save(update_fields=["job"])
    return job


def oracle_job_active(*, run: OracleRun) -> Job | None:
    job = run.job
    return job if job is not None and not job.done else None


# =========================================================================== running


@dataclass
class Prepared:
    """One item made ready on the runner's thread: its request, or why it cannot be asked."""

    item: Item
    document: dict[str, Any] = field(default_factory=dict)
    conversation: oc.Conversation | None = None
    request: ChatRequest | None = None
    key: str = ""
    fingerprint: str = ""
    error: str = ""


@dataclass
class Answer:
    """What a worker thread brings back."""

    result: ChatResult | None = None
    error: str = ""
    attempts: int = 0


def _ask(client: ChatClient, request: ChatRequest) -> Answer:
    try:
        result = client.complete(request)
    except ModelError as exc:
        return Answer(error=str(exc), attempts=getattr(exc, "attempts", 0))
    finally:
        connection.close()
    return Answer(result=result, attempts=result.attempts)


def _read(image: Image) -> bytes:
    with image.file.open("rb") as handle:
        return handle.read()


def _flat_prompt(conversation: oc.Conversation) -> str:
    """The user turn as text, each image as ``[Image n]`` (a ModelCall keeps one prompt)."""
    out = []
    for part in conversation.parts:
        out.append(f"[Image {part.index}]" if isinstance(part, oc.Picture) else part.text)
    return "\n".join(out)


class _Runner:
    def __init__(self, *, run: OracleRun, job: Job, progress: Progress) -> None:
        self.run = run
        self.job = job
        self.progress = progress
        chosen = oracle_model(project=run.project, base_url=run.base_url, model=run.model)
        self.config = chosen.config
        self.params = chosen.params
        self.mode = chosen.cache_mode
        self.scope = f"project:{run.project_id}"
        self.client = ChatClient(self.config, mode="off", scope=self.scope)
        self.cache = ModelCallCache() if self.mode != "off" else None
        self.total = 0
        self.done = 0
        self.made = 0
        self.cached = 0
        self.reused = 0

    # ---------------------------------------------------------------- preparing

    def prepare(self, item: Item) -> Prepared:
        prepared = Prepared(item=item)
        try:
            self._prepare(prepared)
        except (DomainError, ModelError, oc.OracleInputError) as exc:
            prepared.error = exc.message if isinstance(exc, DomainError) else str(exc)
        return prepared

    def _prepare(self, prepared: Prepared) -> None:
        item = prepared.item
        reference = reference_of(item)
        if reference is None:
            raise ValidationFailed(
                "the item has no reference trajectory; record one in the trajectory editor"
            )
        if not (item.expected_answer or "").strip():
            raise ValidationFailed("the item has no expected answer to score the model's against")
        document = task_document(item=item, reference=reference)
        prepared.document = document
        prepared.fingerprint = td.fingerprint(document)
        input_shas = item_input_shas(item)
        derived: dict[str, str] = {}
        for step in oc.image_plan(document, input_shas):
            if not step.derived or step.recipe is None:
                continue
            try:
                image = image_derive_for_job(project=self.run.project, recipe=step.recipe)
            except DomainError as exc:
                raise ValidationFailed(
                    f"step {step.step_id}: its ground-truth image (Image {step.index}, "
                    f"{step.op} as the task file records it) cannot be made: {exc.message}"
                ) from None
            derived[step.step_id] = image.sha256
        conversation = oc.build(document, input_shas=input_shas, images=derived)
        prepared.conversation = conversation
        inputs = self._images(conversation)
        parts: list[str | ImageInput] = []
        for part in conversation.parts[1:]:
            parts.append(inputs[part.sha256] if isinstance(part, oc.Picture) else part.text)
        first = conversation.parts[0]
        assert isinstance(first, oc.Text)
        request = ChatRequest(
            prompt=first.text, system=conversation.system, params=self.params, parts=tuple(parts)
        )
        prepared.request = request
        prepared.key = self.client.key(request)

    def _images(self, conversation: oc.Conversation) -> dict[str, ImageInput]:
        shas = list(dict.fromkeys(conversation.image_shas))
        rows = {
            img.sha256: img
            for img in Image.objects.filter(sha256__in=shas, projects=self.run.project_id)
        }
        where: dict[str, str] = {}
        for part in conversation.parts:
            if isinstance(part, oc.Picture):
                step = f", from step {part.step_id}" if part.step_id else ", an input image"
                where.setdefault(part.sha256, f"Image {part.index}{step}")
        out: dict[str, ImageInput] = {}
        for sha in shas:
            image = rows.get(sha)
            if image is None:
                raise ValidationFailed(
                    f"image {sha[:12]}… ({where[sha]}) is not stored in this project; "
                    "upload it again or record the step's image in the trajectory editor"
                )
            try:
                data = _read(image)
            except (FileNotFoundError, ValueError, OSError):
                raise ValidationFailed(
                    f"the file of image {sha[:12]}… ({where[sha]}) is missing from storage; "
                    "upload the image again"
                ) from None
            try:
                image_mime(data)
            except ModelError as exc:
                raise ValidationFailed(f"image {sha[:12]}… ({where[sha]}): {exc}") from None
            out[sha] = ImageInput(sha256=sha, data=data)
        return out

    # ---------------------------------------------------------------- saving

    def save(self, prepared: Prepared, *, answer: Answer | None = None, hit: Any = None) -> None:
        conversation = prepared.conversation
        fields: dict[str, Any] = {
            "messages": conversation.messages() if conversation is not None else [],
            "notes": conversation.notes if conversation is not None else [],
            "reference_fingerprint": prepared.fingerprint,
            "request_key": prepared.key,
            "answer": "",
            "output": "",
            "error": "",
            "transport_error": False,
            "cached": False,
            "latency_ms": None,
            "prompt_tokens": None,
            "completion_tokens": None,
            "attempts": 0,
        }
        text: str | None = None
        if prepared.error:
            fields.update(outcome=OracleOutcome.ERROR, error=prepared.error)
        elif hit is not None:
            text = hit.text
            fields.update(
                cached=True,
                latency_ms=hit.latency_ms,
                prompt_tokens=hit.prompt_tokens,
                completion_tokens=hit.completion_tokens,
            )
        elif answer is not None and answer.result is not None:
            result = answer.result
            text = result.text
            fields.update(
                latency_ms=result.latency_ms,
                prompt_tokens=result.prompt_tokens,
                completion_tokens=result.completion_tokens,
                attempts=result.attempts,
            )
            self._record_call(prepared, result)
        else:
            error = answer.error if answer is not None else "the model was not asked"
            fields.update(
                outcome=OracleOutcome.ERROR,
                error=error,
                transport_error=True,
                attempts=answer.attempts if answer is not None else 0,
            )
        if text is not None:
            correct = mme.final_answer_correct(
                prepared.document, text, accepted=list(prepared.item.accepted_variants or [])
            )
            fields.update(
                outcome=OracleOutcome.SOLVED if correct else OracleOutcome.FAILED,
                answer=mme.extract_answer(text),
                output=text,
            )
        OracleResult.objects.update_or_create(run=self.run, item=prepared.item, defaults=fields)

    def _record_call(self, prepared: Prepared, result: ChatResult) -> None:
        """The answer as a ModelCall of the project: what answers this request next time."""
        request = prepared.request
        assert request is not None and prepared.conversation is not None
        ModelCall.objects.create(
            request_key=prepared.key,
            project_id=self.run.project_id,
            item=prepared.item,
            purpose=ORACLE_PURPOSE,
            endpoint=self.config.base_url[:500],
            model=(result.model or self.config.model)[:200],
            system=request.system,
            prompt=_flat_prompt(prepared.conversation),
            image_sha256s=[img.sha256 for img in request.all_images],
            params=request.params,
            answer=result.text,
            latency_ms=result.latency_ms,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            attempts=result.attempts,
            created_by_id=self.run.created_by_id,
        )

    # ---------------------------------------------------------------- running

    def tick(self) -> None:
        self.progress(
            progress=min(self.done, self.total),
            total=self.total,
            message=f"{self.done} of {self.total} items",
        )

    def execute(self, items: list[Item]) -> None:
        finished = set(
            self.run.results.filter(
                outcome__in=[OracleOutcome.SOLVED, OracleOutcome.FAILED]
            ).values_list("item_id", flat=True)
        )
        self.total = len(items)
        todo = [item for item in items if item.pk not in finished]
        self.reused = self.done = self.total - len(todo)
        self.tick()
        if not todo:
            return
        workers = max(1, min(self.config.concurrency, len(todo)))
        batch = workers * 2
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="oracle") as pool:
            try:
                self._execute(pool, todo, batch)
            except BaseException:
                # Cancelled (the progress report raised JobCancelled) or failed: ask nothing
                # more. The questions already sent finish and are dropped; resuming the run
                # asks them again.
                pool.shutdown(wait=False, cancel_futures=True)
                raise

    def _execute(self, pool: ThreadPoolExecutor, todo: list[Item], batch: int) -> None:
        """Prepare and send the items ``batch`` at a time, storing each answer in order."""
        for start in range(0, len(todo), batch):
            asked = []
            for item in todo[start : start + batch]:
                prepared = self.prepare(item)
                if prepared.error:
                    self.save(prepared)
                    self.done += 1
                    continue
                hit = self.cache.get(prepared.key) if self.cache is not None else None
                if hit is not None:
                    self.save(prepared, hit=hit)
                    self.cached += 1
                    self.done += 1
                    continue
                if self.mode == "replay":
                    prepared.error = (
                        f"replay mode: no recorded answer of {self.config.model} for this "
                        "conversation; run it once with the cache mode 'use' to record one"
                    )
                    self.save(prepared)
                    self.done += 1
                    continue
                assert prepared.request is not None
                asked.append((prepared, pool.submit(_ask, self.client, prepared.request)))
            self.tick()
            for prepared, future in asked:
                self.save(prepared, answer=future.result())
                self.made += 1
                self.done += 1
                self.tick()


def oracle_run_job(*, job: Job, progress: Progress) -> dict[str, Any]:
    """The "oracle" job's runner; the result is the run's figures
    (``review.oracle.selectors.run_figures``) and what the calls cost."""
    from review.oracle.selectors import run_figures

    run = OracleRun.objects.select_related("project").get(pk=job.params["run_id"])
    try:
        runner = _Runner(run=run, job=job, progress=progress)
    except ModelError as exc:
        raise DomainError(str(exc)) from exc
    items = oracle_items(project=run.project, ids=run.selection.get("items") or [])
    started = time.monotonic()
    runner.execute(items)
    summary = run_figures(run=run)
    summary["calls"] = {
        "made": runner.made,
        "cached": runner.cached,
        "reused": runner.reused,
        "seconds": round(time.monotonic() - started, 3),
    }
    return {"run_id": run.pk, "model": run.model, "summary": summary}


def oracle_run_execute(*, job: Job) -> Job:
    """Run an oracle job now, in this process (the command line), through the job pipeline's
    ``job_run``; returns the job as it ended."""
    job_services.job_run(job_id=job.pk)
    return Job.objects.get(pk=job.pk)
