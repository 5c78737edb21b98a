"""API tokens and their counted uses. Registered with Django by ``benchmark.models``."""

from __future__ import annotations

import hashlib

from django.conf import settings as django_settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

__all__ = ["ApiToken", "ApiTokenUse"]


class ApiToken(models.Model):
    """A named key that authenticates API requests as ``user``. The key is shown once when it
    is made; kept are its first characters (``prefix``, unique, to find it and tell it apart)
    and the sha256 of the whole key."""

    user = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=11, unique=True)
    key_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(
        null=True, blank=True, help_text="Updated at most once a minute per address."
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "name"],
                condition=Q(revoked_at__isnull=True),
                name="api_token_name_unique_unless_revoked",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name})"

    @staticmethod
    def hash_key(key: str) -> str:
        return hashlib.sha256(key.encode()).hexdigest()

    @property
    def state(self) -> str:
        """``active``, ``revoked`` or ``expired``."""
        if self.revoked_at:
            return "revoked"
        if self.expires_at and self.expires_at <= timezone.now():
            return "expired"
        return "active"


class ApiTokenUse(models.Model):
    """The requests a token authenticated, counted per minute and per client address: every
    use is counted, at the cost of one UPDATE per request (an INSERT on a minute's first)."""

    token = models.ForeignKey(ApiToken, on_delete=models.CASCADE, related_name="uses")
    minute = models.DateTimeField()
    address = models.CharField(max_length=45, blank=True)
    requests = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["-minute", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["token", "minute", "address"], name="api_token_use_per_minute_address"
            ),
        ]

    def __str__(self) -> str:
        return (
            f"{self.token_id} at {self.minute:%Y-%m-%d %H:%M} from {self.address}: {self.requests}"
        )
