"""Report corrections: the correction cases of a "Rate the judge" task (write what the agent
should have said; tick; "Add as worked examples"), and what an example set made from them shows
(before and after against people's verdicts)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from benchmark import permissions
from benchmark.exceptions import DomainError, ValidationFailed
from benchmark.typing import request_user
from review.agreement.judge_examples.models import ExampleSet
from review.agreement.judge_examples.reports import selectors, services
from review.pages import task_for_review

WHY = "Only reviewers and admins correct a judge's reports."
TEMPLATE = "review/judge_examples/reports.html"


def _page(
    request: HttpRequest,
    task: Any,
    *,
    threshold: float,
    every: bool,
    error: str = "",
    kept: dict[str, str] | None = None,
    status: int = 200,
) -> HttpResponse:
    user = request_user(request)
    cases = selectors.report_cases(user=user, task=task, threshold=threshold, every=every)
    kept = kept or {}
    return render(
        request,
        TEMPLATE,
        {
            "task": task,
            "project": task.project,
            "spec": selectors.report_spec(task),
            "run": selectors.task_run(task),
            "cases": [(c, kept.get(c.unit, c.prefill)) for c in cases],
            "threshold": threshold,
            "every": every,
            "error": error,
            "error_unit": next(iter(kept), ""),
            "can_add": permissions.can(user=user, project=task.project, action="run_judges"),
        },
        status=status,
    )


def _task(request: HttpRequest, pk: int) -> Any:
    task = task_for_review(request, pk, WHY, action="manage_studies")
    if not permissions.can(user=request.user, project=task.project, action="run_judges"):
        raise PermissionDenied(WHY)
    return task


def _refused(request: HttpRequest, task: Any, exc: DomainError) -> HttpResponse:
    return render(
        request,
        "review/judge_examples/error.html",
        {"task": task, "project": task.project, "message": exc.message},
        status=exc.status_code,
    )


def _no_reports(request: HttpRequest, task: Any) -> HttpResponse | None:
    """The refusal for a task whose reports take no corrections (None: they do)."""
    if selectors.is_report_task(task):
        return None
    return _refused(
        request,
        task,
        ValidationFailed(
            f"task {task.name!r} is not a 'Rate the judge' task of a judge whose reports "
            "take corrections (ATP-Bench MAM, the LLM-I judges)"
        ),
    )


def _threshold(request: HttpRequest, source: Any) -> tuple[float, str]:
    try:
        return selectors.threshold_of(source.get("rate_threshold")), ""
    except DomainError as exc:
        return selectors.DEFAULT_THRESHOLD, exc.message


@login_required
@require_GET
def report_cases(request: HttpRequest, pk: int) -> HttpResponse:
    """The reports people rated wrong (below ``?rate_threshold=``, 80 % by default) or a
    reviewer corrected; ``?all=1`` lists every rated report."""
    task = _task(request, pk)
    refused = _no_reports(request, task)
    if refused is not None:
        return refused
    threshold, error = _threshold(request, request.GET)
    try:
        return _page(
            request,
            task,
            threshold=threshold,
            every=request.GET.get("all") == "1",
            error=error,
            status=400 if error else 200,
        )
    except DomainError as exc:
        return _refused(request, task, exc)


@login_required
@require_POST
def report_correct(request: HttpRequest, pk: int) -> HttpResponse:
    """Save what the agent should have said in one report (``unit``, ``text``). A text the
    judge's parser refuses re-renders the page with the reason and the text kept (400)."""
    task = _task(request, pk)
    refused = _no_reports(request, task)
    if refused is not None:
        return refused
    threshold, _ = _threshold(request, request.POST)
    every = request.POST.get("all") == "1"
    unit = request.POST.get("unit", "")
    try:
        services.report_correction_save(
            user=request_user(request), task=task, unit=unit, text=request.POST.get("text", "")
        )
    except DomainError as exc:
        return _page(
            request,
            task,
            threshold=threshold,
            every=every,
            error=exc.message,
            kept={unit: request.POST.get("text", "")},
            status=exc.status_code,
        )
    query = f"?rate_threshold={threshold:g}" + ("&all=1" if every else "")
    return redirect(reverse("review:report_cases", args=[task.pk]) + query)


@login_required
@require_POST
def report_examples_add(request: HttpRequest, pk: int) -> HttpResponse:
    """Add the ticked corrected reports (``units``) as worked examples; redirects to the new
    example set. A bad choice re-renders the page with the reason (400)."""
    task = _task(request, pk)
    refused = _no_reports(request, task)
    if refused is not None:
        return refused
    threshold, _ = _threshold(request, request.POST)
    try:
        example_set = services.report_examples_add(
            user=request_user(request),
            task=task,
            units=request.POST.getlist("units"),
            threshold=threshold,
        )
    except DomainError as exc:
        return _page(
            request,
            task,
            threshold=threshold,
            every=request.POST.get("all") == "1",
            error=exc.message,
            status=exc.status_code,
        )
    return redirect("review:example_set", pk=example_set.pk)


def set_context(request: HttpRequest, example_set: ExampleSet) -> dict[str, Any] | None:
    """What the example set's page shows of a set made from corrected reports (None for any
    other set): the held-back units and the comparison against people's verdicts."""
    if not selectors.is_report_task(example_set.people_task):
        return None
    user = request_user(request)
    comparison = selectors.report_comparison(user=user, example_set=example_set)
    return {
        "reports": True,
        "held_back_count": len(selectors.held_back_units(example_set=example_set)),
        "report_comparison": comparison,
        "report_rows": [("before", comparison["before"]), ("after", comparison["after"])]
        if comparison
        else [],
    }
