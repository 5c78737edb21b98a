"""Judge runs: storing model answers, starting a run, and the "judge" job's runner.

The runner builds every :class:`benchmark.judges.Call` of the run for the chosen answers,
skips the calls this run already finished (a resumed run), answers from the cache the calls
any run of the project finished with the same key (endpoint + template version + model +
inputs), sends the rest concurrently (``workers`` threads, bounded by the endpoint's limit),
retries an unparseable output once, and stores every call. ATP-Bench MAM runs in two stages:
the Precision and Recall Inspectors first, then the Chief Judge with their reports. Worker
threads only talk to the model; every database read and write happens on the runner's thread.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction

from benchmark import judges, permissions
from benchmark.exceptions import Conflict, DomainError, ValidationFailed
from benchmark.jobs import services as job_services
from benchmark.jobs.kinds import Progress
from benchmark.judges import Call, Judgment, Template, mam
from benchmark.judges import llmi as llmi_judge
from benchmark.judges import rubric as rubric_judge
from benchmark.llm.client import ChatClient, ChatRequest, ModelConfig, ModelError
from benchmark.llm.services import HOW_TO_CONFIGURE, model_resolve
from benchmark.metrics.tag_scores import AnswerRecord, ItemIndex
from benchmark.models import Item, Job, Origin, Project, Response
from benchmark.tags import parse as parse_tags
from benchmark.typing import User
from review.answers.services import read_uploads
from review.judge_settings.selectors import judge_templates_for, judge_weights_for
from review.judges.models import JudgeCall, JudgeName, JudgeRun
from review.judges.selectors import judge_run_report, judgment_of, parser_for

JUDGE_KIND = "judge"
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
                row.text, row.origin, row.source_file = record.text, Origin.MODEL, record.file[:255]
                row.extra = {**row.extra, **(record.released or {})}
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


def rendered_answer(text: str) -> str:
    """An LLM-I answer with each ``<imgen>`` tag replaced by ``[image k]``."""
    tools = parse_tags(text, "llmi").tools
    out, cursor = [], 0
    for n, tool in enumerate(tools, start=1):
        out.append(text[cursor : tool.start])
        out.append(f"[image {n}]")
        cursor = tool.end
    out.append(text[cursor:])
    return "".join(out)


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
        return rubric_judge.rubric_calls(
            prompt=item.query,
            answer=response.text,
            criteria=criteria,
            model=model,
            template=t[rubric_judge.RUBRIC_TEMPLATE.id],
        )
    llm = t[llmi_judge.LLM_TEMPLATE.id]
    if judge == JudgeName.LLMI_LLM:
        return [
            llmi_judge.llm_call(prompt=item.query, answer=response.text, model=model, template=llm)
        ]
    if judge == JudgeName.LLMI_MLLM:
        return [
            llmi_judge.llm_call(prompt=item.query, answer=response.text, model=model, template=llm),
            llmi_judge.mllm_call(
                prompt=item.query,
                rendered_answer=rendered_answer(response.text),
                images=[],
                model=model,
                template=t[llmi_judge.MLLM_TEMPLATE.id],
            ),
        ]
    return mam.first_stage_calls(
        query=item.query,
        answer=response.text,
        model=model,
        precision_template=t[mam.PRECISION_TEMPLATE.id],
        recall_template=t[mam.RECALL_TEMPLATE.id],
    )


def call_key(call: Call, base_url: str) -> str:
    """The stored key: the judges' key (template version, model, inputs) and the endpoint."""
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


def _request(call: Call, params: dict[str, Any]) -> ChatRequest:
    system = ""
    prompt = ""
    for message in call.messages:
        content = message["content"]
        if isinstance(content, list):
            # Images are references the job layer would resolve; none are sent yet.
            content = "\n".join(p["text"] for p in content if p.get("type") == "text")
        if message["role"] == "system":
            system = content
        else:
            prompt = content
    return ChatRequest(prompt=prompt, system=system, params=params)


def _run_call(
    client: ChatClient, call: Call, parse: Callable[[str], Any], params: dict[str, Any]
) -> Outcome:
    """In a worker thread: ask, parse, ask once more when the output did not parse."""
    request = _request(call, params)
    outputs: list[str] = []
    latency = prompt_tokens = completion_tokens = 0
    try:
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
        failed: Judgment[Any] = Judgment(
            label=call.label,
            value=None,
            attempts=(judges.Attempt(raw="", error=str(exc)),),
            key=call.key,
            template_id=call.template_id,
            template_version=call.template_version,
        )
        return Outcome(outputs=outputs, judgment=failed, transport_error=str(exc))
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


def _finished(row: JudgeCall) -> bool:
    return not row.transport_error


class _Runner:
    def __init__(self, *, run: JudgeRun, job: Job, progress: Progress) -> None:
        self.run = run
        self.progress = progress
        self.workers = int(job.params.get("workers") or 4)
        config, params = _config(run.project, run.base_url, run.model)
        self.config = config
        self.params = params
        self.client = ChatClient(config, mode="off")
        self.total = 0
        self.done = 0
        self.made = 0
        self.cached = 0
        self.reused = 0

    def stored(self) -> dict[tuple[int, str], JudgeCall]:
        return {(c.response_id, c.key): c for c in self.run.calls.all()}

    def cache_hits(self, keys: list[str]) -> dict[str, JudgeCall]:
        """The newest finished call of the project for each key (any run)."""
        hits: dict[str, JudgeCall] = {}
        for start in range(0, len(keys), 500):
            rows = JudgeCall.objects.filter(
                run__project_id=self.run.project_id,
                key__in=keys[start : start + 500],
                transport_error=False,
            ).order_by("id")
            hits.update({row.key: row for row in rows})
        return hits

    def tick(self) -> None:
        self.progress(
            progress=min(self.done, self.total),
            total=self.total,
            message=f"{self.done} of {self.total} calls",
        )

    def execute(self, pairs: list[tuple[Response, Call]]) -> None:
        """Store every (answer, call): finished ones are skipped, cached ones copied, the
        rest sent concurrently."""
        stored = self.stored()
        keyed = [(r, c, call_key(c, self.config.base_url)) for r, c in pairs]
        hits = self.cache_hits([key for _, _, key in keyed])
        todo: list[tuple[Response, Call, str]] = []
        for response, call, key in keyed:
            row = stored.get((response.pk, key))
            if row is not None and _finished(row):
                self.reused += 1
                self.done += 1
                continue
            hit = hits.get(key)
            if hit is not None:
                self.save(response, call, key, hit=hit)
                self.cached += 1
                self.done += 1
                continue
            todo.append((response, call, key))
        self.tick()
        if not todo:
            return
        workers = max(1, min(self.workers, self.config.concurrency, len(todo)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge") as pool:
            futures = [
                (
                    response,
                    call,
                    key,
                    pool.submit(
                        _run_call, self.client, call, parser_for(call.label, response), self.params
                    ),
                )
                for response, call, key in todo
            ]
            try:
                for response, call, key, future in futures:
                    self.save(response, call, key, outcome=future.result())
                    self.made += 1
                    self.done += 1
                    self.tick()
            except BaseException:
                # Cancelled (the progress report raised JobCancelled) or failed: send no more
                # calls. The few already sent finish and are dropped; a resumed run makes them.
                pool.shutdown(wait=False, cancel_futures=True)
                raise

    def save(
        self,
        response: Response,
        call: Call,
        key: str,
        *,
        outcome: Outcome | None = None,
        hit: JudgeCall | None = None,
    ) -> None:
        fields: dict[str, Any] = {
            "label": call.label,
            "template_id": call.template_id,
            "template_version": call.template_version,
            "messages": call.messages,
        }
        if hit is not None:
            fields.update(
                outputs=hit.outputs,
                parsed=hit.parsed,
                ok=hit.ok,
                error=hit.error,
                transport_error=False,
                cached=True,
                latency_ms=hit.latency_ms,
                prompt_tokens=hit.prompt_tokens,
                completion_tokens=hit.completion_tokens,
            )
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
        JudgeCall.objects.update_or_create(
            run=self.run, response=response, key=key, defaults=fields
        )


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
    first = [(r, c) for r in answers for c in first_calls(run.judge, r, model, templates)]
    runner.total = len(first)
    if run.judge == JudgeName.ATP_MAM:
        runner.total += len(answers)  # one Chief Judge call per answer at most
    started = time.monotonic()
    runner.execute(first)
    if run.judge == JudgeName.ATP_MAM:
        rows = {(c.response_id, c.label): c for c in run.calls.all()}
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
            chief.append(
                (
                    response,
                    mam.chief_call(
                        query=response.item.query,
                        answer=response.text,
                        precision=precision_value,
                        recall=recall_value,
                        model=model,
                        template=templates[mam.CHIEF_TEMPLATE.id],
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
