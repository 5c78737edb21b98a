"""Corrections as worked examples: add ticked correction cases of a judge run (from the
agreement page's calibration report) as examples in a new template version, one example
set's page, and starting its held-back comparison."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from benchmark import permissions
from benchmark.exceptions import DomainError, Forbidden, NotFound
from benchmark.pages import htmx_page
from benchmark.typing import request_user
from review.agreement import judge_sources
from review.agreement.judge_examples import selectors, services
from review.agreement.judge_examples.models import ExampleSet
from review.agreement.presenters import calibration_view
from review.pages import task_for_review


def _set_for(request: HttpRequest, pk: int) -> ExampleSet:
    try:
        return selectors.example_set_get(user=request_user(request), pk=pk)
    except NotFound as exc:
        raise Http404(exc.message) from None
    except Forbidden as exc:
        raise PermissionDenied(exc.message) from None


def _context(request: HttpRequest, example_set: ExampleSet) -> dict[str, Any]:
    user = request_user(request)
    from review.agreement.judge_examples.reports.views import set_context

    reports = set_context(request, example_set)
    inputs = selectors.held_back_inputs(example_set=example_set)
    report = (
        None
        if reports
        else selectors.held_back_comparison(user=user, example_set=example_set, inputs=inputs)
    )
    names = judge_sources.value_names(example_set.people_task)
    rows = None
    if report is not None:
        before = calibration_view(
            {"threshold": 0, "overall": report["before"], "categories": report["categories"]},
            names,
        )["rows"][0]
        after = calibration_view(
            {"threshold": 0, "overall": report["after"], "categories": report["categories"]},
            names,
        )["rows"][0]
        rows = {"before": before, "after": after}
    run = example_set.held_back_run
    return {
        "example_set": example_set,
        "project": example_set.project,
        "task": example_set.task,
        "cases": list(example_set.cases.all()),
        "versions": list(example_set.template_versions.order_by("template_id")),
        "held_back_count": reports["held_back_count"]
        if reports
        else len(selectors.held_back_units(example_set=example_set, inputs=inputs)),
        "comparison": report,
        "comparison_rows": rows,
        "run": run,
        "job": run.job if run is not None else None,
        "can_run": permissions.can(user=user, project=example_set.project, action="run_judges"),
        "judge_label": example_set.judge_run.spec.label,
        **(reports or {}),
    }


@login_required
@require_POST
def judge_examples_add(request: HttpRequest, pk: int) -> HttpResponse:
    """Add the ticked ``units`` (correction cases of the judge ``key``) as worked examples;
    redirects to the new example set. A bad choice answers 400 with the reason."""
    task = task_for_review(request, pk, action="manage_studies")
    user = request_user(request)
    if not permissions.can(user=user, project=task.project, action="run_judges"):
        raise PermissionDenied("Only reviewers and admins add worked examples to a judge.")
    try:
        example_set = services.judge_examples_add(
            user=user,
            task=task,
            key=request.POST.get("key", "").strip(),
            units=request.POST.getlist("units"),
        )
    except DomainError as exc:
        return render(
            request,
            "review/judge_examples/error.html",
            {"task": task, "project": task.project, "message": exc.message},
            status=exc.status_code,
        )
    return redirect("review:example_set", pk=example_set.pk)


@login_required
@require_GET
@htmx_page
def example_set_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One set of worked examples: its cases, the template versions it created, and the
    held-back comparison (start it; its job's progress; before and after)."""
    example_set = _set_for(request, pk)
    if example_set.run_set_id is not None:  # made from an upload's checks: its own page
        return redirect("review:check_example_set", pk=example_set.pk)
    htmx = getattr(request, "htmx", None)
    target = htmx.target if htmx and not htmx.history_restore_request else None
    template = "review/judge_examples/set.html"
    if target == "held-back":  # the section polls itself while its run's job is going
        template += "#held-back"
    return render(request, template, _context(request, example_set))


@login_required
@require_POST
def held_back_start(request: HttpRequest, pk: int) -> HttpResponse:
    """Start the held-back run of the set's new version (optional ``units``: a subset of the
    held-back set; an example unit is refused with 400)."""
    example_set = _set_for(request, pk)
    user = request_user(request)
    if not permissions.can(user=user, project=example_set.project, action="run_judges"):
        raise PermissionDenied("Only reviewers and admins run judges.")
    units = request.POST.getlist("units") or None
    try:
        services.held_back_run_start(user=user, example_set=example_set, units=units)
    except DomainError as exc:
        context = _context(request, example_set)
        context["error"] = exc.message
        return render(request, "review/judge_examples/set.html", context, status=exc.status_code)
    return redirect("review:example_set", pk=example_set.pk)
