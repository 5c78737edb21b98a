"""m&m's plan validity judge runs (judge ``mms-plan``): starting one, its runner, its report.

A plan validity run is a ``JudgeRun`` like the others (endpoint, model, template versions, its
"judge" job, who started it), so it is listed, resumed and shown with them; its calls are
``PlanJudgeCall`` rows, because what it judges is a Plan, not a model answer (``JudgeCall``
points at a Response). ``judge_run_create`` and the "judge" job's runner hand ``mms-plan``
runs to this module.

Which plans: the project's ground-truth plans (each item's plan and its alternatives), or
with ``models`` the plans those models predicted. One call per plan (``benchmark.judges.
plan_validity``): the judge answers VALID or INVALID and one line why; an output that does
not parse is asked once more, then recorded as failed and excluded from the figures. Calls
are made concurrently, answered from any finished call of the project with the same key
(endpoint, template version, model, inputs), and a resumed run skips the calls it finished.

Figures: the share of plans judged valid, overall and per source ("ground truth" or the
predicting model), over the plans whose judgment parsed; ``excluded`` counts the others.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.core.paginator import Page, Paginator
from django.db import transaction
from django.db.models import Count, QuerySet

from benchmark import permissions
from benchmark.exceptions import DomainError, ValidationFailed
from benchmark.jobs.kinds import Progress
from benchmark.judges import Call, Judgment, Template
from benchmark.judges import plan_validity as validity
from benchmark.llm.client import ChatClient, ModelError
from benchmark.models import Job, Origin, Plan, Project
from benchmark.typing import User
from review.judge_settings.selectors import judge_templates_for
from review.judges import services as judge_services
from review.judges.models import JudgeName, JudgeRun, PlanJudgeCall
from review.judges.selectors import stored_judgment

GROUND_TRUTH = "ground truth"


def plans_for(*, project: Project, models: Sequence[str] = ()) -> list[Plan]:
    """The plans a run judges, in item order: ground truth (the item's plan first, then its
    alternatives), or the plans of the named models."""
    plans = Plan.objects.filter(item__project=project).select_related("item")
    if models:
        plans = plans.filter(origin=Origin.MODEL, model_name__in=list(models))
    else:
        plans = plans.filter(origin=Origin.GROUND_TRUTH)
    return list(plans.order_by("item__position", "item_id", "is_alternative", "position", "id"))


def plan_judge_run_create(
    *,
    project: Project,
    user: User | None,
    base_url: str = "",
    model: str = "",
    models: Sequence[str] = (),
    workers: int = 4,
    enqueue: bool = False,
) -> tuple[JudgeRun, Job]:
    """A plan validity JudgeRun and its "judge" job (see ``judge_run_create``)."""
    if user is not None:
        permissions.require(user=user, project=project, action="review")
    if not 1 <= workers <= judge_services.MAX_WORKERS:
        raise ValidationFailed(
            f"workers must be between 1 and {judge_services.MAX_WORKERS}, got {workers}"
        )
    config, _ = judge_services._config(project, base_url, model)
    if not plans_for(project=project, models=models):
        which = f"plans of {', '.join(models)}" if models else "ground-truth plans"
        raise ValidationFailed(f"the project has no {which} to judge; import some")
    template = _template(project)
    with transaction.atomic():
        run = JudgeRun.objects.create(
            project=project,
            judge=JudgeName.MMS_PLAN,
            base_url=config.base_url[:500],
            model=config.model[:200],
            templates={template.id: template.version},
            selection={"models": list(models)},
            created_by=user,
        )
        job = judge_services._job(run, user, workers, enqueue)
        run.job = job
        run.save(update_fields=["job"])
    return run, job


def _template(project: Project, versions: dict[str, str] | None = None) -> Template:
    """The plan validity template a run uses: the project's text (or the built-in), or with
    ``versions`` (a run's recorded ``{id: version}``) exactly the text the run started with."""
    chosen = judge_templates_for(project=project, judge=JudgeName.MMS_PLAN, versions=versions)
    return chosen[validity.PLAN_VALIDITY_TEMPLATE.id]


def plan_call(plan: Plan, model: str, template: Template = validity.PLAN_VALIDITY_TEMPLATE) -> Call:
    return validity.plan_validity_call(
        query=plan.item.query, steps=plan.steps, code=plan.code, model=model, template=template
    )


def _fields(call: Call) -> dict[str, Any]:
    return {
        "label": call.label,
        "template_id": call.template_id,
        "template_version": call.template_version,
        "messages": call.messages,
    }


def _save(run: JudgeRun, plan: Plan, call: Call, key: str, outcome: judge_services.Outcome) -> None:
    judgment = outcome.judgment
    PlanJudgeCall.objects.update_or_create(
        run=run,
        plan=plan,
        key=key,
        defaults={
            **_fields(call),
            "outputs": outcome.outputs,
            "parsed": judge_services._parsed_json(judgment.value),
            "ok": judgment.ok,
            "error": outcome.transport_error or judgment.error or "",
            "transport_error": bool(outcome.transport_error),
            "cached": False,
            "latency_ms": outcome.latency_ms,
            "prompt_tokens": outcome.prompt_tokens,
            "completion_tokens": outcome.completion_tokens,
        },
    )


def _copy(run: JudgeRun, plan: Plan, call: Call, key: str, hit: PlanJudgeCall) -> None:
    PlanJudgeCall.objects.update_or_create(
        run=run,
        plan=plan,
        key=key,
        defaults={
            **_fields(call),
            "outputs": hit.outputs,
            "parsed": hit.parsed,
            "ok": hit.ok,
            "error": hit.error,
            "transport_error": False,
            "cached": True,
            "latency_ms": hit.latency_ms,
            "prompt_tokens": hit.prompt_tokens,
            "completion_tokens": hit.completion_tokens,
        },
    )


def _cache_hits(project_id: int, keys: list[str]) -> dict[str, PlanJudgeCall]:
    """The newest finished plan call of the project for each key (any run)."""
    hits: dict[str, PlanJudgeCall] = {}
    for start in range(0, len(keys), 500):
        rows = PlanJudgeCall.objects.filter(
            run__project_id=project_id, key__in=keys[start : start + 500], transport_error=False
        ).order_by("id")
        hits.update({row.key: row for row in rows})
    return hits


def plan_judge_job(*, job: Job, progress: Progress) -> dict[str, Any]:
    """The "judge" job's runner for ``mms-plan`` runs: every plan's call, finished ones
    skipped, cached ones copied, the rest sent concurrently. Database work stays on this
    thread; worker threads only talk to the model."""
    run = JudgeRun.objects.select_related("project").get(pk=job.params["run_id"])
    try:
        config, params = judge_services._config(run.project, run.base_url, run.model)
        client = ChatClient(config, mode="off")
    except ModelError as exc:
        raise DomainError(str(exc)) from exc
    started = time.monotonic()
    plans = plans_for(project=run.project, models=run.selection.get("models") or [])
    template = _template(run.project, run.templates or None)
    keyed = []
    for plan in plans:
        call = plan_call(plan, config.model, template)
        keyed.append((plan, call, judge_services.call_key(call, config.base_url)))
    total = len(keyed)
    stored = {(c.plan_id, c.key): c for c in run.plan_calls.all()}
    hits = _cache_hits(run.project_id, [key for _, _, key in keyed])
    done = made = cached = reused = 0
    todo = []
    for plan, call, key in keyed:
        row = stored.get((plan.pk, key))
        if row is not None and not row.transport_error:
            reused += 1
        elif key in hits:
            _copy(run, plan, call, key, hits[key])
            cached += 1
        else:
            todo.append((plan, call, key))
            continue
        done += 1
    progress(progress=done, total=total, message=f"{done} of {total} plans")
    if todo:
        workers = max(1, min(int(job.params.get("workers") or 4), config.concurrency, len(todo)))
        parse = validity.parse_plan_validity
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="plan-judge") as pool:
            futures = [
                (
                    plan,
                    call,
                    key,
                    pool.submit(judge_services._run_call, client, call, parse, params),
                )
                for plan, call, key in todo
            ]
            try:
                for plan, call, key, future in futures:
                    _save(run, plan, call, key, future.result())
                    made += 1
                    done += 1
                    progress(progress=done, total=total, message=f"{done} of {total} plans")
            except BaseException:
                # Cancelled (the progress report raised JobCancelled) or failed: send no more
                # calls. The few already sent finish and are dropped; a resumed run makes them.
                pool.shutdown(wait=False, cancel_futures=True)
                raise
    summary = plan_judge_report(run=run)["summary"]
    summary["calls"] = {
        "total": total,
        "made": made,
        "cached": cached,
        "reused": reused,
        "seconds": round(time.monotonic() - started, 3),
    }
    return {"run_id": run.pk, "summary": summary}


# =========================================================================== reading


def plan_judgment(row: PlanJudgeCall) -> Judgment[validity.PlanVerdict]:
    """The stored call as a judgment, its outputs parsed again (a model error has none)."""
    return stored_judgment(row, validity.parse_plan_validity)


def source_of(plan: Plan) -> str:
    return GROUND_TRUTH if plan.origin == Origin.GROUND_TRUTH else plan.model_name or "model"


def _figure(judgments: list[Judgment[validity.PlanVerdict]]) -> dict[str, Any]:
    figure = validity.validity_figure(judgments)
    return {
        "valid": figure.percent,
        "n": figure.n,
        "n_valid": figure.n_valid,
        "excluded": figure.excluded,
    }


def plan_judge_report(*, run: JudgeRun) -> dict[str, Any]:
    """``{"answers": [one per plan: item, plan, model (the plan's source), alternative,
    scores {valid, why}, failed], "summary": {...}}``, plans in item order. The summary holds
    ``valid`` (percent judged valid), ``n``, ``n_valid``, ``excluded`` over all plans and the
    same per source under ``models``."""
    rows = list(
        run.plan_calls.select_related("plan__item").order_by(
            "plan__item__position", "plan__item_id", "plan__is_alternative", "plan__position", "id"
        )
    )
    answers = []
    by_source: dict[str, list[Judgment[validity.PlanVerdict]]] = defaultdict(list)
    everything = []
    for row in rows:
        judgment = plan_judgment(row)
        verdict = judgment.value
        by_source[source_of(row.plan)].append(judgment)
        everything.append(judgment)
        answers.append(
            {
                "item": row.plan.item.external_id,
                "plan": row.plan.key,
                "model": source_of(row.plan),
                "alternative": row.plan.is_alternative,
                "scores": {
                    "valid": verdict.valid if verdict else None,
                    "why": verdict.why if verdict else None,
                },
                "failed": [] if judgment.ok else [f"{row.label}: {row.error or judgment.error}"],
            }
        )
    return {
        "answers": answers,
        "summary": {
            "judge": run.judge,
            "judge_model": run.model,
            "templates": run.templates,
            **_figure(everything),
            "models": {name: _figure(by_source[name]) for name in sorted(by_source)},
        },
    }


def plan_validity_by_item(*, run: JudgeRun) -> dict[int, int | None]:
    """Per item, the judge's verdict on the item's ground-truth plan (not an alternative): 1 valid,
    0 invalid, None when the judgment failed. Items whose plan the run did not judge are
    absent."""
    rows = (
        run.plan_calls.filter(plan__origin=Origin.GROUND_TRUTH, plan__is_alternative=False)
        .select_related("plan")
        .order_by("plan__item_id", "plan__position", "plan_id", "id")
    )
    out: dict[int, int | None] = {}
    for row in rows:
        if row.plan.item_id in out:
            continue
        verdict = plan_judgment(row).value
        out[row.plan.item_id] = None if verdict is None else int(verdict.valid)
    return out


# =========================================================================== the pages


def plan_counts(*, project: Project) -> tuple[int, list[tuple[str, int]]]:
    """What a plan validity run can judge: the number of ground-truth plans (items' plans and
    their alternatives), and ``(model, number of plans it predicted)`` by name."""
    plans = Plan.objects.filter(item__project=project)
    ground_truth = plans.filter(origin=Origin.GROUND_TRUTH).count()
    rows = (
        plans.filter(origin=Origin.MODEL)
        .values("model_name")
        .annotate(n=Count("id"))
        .order_by("model_name")
    )
    return ground_truth, [(r["model_name"], r["n"]) for r in rows]


def plan_run_sources(*, run: JudgeRun) -> list[tuple[str, int]]:
    """``(source, plans judged)`` of a plan validity run: "ground truth" first, then the
    predicting models by name."""
    counts: dict[str, int] = defaultdict(int)
    rows = run.plan_calls.values("plan__origin", "plan__model_name").annotate(
        n=Count("plan", distinct=True)
    )
    for row in rows:
        if row["plan__origin"] == Origin.GROUND_TRUTH:
            counts[GROUND_TRUTH] += row["n"]
        else:
            counts[row["plan__model_name"] or "model"] += row["n"]
    return sorted(counts.items(), key=lambda kv: (kv[0] != GROUND_TRUTH, kv[0]))


def _calls_of_source(run: JudgeRun, source: str) -> QuerySet[PlanJudgeCall]:
    rows = run.plan_calls.all()
    if source == GROUND_TRUTH:
        return rows.filter(plan__origin=Origin.GROUND_TRUTH)
    if source:
        return rows.filter(plan__origin=Origin.MODEL, plan__model_name=source)
    return rows


def _steps(plan: Plan) -> list[dict[str, Any]]:
    """A plan's steps as the page lists them: id, tool and its arguments as JSON text."""
    out = []
    for n, step in enumerate(plan.steps or []):
        if not isinstance(step, dict):
            out.append({"id": n, "name": "", "args": json.dumps(step, ensure_ascii=False)})
            continue
        args = step.get("args")
        out.append(
            {
                "id": step.get("id", n),
                "name": str(step.get("name") or ""),
                "args": json.dumps(args, ensure_ascii=False) if args not in (None, {}) else "",
            }
        )
    return out


def _plan_entry(row: PlanJudgeCall) -> dict[str, Any]:
    plan = row.plan
    judgment = plan_judgment(row)
    return {
        "plan": plan,
        "item": plan.item,
        "model": source_of(plan),
        "steps": _steps(plan),
        "verdict": judgment.value,
        "calls": [row],
        "failed": [] if row.ok else [row],
    }


def plan_run_page(
    *, run: JudgeRun, source: str = "", page: Any = 1, per_page: int = 20
) -> Page[Any]:
    """One page of a plan validity run's plans in item order (of one source, or all), each
    with the judge's verdict and its call: ``page.object_list`` holds dicts
    (``plan``, ``item``, ``model`` (the source), ``steps``, ``verdict`` (None when the
    judgment failed), ``calls``, ``failed``)."""
    rows = (
        _calls_of_source(run, source)
        .select_related("plan__item")
        .defer("messages")
        .order_by(
            "plan__item__position",
            "plan__item_id",
            "plan__is_alternative",
            "plan__position",
            "plan_id",
            "id",
        )
    )
    current: Page[Any] = Paginator(rows, per_page).get_page(page)
    current.object_list = [_plan_entry(row) for row in current.object_list]
    return current
