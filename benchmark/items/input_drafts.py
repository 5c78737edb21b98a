"""The item form's drafts (``benchmark.input_drafts``): ``item-new:project:<id>`` for a new item,
``item-edit:project:<id>:item:<id>`` for an item's edit form. Whoever may open the form may keep
a draft of it."""

from __future__ import annotations

from typing import Any

from benchmark import permissions
from benchmark import selectors as project_selectors
from benchmark.exceptions import Forbidden
from benchmark.input_drafts.scopes import expect_parts, int_part

NEW, EDIT = "item-new", "item-edit"


def new_key(*, project_id: int) -> str:
    return f"{NEW}:project:{project_id}"


def edit_key(*, project_id: int, item_id: int) -> str:
    return f"{EDIT}:project:{project_id}:item:{item_id}"


def _project(user: Any, parts: list[str]) -> Any:
    project = project_selectors.project_get(user=user, pk=int_part(parts, 1))
    if not permissions.can(user=user, project=project, action="edit"):
        raise Forbidden("Your role in this project does not allow editing items.")
    return project


def new_check(*, user: Any, parts: list[str]) -> None:
    expect_parts(parts, "project", None)
    _project(user, parts)


def edit_check(*, user: Any, parts: list[str]) -> None:
    expect_parts(parts, "project", None, "item", None)
    project = _project(user, parts)
    item = project_selectors.item_get_revealed(
        user=user, project=project, pk=int_part(parts, 3), page="the item editor"
    )
    reason = permissions.state_refusal(user=user, item=item, action="edit")
    if reason:
        raise Forbidden(reason)
