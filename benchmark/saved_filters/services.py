"""Writes of saved filters: a member saves the item list's current filters under a name for
the project; its creator or a project admin deletes it."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from benchmark import permissions
from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.models import Project, SavedFilter
from benchmark.models.saved_filters import NAME_MAX, QUERY_MAX
from benchmark.saved_filters.selectors import PREFIX, filters_of_query
from benchmark.typing import User


def saved_filter_create(*, project: Project, user: User, name: str, query: str) -> SavedFilter:
    """Save ``query`` (the item list's query string) as ``name`` for the project's members.
    ValidationFailed for an empty or too long name or a query the list would not apply;
    Conflict when the project has a saved filter of that name."""
    permissions.require(user=user, project=project, action="view")
    name = " ".join(name.split())
    if not name:
        raise ValidationFailed("name: give the saved filter a name")
    if len(name) > NAME_MAX:
        raise ValidationFailed(f"name: at most {NAME_MAX} characters")
    if name.startswith(PREFIX):
        raise ValidationFailed(f"name: a name may not start with {PREFIX!r}")
    _, kept = filters_of_query(user=user, project=project, query=query)
    if len(kept) > QUERY_MAX:
        raise ValidationFailed(f"the filters are over {QUERY_MAX} characters as a query")
    saved = SavedFilter(project=project, name=name, query=kept, created_by=user)
    saved.full_clean(validate_unique=False, validate_constraints=False)
    try:
        with transaction.atomic():
            saved.save()
    except IntegrityError:
        raise Conflict(f"project {project.name!r} already has a saved filter {name!r}") from None
    return saved


def saved_filter_delete(*, saved_filter: SavedFilter, user: User) -> None:
    """Delete a saved filter: its creator or an admin of its project."""
    project = saved_filter.project
    permissions.require(user=user, project=project, action="view")
    mine = saved_filter.created_by_id is not None and saved_filter.created_by_id == user.pk
    if not mine and not permissions.can(user=user, project=project, action="manage"):
        raise Forbidden(
            f"only the person who saved {saved_filter.name!r} or a project admin may delete it"
        )
    with transaction.atomic():
        SavedFilter.objects.filter(pk=saved_filter.pk).delete()
