"""The plan editor's drafts (``benchmark.input_drafts``), keyed
``plan:project:<id>:item:<id>:plan:<plan key>`` (the plan key, ``gt`` or ``alt:0``, may hold
a colon): the plan's JSON and the note as typed."""

from __future__ import annotations

from typing import Any

from benchmark import permissions
from benchmark.input_drafts.scopes import expect_parts, int_part

SCOPE = "plan"


def key(*, project_id: int, item_id: int, plan_key: str) -> str:
    return f"{SCOPE}:project:{project_id}:item:{item_id}:plan:{plan_key}"


def check(*, user: Any, parts: list[str]) -> None:
    """Whoever may save the item's plans (the same rules as the save)."""
    from annotation.plan_editor import selectors  # on use: not when the apps are set up

    expect_parts(parts, "project", None, "item", None, "plan", None)
    project = selectors.plan_project_get(user=user, pk=int_part(parts, 1))
    item = selectors.plan_item_get(user=user, project=project, pk=int_part(parts, 3))
    permissions.require(user=user, project=project, action="edit", item=item)
