"""``{% job_card job %}``: the one job card (progress bar while it runs, the kind's result
fragment once it is done), polled at the one job view. ``notice`` is a line shown on top (a
page's message about the job, e.g. why a second rescore was refused)."""

from __future__ import annotations

from typing import Any

from django import template

from benchmark.jobs.presenters import job_card_context
from benchmark.models import Job

register = template.Library()


@register.inclusion_tag("partials/job_card.html", takes_context=True)
def job_card(context: template.Context, job: Job, notice: str = "") -> dict[str, Any]:
    request = context.get("request")
    user = getattr(request, "user", None)
    return {
        **job_card_context(job, user=user),
        "request": request,
        "notice": notice,
        "csrf_token": context.get("csrf_token"),
    }
