"""Routing by doubt: "Recompute doubt" of a task (a Job), from its agreement page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation.judgment_tasks import selectors as judging_selectors
from annotation.judgment_tasks.doubt import services
from benchmark import permissions
from benchmark.typing import request_user


@login_required
@require_POST
def doubt_recompute(request: HttpRequest, pk: int) -> HttpResponse:
    """Start recomputing the task's doubt and its annotators' reliabilities (reviewers and
    admins); back to the agreement page, whose job card shows the progress."""
    task = judging_selectors.task_get(user=request.user, pk=pk)
    if not permissions.can(user=request.user, project=task.project, action="manage_studies"):
        raise PermissionDenied("Only reviewers and admins recompute the doubt of a task.")
    services.doubt_recompute_start(task=task, user=request_user(request))
    return redirect(reverse("review:agreement", kwargs={"pk": task.pk}) + "#items-by-doubt")
