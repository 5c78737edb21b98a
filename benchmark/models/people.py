"""Invitation links and the audit trail. Registered with Django by ``benchmark.models``."""

from __future__ import annotations

import hashlib

from django.conf import settings as django_settings
from django.db import models
from django.utils import timezone

from benchmark.fields import JSONField
from benchmark.models.core import Role

__all__ = ["AuditAction", "AuditEvent", "Invitation"]


class Invitation(models.Model):
    """A single-use, expiring link that lets whoever opens it join ``project`` as ``role``.
    Only the sha256 of the link's token is stored."""

    project = models.ForeignKey(
        "benchmark.Project", on_delete=models.CASCADE, related_name="invitations"
    )
    role = models.CharField(max_length=20, choices=Role.choices)
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    used_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"invitation to {self.project_id} as {self.role}"

    @staticmethod
    def hash_token(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    @property
    def state(self) -> str:
        """``open``, ``used``, ``revoked`` or ``expired``."""
        if self.used_at:
            return "used"
        if self.revoked_at:
            return "revoked"
        if self.expires_at <= timezone.now():
            return "expired"
        return "open"


class AuditAction(models.TextChoices):
    PROJECT_CREATED = "project_created", "Project created"
    PROJECT_UPDATED = "project_updated", "Project description or guidelines changed"
    MODEL_SETTINGS_CHANGED = "model_settings_changed", "Model settings changed"
    MEMBER_ADDED = "member_added", "Member added"
    MEMBER_ROLE_CHANGED = "member_role_changed", "Role changed"
    MEMBER_REMOVED = "member_removed", "Member removed"
    INVITATION_CREATED = "invitation_created", "Invitation created"
    INVITATION_USED = "invitation_used", "Invitation used"
    INVITATION_REVOKED = "invitation_revoked", "Invitation revoked"
    USER_CREATED = "user_created", "User created"
    USER_DEACTIVATED = "user_deactivated", "User deactivated"
    USER_REACTIVATED = "user_reactivated", "User reactivated"
    RESET_LINK_MADE = "reset_link_made", "Password link made"
    RESET_LINK_USED = "reset_link_used", "Password set by link"
    API_TOKEN_CREATED = "api_token_created", "API token made"
    API_TOKEN_REVOKED = "api_token_revoked", "API token revoked"


class AuditEvent(models.Model):
    """One recorded change to projects, members, invitations or users: who, when, what."""

    actor = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    action = models.CharField(max_length=40, choices=AuditAction.choices)
    project = models.ForeignKey(
        "benchmark.Project",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="audit_events",
    )
    target = models.CharField(max_length=200, blank=True, help_text="What was changed, by name.")
    details = JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["project", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.get_action_display()}: {self.target}"
