"""The reference trajectory's versions in the item's history (a source registered with
``benchmark.items.history``), with the trajectory editor's own version page and revert."""

from __future__ import annotations

from django.urls import reverse

from annotation.trajectories import selectors
from annotation.trajectories.services import task_document
from benchmark.items.history import HistoryEntry
from benchmark.models import Item, Project
from benchmark.typing import AnyUser


def trajectory_entries(
    *, user: AnyUser, project: Project, item: Item, may_edit: bool
) -> list[HistoryEntry]:
    """Two queries (the reference, the versions), whatever the number of versions. Nothing
    before the first save: the item's field history shows how it was imported."""
    if not project.benchmark.trajectories:
        return []
    document = task_document(item=item, reference=selectors.reference_of(item))
    rows = selectors.version_list(user=user, item=item, document=document)
    if len(rows) == 1 and not rows[0].version.recorded:
        return []
    current = next((row.version.number for row in rows if row.current), None)
    out = []
    for row in rows:
        version = row.version
        args = [project.pk, item.pk, version.number]
        entry = HistoryEntry(
            source="Trajectory",
            number=version.number,
            author=version.author.get_username() if version.author else "",
            created_at=version.created_at,
            summary=row.summary or "as imported",
            note=version.note,
            url=reverse("annotation:trajectory_version", args=args),
            current=row.current,
            thread="trajectory",
        )
        if may_edit and version.recorded and not row.current:
            entry.revert_url = reverse("annotation:trajectory_version_revert", args=args)
            entry.revert_fields = {"base": current}
        out.append(entry)
    return out
