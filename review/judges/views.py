"""Judge runs in the browser (issue 10): "Judge answers" on a project (start a run as a job;
the project's earlier runs), a run's results (figures per model like the papers' tables, why
judgments were excluded, released scores beside the judge's, every answer's report a page at
a time), resuming a run whose job failed, and comparing two sources of per-model figures with
Spearman's rho between their rankings. Reviewers and admins only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from benchmark import permissions
from benchmark.exceptions import DomainError
from benchmark.llm import services as llm_services
from benchmark.llm.client import ModelError
from benchmark.models import Job, Project
from benchmark.pages import htmx_page, project_context, render_page
from benchmark.typing import HtmxHttpRequest, request_user
from review.answers import services as review_answers
from review.judges import plan_judge, reports
from review.judges import services as judge_services
from review.judges.forms import JudgeRunForm
from review.judges.models import JudgeName, JudgeRun
from review.pages import project_for_review

WHY = "Only reviewers and admins run model judges and read their reports."
RUNS_SHOWN = 50


def page_name(project: Project) -> str:
    """What the project's judge page is called: m&m's projects judge plans."""
    return "Judge plans" if reports.is_plan_project(project) else "Judge answers"


def _reviewable_run(request: HttpRequest, pk: int) -> JudgeRun:
    run = reports.judge_run_for_member(user=request.user, pk=pk)
    if not permissions.can(user=request.user, project=run.project, action="review"):
        raise PermissionDenied(WHY)
    return run


def _default_model(project: Project) -> dict[str, str]:
    """The project's judge model as the form's placeholder: base URL and name, never a key."""
    try:
        resolved = llm_services.model_resolve(project=project)
    except ModelError as exc:
        return {"base_url": "", "model": "", "error": str(exc)}
    if resolved is None:
        return {"base_url": "", "model": "", "error": "the project has no model configured"}
    return {"base_url": resolved.config.base_url, "model": resolved.config.model, "error": ""}


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def judge_runs(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    """Pick a judge, the endpoint and model, which answers (stored models, or an upload
    imported first) and the workers; POST starts one job whose card the page polls. Below,
    the project's earlier runs. Bad input answers 400 with the form and what is wrong."""
    project = project_for_review(request, project_id, WHY)
    plans = reports.is_plan_project(project)
    ground_truth: int | None = None
    if plans:
        ground_truth, models = plan_judge.plan_counts(project=project)
    else:
        models = reports.model_answer_counts(project=project)
    first_judge = JudgeName.MMS_PLAN if plans else JudgeName.LLMI_RUBRIC
    status = 200
    errors: list[str] = []
    job: Job | None = None
    run: JudgeRun | None = None
    if request.method == "POST":
        form = JudgeRunForm(request.POST, request.FILES, models=models, plans=ground_truth)
        if form.is_valid():
            data = form.cleaned_data
            try:
                uploads = data.get("answers") or []
                if uploads:
                    review_answers.uploads_check(uploads)
                run, job = judge_services.judge_run_start(
                    project=project,
                    user=request_user(request),
                    judge=data["judge"],
                    base_url=data["base_url"],
                    model=data["model"],
                    models=data["models"],
                    files=[(Path(u.name or "answers").name, u.read()) for u in uploads],
                    workers=data["workers"],
                )
            except DomainError as exc:
                errors.append(exc.message)
                status = exc.status_code
            else:
                if not request.htmx:
                    return redirect("review:judge_run", pk=run.pk)
                if not plans:
                    models = reports.model_answer_counts(project=project)
                form = JudgeRunForm(
                    models=models, plans=ground_truth, initial={"judge": data["judge"]}
                )
        else:
            status = 400
    else:
        form = JudgeRunForm(models=models, plans=ground_truth, initial={"judge": first_judge})
    context = {
        **project_context(request, project),
        "form": form,
        "errors": errors,
        "page_name": page_name(project),
        "job": job,
        "run": run,
        "default": _default_model(project),
        "how_to": llm_services.HOW_TO_CONFIGURE,
        "runs": list(reports.judge_runs_of(user=request.user, project=project)[:RUNS_SHOWN]),
        "runs_shown": RUNS_SHOWN,
        "plans": plans,
        "ground_truth_plans": ground_truth,
    }
    response = render_page(
        request, "review/judges/runs.html", context, fragments={"judge-start": "start"}
    )
    response.status_code = status
    return response


def _run_context(request: HttpRequest, run: JudgeRun) -> dict[str, Any]:
    figures = reports.judge_run_figures(run=run)
    plans = run.judge == JudgeName.MMS_PLAN
    released = reports.judge_run_released(run=run) if figures is not None else None
    if figures is not None and released is not None:
        for row in figures.rows:
            row["released"] = released["models"].get(row["model"])
    model = request.GET.get("model", "")
    return {
        **project_context(request, run.project),
        "run": run,
        "job": run.job,
        "figures": figures,
        "failures": reports.judge_run_failures(run=run) if figures is not None else None,
        "released": released,
        "weights": reports.run_weights(run),
        "columns": reports.COLUMNS[run.judge],
        "plans": plans,
        "page_name": page_name(run.project),
        "sub_check_columns": reports.SUB_CHECK_COLUMNS,
        "answer_models": reports.judge_run_models(run=run),
        "model": model,
        "page": reports.judge_run_answers(run=run, model=model, page=request.GET.get("page", 1)),
        "compare_choices": [
            c
            for c in reports.compare_choices(user=request.user, project=run.project)
            if c[0] != f"run:{run.pk}"
        ],
    }


@login_required
@require_GET
@htmx_page
def judge_run_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """A run's results: its job's progress while it runs, then the figures per answering
    model with their definitions and exclusions, and every answer's report, a page at a time
    (``?model=`` for one model's answers)."""
    run = _reviewable_run(request, pk)
    return render_page(
        request,
        "review/judges/run.html",
        _run_context(request, run),
        fragments={"judge-answers": "answers", "judge-report": "report"},
    )


@login_required
@require_POST
def judge_run_resume(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Start a new job for a run whose job ended (failed): only the calls the run has not
    finished are made. 409 while its job is still going."""
    run = _reviewable_run(request, pk)
    workers = int((run.job.params or {}).get("workers") or 4) if run.job else 4
    error = ""
    try:
        job: Job | None = judge_services.judge_run_resume(
            run=run, user=request_user(request), workers=workers, enqueue=True
        )
    except DomainError as exc:
        error = exc.message
        job = run.job
    if not request.htmx and not error:
        return redirect("review:judge_run", pk=run.pk)
    if request.htmx and job is not None:
        response = render(request, "partials/job.html", {"job": job, "job_notice": error})
    else:
        response = render(
            request, "review/judges/run.html", {**_run_context(request, run), "job_notice": error}
        )
    if error:
        response.status_code = 409
    return response


@login_required
@require_GET
@htmx_page
def judge_compare(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    """Two sources' per-model figures side by side and Spearman's rho between their model
    rankings (``?a=run:<id>&b=run:<id>``, or ``b=f1`` / ``b=released`` for the tool-set F1
    or the released scores of run a's answers; ``fa``/``fb`` pick the figures). A request
    that cannot be compared answers 400 saying why."""
    project = project_for_review(request, project_id, WHY)
    a, b = request.GET.get("a", ""), request.GET.get("b", "")
    fa, fb = request.GET.get("fa", ""), request.GET.get("fb", "")
    comparison = None
    error = ""
    if a or b:
        try:
            comparison = reports.judge_compare(
                user=request.user, project=project, a=a, b=b, fa=fa, fb=fb
            )
        except DomainError as exc:
            error = exc.message
    context = {
        **project_context(request, project),
        "choices": reports.compare_choices(user=request.user, project=project),
        "a": a,
        "b": b,
        "fa": fa,
        "fb": fb,
        "figure_names": sorted({c.name for columns in reports.COLUMNS.values() for c in columns}),
        "comparison": comparison,
        "error": error,
        "page_name": page_name(project),
        "plans": reports.is_plan_project(project),
    }
    response = render_page(
        request, "review/judges/compare.html", context, fragments={"judge-compare": "result"}
    )
    if error:
        response.status_code = 400
    return response


def job_result_context(*, job: Job) -> dict[str, Any]:
    """The judge kind's result context (``benchmark.jobs.kinds``): the figures the job
    recorded, as the run page shows them."""
    result = job.result if isinstance(job.result, dict) else {}
    summary = result.get("summary") if isinstance(result.get("summary"), dict) else {}
    judge = str((summary or {}).get("judge") or "")
    return {
        "judge_run_id": result.get("run_id") or (job.params or {}).get("run_id"),
        "judge_plans": judge == JudgeName.MMS_PLAN,
        "judge_summary": summary,
        "judge_columns": reports.COLUMNS.get(judge, ()),
        "judge_rows": reports.figure_rows(judge, summary or {}),
    }
