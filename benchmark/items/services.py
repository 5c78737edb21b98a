"""Items written in the app: created from scratch (a form, the API, a kept model draft) and
edited field by field, each edit a version.

FOUNDATION STUB: the signatures below are fixed (other features call them); the bodies are
completed by the items feature (validation per kind naming each field, versions with author
and time, revert, 409 on a stale save).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction

from benchmark.exceptions import Forbidden
from benchmark.models import Item, ItemStatus, Project
from benchmark.permissions import can
from benchmark.typing import User

#: Item fields a person may set when creating or editing an item.
EDITABLE_FIELDS = (
    "query",
    "modality",
    "documents",
    "image_refs",
    "constraints",
    "expected_answer",
    "accepted_variants",
    "match_type",
    "rubric",
    "category",
    "intent",
    "domain",
    "level",
)


def item_create(
    *,
    project: Project,
    user: User,
    data: dict[str, Any],
    provenance: str = "",
) -> Item:
    """Create a draft item from ``data`` (EDITABLE_FIELDS, plus an optional ``external_id``).
    ``provenance`` defaults to "written by <username>"; a kept model draft passes
    "drafted by <model>"."""
    if not can(user=user, project=project, action="edit"):
        raise Forbidden("you may not add items to this project")
    fields = {k: v for k, v in data.items() if k in EDITABLE_FIELDS}
    with transaction.atomic():
        item = Item(
            project=project,
            external_id=str(data.get("external_id") or f"new-{uuid.uuid4().hex[:12]}"),
            status=ItemStatus.DRAFT,
            provenance=provenance or f"written by {user.get_username()}",
            **fields,
        )
        item.full_clean(exclude=["project"])
        item.save()
    return item


def item_update(
    *,
    item: Item,
    user: User,
    changes: dict[str, Any],
    base_version: int | None,
    note: str = "",
) -> Item:
    """Change some of an item's EDITABLE_FIELDS, made on version ``base_version`` (None: the
    caller does not know; no staleness check). Returns the updated item."""
    if not can(user=user, project=item.project, action="edit"):
        raise Forbidden("you may not edit this project's items")
    with transaction.atomic():
        locked = Item.objects.select_for_update().get(pk=item.pk)
        for key, value in changes.items():
            if key in EDITABLE_FIELDS:
                setattr(locked, key, value)
        locked.full_clean(exclude=["project"])
        locked.save()
    return locked
