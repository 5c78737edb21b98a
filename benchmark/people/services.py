"""Writes to members, invitation links and user accounts. Each change writes its audit row
(:class:`AuditEvent`) in the same transaction."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from benchmark import permissions
from benchmark.exceptions import Conflict, Forbidden, NotFound, ValidationFailed
from benchmark.models import AuditAction, AuditEvent, Invitation, Membership, Project, Role
from benchmark.typing import User

INVITATION_DAYS = 7
MAX_INVITATION_DAYS = 90


def audit_record(
    *,
    actor: User | None,
    action: str,
    target: str = "",
    project: Project | None = None,
    details: dict[str, Any] | None = None,
) -> AuditEvent:
    """Record one change. Call it inside the transaction that makes the change."""
    return AuditEvent.objects.create(
        actor=actor, action=action, target=target[:200], project=project, details=details or {}
    )


def _role(role: str) -> str:
    if role not in Role.values:
        raise ValidationFailed(f"role: choose one of {', '.join(Role.values)}, not {role!r}")
    return role


# --------------------------------------------------------------------------- members


def member_add(*, project: Project, actor: User, username: str, role: str) -> Membership:
    """Add an existing user (by username) to the project with ``role``."""
    permissions.require_manage_members(user=actor, project=project)
    _role(role)
    username = (username or "").strip()
    if not username:
        raise ValidationFailed("username: say whom to add")
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ValidationFailed(
            f"username: nobody is called {username!r}; invite them with a link instead"
        )
    if not user.is_active:
        raise ValidationFailed(f"username: {username!r} is deactivated")
    taken = Conflict(f"username: {username!r} is a member already; change their role")
    with transaction.atomic():
        if Membership.objects.filter(project=project, user=user).exists():
            raise taken
        try:
            with transaction.atomic():
                membership = Membership.objects.create(project=project, user=user, role=role)
        except IntegrityError:  # added at the same moment by someone else
            raise taken from None
        audit_record(
            actor=actor,
            action=AuditAction.MEMBER_ADDED,
            project=project,
            target=user.get_username(),
            details={"role": role},
        )
    return membership


def _membership_locked(project: Project, membership_id: int) -> Membership:
    """The membership, locked for the rest of the transaction. The project's row is locked
    first: every change of a role or a member takes the locks in that one order (project,
    then memberships), so two admins changing each other's role at once wait for one another
    instead of deadlocking."""
    Project.objects.select_for_update().filter(pk=project.pk).values_list("pk").first()
    membership = (
        Membership.objects.select_for_update()
        .select_related("user")
        .filter(project=project, pk=membership_id)
        .first()
    )
    if membership is None:
        raise NotFound("no such member in this project")
    return membership


def _keeps_an_admin(project: Project, membership: Membership) -> None:
    """Refuse when ``membership`` is the project's last admin."""
    if membership.role != Role.ADMIN:
        return
    admins = list(
        Membership.objects.select_for_update()
        .filter(project=project, role=Role.ADMIN)
        .values_list("pk", flat=True)
    )
    if admins == [membership.pk]:
        raise Conflict(
            f"{membership.user.get_username()} is the last admin of {project.name!r}: make "
            "someone else admin first"
        )


def member_role_set(*, project: Project, actor: User, membership_id: int, role: str) -> Membership:
    permissions.require_manage_members(user=actor, project=project)
    _role(role)
    with transaction.atomic():
        membership = _membership_locked(project, membership_id)
        before = membership.role
        if before == role:
            return membership
        if role != Role.ADMIN:
            _keeps_an_admin(project, membership)
        membership.role = role
        membership.save(update_fields=["role"])
        audit_record(
            actor=actor,
            action=AuditAction.MEMBER_ROLE_CHANGED,
            project=project,
            target=membership.user.get_username(),
            details={"from": before, "to": role},
        )
    return membership


def member_remove(*, project: Project, actor: User, membership_id: int) -> Membership:
    """Remove a member (never the last admin); returns the removed membership."""
    permissions.require_manage_members(user=actor, project=project)
    with transaction.atomic():
        membership = _membership_locked(project, membership_id)
        _keeps_an_admin(project, membership)
        audit_record(
            actor=actor,
            action=AuditAction.MEMBER_REMOVED,
            project=project,
            target=membership.user.get_username(),
            details={"role": membership.role},
        )
        membership.delete()
    return membership


# --------------------------------------------------------------------------- invitations


def invitation_create(
    *, project: Project, actor: User, role: str, days: int = INVITATION_DAYS
) -> tuple[Invitation, str]:
    """A new single-use link to join ``project`` as ``role``, valid for ``days``. Returns the
    invitation and its token, which is shown once and stored only as a hash."""
    permissions.require_manage_members(user=actor, project=project)
    _role(role)
    if not 1 <= days <= MAX_INVITATION_DAYS:
        raise ValidationFailed(f"days: between 1 and {MAX_INVITATION_DAYS}")
    token = secrets.token_urlsafe(32)
    with transaction.atomic():
        invitation = Invitation.objects.create(
            project=project,
            role=role,
            token_hash=Invitation.hash_token(token),
            created_by=actor,
            expires_at=timezone.now() + timedelta(days=days),
        )
        audit_record(
            actor=actor,
            action=AuditAction.INVITATION_CREATED,
            project=project,
            target=f"invitation {invitation.pk}",
            details={"role": role, "expires_at": invitation.expires_at.isoformat()},
        )
    return invitation, token


def invitation_revoke(*, project: Project, actor: User, invitation_id: int) -> Invitation:
    permissions.require_manage_members(user=actor, project=project)
    with transaction.atomic():
        invitation = (
            Invitation.objects.select_for_update().filter(project=project, pk=invitation_id).first()
        )
        if invitation is None:
            raise NotFound("no such invitation in this project")
        if invitation.state != "open":
            raise Conflict(f"the invitation is {invitation.state} already")
        invitation.revoked_at = timezone.now()
        invitation.save(update_fields=["revoked_at"])
        audit_record(
            actor=actor,
            action=AuditAction.INVITATION_REVOKED,
            project=project,
            target=f"invitation {invitation.pk}",
            details={"role": invitation.role},
        )
    return invitation


INVITATION_REFUSALS = {
    "used": "This invitation link has been used already. Ask a project admin for a new one.",
    "revoked": "This invitation link was revoked. Ask a project admin for a new one.",
    "expired": "This invitation link has expired. Ask a project admin for a new one.",
}


def _invitation_open(token: str) -> Invitation:
    """The open invitation of ``token``, locked; NotFound or Conflict saying why not."""
    invitation = (
        Invitation.objects.select_for_update()
        .select_related("project")
        .filter(token_hash=Invitation.hash_token(token))
        .first()
    )
    if invitation is None:
        raise NotFound("This invitation link is not valid. Check that you copied all of it.")
    if invitation.state != "open":
        raise Conflict(INVITATION_REFUSALS[invitation.state])
    return invitation


def _invitation_use(invitation: Invitation, user: User, *, new_account: bool) -> Membership:
    project = invitation.project
    membership = Membership.objects.filter(project=project, user=user).first()
    if membership is not None:
        raise Conflict(
            f"You are a member of {project.name!r} already (as {membership.role}); the link "
            "is left for someone else."
        )
    membership = Membership.objects.create(project=project, user=user, role=invitation.role)
    invitation.used_at = timezone.now()
    invitation.used_by = user
    invitation.save(update_fields=["used_at", "used_by"])
    audit_record(
        actor=user,
        action=AuditAction.INVITATION_USED,
        project=project,
        target=user.get_username(),
        details={
            "invitation": invitation.pk,
            "role": invitation.role,
            "new_account": new_account,
        },
    )
    return membership


def invitation_accept(*, token: str, user: User) -> Membership:
    """A logged-in user joins the invitation's project with its role."""
    with transaction.atomic():
        return _invitation_use(_invitation_open(token), user, new_account=False)


def invitation_signup(*, token: str, username: str, password: str) -> User:
    """A visitor creates an account through an open invitation and joins its project."""
    with transaction.atomic():
        invitation = _invitation_open(token)
        user = _user_new(username=username, password=password)
        audit_record(
            actor=user,
            action=AuditAction.USER_CREATED,
            target=user.get_username(),
            details={"invitation": invitation.pk},
        )
        _invitation_use(invitation, user, new_account=True)
    return user


# --------------------------------------------------------------------------- users (staff)


def _user_new(*, username: str, password: str, first_name: str = "", last_name: str = "") -> User:
    username = (username or "").strip()
    model = get_user_model()
    user = model(username=username, first_name=first_name.strip(), last_name=last_name.strip())
    try:
        user.full_clean(exclude=["password"])
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        raise ValidationFailed(f"{field}: {' '.join(messages)}") from None
    if model.objects.filter(username__iexact=username).exists():
        raise ValidationFailed(f"username: {username!r} is taken")
    if password:
        try:
            validate_password(password, user)
        except ValidationError as exc:
            raise ValidationFailed(f"password: {' '.join(exc.messages)}") from None
        user.set_password(password)
    else:
        user.set_unusable_password()
    try:
        with transaction.atomic():
            user.save()
    except IntegrityError:
        raise ValidationFailed(f"username: {username!r} is taken") from None
    return user


def user_create(
    *, actor: User, username: str, password: str = "", first_name: str = "", last_name: str = ""
) -> User:
    """A new account (staff). Without a password the account cannot log in until someone
    sets one through a password link (:func:`password_link_make`)."""
    permissions.require_staff(user=actor)
    with transaction.atomic():
        user = _user_new(
            username=username, password=password, first_name=first_name, last_name=last_name
        )
        audit_record(
            actor=actor,
            action=AuditAction.USER_CREATED,
            target=user.get_username(),
            details={"password": "set" if password else "none (needs a password link)"},
        )
    return user


def user_set_active(*, actor: User, user: User, active: bool) -> User:
    """Deactivate (cannot log in, keeps their work) or reactivate an account (staff)."""
    permissions.require_staff(user=actor)
    if user.pk == actor.pk and not active:
        raise Forbidden("you cannot deactivate your own account")
    with transaction.atomic():
        if user.is_active == active:
            return user
        user.is_active = active
        user.save(update_fields=["is_active"])
        audit_record(
            actor=actor,
            action=AuditAction.USER_REACTIVATED if active else AuditAction.USER_DEACTIVATED,
            target=user.get_username(),
        )
    return user


def password_link_make(*, actor: User, user: User) -> tuple[str, str]:
    """``(uidb64, token)`` for a link that sets ``user``'s password: Django's password reset
    token, so the link works once (it signs the current password) and expires after
    ``PASSWORD_RESET_TIMEOUT``."""
    permissions.require_staff(user=actor)
    if not user.is_active:
        raise ValidationFailed(f"{user.get_username()!r} is deactivated: reactivate them first")
    with transaction.atomic():
        audit_record(actor=actor, action=AuditAction.RESET_LINK_MADE, target=user.get_username())
    return urlsafe_base64_encode(force_bytes(user.pk)), default_token_generator.make_token(user)


PASSWORD_LINK_REFUSAL = (
    "This password link is not valid: it was used already, has expired, or was not copied "
    "whole. Ask staff for a new one."
)


def password_link_use(*, user: User, token: str, password: str) -> User:
    """Set ``user``'s password through a link from :func:`password_link_make`."""
    if not default_token_generator.check_token(user, token):
        raise Conflict(PASSWORD_LINK_REFUSAL)
    try:
        validate_password(password, user)
    except ValidationError as exc:
        raise ValidationFailed(f"password: {' '.join(exc.messages)}") from None
    with transaction.atomic():
        user.set_password(password)
        user.save(update_fields=["password"])
        audit_record(actor=user, action=AuditAction.RESET_LINK_USED, target=user.get_username())
    return user
