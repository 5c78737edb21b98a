"""Tag review: every saved version of an interleaved answer, and the decisions taken on its tool calls."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from annotation.trajectories.models import TrajectoryVersion  # noqa: F401 - registers it
from benchmark.fields import JSONField
from benchmark.models import Response


class ResponseVersion(models.Model):
    """One saved state of an interleaved answer. Version 1 is the imported text (no author);
    each save adds the next number on top of ``base_number``, so nothing is overwritten."""

    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    text = models.TextField(blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="response_versions",
    )
    created_at = models.DateTimeField(default=timezone.now)
    note = models.TextField(blank=True)
    base_number = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["response", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["response", "number"], name="responseversion_unique_number"
            ),
            models.CheckConstraint(condition=Q(number__gte=1), name="responseversion_number_ge_1"),
            models.CheckConstraint(
                condition=Q(base_number__isnull=True) | Q(base_number__lt=models.F("number")),
                name="responseversion_base_before_number",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.response_id} v{self.number}"


class TagDecisionKind(models.TextChoices):
    KEPT = "kept", "Kept"
    REMOVED = "removed", "Removed"
    FIXED = "fixed", "Fixed"
    MOVED = "moved", "Moved"
    INSERTED = "inserted", "Inserted"
    RETOOLED = "retooled", "Changed tool"


class TagDecision(models.Model):
    """What the author of a version decided about one tool call. ``tag`` is the call's 0-based
    index in the working text at the moment of the decision; ``detail`` holds the payload
    before/after, the move direction or the free-text reason."""

    version = models.ForeignKey(ResponseVersion, on_delete=models.CASCADE, related_name="decisions")
    tag = models.PositiveIntegerField()
    tool = models.CharField(max_length=100, blank=True)
    decision = models.CharField(max_length=20, choices=TagDecisionKind.choices)
    reason = models.CharField(max_length=50, blank=True)
    detail = JSONField(default=dict, blank=True)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["version", "position", "id"]
        indexes = [models.Index(fields=["decision", "tool"])]

    def __str__(self) -> str:
        return f"{self.decision} tag {self.tag} ({self.tool})"
