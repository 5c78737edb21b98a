"""What the review pages share: looking up a task or a project for a reviewer (another
project's answers 404; an annotator gets 403 with the reason)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from annotation.judgment_tasks import selectors as judging_selectors
from annotation.judgment_tasks.models import JudgmentTask
from benchmark import permissions
from benchmark import selectors as project_selectors
from benchmark.models import Project


def task_for_review(
    request: HttpRequest,
    pk: int,
    why: str = "Only reviewers and admins see the disagreement queue.",
    *,
    action: str,
) -> JudgmentTask:
    """The task ``pk`` when the user's role allows ``action`` in its project."""
    task = judging_selectors.task_get(user=request.user, pk=pk)
    if not permissions.can(user=request.user, project=task.project, action=action):
        raise PermissionDenied(why)
    return task


def project_for_review(
    request: HttpRequest,
    pk: int,
    why: str = "Only reviewers and admins work on releases.",
    *,
    action: str,
) -> Project:
    """The project ``pk`` when the user's role allows ``action`` in it."""
    project = project_selectors.project_get(user=request.user, pk=pk)
    if not permissions.can(user=request.user, project=project, action=action):
        raise PermissionDenied(why)
    return project
