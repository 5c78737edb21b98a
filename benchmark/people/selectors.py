"""Reads for the members and people pages, scoped to who may see them."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet
from django.shortcuts import get_object_or_404
from django.utils.encoding import force_str
from django.utils.http import urlsafe_base64_decode

from benchmark import permissions
from benchmark import selectors as project_selectors
from benchmark.models import AuditEvent, Invitation, Membership, Project
from benchmark.typing import AnyUser, User

EVENTS_SHOWN = 100
_ID_MAX = 2**63 - 1  # the largest id a BigAutoField holds


def project_for_members(*, user: AnyUser, pk: int) -> Project:
    """The project whose members ``user`` manages: staff any project; a member who is not
    its admin gets 403, anyone else 404."""
    if permissions.is_staff(user):
        return get_object_or_404(Project.objects.select_related("toolset", "taxonomy"), pk=pk)
    project = project_selectors.project_get(user=user, pk=pk)
    if not permissions.can_manage_members(user=user, project=project):
        raise PermissionDenied("Only the project's admins (and staff) manage its members.")
    return project


def member_list(*, user: AnyUser, project: Project) -> QuerySet[Membership]:
    if not permissions.can_manage_members(user=user, project=project):
        return Membership.objects.none()
    return (
        Membership.objects.filter(project=project)
        .select_related("user")
        .order_by("role", "user__username")
    )


def invitation_list(*, user: AnyUser, project: Project) -> QuerySet[Invitation]:
    if not permissions.can_manage_members(user=user, project=project):
        return Invitation.objects.none()
    return (
        Invitation.objects.filter(project=project)
        .select_related("created_by", "used_by")
        .order_by("-created_at", "-id")[:50]
    )


def event_list(*, user: AnyUser, project: Project | None = None) -> QuerySet[AuditEvent]:
    """The latest recorded changes: a project's (for who manages its members) or all of them
    (staff)."""
    events = AuditEvent.objects.select_related("actor", "project").order_by("-created_at", "-id")
    if project is not None:
        if not permissions.can_manage_members(user=user, project=project):
            return AuditEvent.objects.none()
        return events.filter(project=project)[:EVENTS_SHOWN]
    if not permissions.is_staff(user):
        return AuditEvent.objects.none()
    return events[:EVENTS_SHOWN]


def user_list(*, user: AnyUser) -> QuerySet[User]:
    """Every account with its number of projects (staff only)."""
    if not permissions.is_staff(user):
        return get_user_model().objects.none()
    return (
        get_user_model()
        .objects.annotate(n_projects=Count("memberships"))
        .order_by("-is_active", "username")
    )


def user_get(*, user: AnyUser, pk: int) -> User:
    if not permissions.is_staff(user):
        raise PermissionDenied("Only staff manage user accounts.")
    return get_object_or_404(get_user_model(), pk=pk)


def invitation_by_token(*, token: str) -> Invitation | None:
    """The invitation a link's token opens (any state), for its public page: the token is
    the visitor's proof, so no user scope."""
    return (
        Invitation.objects.select_related("project", "project__toolset")
        .filter(token_hash=Invitation.hash_token(token))
        .first()
    )


def password_link_user(*, uidb64: str, token: str) -> User | None:
    """The account a password link sets the password of, or None for every link that does
    not (an id that is no number or names nobody, a deactivated account, a used or expired
    token), so the page can answer them all alike and name nobody. The token is the
    visitor's proof, so no user scope."""
    try:
        pk = int(force_str(urlsafe_base64_decode(uidb64)))
    except (ValueError, TypeError, OverflowError):
        return None
    if not 0 < pk <= _ID_MAX:
        return None
    user = get_user_model().objects.filter(pk=pk, is_active=True).first()
    if user is None or not default_token_generator.check_token(user, token):
        return None
    return user
