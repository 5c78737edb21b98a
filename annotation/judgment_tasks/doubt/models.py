"""Routing by doubt (issue 26): each item's (or unit's) doubt per task, which the queue of a
task that serves items by doubt orders by, and each annotator's reliability on a task, which
the reliability gate compares with the task's threshold. Both are caches, rebuilt by
``annotation.judgment_tasks.doubt.services`` from the judgments and the outside signals."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from benchmark.fields import JSONField
from benchmark.models import Item

__all__ = ["AnnotatorReliability", "ItemDoubt"]


class ItemDoubt(models.Model):
    """How much one item (or unit) of a task still needs a reliable label, 0..1
    (``benchmark.metrics.doubt``), and the signals it was computed from (``signals``: the
    judgments, the leading label and its share, the aggregated posterior, a model judge's
    value, the share of models under test that got the item wrong). A task that serves items by
    doubt keeps a row for every item (or unit) it may serve, the task's prior doubt where
    nothing is known yet (``annotation.judgment_tasks.doubt.services.doubt_rows_fill``)."""

    task = models.ForeignKey(
        "annotation.JudgmentTask", on_delete=models.CASCADE, related_name="doubts"
    )
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="doubts")
    #: The unit key for tasks with units; "" for item-level tasks.
    unit = models.CharField(max_length=100, default="", blank=True)
    score = models.FloatField()
    #: The item's (or unit's) queue position, copied so that the queue walks one index of this
    #: table (score, then position) and stops at the first free row.
    position = models.PositiveIntegerField(default=0)
    judgments = models.PositiveIntegerField(default=0)
    signals = JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "item", "unit"], name="itemdoubt_unique"),
            models.CheckConstraint(
                condition=models.Q(score__gte=0) & models.Q(score__lte=1),
                name="itemdoubt_score_0_1",
            ),
        ]
        indexes = [
            # The queue's two orders: most doubtful first, and least doubtful first for an
            # annotator below the reliability threshold; ties by position either way.
            models.Index(
                fields=["task", "-score", "position", "item", "unit"], name="itemdoubt_desc_idx"
            ),
            models.Index(
                fields=["task", "score", "position", "item", "unit"], name="itemdoubt_asc_idx"
            ),
        ]


class AnnotatorReliability(models.Model):
    """One annotator's reliability on a task, 0..1, as ``annotator_reliability`` defines it
    (gold accuracy where there is gold, else the Dawid-Skene estimate from the task's
    judgments), cached when the task's doubt is recomputed; ``source`` says which."""

    task = models.ForeignKey(
        "annotation.JudgmentTask", on_delete=models.CASCADE, related_name="reliabilities"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="task_reliabilities"
    )
    score = models.FloatField()
    source = models.CharField(max_length=40)
    judgments = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "user"], name="annotatorreliability_unique"),
        ]
