"""Tag review: every saved version of an interleaved answer, and the decisions taken on its tool calls."""

from __future__ import annotations

from django.db import models

from annotation.trajectories.models import TrajectoryVersion  # noqa: F401 - registers it
from benchmark.fields import JSONField
from benchmark.models import Response
from benchmark.versions import VersionRow, version_constraints


class ResponseVersion(VersionRow):
    """One saved state of an interleaved answer. Version 1 is the imported text (no author);
    each save adds the next number on top of ``base_number``, so nothing is overwritten."""

    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="versions")
    text = models.TextField(blank=True)

    class Meta:
        ordering = ["response", "number"]
        constraints = version_constraints("responseversion", "response")

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
