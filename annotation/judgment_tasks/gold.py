"""Gold items in the queue: when one is due for an annotator, which one, and what the judge
page counts of them. (Marking items gold, gold accuracy and the reviewer's actions are
``review.gold``'s.)

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
    #: The gold items they may still be served (not judged by them), in serving order.
    open_ids: tuple[int, ...]

    @property
    def due(self) -> bool:
        return bool(self.open_ids) and gold_due(
            rate=self.rate, phase=self.phase, since=self.since, served_before=self.served_before
        )

    def ahead(self, *, other_left: int) -> int:
        return gold_ahead(
            rate=self.rate,
            phase=self.phase,
            since=self.since,
            served_before=self.served_before,
            other_left=other_left,
            gold_left=len(self.open_ids),
        )


def gold_state(*, task: JudgmentTask, user: AnyUser) -> GoldState:
    """The annotator's place in the schedule (two queries). Gold items are those currently
    marked for the task whose item is still verified and that the annotator has neither
    judged nor (unless the task lets authors judge) authored."""
    mine = Judgment.with_gold.filter(task=task, user=user.pk)
    later_gold = Judgment.with_gold.filter(
        task=task, user=user.pk, gold=True, created_at__gte=OuterRef("created_at")
    )
    counts = mine.aggregate(
        since=_count(Q(gold=False) & ~Q(Exists(later_gold))),
        gold=_count(Q(gold=True)),
    )
    judged = Assignment.objects.filter(
        task=task, user=user.pk, item=OuterRef("item_id"), status=AssignmentStatus.SUBMITTED
    )
    rows = (
        GoldItem.objects.filter(
            task=task, removed_at__isnull=True, item__status=ItemStatus.VERIFIED
        )
        .exclude(Exists(judged))
        .values_list("item_id", "item__provenance")
    )
    open_ids = [item_id for item_id, provenance in rows if _may_judge(task, user, provenance)]
    period = gold_period(task.gold_rate) if task.gold_rate else 1
    user_id = int(user.pk or 0)
    open_ids.sort(key=lambda item_id: (_rank(task.pk, user_id, item_id), item_id))
    return GoldState(
        rate=task.gold_rate,
        phase=gold_phase(task_id=task.pk, user_id=user_id, period=period),
        since=counts["since"] or 0,
        served_before=bool(counts["gold"]),
        open_ids=tuple(open_ids),
    )


def _count(condition: Q) -> Any:
    from django.db.models import Count

    return Count("pk", filter=condition)


def _rank(task_id: int, user_id: int, item_id: int) -> int:
    """The order in which one annotator meets the gold items: a hash, different per person."""
    digest = hashlib.blake2b(f"gold-order:{task_id}:{user_id}:{item_id}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big")


def _may_judge(task: JudgmentTask, user: AnyUser, provenance: str) -> bool:
    """Not the item's author (as the pull queue rules it), unless the task lets authors judge."""
    return task.author_may_judge or not solving.is_author(provenance or "", user.get_username())


def gold_item_lock(*, state: GoldState, skip_locked: bool) -> int | None:
    """The first of the annotator's open gold items whose row can be locked (``FOR UPDATE``,
    as the pull queue locks its candidates; ``SKIP LOCKED`` first), its row locked."""
    if not state.open_ids:
        return None
    if not connection.features.has_select_for_update:
        return state.open_ids[0]
    table = connection.ops.quote_name(Item._meta.db_table)
    sql = f"SELECT i.id FROM {table} i WHERE i.id = %s FOR UPDATE OF i" + (
        " SKIP LOCKED" if skip_locked else ""
    )
    with connection.cursor() as cursor:
        for item_id in state.open_ids:
            cursor.execute(sql, [item_id])
            if cursor.fetchone() is not None:
                return item_id
    return None


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


def gold_open_lease(*, task: JudgmentTask, user: AnyUser, item_id: int) -> bool:
    """Whether ``item_id`` is leased to the annotator as a gold item and not judged yet."""
    return Assignment.objects.filter(
        task=task, user=user.pk, item_id=item_id, gold=True, status=AssignmentStatus.ACTIVE
    ).exists()


# ----------------------------------------------------------------------------- gold tallies


def gold_tallies(*, tasks: list[JudgmentTask]) -> dict[tuple[int, int], tuple[int, int, str]]:
    """``{(task id, user id): (correct, total, username)}``: each annotator's gold judgments of
    the tasks' current gold items (one query), a judgment correct when its value earns full
    credit against the gold item's value as the consensus compares them. The one count behind
    gold accuracy (``review.gold``) and routing by doubt's reliability (``annotation.judgment_tasks.doubt``).
    No permission check: callers decide who sees it."""
    from django.db.models import Subquery

    from annotation.judgment_tasks.consensus import value_credit

    by_id = {t.pk: t for t in tasks}
    if not by_id:
        return {}
    gold_value = GoldItem.objects.filter(
        task=OuterRef("task_id"), item=OuterRef("item_id"), removed_at__isnull=True
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
        right = value_credit(by_id[task_id].scheme, value, gold) == 1.0
        tallies[(task_id, user_id)] = (correct + right, total + 1, username)
    return tallies
