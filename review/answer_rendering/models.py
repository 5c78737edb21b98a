"""Rendered answers (issue 11) and the per-tool-call cache.

A ``ToolCallCache`` row is one executed tool call, keyed by ``benchmark.rendering.Task.key``
(the canonical payload, the provider and, for an edit, the input image's sha256): the image it
produced, or its failure (a failure that may pass another time, such as a provider's network
error, is never cached). Rendering an answer again answers its calls from here.

A ``RenderedAnswer`` is one rendering of a Response: the text it rendered, what became of each
tool call (``calls``: one ``benchmark.rendering.CallResult`` dict per tag, in order: tool,
status, reason, message, image, provider...), how many were rendered, placeholders or failed.
Every rendering that differs from the one before is kept; the newest is what pages show, and
its images are the Response's ``extra["rendered_images"]``.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from benchmark.fields import JSONField
from benchmark.models import Image, Job, Response

__all__ = ["CallStatus", "RenderedAnswer", "ToolCallCache"]


class CallStatus(models.TextChoices):
    RENDERED = "rendered", "Rendered"
    PLACEHOLDER = "placeholder", "Placeholder"
    FAILED = "failed", "Failed"


class ToolCallCache(models.Model):
    key = models.CharField(max_length=64, unique=True)
    tool = models.CharField(max_length=20)
    provider = models.CharField(max_length=300)
    input_sha256 = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=20, choices=CallStatus.choices)
    reason = models.CharField(max_length=20, blank=True)
    message = models.TextField(blank=True)
    image = models.ForeignKey(
        Image, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    #: What the provider said about it (a search hit's page and title, the program's output).
    detail = JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=~Q(status="rendered") | Q(image__isnull=False),
                name="toolcallcache_rendered_has_image",
            ),
            models.CheckConstraint(
                condition=Q(status__in=["rendered", "failed"]),
                name="toolcallcache_status_known",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool} via {self.provider}: {self.status}"


class RenderedAnswer(models.Model):
    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="renderings")
    #: The text rendered (the Response's text then; a later change makes the rendering stale).
    text = models.TextField(blank=True)
    syntax = models.CharField(max_length=10)
    #: sha256 of what the rendering depends on (text, item images, providers, renderer
    #: version): a job skips an answer whose newest rendering has the same signature.
    signature = models.CharField(max_length=64)
    calls = JSONField(default=list, blank=True)
    n_rendered = models.PositiveIntegerField(default=0)
    n_placeholder = models.PositiveIntegerField(default=0)
    n_failed = models.PositiveIntegerField(default=0)
    #: Why the answer was not rendered at all (too long), else empty.
    error = models.TextField(blank=True)
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["response", "-created_at", "-id"])]

    def __str__(self) -> str:
        return f"rendering #{self.pk} of response {self.response_id}"

    @property
    def n_calls(self) -> int:
        return len(self.calls or [])

    @property
    def images(self) -> list[str | None]:
        """Per tag, the sha256 of the image it produced, or None."""
        return [
            c.get("image") if c.get("status") == CallStatus.RENDERED else None
            for c in self.calls or []
        ]
