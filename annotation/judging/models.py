"""Judgment tasks, assignments with leases, and blind judgments."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.judging.consensus import Rule, Verdict
from annotation.trajectories.models import TrajectoryVersion  # noqa: F401 - registers it
from benchmark.fields import JSONField
from benchmark.models import Item, Project


class Scheme(models.TextChoices):
    BINARY = "binary", "Binary (1 / 0)"
    NOMINAL = "nominal", "Nominal labels with reason codes"
    ORDINAL = "ordinal", "Ordinal scale"
    NUMBER = "number", "Number"
    TEXT = "text", "Free answer (compared by normalized match)"


class JudgmentTask(models.Model):
    """What is asked about each item of a project, and how k answers become an outcome."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="judgment_tasks")
    name = models.CharField(max_length=200)
    question = models.TextField()
    scheme = models.CharField(max_length=20, choices=Scheme.choices)
    # Nominal: [{"value", "label", "accept": bool}]; ordinal: [{"value": 0, "label": ...}, ...]
    labels = JSONField(default=list, blank=True)
    # Fields an annotator may relabel while judging, e.g. ["category", "intent"].
    relabel_fields = JSONField(default=list, blank=True)
    overlap = models.PositiveSmallIntegerField(default=3)
    author_may_judge = models.BooleanField(default=False)
    consensus = models.CharField(
        max_length=20, choices=[(r.value, r.value.replace("_", " ")) for r in Rule]
    )
    required_value = JSONField(null=True, blank=True)
    lease_minutes = models.PositiveIntegerField(default=30)
    updates_item_status = models.BooleanField(
        default=True,
        help_text="Outcomes set the item's status (verified / in review / discarded); the queue "
        "then offers draft items only.",
    )
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="judgmenttask_unique_name"),
            models.CheckConstraint(condition=Q(overlap__gte=1), name="judgmenttask_overlap_ge_1"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def label_values(self) -> list:
        if self.scheme == Scheme.BINARY:
            return [1, 0]
        return [entry["value"] for entry in self.labels]

    def accepts(self, value: object) -> bool:
        if self.scheme == Scheme.BINARY:
            return value == 1
        for entry in self.labels:
            if entry["value"] == value:
                return bool(entry.get("accept", False))
        return False


class AssignmentStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    SUBMITTED = "submitted", "Submitted"


class Assignment(models.Model):
    """An item leased to one annotator for one task. A lease that expires unsubmitted returns
    the item to the pool (it stops counting towards the overlap)."""

    task = models.ForeignKey(JudgmentTask, on_delete=models.CASCADE, related_name="assignments")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assignments")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments"
    )
    status = models.CharField(
        max_length=20, choices=AssignmentStatus.choices, default=AssignmentStatus.ACTIVE
    )
    leased_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["task", "item", "user"], name="assignment_unique_per_user"
            ),
        ]
        indexes = [
            models.Index(fields=["task", "item", "status", "expires_at"]),
            models.Index(fields=["task", "user", "status", "expires_at"]),
        ]


class Judgment(models.Model):
    task = models.ForeignKey(JudgmentTask, on_delete=models.CASCADE, related_name="judgments")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="judgments")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="judgments"
    )
    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="judgment")
    value = JSONField()
    reason = models.CharField(max_length=100, blank=True)
    comment = models.TextField(blank=True)
    relabel = JSONField(default=dict, blank=True)
    seconds = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task", "item", "created_at"]
        constraints = [
            models.UniqueConstraint(fields=["task", "item", "user"], name="judgment_unique"),
        ]


class Outcome(models.Model):
    """Where an item stands for a task: pending, accepted, rejected, disputed, or decided by a
    reviewer (``decided_by`` set), or discarded with a reason."""

    VERDICTS = [(v.value, v.value) for v in Verdict] + [("discarded", "discarded")]

    task = models.ForeignKey(JudgmentTask, on_delete=models.CASCADE, related_name="outcomes")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="outcomes")
    verdict = models.CharField(max_length=20, choices=VERDICTS, default=Verdict.PENDING)
    value = JSONField(null=True, blank=True)
    # Fields changed by the annotators' relabels: {"category": {"from": ..., "to": ...}}
    relabel = JSONField(default=dict, blank=True)
    reason = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    # Blind verification (solve tasks): the item's answer as it stood when verification began,
    # in the scorer's golden_answer shape ({"value", "match_type", "tolerance",
    # "accepted_answers"}); the verifiers' answers are compared with it, not with the item.
    answer_snapshot = JSONField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "item"], name="outcome_unique"),
        ]
        indexes = [models.Index(fields=["task", "verdict"])]


# --------------------------------------------------------------------------- tag review


# --------------------------------------------------------------------------- verification audit
