"""The human-evaluation rating form's drafts (``benchmark.input_drafts``), keyed
``human-eval:task:<id>:unit:<unit key>`` (a unit key, ``response:12:A``, holds colons): the
scores and the comment as typed. Only the rater the unit is leased to rates it."""

from __future__ import annotations

from typing import Any

from annotation.judgment_tasks import selectors as judging_selectors
from benchmark.exceptions import Forbidden
from benchmark.input_drafts.scopes import expect_parts, int_part

SCOPE = "human-eval"


def key(*, task_id: int, unit: str) -> str:
    return f"{SCOPE}:task:{task_id}:unit:{unit}"


def check(*, user: Any, parts: list[str]) -> None:
    expect_parts(parts, "task", None, "unit", None)
    task = judging_selectors.task_get(user=user, pk=int_part(parts, 1))
    unit = judging_selectors.task_unit_get(user=user, task=task, key=":".join(parts[3:]))
    assignment = judging_selectors.assignment_for(
        user=user, task=task, item=unit.item, unit=unit.key
    )
    if assignment is None:
        raise Forbidden("This answer is not assigned to you. Ask for the next one.")
