"""Model drafting for every kind of benchmark: a model drafts, people keep, edit or reject.

A ``ModelDraft`` is one drafting request (a batch): which kind of draft (candidate queries of
a category and intent, a ground-truth answer with tool tags, the ten rubric criteria, a plan),
for which project and item, the model-call job that asked the model and the ``ModelCall`` row
that keeps the prompt, the answer and the tokens. The answer is parsed into
``DraftCandidate`` rows, each with what the model proposed and what people decided about it
(kept as is, edited, rejected, or still pending), by whom and when, and what it became (the
new item, the response version, the plan).

Imported by ``annotation.models`` so that Django registers these models."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from benchmark.fields import JSONField
from benchmark.models import Item, Job, ModelCall, Project


class DraftKind(models.TextChoices):
    QUERIES = "queries", "Queries"
    ANSWER = "answer", "Answer"
    RUBRIC = "rubric", "Rubric"
    PLAN = "plan", "Plan"


class DraftStatus(models.TextChoices):
    PENDING = "pending", "Waiting for the model"
    READY = "ready", "Drafted"
    FAILED = "failed", "Failed"


class CandidateStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    KEPT = "kept", "Kept"
    EDITED = "edited", "Edited"
    REJECTED = "rejected", "Rejected"


class ModelDraft(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="model_drafts")
    item = models.ForeignKey(
        Item, null=True, blank=True, on_delete=models.CASCADE, related_name="model_drafts"
    )
    kind = models.CharField(max_length=20, choices=DraftKind.choices)
    #: What was asked: category, intent and n for queries; nothing more for the others.
    params = JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=20, choices=DraftStatus.choices, default=DraftStatus.PENDING
    )
    error = models.TextField(blank=True)
    model = models.CharField(max_length=200, blank=True)
    job = models.ForeignKey(
        Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="model_drafts"
    )
    call = models.ForeignKey(
        ModelCall, null=True, blank=True, on_delete=models.SET_NULL, related_name="model_drafts"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="model_drafts",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["project", "-created_at"])]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=DraftKind.values), name="modeldraft_kind_known"
            ),
            models.CheckConstraint(
                condition=Q(kind="queries") | Q(item__isnull=False),
                name="modeldraft_item_unless_queries",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} draft {self.pk}"

    @property
    def purpose(self) -> str:
        """The purpose of its model call (at most 50 characters)."""
        return f"model-draft:{self.kind}:{self.pk}"


class DraftCandidate(models.Model):
    """One proposal of the model and what people decided about it. ``content`` is what the
    model proposed (a query's text, the answer's text, ten criteria, a plan's steps);
    ``final`` what was saved when someone kept or edited it."""

    draft = models.ForeignKey(ModelDraft, on_delete=models.CASCADE, related_name="candidates")
    position = models.PositiveIntegerField()
    content = JSONField(default=None, null=True)
    final = JSONField(default=None, null=True, blank=True)
    status = models.CharField(
        max_length=20, choices=CandidateStatus.choices, default=CandidateStatus.PENDING
    )
    #: What the candidate became: the new item (queries) or the drafted item.
    item = models.ForeignKey(
        Item, null=True, blank=True, on_delete=models.SET_NULL, related_name="draft_candidates"
    )
    #: The response version or plan it was saved as, when there is one.
    saved_as = JSONField(default=dict, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["draft", "position"]
        constraints = [
            models.UniqueConstraint(fields=["draft", "position"], name="draftcandidate_unique"),
            models.CheckConstraint(
                condition=Q(status__in=CandidateStatus.values),
                name="draftcandidate_status_known",
            ),
            models.CheckConstraint(
                condition=Q(status="pending") | Q(decided_at__isnull=False),
                name="draftcandidate_decided_when",
            ),
        ]

    def __str__(self) -> str:
        return f"candidate {self.position} of draft {self.draft_id}"
