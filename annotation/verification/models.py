"""Blind verification: the per-step audit of a reference trajectory by its verifiers, and the
rounds of verification that a change of the item's answer closed."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from annotation.judgment_tasks.models import JudgmentTask
from benchmark.fields import JSONField
from benchmark.models import Item


class TrajectoryAudit(models.Model):
    """One verifier's step-by-step audit of an item's reference trajectory (Agentic-MME §2.4:
    once they have answered blind, verifiers check every step's intent, tool, artifact and
    URLs). ``steps`` is ``[{"step", "axis", "description", "checks": {name: bool}, "comment"}]``
    with the step's description as it read when audited. Each save is a new numbered version;
    the highest number is the verifier's current audit."""

    task = models.ForeignKey(JudgmentTask, on_delete=models.CASCADE, related_name="audits")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="trajectory_audits")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="trajectory_audits"
    )
    number = models.PositiveIntegerField(default=1)
    steps = JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["task", "item", "user", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["task", "item", "user", "number"], name="trajectoryaudit_unique_version"
            ),
            models.CheckConstraint(condition=Q(number__gte=1), name="trajectoryaudit_number_ge_1"),
        ]
        indexes = [models.Index(fields=["task", "item", "number"])]

    def __str__(self) -> str:
        return f"audit v{self.number} of {self.item_id} by {self.user_id}"


class VerificationRound(models.Model):
    """A round of blind verification closed because the item's answer (value, variants or
    match rule) changed after it began: the answer the round was decided against, the verdict
    it had reached and every verifier's answer, as they were. The judgments themselves are
    removed from the live tables so that the verifiers answer again (a verifier has one
    judgment per item and task); this row keeps them, so nothing is lost."""

    task = models.ForeignKey(
        JudgmentTask, on_delete=models.CASCADE, related_name="verification_rounds"
    )
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="verification_rounds")
    answer = JSONField(null=True, blank=True)
    verdict = models.CharField(max_length=20)
    # [{"user": id, "username", "value", "reason", "comment", "seconds", "created_at"}]
    judgments = JSONField(default=list, blank=True)
    reason = models.TextField(blank=True)
    closed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    closed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["task", "item", "closed_at", "id"]
        indexes = [models.Index(fields=["task", "item"])]

    def __str__(self) -> str:
        return f"verification round of {self.item_id} closed {self.closed_at:%Y-%m-%d}"
