"""Reads of jobs, scoped to the user by the job's kind: every reader (the job page and its
poll, the API, the pages that list recent jobs) goes through here, so a job's result is shown
only to those its kind allows (``benchmark.jobs.kinds``)."""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.http import Http404

from benchmark.exceptions import Forbidden
from benchmark.jobs.kinds import job_kind, job_kinds
from benchmark.models import Job, Membership, Project
from benchmark.permissions import ACTIONS, role_in
from benchmark.typing import AnyUser


def _roles(user: AnyUser) -> dict[int, str]:
    return dict(Membership.objects.filter(user=user.pk).values_list("project_id", "role"))


def job_list(
    *, user: AnyUser, project: Project | None = None, kind: str | None = None
) -> QuerySet[Job]:
    """The jobs the user may see: of each registered kind, those in projects where the
    user's role allows the kind's action (plus the ones the user started, for kinds that say
    so), narrowed by the kind's own scope; of an unknown kind, only the user's own."""
    if not user.is_authenticated:
        return Job.objects.none()
    jobs = Job.objects.all()
    if project is not None:
        # One project's jobs: its role (usually cached on the project already) is enough.
        role = role_in(user=user, project=project)
        roles = {project.pk: role} if role is not None else {}
        jobs = jobs.filter(project=project)
    else:
        roles = _roles(user)
    if kind is not None:
        jobs = jobs.filter(kind=kind)
    visible = Q(pk__in=[])
    for spec in job_kinds():
        allowed = [pk for pk, role in roles.items() if role in ACTIONS[spec.action]]
        mine = Q(project_id__in=allowed)
        if spec.starter_sees:
            mine |= Q(created_by=user.pk)
        of_kind = Q(kind=spec.name) & mine
        if spec.scope is not None:
            narrowed = spec.narrow(user=user, jobs=Job.objects.filter(of_kind))
            of_kind = Q(pk__in=narrowed.values("pk"))
        visible |= of_kind
    visible |= ~Q(kind__in=[s.name for s in job_kinds()]) & Q(created_by=user.pk)
    return (
        jobs.filter(visible)
        .select_related("project", "created_by", "cancel_requested_by")
        .order_by("-created_at", "-id")
    )


def job_get(*, user: AnyUser, pk: int) -> Job:
    """A job the user may see. Another project's job (or none) is 404; a job of the user's
    project that their role does not show (an annotator and a scoring job) is Forbidden."""
    job = job_list(user=user).filter(pk=pk).first()
    if job is not None:
        return job
    hidden = Job.objects.filter(pk=pk).values_list("kind", "project_id").first()
    if hidden is not None and user.is_authenticated and hidden[1] in _roles(user):
        spec = job_kind(hidden[0])
        what = f"{spec.label.lower()} jobs" if spec is not None else "this job"
        raise Forbidden(f"your role in this project does not show {what}")
    raise Http404("no such job")
