"""Compare two models: pick model A and model B (their answers on the project's items, or a
human evaluation's pairs of the two with ``?task=``) and the judge model; POST starts the
pairwise judge in both orders as a judge run, and the browser goes to the run's page (its
progress, then the figures and each pair's verdicts). Reviewers and admins (``run_judges``)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods

from benchmark.exceptions import DomainError
from benchmark.llm import selectors as llm_selectors
from benchmark.pages import htmx_page, project_context, render_page
from benchmark.typing import HtmxHttpRequest, request_user
from review.model_compare import selectors, services
from review.model_compare.forms import ModelCompareForm
from review.pages import project_for_review

WHY = "Only reviewers and admins run model judges."


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def model_compare(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    project = project_for_review(request, project_id, WHY, action="run_judges")
    raw_task = (request.GET.get("task") or request.POST.get("task") or "").strip()
    task = None
    error = ""
    status = 200
    if raw_task:
        if not raw_task.isdigit():
            error, status = f"task: {raw_task[:40]!r} is not a task number", 400
        else:
            try:
                task = selectors.pair_task_get(user=request.user, project=project, pk=int(raw_task))
            except DomainError as exc:
                error, status = exc.message, exc.status_code
    models = selectors.comparison_models(user=request.user, project=project, task=task)
    if request.method == "POST" and not error:
        form = ModelCompareForm(request.POST, models=models)
        if form.is_valid():
            data = form.cleaned_data
            try:
                run, _ = services.model_comparison_start(
                    project=project,
                    user=request_user(request),
                    model_a=data["model_a"],
                    model_b=data["model_b"],
                    task=task,
                    base_url=data["base_url"],
                    model=data["model"],
                    workers=data["workers"],
                )
            except DomainError as exc:
                error, status = exc.message, exc.status_code
            else:
                return redirect("review:judge_run", pk=run.pk)
        else:
            status = 400
    else:
        names = [name for name, _ in models]
        initial: dict[str, Any] = {
            "model_a": request.GET.get("a") or (names[0] if names else ""),
            "model_b": request.GET.get("b") or (names[1] if len(names) > 1 else ""),
        }
        form = ModelCompareForm(initial=initial, models=models)
    context = {
        **project_context(request, project),
        "form": form,
        "error": error,
        "task": task,
        "models": models,
        "default": llm_selectors.model_placeholder(project=project),
        "runs": selectors.comparison_runs(user=request.user, project=project),
    }
    response = render_page(request, "review/model_compare/compare.html", context)
    response.status_code = status
    return response
