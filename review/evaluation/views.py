"""Evaluating models in the browser: "Evaluate a model" on a project (start a run; the
project's runs), a run's page (its one progress figure over its jobs, polled, Cancel and
Resume; its figures; its results a page at a time), one result (output, scores, the trace
step by step with its images and tool calls, a link to the item), the files a run stored, the
project's Leaderboard and the pilot's review lists. Reviewers and admins (the ``evaluate``
action)."""

from __future__ import annotations

import mimetypes
import re
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.bulk_actions import selectors as bulk_selectors
from annotation.bulk_actions import services as bulk_services
from benchmark import permissions
from benchmark.exceptions import DomainError
from benchmark.llm import selectors as llm_selectors
from benchmark.llm import services as llm_services
from benchmark.models import Job, Project
from benchmark.pages import htmx_page, project_context, render_page
from benchmark.saved_filters.selectors import saved_filter_names
from benchmark.typing import HtmxHttpRequest, request_user
from review.evaluation import judges, selectors, services
from review.evaluation.forms import EvaluationForm, EvaluationJudgeForm, PilotActionForm
from review.evaluation.models import EvaluationRun
from review.evaluation.records import file_path
from review.pages import project_for_review

WHY = "Only reviewers and admins evaluate models and read their results."
RUNS_SHOWN = 50
RESULTS_PER_PAGE = 50
STOP_POLLING = 286


def _reviewable_run(request: HttpRequest, pk: int) -> EvaluationRun:
    run = selectors.evaluation_run_get(user=request.user, pk=pk)
    if not permissions.can(user=request.user, project=run.project, action="evaluate"):
        raise PermissionDenied(WHY)
    return run


def _releases(project: Project) -> list[str]:
    from review.releases.models import Release

    return list(Release.objects.filter(project=project).values_list("name", flat=True))


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def evaluation_page(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    """Pick the endpoint and model, the items, the protocol's settings and the workers; POST
    starts the run's job(s), whose progress the page then polls. Below, the project's runs.
    Bad input answers 400 with the form and what is wrong."""
    project = project_for_review(request, project_id, WHY, action="evaluate")
    protocol, reason = selectors.protocol_or_none(project)
    names = tuple(protocol.settings) if protocol is not None else ()

    def form_for(*args: Any, **kwargs: Any) -> EvaluationForm:
        return EvaluationForm(
            *args,
            settings=names,
            releases=_releases(project),
            saved_filters=saved_filter_names(user=request.user, project=project),
            **kwargs,
        )

    status = 200
    run: EvaluationRun | None = None
    if request.method == "POST":
        form = form_for(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                run, _ = services.evaluation_run_create(
                    project=project,
                    user=request_user(request),
                    model=data["model"],
                    base_url=data["base_url"],
                    items=data["items"],
                    settings=form.protocol_settings(),
                    workers=data["workers"],
                    replay=data["replay"],
                    enqueue=True,
                    price_in=data["price_in"],
                    price_out=data["price_out"],
                )
            except DomainError as exc:
                form.add_error(None, exc.message)
                status = exc.status_code
            else:
                if not request.htmx:
                    return redirect("review:evaluation_run", pk=run.pk)
        else:
            status = 400
    else:
        form = form_for()
    context = {
        **project_context(request, project),
        "form": form,
        "protocol": protocol,
        "reason": reason,
        "run": run,
        "progress": selectors.run_progress(run=run) if run is not None else None,
        "default": llm_selectors.model_placeholder(project=project),
        "how_to": llm_services.HOW_TO_CONFIGURE,
        "runs": list(selectors.evaluation_runs_of(user=request.user, project=project)[:RUNS_SHOWN]),
        "runs_shown": RUNS_SHOWN,
    }
    response = render_page(
        request, "review/evaluation/start.html", context, fragments={"evaluation-start": "start"}
    )
    response.status_code = status
    return response


def _run_context(
    request: HttpRequest, run: EvaluationRun, judge_form: EvaluationJudgeForm | None = None
) -> dict[str, Any]:
    protocol, reason = selectors.protocol_or_none(run.project)
    columns = protocol.columns if protocol is not None else ()
    figures = [(c, selectors.cell(c, run)) for c in columns]
    page = Paginator(selectors.run_results(run=run), RESULTS_PER_PAGE).get_page(
        request.GET.get("page", 1)
    )
    return {
        **project_context(request, run.project),
        "run": run,
        "settings_shown": {k: v for k, v in (run.settings or {}).items() if k != "price"},
        "reason": reason,
        "progress": selectors.run_progress(run=run),
        "figures": figures,
        "page": page,
        "judging": selectors.run_judging(run=run),
        "judge_form": judge_form or EvaluationJudgeForm(),
        "default": llm_selectors.model_placeholder(project=run.project),
        "can_judge": permissions.can(user=request.user, project=run.project, action="run_judges"),
    }


@login_required
@require_GET
@htmx_page
def evaluation_run_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """A run: its progress while it runs (the ``#evaluation-progress`` fragment, polled; 286
    stops the polling when every job has ended), its figures, its results a page at a time."""
    run = _reviewable_run(request, pk)
    context = _run_context(request, run)
    response = render_page(
        request,
        "review/evaluation/run.html",
        context,
        fragments={
            "evaluation-progress": "progress",
            "evaluation-results": "results",
            "evaluation-judges": "judges",
        },
    )
    target = getattr(request.htmx, "target", "") if request.htmx else ""
    if target == "evaluation-progress" and not context["progress"].running:
        response.status_code = STOP_POLLING
    if target == "evaluation-judges" and not context["judging"].running:
        response.status_code = STOP_POLLING
    return response


@login_required
@require_POST
def evaluation_run_judge(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Start the kind's judges on a finished run's outputs (ATP-Bench MAM, the LLM-I judges
    as judge runs of its answers; Agentic-MME's S/V judges rescoring its runs), as jobs whose
    progress the run's judges card polls. Bad input answers 400 with the form; a run not
    finished, or judges still running, 409."""
    run = _reviewable_run(request, pk)
    if not permissions.can(user=request.user, project=run.project, action="run_judges"):
        raise PermissionDenied(WHY)
    form = EvaluationJudgeForm(request.POST)
    error, status = "", 400
    if form.is_valid():
        data = form.cleaned_data
        try:
            judges.evaluation_judge_start(
                run=run,
                user=request_user(request),
                base_url=data["base_url"],
                model=data["model"],
                workers=data["workers"],
            )
        except DomainError as exc:
            error, status = exc.message, exc.status_code
        else:
            if not request.htmx:
                return redirect("review:evaluation_run", pk=run.pk)
            form, status = EvaluationJudgeForm(), 200
    context = {**_run_context(request, run, form), "judge_error": error}
    response = render_page(
        request, "review/evaluation/run.html", context, fragments={"evaluation-judges": "judges"}
    )
    response.status_code = status
    return response


@login_required
@require_POST
def evaluation_run_resume(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """New job(s) for a run whose jobs ended: only its unfinished items. 409 while running."""
    run = _reviewable_run(request, pk)
    try:
        services.evaluation_run_resume(run=run, user=request_user(request), enqueue=True)
    except DomainError as exc:
        return _run_page_with(request, run, exc.message, exc.status_code)
    return redirect("review:evaluation_run", pk=run.pk)


@login_required
@require_POST
def evaluation_run_cancel(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Cancel every job of the run that has not ended (finished items are kept)."""
    run = _reviewable_run(request, pk)
    try:
        services.evaluation_run_cancel(run=run, user=request_user(request))
    except DomainError as exc:
        return _run_page_with(request, run, exc.message, exc.status_code)
    return redirect("review:evaluation_run", pk=run.pk)


def _run_page_with(
    request: HttpRequest, run: EvaluationRun, error: str, status: int
) -> HttpResponse:
    context = {**_run_context(request, run), "error": error}
    response = render_page(request, "review/evaluation/run.html", context)
    response.status_code = status
    return response


@login_required
@require_GET
def evaluation_result(request: HtmxHttpRequest, pk: int, item_id: int) -> HttpResponse:
    """One item's result: output, scores, the trace step by step with its images."""
    run = _reviewable_run(request, pk)
    result = selectors.result_get(user=request.user, run_pk=run.pk, item_pk=item_id)
    stored = set((result.files or {}).values())
    context = {
        **project_context(request, run.project),
        "run": run,
        "result": result,
        "steps": selectors.trace_steps(result),
        "output_text": selectors.output_text(result.output),
        "stored": stored,
        "files": sorted((result.files or {}).items()),
    }
    return render_page(request, "review/evaluation/result.html", context)


_SHA = re.compile(r"^[0-9a-f]{64}$")


@login_required
@require_GET
def evaluation_file(request: HttpRequest, pk: int, sha256: str) -> FileResponse:
    """A file one of the run's results stored (an artifact of its output), by its hash."""
    run = _reviewable_run(request, pk)
    if not _SHA.match(sha256) or not selectors.run_has_file(run=run, sha256=sha256):
        raise Http404("no such file in this run")
    from django.core.files.storage import default_storage

    name = request.GET.get("name", "")
    kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
    try:
        handle = default_storage.open(file_path(sha256), "rb")
    except (FileNotFoundError, OSError):
        raise Http404("the file is missing from the storage") from None
    response = FileResponse(handle, content_type=kind)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; img-src 'self'; sandbox"
    return response


@login_required
@require_GET
@htmx_page
def leaderboard(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    """Every evaluated model's latest finished run in the layout of the paper's main table,
    with bootstrap 95 % intervals over items, and whether items changed since each run."""
    project = project_for_review(request, project_id, WHY, action="evaluate")
    board = selectors.leaderboard(user=request.user, project=project)
    context = {**project_context(request, project), "board": board}
    return render_page(request, "review/evaluation/leaderboard.html", context)


def judge_job_result_context(*, job: Job) -> dict[str, Any]:
    """The evaluation_judge kind's result context: what the rescoring recorded."""
    result = job.result if isinstance(job.result, dict) else {}
    return {"evaluation_run_id": (job.params or {}).get("run_id"), "judged": result}


def job_result_context(*, job: Job) -> dict[str, Any]:
    """The evaluate kind's result context (``benchmark.jobs.kinds``): what the job recorded."""
    result = job.result if isinstance(job.result, dict) else {}
    return {
        "evaluation_run_id": result.get("run_id") or (job.params or {}).get("run_id"),
        "evaluation": result,
    }


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def evaluation_pilot(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    """The pilot's review lists over the leaderboard's runs: items some model got wrong that
    people solved, and items every evaluated model solved, each with its models' results.
    Seeing them takes what the leaderboard takes (``evaluate``); POST applies one of the two
    actions to the checked items through the item list's bulk actions, whose own permission
    decides (403 saying why); bad input re-renders the page with the message."""
    project = project_for_review(request, project_id, WHY, action="evaluate")
    status = 200
    if request.method == "POST":
        form = PilotActionForm(request.POST, project=project, user=request.user)
        if form.is_valid():
            data = form.cleaned_data
            ids = bulk_selectors.bulk_selection(
                user=request.user, project=project, item_ids=data["ids"]
            )
            try:
                result = bulk_services.bulk_action_start(
                    project=project,
                    user=request_user(request),
                    action=data["action"],
                    item_ids=ids,
                    seen={pk: data["ids"][pk] for pk in ids if data["ids"].get(pk)},
                    params=form.params(),
                )
            except DomainError as exc:
                if exc.status_code == 403:
                    raise PermissionDenied(exc.message) from None
                form.add_error(None, exc.message)
                status = exc.status_code
            else:
                if result.job is not None:
                    return redirect("benchmark:job_detail", pk=result.job.pk)
                messages.success(request, result.message)
                return redirect("review:evaluation_pilot", project_id=project.pk)
    else:
        form = PilotActionForm(project=project, user=request.user)
    context = {
        **project_context(request, project),
        "lists": selectors.pilot_lists(user=request.user, project=project),
        "form": form,
    }
    response = render_page(request, "review/evaluation/pilot.html", context)
    response.status_code = status
    return response
