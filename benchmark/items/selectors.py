"""Reads for the item editor and history: versions with what each changed, scoped to the user
(an item of another project answers 404, one whose answer is hidden from the user 403, through
``benchmark.selectors.item_get_revealed``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from benchmark.items.services import EDITABLE_FIELDS, changed_fields, item_snapshot
from benchmark.models import Item, ItemVersion
from benchmark.typing import AnyUser

MAX_SHOWN = 400


@dataclass
class FieldChange:
    name: str
    before: str
    after: str


@dataclass
class VersionRow:
    number: int
    author: str
    created_at: Any
    note: str
    base_number: int | None
    changes: list[FieldChange] = field(default_factory=list)
    current: bool = False
    recorded: bool = True


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + " …"


def field_changes(before: dict[str, Any], after: dict[str, Any]) -> list[FieldChange]:
    return [
        FieldChange(name, _shown(before.get(name, "")), _shown(after.get(name, "")))
        for name in changed_fields(before, after)
    ]


def item_versions(*, user: AnyUser, item: Item) -> list[VersionRow]:
    """The item's versions, newest first, each with the fields it changed (before and after).
    Without any save yet, one unrecorded row stands for the current state (version 1). The
    caller has looked ``item`` up for ``user``; the query is scoped to their membership too."""
    versions = list(
        ItemVersion.objects.filter(item=item, item__project__memberships__user=user.pk)
        .select_related("author")
        .order_by("number")
    )
    if not versions:
        return [
            VersionRow(
                number=1,
                author="",
                created_at=item.created_at,
                note=item.provenance,
                base_number=None,
                current=True,
                recorded=False,
            )
        ]
    rows = []
    previous: dict[str, Any] | None = None
    for version in versions:
        snapshot = version.snapshot
        rows.append(
            VersionRow(
                number=version.number,
                author=version.author.get_username() if version.author else "",
                created_at=version.created_at,
                note=version.note,
                base_number=version.base_number,
                changes=field_changes(previous, snapshot) if previous is not None else [],
            )
        )
        previous = snapshot
    rows[-1].current = not changed_fields(versions[-1].snapshot, item_snapshot(item))
    rows.reverse()
    return rows


def version_changes(*, version: ItemVersion | None, item: Item) -> list[FieldChange]:
    """What ``version`` (someone else's save) changed against the one before it."""
    if version is None:
        return []
    previous = (
        ItemVersion.objects.filter(item=item, number=version.number - 1)
        .values_list("fields", flat=True)
        .first()
    )
    return field_changes(previous or {}, version.snapshot)


__all__ = ["EDITABLE_FIELDS", "item_versions", "version_changes"]
