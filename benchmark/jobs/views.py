"""The one job view: a job's page, and the fragment every page polls for the job card (its
progress bar, then the kind's result); and cancelling a job from that card. Who may see a job
is the selector's business; who may cancel it the service's."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HTMX_STOP_POLLING

from benchmark.exceptions import DomainError, Forbidden
from benchmark.jobs import selectors, services
from benchmark.jobs.presenters import job_card_context
from benchmark.pages import htmx_page, render_page
from benchmark.typing import HtmxHttpRequest, request_user


@login_required
@require_GET
@htmx_page
def job_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """A job's progress. The polled fragment (target ``job-<pk>``) answers 286 (stop polling)
    once the job is done, with the kind's ``done_event`` as HX-Trigger."""
    try:
        job = selectors.job_get(user=request.user, pk=pk)
    except Forbidden as exc:
        raise PermissionDenied(exc.message) from None
    job = services.job_refresh(job=job)
    context = job_card_context(job, user=request.user)
    response = render_page(
        request, "benchmark/job_detail.html", context, fragments={"job-*": "job"}
    )
    polled = request.htmx and (request.htmx.target or "").startswith("job-")
    if polled and job.done:
        response.status_code = HTMX_STOP_POLLING
        if context["kind"].done_event:
            response["HX-Trigger"] = context["kind"].done_event
    return response


@login_required
@require_POST
def job_cancel(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Cancel a queued or running job (``services.job_cancel``): htmx gets the job card in
    place (a running job shows "Cancelling…" until it stops); otherwise back to the job's
    page. A job that has ended answers 409, a user who may see but not cancel it 403."""
    try:
        job = selectors.job_get(user=request.user, pk=pk)
    except Forbidden as exc:
        raise PermissionDenied(exc.message) from None
    try:
        job = services.job_cancel(job=job, user=request_user(request))
    except Forbidden as exc:
        raise PermissionDenied(exc.message) from None
    except DomainError as exc:
        return HttpResponse(exc.message, status=exc.status_code, content_type="text/plain")
    if not request.htmx:
        return redirect("benchmark:job_detail", pk=job.pk)
    return render(request, "partials/job.html", {"job": job})
