"""The judgment tasks judged on a screen of their own instead of the judge page: a registry
of ``(applies, screen)`` pairs, with no view imported, so that an app's ``ready()``
registers a screen without loading the judging views (and all they import) in every
process. ``annotation.judgment_tasks.views`` asks it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

TaskApplies = Callable[[Any], bool]
_TASK_SCREENS: list[tuple[TaskApplies, str]] = []


def task_screen_register(applies: TaskApplies, screen: str) -> None:
    """Judge the tasks for which ``applies(task)`` holds on another screen: ``screen`` is the
    dotted path of a view called as ``view(request, task=..., item_id=...)``. Registered from
    an app's ``ready()`` by the features built on judging (blind verification's solve
    screen), which judging does not import."""
    if (applies, screen) not in _TASK_SCREENS:
        _TASK_SCREENS.append((applies, screen))


def task_screens() -> list[tuple[TaskApplies, str]]:
    """The screens registered, in order."""
    return list(_TASK_SCREENS)
