"""The unit sources of response-level human evaluation (registered in ``review.apps``; see
``annotation.judgment_tasks.units``):

* ``answer-eval``: one unit per chosen answer, ``response:<answer id>:<scale>`` ("atp" or
  "likert"). ``unit_params["responses"]``: the answer ids, fixed when the task is made.
* ``answer-pair``: one unit per pair of answers to the same item from two models,
  ``pair:<answer shown as A>:<answer shown as B>``. ``unit_params["pairs"]``: ``[[A, B], ...]``.

Units are listed in item order (then as chosen); each rater meets them in an order of their
own (``unit_params["rater_order_seed"]``). Both kinds have a page of their own
(``review.human_eval.views.rate_unit``): the judge page's scale does not fit them.
"""

from __future__ import annotations

from typing import Any

from annotation.judgment_tasks.models import JudgmentTask, TaskUnit
from annotation.judgment_tasks.units import pair_key, unit_key
from benchmark.models import Response
from benchmark.typing import AnyUser


def _items(task: JudgmentTask, ids: list[int]) -> dict[int, tuple[int, int]]:
    """``{answer id: (item position, item id)}`` of the task project's answers among ``ids``."""
    rows = Response.objects.filter(pk__in=ids, item__project=task.project).values_list(
        "pk", "item__position", "item_id"
    )
    return {pk: (position, item_id) for pk, position, item_id in rows}


def answer_eval_units(*, task: JudgmentTask) -> list[tuple[int, str]]:
    params = task.unit_params or {}
    ids = [int(i) for i in params.get("responses") or []]
    found = _items(task, ids)
    label = str(params.get("scale") or "")
    ordered = sorted((pk for pk in ids if pk in found), key=lambda pk: (found[pk], pk))
    return [(found[pk][1], unit_key(response_id=pk, label=label)) for pk in ordered]


def answer_pair_units(*, task: JudgmentTask) -> list[tuple[int, str]]:
    pairs = [(int(a), int(b)) for a, b in (task.unit_params or {}).get("pairs") or []]
    found = _items(task, [pk for pair in pairs for pk in pair])
    kept = [(a, b) for a, b in pairs if a in found and b in found and found[a][1] == found[b][1]]
    kept.sort(key=lambda pair: (found[pair[0]], pair))
    return [(found[a][1], pair_key(first=a, second=b)) for a, b in kept]


def answer_describe(*, task: JudgmentTask, unit: TaskUnit, user: AnyUser) -> dict[str, Any]:
    """What the judge page would show; these kinds draw their own page instead."""
    return {"title": "Answer" if unit.key.startswith("response:") else "Two answers"}
