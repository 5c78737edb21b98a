"""The plan versions in the item's history (a source registered with
``benchmark.items.history``): every version of each of the item's plans, with the plan
editor's own version page and revert endpoint."""

from __future__ import annotations

from urllib.parse import urlencode

from django.urls import reverse

from annotation.plan_editor.diff import diff_summary
from annotation.plan_editor.models import PlanVersion
from annotation.plan_editor.services import GOLD_KEY
from benchmark.items.history import HistoryEntry
from benchmark.models import Item, Project
from benchmark.typing import AnyUser


def _keyed(url: str, key: str) -> str:
    return url if key == GOLD_KEY else f"{url}?{urlencode({'key': key})}"


def plan_entries(
    *, user: AnyUser, project: Project, item: Item, may_edit: bool
) -> list[HistoryEntry]:
    """One query, whatever the number of plans and versions."""
    if not project.benchmark.plans:
        return []
    rows = list(
        PlanVersion.objects.filter(item=item, item__project__memberships__user=user.pk)
        .select_related("author")
        .order_by("key", "number")
    )
    latest = {row.key: row.number for row in rows}  # ordered: the last number wins
    out: list[HistoryEntry] = []
    previous: PlanVersion | None = None
    for row in rows:
        older = previous if previous is not None and previous.key == row.key else None
        args = [project.pk, item.pk, row.number]
        current = row.number == latest[row.key]
        entry = HistoryEntry(
            source="Plan" if row.key == GOLD_KEY else f"Plan {row.key}",
            number=row.number,
            author=row.author.get_username() if row.author else "",
            created_at=row.created_at,
            summary=diff_summary(older.step_list, row.step_list)
            if older is not None
            else f"{len(row.step_list)} step(s)",
            note=row.note,
            url=_keyed(reverse("annotation:plan_version", args=args), row.key),
            current=current,
            thread=f"plan-{row.key}",
        )
        # A removed alternative keeps its versions (plan is null) but has nothing to revert.
        if may_edit and not current and row.plan_id is not None:
            entry.revert_url = reverse("annotation:plan_version_revert", args=args)
            entry.revert_fields = {"key": row.key, "base": latest[row.key]}
        out.append(entry)
        previous = row
    return out
