"""The one job view: a job's page, and the fragment every page polls for the job card (its
progress bar, then the kind's result). Who may see a job is the selector's business."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.views.decorators.http import require_GET
from django_htmx.http import HTMX_STOP_POLLING

from benchmark.exceptions import Forbidden
from benchmark.jobs import selectors, services
from benchmark.jobs.presenters import job_card_context
from benchmark.pages import htmx_page, render_page
from benchmark.typing import HtmxHttpRequest


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
    context = job_card_context(job)
    response = render_page(
        request, "benchmark/job_detail.html", context, fragments={"job-*": "job"}
    )
    polled = request.htmx and (request.htmx.target or "").startswith("job-")
    if polled and job.done:
        response.status_code = HTMX_STOP_POLLING
        if context["kind"].done_event:
            response["HX-Trigger"] = context["kind"].done_event
    return response
