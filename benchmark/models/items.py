"""Every saved version of an item's editable fields.

A version holds a snapshot of the item's ``EDITABLE_FIELDS`` as they stood after the save.
Version 1 is written lazily by the first save: the state before it (imported, created in the
app or by the API), without an author, so imports and the API need not write versions.
Imported by ``benchmark.models`` so that Django registers it.
"""

from __future__ import annotations

from typing import Any

from django.db import models

from benchmark.fields import JSONField
from benchmark.versions import VersionRow, version_constraints


class ItemVersion(VersionRow):
    item = models.ForeignKey("benchmark.Item", on_delete=models.CASCADE, related_name="versions")
    fields = JSONField(default=dict, help_text="The editable fields as saved.")

    class Meta:
        ordering = ["item", "number"]
        constraints = version_constraints("itemversion", "item")

    def __str__(self) -> str:
        return f"item {self.item_id} v{self.number}"

    @property
    def snapshot(self) -> dict[str, Any]:
        return self.fields if isinstance(self.fields, dict) else {}
