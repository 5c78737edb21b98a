"""Reading releases: scoped to projects the user may review (another project's release 404s)."""

from __future__ import annotations

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from benchmark import permissions
from benchmark.exceptions import Forbidden
from benchmark.models import Project
from benchmark.typing import AnyUser
from review.releases.models import Release


def release_list(*, user: AnyUser, project: Project) -> QuerySet[Release]:
    """The project's releases, newest first; the fingerprints (large) are left unread."""
    if not permissions.can(user=user, project=project, action="review"):
        raise Forbidden("Only reviewers and admins see releases.")
    return (
        Release.objects.filter(project=project)
        .select_related("created_by")
        .defer("fingerprints", "manifest")
        .order_by("-number")
    )


def release_get(*, user: AnyUser, project: Project, pk: int) -> Release:
    return get_object_or_404(release_list(user=user, project=project).defer(None), pk=pk)
