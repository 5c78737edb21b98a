"""Reads for bulk actions: which items a selection means, scoped to what the user may see,
and the pushes still waiting to be taken."""

from __future__ import annotations

from collections.abc import Iterable

from benchmark.models import Project
from benchmark.selectors import ItemFilters, item_list
from benchmark.typing import AnyUser

__all__ = ["bulk_selection"]

#: At most this many items may be selected by hand in one request.
MAX_HAND_SELECTED = 5000


def bulk_selection(
    *,
    user: AnyUser,
    project: Project,
    filters: ItemFilters | None = None,
    item_ids: Iterable[int] | None = None,
) -> list[int]:
    """The ids of the selected items the user may see in ``project``, in list order: those of
    ``item_ids`` (a selection by hand), or every item matching ``filters``. Ids of other
    projects' items are left out (one query, however many items)."""
    items = item_list(user=user, project=project, filters=filters, load_secrets=False)
    if item_ids is not None:
        items = items.filter(pk__in=list(item_ids)[:MAX_HAND_SELECTED])
    return list(items.values_list("pk", flat=True))
