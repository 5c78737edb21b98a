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
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from benchmark import permissions
from benchmark.exceptions import DomainError
from benchmark.llm import selectors as llm_selectors
from benchmark.llm import services as llm_services
from benchmark.models import Job, Project
from benchmark.pages import htmx_page, project_context, render_page
from benchmark.typing import HtmxHttpRequest, request_user
from review.answers import services as review_answers
from review.judges import reports
from review.judges import services as judge_services
from review.judges.forms import JudgeRunForm
from review.judges.models import JudgeRun
from review.judges.specs import judge_spec_get
from review.pages import project_for_review

WHY = "Only reviewers and admins run model judges and read their reports."
RUNS_SHOWN = 50


def page_name(project: Project) -> str:
    """What the project's judge page is called, after what its judges rate ("Judge plans")."""
    return reports.judge_page(project).name


def _reviewable_run(request: HttpRequest, pk: int) -> JudgeRun:
    run = reports.judge_run_for_member(user=request.user, pk=pk)
    if not permissions.can(user=request.user, project=run.project, action="run_judges"):
        raise PermissionDenied(WHY)
    if judge_spec_get(run.judge) is None:
        raise Http404(f"judge run #{run.pk} was made by the judge {run.judge!r}, not installed")
    return run


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def judge_runs(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    """Pick a judge, the endpoint and model, which answers (stored models, or an upload
    imported first) and the workers; POST starts one job whose card the page polls. Below,
    the project's earlier runs. Bad input answers 400 with the form and what is wrong."""
    project = project_for_review(request, project_id, WHY, action="run_judges")
    page = reports.judge_page(project)
    subject = page.subject
    ground_truth, models = subject.counts(project=project)
    first_judge = page.judges[0].name if page.judges else ""
    status = 200
    errors: list[str] = []
    job: Job | None = None
    run: JudgeRun | None = None

    def form_for(*args: Any, **kwargs: Any) -> JudgeRunForm:
        return JudgeRunForm(
            *args, judges=page.judges, subject=subject, models=models, plans=ground_truth, **kwargs
        )

    if request.method == "POST":
        form = form_for(request.POST, request.FILES)
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
                ground_truth, models = subject.counts(project=project)
                form = form_for(initial={"judge": data["judge"]})
        else:
            status = 400
    else:
        form = form_for(initial={"judge": first_judge})
    context = {
        **project_context(request, project),
        "form": form,
        "errors": errors,
        "page_name": page.name,
        "judge_page": page,
        "subject": subject,
        "job": job,
        "run": run,
        "default": llm_selectors.model_placeholder(project=project),
        "how_to": llm_services.HOW_TO_CONFIGURE,
        "runs": list(reports.judge_runs_of(user=request.user, project=project)[:RUNS_SHOWN]),
        "runs_shown": RUNS_SHOWN,
        "plans": page.plans,
        "ground_truth_plans": ground_truth,
    }
    response = render_page(
        request, "review/judges/runs.html", context, fragments={"judge-start": "start"}
    )
    response.status_code = status
    return response


def _run_context(request: HttpRequest, run: JudgeRun) -> dict[str, Any]:
    spec = run.spec
    figures = reports.judge_run_figures(run=run)
    released = reports.judge_run_released(run=run) if figures is not None else None
    if figures is not None and released is not None:
        for row in figures.rows:
            row["released"] = released["models"].get(row["model"])
    model = request.GET.get("model", "")
    return {
        **project_context(request, run.project),
        "run": run,
        "judge": spec,
        "subject": spec.rates,
        "job": run.job,
        "figures": figures,
        "extra": spec.run_extra(run, figures.summary) if figures is not None else {},
        "failures": reports.judge_run_failures(run=run) if figures is not None else None,
        "released": released,
        "weights": reports.run_weights(run),
        "columns": spec.columns,
        "plans": spec.rates.ground_truth_source,
        "page_name": page_name(run.project),
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
    project = project_for_review(request, project_id, WHY, action="run_judges")
    a, b = request.GET.get("a", ""), request.GET.get("b", "")
    fa, fb = request.GET.get("fa", ""), request.GET.get("fb", "")
    comparison = None
    error = ""
    choices = reports.compare_choices(user=request.user, project=project)
    if bool(a) != bool(b):
        # a link from one run ("Compare" on the run list) names only the first source: the
        # form opens with it chosen and the first other source as the second, for a person
        # to confirm, rather than comparing with nothing
        b = b or next((value for value, _ in choices if value != a), "")
        a = a or next((value for value, _ in choices if value != b), "")
    elif a and b:
        try:
            comparison = reports.judge_compare(
                user=request.user, project=project, a=a, b=b, fa=fa, fb=fb
            )
        except DomainError as exc:
            error = exc.message
    context = {
        **project_context(request, project),
        "choices": choices,
        "a": a,
        "b": b,
        "fa": fa,
        "fb": fb,
        "figure_names": reports.figure_names(),
        "comparison": comparison,
        "error": error,
        "page_name": page_name(project),
        "plans": reports.judge_page(project).plans,
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
    name = str((summary or {}).get("judge") or "")
    spec = judge_spec_get(name)
    return {
        "judge_run_id": result.get("run_id") or (job.params or {}).get("run_id"),
        "judge": spec,
        "judge_plans": spec is not None and spec.rates.ground_truth_source,
        "judge_summary": summary,
        "judge_columns": spec.columns if spec is not None else (),
        "judge_rows": reports.figure_rows(spec, summary or {}),
        # A run resumed or followed (an evaluation's new answers): what it judged now and
        # what it had judged before and kept.
        "judge_new": int(result.get("judged") or 0),
        "judge_kept": int(result.get("already_judged") or 0),
        "judge_model": str((summary or {}).get("judge_model") or ""),
    }
