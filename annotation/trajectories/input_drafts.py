"""The trajectory editor's drafts (``benchmark.input_drafts``), keyed
``trajectory:project:<id>:item:<id>``: every field of the editor's form as typed."""

from __future__ import annotations

from typing import Any

from benchmark import permissions
from benchmark.input_drafts.scopes import expect_parts, int_part

SCOPE = "trajectory"


def key(*, project_id: int, item_id: int) -> str:
    return f"{SCOPE}:project:{project_id}:item:{item_id}"


def check(*, user: Any, parts: list[str]) -> None:
    """Whoever may save the reference trajectory (the same rules as the save)."""
    from annotation.trajectories import selectors  # on use: not when the apps are set up

    expect_parts(parts, "project", None, "item", None)
    project = selectors.trajectory_project_get(user=user, pk=int_part(parts, 1))
    item = selectors.trajectory_item_get(user=user, project=project, pk=int_part(parts, 3))
    permissions.require(user=user, project=project, action="edit", item=item)
