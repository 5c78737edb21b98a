"""The team page of a project (reviewers and admins): per annotator and per task the items
done, in progress, the median time and the agreement with the outcome, and the throughput."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from annotation.model_drafts.selectors import drafting_figures
from benchmark.pages import htmx_page, project_context, render_page
from benchmark.typing import request_user
from review.gold.selectors import gold_reports
from review.pages import project_for_review
from review.team import selectors
from review.team.forms import TeamFilterForm


@login_required
@require_GET
@htmx_page
def team(request: HttpRequest, project_id: int) -> HttpResponse:
    """The figures, filtered by task and date range; a bad filter is named and ignored."""
    project = project_for_review(
        request,
        project_id,
        "Only reviewers and admins see the team's figures.",
        action="manage_studies",
    )
    user = request_user(request)
    tasks = selectors.team_tasks(user=user, project=project)
    form = TeamFilterForm(request.GET or None, tasks=tasks)
    task, days = None, None
    if form.is_bound and form.is_valid():
        task, days = form.cleaned_data["task"], form.cleaned_data["days"]
    elif form.is_bound:
        # Keep the filters that are good; name the others on the page.
        task = form.tasks.get(request.GET.get("task", ""))
        days = {"7": 7, "30": 30}.get(request.GET.get("days", ""))
    report = selectors.team_report(user=user, project=project, tasks=tasks, task=task, days=days)
    # Gold accuracy per annotator (all their gold judgments, whatever the range), for the
    # tasks shown that serve gold items (no query when none does).
    serving = [t for t in ([task] if task else tasks) if t.gold_rate]
    gold = gold_reports(user=user, project=project, tasks=serving) if serving else []
    context: dict[str, Any] = {
        **project_context(request, project),
        "form": form,
        "report": report,
        "gold_reports": gold,
        # Draft acceptance per kind (kept / edited / rejected) and tokens spent.
        "drafting_figures": drafting_figures(user=user, project=project),
    }
    return render_page(request, "review/team/team.html", context, fragments={"team": "team"})
