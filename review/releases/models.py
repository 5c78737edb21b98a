"""A release: a named, numbered, frozen snapshot of a project's chosen items written to a
folder with checksums. Rows are written once by ``release_create`` and never edited."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from benchmark.fields import JSONField
from benchmark.models import Project


class Release(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="releases")
    name = models.CharField(max_length=200)
    #: vN: 1, 2, ... per project, in the order the releases were made.
    number = models.PositiveIntegerField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    #: The filter used to choose the items, e.g. {"status": "verified"}.
    filter = JSONField(default=dict, blank=True)
    item_count = models.PositiveIntegerField(default=0)
    #: manifest.json as written (files with size and sha256, counts).
    manifest = JSONField(default=dict, blank=True)
    #: Whether parquet/ (the items as Parquet in the Hugging Face datasets layout) was written.
    parquet = models.BooleanField(default=False)
    #: The folder the release was written to.
    path = models.CharField(max_length=500)
    #: [[item id, content fingerprint], ...]: tells later edits apart from the released state.
    fingerprints = JSONField(default=list, blank=True)
    #: Per item, a short fingerprint of each top-level field of its record, so a comparison
    #: names the fields that changed: {"fields": [name, ...], "items": {"<item id>": "..."}}
    #: where each item's string is the fields' fingerprints (``FIELD_HASH_LEN`` hex digits
    #: each) in the order of "fields". Empty for releases made before it was recorded.
    field_fingerprints = JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["project", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="release_unique_name"),
            models.UniqueConstraint(fields=["project", "number"], name="release_unique_number"),
        ]

    def __str__(self) -> str:
        return f"{self.project} v{self.number} {self.name}"

    @property
    def label(self) -> str:
        return f"v{self.number}"
