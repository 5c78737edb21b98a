"""A job's page and the polled fragment with its progress bar."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.views.decorators.http import require_GET
from django_htmx.http import HTMX_STOP_POLLING

from benchmark.jobs import selectors, services
from benchmark.pages import htmx_page, render_page
from benchmark.typing import HtmxHttpRequest


@login_required
@require_GET
@htmx_page
def job_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """A job's progress. The polled fragment answers 286 (stop polling) once it is done."""
    job = services.job_refresh(job=selectors.job_get(user=request.user, pk=pk))
    response = render_page(
        request, "benchmark/job_detail.html", {"job": job}, fragments={"job-*": "job"}
    )
    polled = request.htmx and (request.htmx.target or "").startswith("job-")
    if polled and job.done:
        response.status_code = HTMX_STOP_POLLING
    return response
