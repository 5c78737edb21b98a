"""Every saved version of an item's editable fields.

A version holds a snapshot of the item's ``EDITABLE_FIELDS`` as they stood after the save.
Version 1 is written lazily by the first save: the state before it (imported, created in the
app or by the API), without an author, so imports and the API need not write versions.
Imported by ``benchmark.models`` so that Django registers it.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from benchmark.fields import JSONField


class ItemVersion(models.Model):
    item = models.ForeignKey("benchmark.Item", on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    fields = JSONField(default=dict, help_text="The editable fields as saved.")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="item_versions",
    )
    created_at = models.DateTimeField(default=timezone.now)
    note = models.TextField(blank=True)
    base_number = models.PositiveIntegerField(
        null=True, blank=True, help_text="The version the editor was opened on."
    )

    class Meta:
        ordering = ["item", "number"]
        constraints = [
            models.UniqueConstraint(fields=["item", "number"], name="itemversion_unique_number"),
            models.CheckConstraint(condition=Q(number__gte=1), name="itemversion_number_ge_1"),
            models.CheckConstraint(
                condition=Q(base_number__isnull=True) | Q(base_number__lt=models.F("number")),
                name="itemversion_base_before_number",
            ),
        ]

    def __str__(self) -> str:
        return f"item {self.item_id} v{self.number}"

    @property
    def snapshot(self) -> dict[str, Any]:
        return self.fields if isinstance(self.fields, dict) else {}
