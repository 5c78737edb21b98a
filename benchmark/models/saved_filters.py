"""A project's saved item-list filters: a name and the item list's query string
(``status=verified&category=chart``), shared with the project's members. Imported by
``benchmark.models`` so that Django registers it."""

from __future__ import annotations

from django.conf import settings as django_settings
from django.db import models

NAME_MAX = 100
QUERY_MAX = 1000


class SavedFilter(models.Model):
    project = models.ForeignKey(
        "benchmark.Project", on_delete=models.CASCADE, related_name="saved_filters"
    )
    name = models.CharField(max_length=NAME_MAX)
    query = models.CharField(
        max_length=QUERY_MAX,
        help_text="The item list's filters as its query string, without the page number.",
    )
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="saved_filters",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "name"], name="savedfilter_name_unique_in_project"
            ),
            models.CheckConstraint(condition=~models.Q(name=""), name="savedfilter_name_not_empty"),
            models.CheckConstraint(
                condition=~models.Q(query=""), name="savedfilter_query_not_empty"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.query})"
