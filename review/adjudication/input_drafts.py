"""The adjudication form's drafts (``benchmark.input_drafts``), keyed
``adjudication:task:<id>:item:<id>``: the verdict and the reason as typed."""

from __future__ import annotations

from typing import Any

from annotation.judgment_tasks import selectors as judging_selectors
from benchmark import permissions
from benchmark.exceptions import Forbidden
from benchmark.input_drafts.scopes import expect_parts, int_part

SCOPE = "adjudication"


def key(*, task_id: int, item_id: int) -> str:
    return f"{SCOPE}:task:{task_id}:item:{item_id}"


def check(*, user: Any, parts: list[str]) -> None:
    """Whoever may settle the task's disagreements (the same rules as the decision)."""
    expect_parts(parts, "task", None, "item", None)
    task = judging_selectors.task_get(user=user, pk=int_part(parts, 1))
    if not permissions.can(user=user, project=task.project, action="adjudicate"):
        raise Forbidden("Only reviewers and admins settle disagreements.")
    judging_selectors.task_item_get(user=user, task=task, pk=int_part(parts, 3))
