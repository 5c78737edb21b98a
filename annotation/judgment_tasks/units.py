"""Units of judgment tasks that judge parts of items, and the registry of where they come from.

A task's ``unit_kind`` says what one judgment is about (:class:`~annotation.judgment_tasks.models.
UnitKind`): a whole item, or a *unit* named by a key ``response:<response id>:<label>`` (one
agent's report on one model answer; one rubric criterion of one answer; one answer rated on
a scale) or ``pair:<response id>:<response id>`` (two answers to one item, shown as A and B
in that order, for a preference). Everything else of
judging (overlap k, leases, blind judgments, outcomes, agreement figures) works on units as on
items: assignments, judgments and outcomes carry the unit key in ``unit`` ("" for items).

``annotation`` may not import ``review`` (dependencies point one way), and the judge runs
whose reports are rated live in ``review``. So the units of a kind come from a **unit source**
that ``review`` registers in its ``AppConfig.ready()``:

* ``list_units(task=...)`` answers the task's units as ``[(item id, unit key), ...]`` in queue
  order, from ``task.unit_params`` (which judge run, which agents or criteria, which answers).
  It is called once, when the task is created (:func:`annotation.judgment_tasks.services.
  unit_task_create`), and the units are kept as ``TaskUnit`` rows, so a sample stays fixed;
* ``describe(task=..., unit=..., user=...)`` answers what the judge page shows about one unit
  (a ``TaskUnit``), as a dict for ``template``: the answer's text and the agent's report and
  justification, or the criterion. It shows the one unit only: never other raters' judgments
  (the judge page adds those for reviewers, through :func:`judgments_visible`);
* ``page`` (optional): a view ``page(request, task=..., unit=...)`` that draws the unit and
  takes its rating *instead of* the judge page, for kinds whose scale the judge page's radio
  buttons do not fit (several scores at once, two answers side by side). The judge page's URL
  (``annotation:judge_unit``) stays the unit's address; the view must check the lease (or
  the review role) itself, as the judge page does.

Callables may be dotted paths, imported on first use (as in ``benchmark.jobs.kinds``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.utils.module_loading import import_string

from benchmark.exceptions import ValidationFailed

if TYPE_CHECKING:
    from django.http import HttpRequest, HttpResponse

    from annotation.judgment_tasks.models import JudgmentTask, TaskUnit
    from benchmark.typing import AnyUser

__all__ = [
    "RATING_LABELS",
    "UnitSource",
    "pair_key",
    "pair_parse",
    "unit_key",
    "unit_parse",
    "unit_responses",
    "unit_source",
    "unit_source_register",
]

#: ``response:<response id>:<label>``; the label is a judge call's label ("chief", "r3").
UNIT_KEY = re.compile(r"^response:([1-9][0-9]{0,17}):([A-Za-z0-9_.-]{1,40})$")
#: ``pair:<response id>:<response id>``: two different answers, the first shown as A.
PAIR_KEY = re.compile(r"^pair:([1-9][0-9]{0,17}):([1-9][0-9]{0,17})$")

#: The 0-2 scale of both unit kinds, as ordinal labels of the task (a 2 "accepts" a unit:
#: the majority agrees with the report, or finds the criterion fully met).
RATING_LABELS = {
    "judge-report": [
        {"value": 0, "label": "0 · disagree", "accept": False},
        {"value": 1, "label": "1 · partly agree", "accept": False},
        {"value": 2, "label": "2 · agree", "accept": True},
    ],
    "answer-criterion": [
        {"value": 0, "label": "0 · not met", "accept": False},
        {"value": 1, "label": "1 · partially met", "accept": False},
        {"value": 2, "label": "2 · fully met", "accept": True},
    ],
}

ListUnits = Callable[..., list[tuple[int, str]]]
Describe = Callable[..., dict[str, Any]]
Page = Callable[..., "HttpResponse"]


def unit_key(*, response_id: int, label: str) -> str:
    key = f"response:{int(response_id)}:{label}"
    if not UNIT_KEY.match(key):
        raise ValidationFailed(f"{label!r} cannot be part of a unit key")
    return key


def unit_parse(key: str) -> tuple[int, str]:
    """``(response id, label)`` of a unit key; ValidationFailed naming the key otherwise."""
    match = UNIT_KEY.match(key or "")
    if match is None:
        raise ValidationFailed(f"{key!r} is not a unit key (response:<answer id>:<label>)")
    return int(match.group(1)), match.group(2)


def pair_key(*, first: int, second: int) -> str:
    """The unit key of two different answers, ``first`` shown as A and ``second`` as B."""
    key = f"pair:{int(first)}:{int(second)}"
    if not PAIR_KEY.match(key) or int(first) == int(second):
        raise ValidationFailed(f"answers {first!r} and {second!r} cannot form a pair")
    return key


def pair_parse(key: str) -> tuple[int, int]:
    """``(response id shown as A, response id shown as B)`` of a pair key; ValidationFailed
    naming the key otherwise."""
    match = PAIR_KEY.match(key or "")
    if match is None or match.group(1) == match.group(2):
        raise ValidationFailed(f"{key!r} is not a pair key (pair:<answer id>:<answer id>)")
    return int(match.group(1)), int(match.group(2))


def unit_responses(key: str) -> tuple[int, ...]:
    """The answers a unit key names: one for ``response:...``, two (A, B) for ``pair:...``;
    ValidationFailed for anything else."""
    if (key or "").startswith("pair:"):
        return pair_parse(key)
    return (unit_parse(key)[0],)


def _resolve(value: Any) -> Any:
    return import_string(value) if isinstance(value, str) else value


@dataclass(frozen=True)
class UnitSource:
    #: The ``UnitKind`` value this source serves ("judge-report", "answer-criterion").
    kind: str
    #: ``list_units(task=...) -> [(item id, unit key), ...]``; a callable or its dotted path.
    list_units: ListUnits | str
    #: ``describe(task=..., unit=..., user=...) -> dict`` for ``template``.
    describe: Describe | str
    #: The fragment the judge page includes with the description as ``unit_view``.
    template: str
    #: ``page(request, task=..., unit=...)``: a page of its own for the unit (see above);
    #: None: the judge page.
    page: Page | str | None = None

    def units(self, *, task: JudgmentTask) -> list[tuple[int, str]]:
        return list(_resolve(self.list_units)(task=task))

    def view(self, *, task: JudgmentTask, unit: TaskUnit, user: AnyUser) -> dict[str, Any]:
        return dict(_resolve(self.describe)(task=task, unit=unit, user=user))

    def render_page(
        self, request: HttpRequest, *, task: JudgmentTask, unit: TaskUnit
    ) -> HttpResponse | None:
        """The unit's own page, or None when the kind uses the judge page."""
        if self.page is None:
            return None
        return _resolve(self.page)(request, task=task, unit=unit)  # type: ignore[no-any-return]


_SOURCES: dict[str, UnitSource] = {}


def unit_source_register(source: UnitSource) -> None:
    """Register (or replace) the unit source of a kind; apps call this in ``ready()``."""
    _SOURCES[source.kind] = source


def unit_source(kind: str) -> UnitSource:
    source = _SOURCES.get(kind)
    if source is None:
        raise ValidationFailed(f"no unit source is registered for units of kind {kind!r}")
    return source
