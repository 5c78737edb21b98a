"""Every saved state of an item's plan (m&m's), one row per version.

A version holds the plan's steps as JSON *text* (key order kept: the code form lists arguments
in that order, and PostgreSQL's ``jsonb`` would sort them) and the code form generated from
them. Version 1 is written lazily by the first save: the state before it (as imported, or as
written elsewhere), without an author, as the trajectory and tag-review histories do.

Versions belong to the item and the plan's ``key`` rather than to the Plan row alone, so that
removing an alternative keeps the history of what people wrote in it (``plan`` becomes null).
Imported by ``annotation.models`` so that Django registers it.
"""

from __future__ import annotations

from typing import Any

import orjson
from django.db import models

from benchmark.models import Item, Plan
from benchmark.versions import VersionRow, version_constraints

__all__ = ["PlanVersion", "steps_text"]


class PlanVersion(VersionRow):
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="plan_versions")
    plan = models.ForeignKey(
        Plan, null=True, blank=True, on_delete=models.SET_NULL, related_name="versions"
    )
    key = models.CharField(max_length=255, help_text="The plan's key on the item.")
    steps = models.TextField(help_text="The steps as saved (JSON text, key order kept).")
    code = models.TextField(blank=True, help_text="The code form generated from the steps.")

    class Meta:
        ordering = ["item", "key", "number"]
        constraints = version_constraints("planversion", "item", "key")

    def __str__(self) -> str:
        return f"plan {self.key} of {self.item_id} v{self.number}"

    @property
    def step_list(self) -> list[Any]:
        """The steps as a list (parsed once per instance)."""
        cached = self.__dict__.get("_steps")
        if cached is None:
            value = orjson.loads(self.steps) if self.steps else []
            cached = value if isinstance(value, list) else []
            self.__dict__["_steps"] = cached
        return cached

    @property
    def recorded(self) -> bool:
        """False for the stand-in of a state no save has recorded yet."""
        return self.pk is not None


def steps_text(steps: Any) -> str:
    """The steps as stored in a version (compact JSON, key order kept)."""
    return orjson.dumps(steps).decode()
