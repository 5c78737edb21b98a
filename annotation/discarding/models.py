"""A proposal to discard an item, made by someone who may not discard (an annotator), kept
with who, when and why, and with the reviewer's decision once taken."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from benchmark.models import Item, Response

__all__ = ["DiscardProposal", "ProposalStatus"]


class ProposalStatus(models.TextChoices):
    OPEN = "open", "Open"
    ACCEPTED = "accepted", "Accepted"
    REJECTED = "rejected", "Rejected"


class DiscardProposal(models.Model):
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="discard_proposals")
    response = models.ForeignKey(
        Response,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="discard_proposals",
        help_text="The answer being reviewed when the discard was proposed.",
    )
    proposed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="discard_proposals"
    )
    reason = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    status = models.CharField(
        max_length=10, choices=ProposalStatus.choices, default=ProposalStatus.OPEN
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="discard_proposals_decided",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_note = models.TextField(blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["item", "proposed_by"],
                condition=Q(status="open"),
                name="discardproposal_one_open_per_person",
            ),
            models.CheckConstraint(condition=~Q(reason=""), name="discardproposal_has_reason"),
            models.CheckConstraint(
                condition=Q(status="open", decided_by__isnull=True, decided_at__isnull=True)
                | (~Q(status="open") & Q(decided_by__isnull=False, decided_at__isnull=False)),
                name="discardproposal_decided_when_closed",
            ),
        ]
        indexes = [models.Index(fields=["status", "item"])]

    def __str__(self) -> str:
        return f"discard {self.item_id}? ({self.status})"
