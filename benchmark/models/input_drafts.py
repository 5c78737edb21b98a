"""Unsaved input kept for its author: a form's fields as typed, before the real save. Registered
with Django by ``benchmark.models``; written and read only through ``benchmark.input_drafts``.

Named ``InputDraft``, not ``Draft``: the trajectory editor's working document
(``annotation.trajectories.document.Draft``) and model drafting already use that word."""

from __future__ import annotations

from django.conf import settings as django_settings
from django.db import models

__all__ = ["InputDraft"]


class InputDraft(models.Model):
    """One user's unsaved input on one form of one object. ``key`` names the form and the object
    (``tag-review:response:42``); ``version`` is the object's version the input was typed on
    (empty for a new object); ``payload`` the form's fields as ``[[name, value], ...]``."""

    user = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="input_drafts"
    )
    key = models.CharField(max_length=200)
    version = models.CharField(max_length=64, blank=True, default="")
    payload = models.JSONField(default=list)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="input_draft_one_per_user_key")
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.user_id})"
