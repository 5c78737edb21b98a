"""Worked examples of the check judges (S and V) from an upload's page: add ticked correction
cases, one such set's page, and starting its held-back comparison."""

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
from review.agreement.judge_examples.models import ExampleSet
from review.agreement.presenters import calibration_view
from review.runs import selectors as run_selectors
from review.runs.examples import selectors, services

WHY = "Only reviewers and admins add worked examples to a judge."
TEMPLATE = "review/check_examples/set.html"


def _set_for(request: HttpRequest, pk: int) -> ExampleSet:
    try:
        return selectors.example_set_for_checks(user=request_user(request), pk=pk)
    except NotFound as exc:
        raise Http404(exc.message) from None
    except Forbidden as exc:
        raise PermissionDenied(exc.message) from None


def _context(request: HttpRequest, example_set: ExampleSet) -> dict[str, Any]:
    user = request_user(request)
    judge = selectors.check_judge_of(example_set)
    report = selectors.held_back_comparison(user=user, example_set=example_set)
    rows = None
    if report is not None:
        rows = {
            name: calibration_view(
                {"threshold": 0, "overall": report[name], "categories": report["categories"]},
                judge.answers,
            )["rows"][0]
            for name in ("before", "after")
        }
    return {
        "example_set": example_set,
        "project": example_set.project,
        "run_set": example_set.run_set,
        "judge": judge,
        "cases": list(example_set.cases.all()),
        "versions": list(example_set.template_versions.order_by("template_id")),
        "held_back_count": len(example_set.held_back),
        "comparison": report,
        "comparison_rows": rows,
        "job": example_set.held_back_job,
        "can_run": permissions.can(user=user, project=example_set.project, action="run_judges"),
    }


@login_required
@require_POST
def check_examples_add(request: HttpRequest, pk: int) -> HttpResponse:
    """Add the ticked ``units`` (correction cases of the check judge ``key``) of the upload
    as worked examples; redirects to the new set. A bad choice answers 400 with the reason."""
    user = request_user(request)
    run_set = run_selectors.run_set_get(user=user, pk=pk)
    for action in ("manage_studies", "run_judges"):
        if not permissions.can(user=user, project=run_set.project, action=action):
            raise PermissionDenied(WHY)
    try:
        example_set = services.check_examples_add(
            user=user,
            run_set=run_set,
            key=request.POST.get("key", ""),
            units=request.POST.getlist("units"),
        )
    except DomainError as exc:
        return render(
            request,
            "review/check_examples/error.html",
            {"run_set": run_set, "project": run_set.project, "message": exc.message},
            status=exc.status_code,
        )
    return redirect("review:check_example_set", pk=example_set.pk)


@login_required
@require_GET
@htmx_page
def check_example_set(request: HttpRequest, pk: int) -> HttpResponse:
    """One set of worked examples of a check judge: its cases, the template version it
    created, and the held-back comparison (start it; its job's progress; before and after)."""
    example_set = _set_for(request, pk)
    htmx = getattr(request, "htmx", None)
    target = htmx.target if htmx and not htmx.history_restore_request else None
    template = TEMPLATE + ("#held-back" if target == "held-back" else "")
    response = render(request, template, _context(request, example_set))
    job = example_set.held_back_job
    if target == "held-back" and (job is None or job.done):
        response.status_code = 286  # the poll stops: the job is done
    return response


@login_required
@require_POST
def check_held_back_start(request: HttpRequest, pk: int) -> HttpResponse:
    """Start the held-back comparison of the set's new version (a job)."""
    example_set = _set_for(request, pk)
    user = request_user(request)
    if not permissions.can(user=user, project=example_set.project, action="run_judges"):
        raise PermissionDenied("Only reviewers and admins run judges.")
    try:
        services.held_back_checks_start(user=user, example_set=example_set)
    except DomainError as exc:
        context = _context(request, example_set)
        context["error"] = exc.message
        return render(request, TEMPLATE, context, status=exc.status_code)
    return redirect("review:check_example_set", pk=example_set.pk)
