"""Gold items in the queue: when one is due for an annotator, which one, and what the judge
page counts of them. (Marking items gold, gold accuracy and the reviewer's actions are
``review.gold``'s.) A task with units has gold *units* (``GoldItem.unit``, an item and a
unit key); they are scheduled, locked and counted exactly as gold items, below "item" means
either. Blind solving's gold items are whole items like any other task's.

The schedule is deterministic per annotator. With a task's ``gold_rate`` r percent the
*period* is ``round(100 / r)`` items: after a gold item, ``period - 1`` other items, then the
next gold item. The first gold item comes after ``phase`` other items, ``phase`` a hash of
(task, annotator) in ``0 .. period - 1``, so the annotators of a task do not all meet their
first gold item at the same place. "Other items" are the annotator's judgments in the task
that are not gold judgments, counted since their last gold judgment. A gold item is served
only if the annotator has not judged it (nor authored it, unless the task lets authors
judge); when none is left, nothing is due.

The judge page's "left for you" counts the gold items the schedule will still serve along
with the other items (:func:`gold_ahead`), so the count goes down by one per item whatever
the item is: it tells no one which item was gold.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Exists, OuterRef, Q

from annotation.judgment_tasks import solving
from annotation.judgment_tasks.models import (
    Assignment,
    AssignmentStatus,
    GoldItem,
    Judgment,
    JudgmentTask,
    QueuePause,
    Scheme,
    TaskUnit,
)
from benchmark.models import Item, ItemStatus
from benchmark.typing import AnyUser

# ----------------------------------------------------------------------------- pure schedule


def gold_period(rate: int) -> int:
    """Items per gold item at ``rate`` percent (at least 2: the rate is at most 50)."""
    return max(2, round(100 / rate))


def gold_phase(*, task_id: int, user_id: int, period: int) -> int:
    """How many other items come before an annotator's first gold item in a task."""
    digest = hashlib.blake2b(f"gold:{task_id}:{user_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % period


def _need(*, rate: int, phase: int, since: int, served_before: bool) -> int:
    """Other items still to judge before the next gold item is due."""
    threshold = gold_period(rate) - 1 if served_before else phase
    return max(0, threshold - since)


def gold_due(*, rate: int, phase: int, since: int, served_before: bool) -> bool:
    """Whether the next item served is a gold item (when one is left)."""
    return rate > 0 and _need(rate=rate, phase=phase, since=since, served_before=served_before) == 0


def gold_ahead(
    *, rate: int, phase: int, since: int, served_before: bool, other_left: int, gold_left: int
) -> int:
    """How many gold items the schedule will serve while the annotator judges the
    ``other_left`` other items left (a gold item due after the last of them is served too),
    at most ``gold_left``."""
    if rate <= 0 or gold_left <= 0:
        return 0
    need = _need(rate=rate, phase=phase, since=since, served_before=served_before)
    if other_left < need:
        return 0
    return min(gold_left, 1 + (other_left - need) // (gold_period(rate) - 1))


# ----------------------------------------------------------------------------- the queue


@dataclass(frozen=True)
class GoldState:
    """Where one annotator stands in a task's gold schedule."""

    rate: int
    phase: int
    #: Their judgments in the task that are not gold, since their last gold judgment.
    since: int
    #: Whether they have a gold judgment in the task.
    served_before: bool
    #: The gold items (units) they may still be served (not judged by them), in serving
    #: order, as ``(item id, unit key)`` (the key "" for a whole item).
    open_keys: tuple[tuple[int, str], ...]

    @property
    def open_ids(self) -> tuple[int, ...]:
        """The items of :attr:`open_keys`, in the same order."""
        return tuple(item_id for item_id, _ in self.open_keys)

    @property
    def due(self) -> bool:
        return bool(self.open_keys) and gold_due(
            rate=self.rate, phase=self.phase, since=self.since, served_before=self.served_before
        )

    def ahead(self, *, other_left: int) -> int:
        return gold_ahead(
            rate=self.rate,
            phase=self.phase,
            since=self.since,
            served_before=self.served_before,
            other_left=other_left,
            gold_left=len(self.open_keys),
        )


def gold_state(*, task: JudgmentTask, user: AnyUser) -> GoldState:
    """The annotator's place in the schedule (two queries). Gold items are those currently
    marked for the task that the annotator has not judged; of a task that judges whole items,
    only those whose item is still verified and that the annotator did not author (unless the
    task lets authors judge). Gold units are rated whatever their item's status or author, as
    the unit queue rates units."""
    mine = Judgment.with_gold.filter(task=task, user=user.pk)
    later_gold = Judgment.with_gold.filter(
        task=task, user=user.pk, gold=True, created_at__gte=OuterRef("created_at")
    )
    counts = mine.aggregate(
        since=_count(Q(gold=False) & ~Q(Exists(later_gold))),
        gold=_count(Q(gold=True)),
    )
    judged = Assignment.objects.filter(
        task=task,
        user=user.pk,
        item=OuterRef("item_id"),
        unit=OuterRef("unit"),
        status=AssignmentStatus.SUBMITTED,
    )
    marks = GoldItem.objects.filter(task=task, removed_at__isnull=True).exclude(Exists(judged))
    if not task.has_units:
        marks = marks.filter(item__status=ItemStatus.VERIFIED)
    rows = marks.values_list("item_id", "unit", "item__provenance")
    open_keys = [
        (item_id, unit)
        for item_id, unit, provenance in rows
        if task.has_units or _may_judge(task, user, provenance)
    ]
    period = gold_period(task.gold_rate) if task.gold_rate else 1
    user_id = int(user.pk or 0)
    open_keys.sort(key=lambda key: (_rank(task.pk, user_id, *key), key))
    return GoldState(
        rate=task.gold_rate,
        phase=gold_phase(task_id=task.pk, user_id=user_id, period=period),
        since=counts["since"] or 0,
        served_before=bool(counts["gold"]),
        open_keys=tuple(open_keys),
    )


def _count(condition: Q) -> Any:
    from django.db.models import Count

    return Count("pk", filter=condition)


def _rank(task_id: int, user_id: int, item_id: int, unit: str = "") -> int:
    """The order in which one annotator meets the gold items (units): a hash, different per
    person (a whole item's hash is the one it had before units could be gold)."""
    name = f"gold-order:{task_id}:{user_id}:{item_id}" + (f":{unit}" if unit else "")
    digest = hashlib.blake2b(name.encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big")


def _may_judge(task: JudgmentTask, user: AnyUser, provenance: str) -> bool:
    """Not the item's author (as the pull queue rules it), unless the task lets authors judge."""
    return task.author_may_judge or not solving.is_author(provenance or "", user.get_username())


def gold_item_lock(
    *, task: JudgmentTask, state: GoldState, skip_locked: bool
) -> tuple[int, str] | None:
    """The first of the annotator's open gold items (units) whose row can be locked (``FOR
    UPDATE``, as the pull queue locks its candidates: the item row, or for a unit its
    ``TaskUnit`` row; ``SKIP LOCKED`` first), its row locked; ``(item id, unit key)``."""
    if not state.open_keys:
        return None
    q = connection.ops.quote_name
    # Without row locks (SQLite serialises writers) the row is read all the same, so "next"
    # makes as many statements for a gold item as for any other.
    locks = connection.features.has_select_for_update
    skip = " SKIP LOCKED" if skip_locked and locks else ""
    if task.has_units:
        table = q(TaskUnit._meta.db_table)
        sql = f"SELECT r.id FROM {table} r WHERE r.task_id = %s AND r.{q('key')} = %s"
    else:
        table = q(Item._meta.db_table)
        sql = f"SELECT r.id FROM {table} r WHERE r.id = %s"
    sql += (" FOR UPDATE OF r" + skip) if locks else ""
    with connection.cursor() as cursor:
        for item_id, unit in state.open_keys:
            cursor.execute(sql, [task.pk, unit] if task.has_units else [item_id])
            if cursor.fetchone() is not None:
                return item_id, unit
    return None


def gold_refusal(task: JudgmentTask) -> str:
    """Why ``task`` cannot have gold items (units), or "" when it can: one rule for its
    settings and for marking. Every scheme with one value per judgment can; a task that gives
    several scores in one judgment (``scores``) has no single answer that counts."""
    if task.scheme == Scheme.SCORES:
        return (
            "gold items need one answer that counts per item or unit; this task gives several "
            "scores in one judgment"
        )
    return ""


def queue_paused(*, task: JudgmentTask, user: AnyUser) -> QueuePause | None:
    """The reviewer's pause of this annotator's queue in the task, while it lasts."""
    return (
        QueuePause.objects.filter(task=task, user=user.pk, resumed_at__isnull=True)
        .select_related("paused_by")
        .first()
    )


def paused_message(*, task: JudgmentTask, user: AnyUser) -> str:
    """What "next" answers an annotator whose queue a reviewer paused."""
    pause = queue_paused(task=task, user=user)
    reason = f" ({pause.reason})" if pause is not None and pause.reason else ""
    return (
        f"your queue in task {task.name!r} is paused by a reviewer{reason}; ask a reviewer "
        "of the project to resume it"
    )


def gold_open_lease(*, task: JudgmentTask, user: AnyUser, item_id: int, unit: str = "") -> bool:
    """Whether ``item_id`` (its ``unit``) is leased to the annotator as a gold item (unit)
    and not judged yet."""
    return Assignment.objects.filter(
        task=task,
        user=user.pk,
        item_id=item_id,
        unit=unit,
        gold=True,
        status=AssignmentStatus.ACTIVE,
    ).exists()


# ----------------------------------------------------------------------------- gold tallies


def gold_tallies(*, tasks: list[JudgmentTask]) -> dict[tuple[int, int], tuple[int, int, str]]:
    """``{(task id, user id): (correct, total, username)}``: each annotator's gold judgments of
    the tasks' current gold items and units (one query), a judgment correct when
    :func:`gold_correct` says so. The one count behind gold accuracy (``review.gold``) and
    routing by doubt's reliability (``annotation.judgment_tasks.doubt``). No permission
    check: callers decide who sees it."""
    from django.db.models import Subquery

    by_id = {t.pk: t for t in tasks}
    if not by_id:
        return {}
    gold_value = GoldItem.objects.filter(
        task=OuterRef("task_id"),
        item=OuterRef("item_id"),
        unit=OuterRef("unit"),
        removed_at__isnull=True,
    ).values("value")[:1]
    rows = (
        Judgment.with_gold.filter(task_id__in=by_id, gold=True)
        .annotate(gold_value=Subquery(gold_value))
        .values_list("task_id", "user_id", "user__username", "value", "gold_value")
    )
    tallies: dict[tuple[int, int], tuple[int, int, str]] = {}
    for task_id, user_id, username, value, gold in rows:
        if gold is None:  # unmarked since: not counted
            continue
        correct, total, _ = tallies.get((task_id, user_id), (0, 0, username))
        right = gold_correct(task=by_id[task_id], value=value, gold=gold)
        tallies[(task_id, user_id)] = (correct + right, total + 1, username)
    return tallies


def gold_correct(*, task: JudgmentTask, value: Any, gold: Any) -> bool:
    """Whether a gold judgment's ``value`` counts as right against the gold item's (unit's)
    value: for blind solving, by the rule that compares a verifier's answer with the item's
    answer (:func:`annotation.judgment_tasks.solving.answer_matches`, ``gold`` in its golden
    shape); otherwise when it earns full credit as the consensus compares values (a unit's
    rating on its scale like an item's label)."""
    from annotation.judgment_tasks.consensus import value_credit

    if solving.is_solve_task(task) and isinstance(gold, dict):
        return solving.answer_matches(gold, value)
    return value_credit(task.scheme, value, gold) == 1.0
