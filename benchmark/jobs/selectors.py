"""Reads of jobs, scoped to the user."""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.shortcuts import get_object_or_404

from benchmark.models import (
    Job,
    Project,
)
from benchmark.typing import AnyUser


def job_list(*, user: AnyUser, project: Project | None = None) -> QuerySet[Job]:
    """Jobs the user started, or that belong to one of the user's projects."""
    if not user.is_authenticated:
        return Job.objects.none()
    jobs = Job.objects.filter(
        Q(created_by=user) | Q(project__in=Project.objects.filter(memberships__user=user.pk))
    )
    if project is not None:
        jobs = jobs.filter(project=project)
    return jobs.select_related("project", "created_by").order_by("-created_at", "-id")


def job_get(*, user: AnyUser, pk: int) -> Job:
    return get_object_or_404(job_list(user=user), pk=pk)
