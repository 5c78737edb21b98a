"""The item's one timeline: every version of everything edited on it, newest first.

The item's own fields are versioned here (``ItemVersion``); its plans, answers and reference
trajectory are versioned by the apps built on ``benchmark`` (``annotation``), which
``benchmark`` may not import. So those apps register *history sources*
(:func:`history_source_register`, from their ``AppConfig.ready()``), as they register state
rules and project page hooks. A source is ``source(user=, project=, item=, may_edit=)`` (or its
dotted path) answering :class:`HistoryEntry` rows, with a constant number of queries whatever
the number of versions. The page has looked the item up for the user already (another
project's item is 404, an item whose answer is hidden from the user 403), so a source sees
only what the user may see; it keeps its own finer rules (a response's model hidden from a
rater stays hidden).

Each entry links to the version's own page and offers the source's own revert endpoint (a
form posting ``revert_fields``), never a second revert implementation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.urls import reverse
from django.utils.module_loading import import_string

from benchmark.items.history_sources import (  # noqa: F401 - the registry, named here too
    _SOURCES,
    HistorySource,
    history_source_register,
)
from benchmark.items.selectors import FieldChange, item_versions
from benchmark.models import Item, Project
from benchmark.typing import AnyUser

__all__ = ["HistoryEntry", "history_source_register", "item_timeline"]


@dataclass
class HistoryEntry:
    source: str
    """What the version is of, as people name it: "Fields", "Plan", "Answer · Ground truth"."""
    number: int
    author: str
    created_at: datetime
    summary: str
    """What changed, in a few words."""
    note: str = ""
    url: str = ""
    """The version's own page."""
    revert_url: str = ""
    """The source's revert endpoint; empty when no revert is offered (the current version,
    a state no save recorded, a user who may not edit)."""
    revert_fields: dict[str, Any] = field(default_factory=dict)
    """Hidden fields the revert endpoint reads (the version the page shows as newest, so a
    revert from an outdated page answers 409; a plan's key)."""
    current: bool = False
    changes: list[FieldChange] = field(default_factory=list)
    """Field versions: each field changed, before and after."""
    thread: str = ""
    """What is versioned, unique on the item ("fields", "plan-alt1", "response-12"): two
    answers may show the same label (a hidden model's), never the same thread."""

    @property
    def anchor(self) -> str:
        name = self.thread or self.source
        slug = "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")
        return f"{slug}-v{self.number}"


def field_entries(
    *, user: AnyUser, project: Project, item: Item, may_edit: bool
) -> list[HistoryEntry]:
    """The item's own fields (query, documents, category, intent, rubric, constraint, ...)."""
    rows = item_versions(user=user, item=item)
    latest = rows[0].number
    history = reverse("benchmark:item_history", args=[project.pk, item.pk])
    out = []
    for row in rows:
        entry = HistoryEntry(
            source="Fields",
            number=row.number,
            author=row.author,
            created_at=row.created_at,
            summary=", ".join(c.name for c in row.changes)
            if row.changes
            else ("as created or imported" if row.number == 1 else "no field changed"),
            note=row.note,
            current=row.current,
            changes=row.changes,
            thread="fields",
        )
        entry.url = f"{history}#{entry.anchor}"
        if may_edit and row.recorded and not row.current:
            entry.revert_url = reverse(
                "benchmark:item_revert", args=[project.pk, item.pk, row.number]
            )
            entry.revert_fields = {"base_version": latest}
        out.append(entry)
    return out


def item_timeline(
    *, user: AnyUser, project: Project, item: Item, may_edit: bool
) -> list[HistoryEntry]:
    """Every source's versions of ``item``, newest first (the item's fields first on a tie).
    ``may_edit``: whether the user may change the item (revert forms are offered)."""
    entries: list[HistoryEntry] = []
    for source in [field_entries, *_SOURCES]:
        fn = import_string(source) if isinstance(source, str) else source
        entries.extend(fn(user=user, project=project, item=item, may_edit=may_edit))
    entries.sort(key=lambda e: e.created_at, reverse=True)
    return entries
