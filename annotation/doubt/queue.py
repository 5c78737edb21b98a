"""What routing by doubt adds to the queue's one candidate statement
(``annotation.judgment_tasks.services._candidate`` and ``_unit_candidate``): a join of the
item's doubt and an ORDER BY that serves the most doubtful first, or the least doubtful first
to an annotator whose cached reliability is below the task's threshold (the gate is a
subquery of the same statement, so "next item" runs no extra statement)."""

from __future__ import annotations

from typing import Any

from django.db import connection

from annotation.doubt.models import AnnotatorReliability, ItemDoubt
from annotation.doubt.services import prior

__all__ = ["doubt_order"]


def doubt_order(
    task: Any, user: Any, *, item: str, unit: str
) -> tuple[str, list[Any], str, list[Any]]:
    """``(join, its params, ORDER BY prefix, its params)`` for a task that serves items by
    doubt; empty for one that does not. ``item`` and ``unit``: the SQL of the candidate's item
    id and unit key."""
    if not task.serve_by_doubt:
        return "", [], "", []
    q = connection.ops.quote_name
    doubt, reliability = (q(m._meta.db_table) for m in (ItemDoubt, AnnotatorReliability))
    join = (
        f" LEFT JOIN {doubt} d ON d.task_id = %s AND d.item_id = {item} AND d.{q('unit')} = {unit}"
    )
    order = (
        f"(CASE WHEN EXISTS (SELECT 1 FROM {reliability} r WHERE r.task_id = %s "
        "AND r.user_id = %s AND r.score < %s) THEN 1 ELSE -1 END) * COALESCE(d.score, %s), "
    )
    return join, [task.pk], order, [task.pk, user.pk, task.reliability_threshold, prior(task)]
