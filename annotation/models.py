"""Judgment tasks, assignments with leases, and blind judgments."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from annotation.consensus import Rule, Verdict
from annotation.drafting_models import (  # noqa: F401 - registers the drafting models
    DraftingCrop,
    DraftingDraft,
    DraftingMark,
    DraftingSession,
)
from annotation.trajectory_models import TrajectoryVersion  # noqa: F401 - registers it
from benchmark.fields import JSONField
from benchmark.models import Item, Project, Response


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
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "item"], name="outcome_unique"),
        ]
        indexes = [models.Index(fields=["task", "verdict"])]


# --------------------------------------------------------------------------- tag review


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


# --------------------------------------------------------------------------- verification audit


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
