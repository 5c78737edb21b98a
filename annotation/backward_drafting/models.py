"""Model-in-the-loop backward drafting (Agentic-MME §2.3): an annotator asks a model to
describe a raw image, writes down the detail it missed, crops or transforms the image to expose
that detail, asks the same model about the derived image, marks each answer against the ground
truth, and then drafts the item's question.

The model calls themselves are ``benchmark.ModelCall`` rows (prompt, images sent, model, answer,
latency, tokens); a session finds its own by their purpose, ``drafting:<session id>:<step>``,
which a retried job keeps. What people write is kept as rows that are never overwritten: every
crop with the ground truth it was asked about, every mark, every drafted question.

Imported by ``annotation.models`` so that Django registers these models."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from benchmark.fields import JSONField
from benchmark.models import Item, ModelCall


class DraftingStep(models.TextChoices):
    DESCRIBE = "describe", "Describe the raw image"
    CROP = "crop", "Ask about the derived image"


class DraftingVerdict(models.TextChoices):
    CORRECT = "correct", "Correct against the ground truth"
    HALLUCINATION = "hallucination", "Confident hallucination"
    UNSURE = "unsure", "Hedged or says it cannot tell"


class DraftingSession(models.Model):
    """One annotator's drafting session on an item: a raw image and one model. ``model`` and
    ``endpoint`` are fixed by the first question, so every answer of the session comes from the
    same model."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="drafting_sessions")
    source_sha256 = models.CharField(max_length=64)
    model = models.CharField(max_length=200)
    endpoint = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="drafting_sessions",
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["item", "-created_at", "-id"]
        indexes = [models.Index(fields=["item", "-created_at"])]

    def __str__(self) -> str:
        return f"drafting session {self.pk} on item {self.item_id}"

    def purpose(self, step: str) -> str:
        """The purpose of this session's model calls for ``step`` (at most 50 characters)."""
        return f"drafting:{self.pk}:{step}"

    @property
    def purposes(self) -> list[str]:
        return [self.purpose(step) for step in DraftingStep.values]


class DraftingCrop(models.Model):
    """One "ask about the derived image": the image made from the session's raw image with its
    recipe, and the detail (ground truth) the annotator was after at that moment."""

    session = models.ForeignKey(DraftingSession, on_delete=models.CASCADE, related_name="crops")
    number = models.PositiveIntegerField()
    image_sha256 = models.CharField(max_length=64)
    recipe = JSONField(default=dict)
    box_px = JSONField(default=list, blank=True)
    ground_truth = models.TextField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["session", "number"]
        constraints = [
            models.UniqueConstraint(fields=["session", "number"], name="draftingcrop_unique"),
            models.CheckConstraint(condition=~Q(ground_truth=""), name="draftingcrop_has_truth"),
        ]

    def __str__(self) -> str:
        return f"crop {self.number} of session {self.session_id}"


class DraftingMark(models.Model):
    """What a person decided about one model answer: does the model perceive the detail, and is
    its answer correct or a confident hallucination against the ground truth. A new mark on the
    same answer is a new row; the latest one counts."""

    session = models.ForeignKey(DraftingSession, on_delete=models.CASCADE, related_name="marks")
    call = models.ForeignKey(ModelCall, on_delete=models.CASCADE, related_name="drafting_marks")
    perceives = models.BooleanField()
    verdict = models.CharField(max_length=20, choices=DraftingVerdict.choices)
    note = models.TextField(blank=True)
    marked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    marked_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["session", "call", "marked_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(verdict__in=DraftingVerdict.values), name="draftingmark_verdict_known"
            ),
        ]
        indexes = [models.Index(fields=["session", "call", "marked_at"])]

    def __str__(self) -> str:
        return f"mark on call {self.call_id}: {self.verdict}"


class DraftingDraft(models.Model):
    """A drafted question and answer saved to the item, with what the item held before (so an
    imported or earlier query is never lost) and the V checkpoint it added, if any."""

    session = models.ForeignKey(DraftingSession, on_delete=models.CASCADE, related_name="drafts")
    query = models.TextField()
    expected_answer = models.TextField()
    match_type = models.CharField(max_length=30, blank=True)
    previous_query = models.TextField(blank=True)
    previous_answer = models.TextField(blank=True)
    checkpoint_id = models.CharField(max_length=50, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["session", "created_at", "id"]
        constraints = [
            models.CheckConstraint(condition=~Q(query=""), name="draftingdraft_has_query"),
        ]

    def __str__(self) -> str:
        return f"draft {self.pk} of session {self.session_id}"
