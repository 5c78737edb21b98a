"""Every saved version of an item's reference trajectory (Agentic-MME).

A version holds the whole task document as it stood after the save: the same document the
editor edits and the export writes. The document is kept as JSON *text* rather than a JSON
column so that its key order survives PostgreSQL's ``jsonb`` (a revert then restores the task
file byte for byte); ``fingerprint`` is its canonical SHA-256, which tells whether the item
still is that version or was changed outside the editor since (drafting, joint review, an
import).

Version 1 is written lazily by the first save: the state before it (imported or edited
elsewhere), without an author. Imported by ``annotation.models`` so that Django registers it.
"""

from __future__ import annotations

from typing import Any

import orjson
from django.db import models

from benchmark.models import Item
from benchmark.versions import VersionRow, version_constraints


class TrajectoryVersion(VersionRow):
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="trajectory_versions")
    document = models.TextField(help_text="The task document as saved (JSON text).")
    fingerprint = models.CharField(max_length=64)

    class Meta:
        ordering = ["item", "number"]
        constraints = version_constraints("trajectoryversion", "item")

    def __str__(self) -> str:
        return f"trajectory of {self.item_id} v{self.number}"

    @property
    def data(self) -> dict[str, Any]:
        """The document as a dict (parsed once per instance)."""
        cached = self.__dict__.get("_data")
        if cached is None:
            value = orjson.loads(self.document) if self.document else {}
            cached = value if isinstance(value, dict) else {}
            self.__dict__["_data"] = cached
        return cached

    @property
    def recorded(self) -> bool:
        """False for the stand-in of a state no save has recorded yet."""
        return self.pk is not None


def document_text(document: dict[str, Any]) -> str:
    return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n"
