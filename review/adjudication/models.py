"""What reviewers decide: every adjudication is kept, newest last."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.judgment_tasks.models import JudgmentTask
from benchmark.fields import JSONField
from benchmark.models import Item


class Decision(models.Model):
    task = models.ForeignKey(JudgmentTask, on_delete=models.CASCADE, related_name="decisions")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="decisions")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    verdict = models.CharField(max_length=20)
    value = JSONField(null=True, blank=True)
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task", "item", "created_at"]

    def __str__(self) -> str:
        return f"{self.verdict} by {self.reviewer} on {self.item}"
