"""What routing by doubt adds to the queue's one candidate statement
(``annotation.judgment_tasks.services._candidate`` and ``_unit_candidate``): the statement
walks the task's doubt rows (:class:`ItemDoubt`, one per item or unit the task may serve, its
position copied) in one index order, most doubtful first, or least doubtful first to an annotator
whose cached reliability is below the task's threshold, ties by position, and joins the item (or
unit) row it locks; the first free row ends the walk. Whether the annotator is gated is read by
the statement "next" runs first anyway (:func:`gated_sql`), so "next item" runs no extra
statement.

:func:`fill_sql` writes the rows a task lacks (the prior doubt, the position copied): when routing
is turned on, and for items, listings and units added while it is on."""

from __future__ import annotations

from typing import Any

from django.db import connection

from annotation.judgment_tasks.doubt.models import AnnotatorReliability, ItemDoubt

__all__ = ["doubt_join", "doubt_walk", "fill_sql", "gated_sql", "unscored_sql"]


def _tables(*models: Any) -> list[str]:
    return [connection.ops.quote_name(m._meta.db_table) for m in models]


def gated_sql(task: Any, user: Any) -> tuple[str, list[Any]]:
    """A boolean SQL expression (and its params): the user is below the task's reliability
    threshold, so is served the least doubtful first. ``FALSE`` for a task that does not serve
    by doubt."""
    if not task.serve_by_doubt:
        return "(1 = 0)", []
    (reliability,) = _tables(AnnotatorReliability)
    return (
        f"EXISTS (SELECT 1 FROM {reliability} r WHERE r.task_id = %s AND r.user_id = %s "
        "AND r.score < %s)",
        [task.pk, user.pk, task.reliability_threshold],
    )


def doubt_walk(task: Any, *, gated: bool, row: str, on: str) -> tuple[str, str]:
    """``(FROM clause, ORDER BY clause)`` of a candidate statement that walks
    the task's doubt rows ``d`` in index order and joins ``row`` (``"<table> i"``) ``on`` them.
    ``gated``: least doubtful first."""
    (doubt,) = _tables(ItemDoubt)
    direction = "" if gated else " DESC"
    unit = connection.ops.quote_name("unit")
    return (
        f"{doubt} d INNER JOIN {row} ON {on}",
        f"d.score{direction}, d.position, d.item_id, d.{unit}",
    )


def doubt_join(task: Any, *, gated: bool, item: str, unit: str) -> tuple[str, list[Any], str]:
    """``(LEFT JOIN, its params, ORDER BY prefix)`` for a candidate statement driven by another
    table (the items pushed to the annotator: few, so not worth walking the doubt index for).
    ``item`` and ``unit``: the SQL of the candidate's item id and unit key."""
    from annotation.judgment_tasks.doubt.services import prior

    (doubt,) = _tables(ItemDoubt)
    join = (
        f" LEFT JOIN {doubt} d ON d.task_id = %s AND d.item_id = {item} "
        f"AND d.{connection.ops.quote_name('unit')} = {unit}"
    )
    direction = "" if gated else " DESC"
    return join, [task.pk], f"COALESCE(d.score, {float(prior(task))!r}){direction}, "


def unscored_sql(task: Any, *, item: str, unit: str) -> tuple[str, list[Any]]:
    """A condition (and its params): the candidate has no doubt row. The queue serves such
    items (added by a path that did not fill their rows) after every scored one, in position
    order, rather than never."""
    (doubt,) = _tables(ItemDoubt)
    return (
        f"NOT EXISTS (SELECT 1 FROM {doubt} d WHERE d.task_id = %s AND d.item_id = {item} "
        f"AND d.{connection.ops.quote_name('unit')} = {unit})",
        [task.pk],
    )


def fill_sql(
    *,
    task_id: int,
    statuses: list[str],
    units: bool,
    listed: bool,
    prior: float,
    item_ids: list[int] | None = None,
    tables: dict[str, str],
    now: Any,
) -> tuple[str, list[Any]]:
    """One ``INSERT ... SELECT`` of the doubt rows task ``task_id`` lacks: one per unit
    (``units``) or per item of its project (only its listed items when ``listed``), with the
    ``prior`` doubt and the item's (unit's) position, items of the given ``statuses`` only;
    ``item_ids``: only those items.
    ``tables``: the quoted tables ``doubt``, ``item``, ``unit``, ``listed``, ``task`` (the
    migration passes its own)."""
    q = connection.ops.quote_name
    t = tables
    if units:
        source = (
            f"SELECT u.task_id AS t, u.item_id AS i, u.{q('key')} AS k, %s AS s, "
            f"u.position AS p FROM {t['unit']} u "
            "WHERE u.task_id = %s"
        )
        params: list[Any] = [prior, task_id]
        ids = "u.item_id"
    else:
        source = (
            f"SELECT j.id AS t, i.id AS i, '' AS k, %s AS s, i.position AS p FROM {t['item']} i "
            f"INNER JOIN {t['task']} j ON j.project_id = i.project_id WHERE j.id = %s"
        )
        source += f" AND i.status IN ({', '.join(['%s'] * len(statuses))})"
        params = [prior, task_id, *statuses]
        ids = "i.id"
        if listed:
            source += (
                f" AND EXISTS (SELECT 1 FROM {t['listed']} l WHERE l.task_id = j.id "
                "AND l.item_id = i.id)"
            )
    if item_ids is not None:
        source += (
            f" AND {ids} IN ({', '.join(['%s'] * len(item_ids))})" if item_ids else " AND 1 = 0"
        )
        params += item_ids
    sql = (
        f"INSERT INTO {t['doubt']} (task_id, item_id, {q('unit')}, score, position, judgments, "
        f"signals, updated_at) SELECT s.t, s.i, s.k, s.s, s.p, 0, '{{}}', %s FROM ({source}) s "
        "WHERE 1 = 1 "
        f"ON CONFLICT (task_id, item_id, {q('unit')}) DO NOTHING"
    )
    return sql, [now, *params]  # the outer SELECT's %s comes first
