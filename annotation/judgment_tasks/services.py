"""The judgment queue: leases, blind submissions and outcomes."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from annotation.judgment_tasks import gold, solving
from annotation.judgment_tasks.consensus import SETTLED, Rule, Verdict, agreement_credits, decide
from annotation.judgment_tasks.doubt.queue import doubt_join, doubt_walk, gated_sql, unscored_sql
from annotation.judgment_tasks.doubt.services import doubt_rows_fill, item_doubt_update
from annotation.judgment_tasks.models import (
    Assignment,
    AssignmentStatus,
    ItemPush,
    Judgment,
    JudgmentTask,
    JudgmentVersion,
    Outcome,
    QueuePause,
    Scheme,
    TaskItem,
    TaskUnit,
    UnitKind,
)
from annotation.judgment_tasks.undo import change_refusal
from annotation.judgment_tasks.units import RATING_LABELS, unit_source
from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.models import Item, ItemStatus, TaxonomyTerm
from benchmark.permissions import can, require
from benchmark.projects.services import item_status_set
from benchmark.typing import User


def _live(task: JudgmentTask, now: datetime) -> Q:
    """Assignments that count towards the overlap: submitted, or leased and not expired."""
    return Q(task=task) & (
        Q(status=AssignmentStatus.SUBMITTED) | Q(status=AssignmentStatus.ACTIVE, expires_at__gt=now)
    )


#: How many items (units) one user may hold leased ahead of the one they judge now in a
#: task: the depth of the judge page's queue (static/js/judge.js reads it from the page,
#: ``data-ahead-max``). The one place this number is set. Five, not three: with 50 annotators
#: on a 2-CPU server a lease-ahead request sometimes took 4-7 s, longer than three items
#: take to judge, and the queue ran dry (tests/perf/bench_next_item.py: p95 from 0.4-4.7 s
#: down to 32-65 ms).
AHEAD_MAX = 5


def assignment_next_for_user(
    *,
    task: JudgmentTask,
    user: User,
    now: datetime | None = None,
    ahead_of: tuple[int, str] | None = None,
    held: Sequence[str] = (),
) -> Assignment | None:
    """Lease the next item (or unit, for a task with units) this user has not judged and that
    still needs judgments.

    Under concurrent requests nothing gets more than ``task.overlap`` live assignments: each
    candidate row (the item, or the task's ``TaskUnit``) is locked (``FOR UPDATE SKIP LOCKED``
    on PostgreSQL; SQLite serialises writers) and its live assignments are counted again after
    the lock is held.

    ``ahead_of``: ``(item id, unit key)`` of the item (or unit) the user is judging now under
    a live lease; the lease answered is one *after* it, leased while it is judged (the judge
    page's queue, :data:`AHEAD_MAX` deep). ``held``: the keys (item id, or unit key) of the
    items the page holds ahead of it already, in order. Answered: the user's oldest open lease
    taken after ``ahead_of`` that ``held`` does not name (a page reloaded gets its queue back,
    and no item is leased twice), else a new one through the same finders, gold schedule (as
    it will stand once every open lease of the user is judged), doubt routing and pushes, none
    of the user's open leases offered again (the judgments still being sent included). So a
    user holds at most ``AHEAD_MAX`` leases after the one judged now. Refused
    (ValidationFailed): a user who holds no live lease of ``ahead_of``, and ``held`` naming
    ``AHEAD_MAX`` items or more.
    """
    require(user=user, project=task.project, action="judge")
    if not task.active:
        raise ValidationFailed("this judgment task is closed")
    now = now or timezone.now()
    with transaction.atomic():
        ahead = _ahead_leases(task, user, now, ahead_of, held) if ahead_of is not None else None
        mine_id, pushed, gated, paused = _open_lease_and_pushes(task, user, now)
        if paused:
            raise Forbidden(gold.paused_message(task=task, user=user))
        if ahead is not None:  # the page's own queue, not the oldest open lease
            mine_id = ahead.answers[0] if ahead.answers else None
        if mine_id is not None:
            return Assignment.objects.select_related("item").get(pk=mine_id)
        found = _lease_new(
            task,
            user,
            now,
            _finders(task, pushed=pushed, gated=gated),
            gated=gated,
            skip=ahead.skip if ahead is not None else [],
            opened=ahead.opened if ahead is not None else None,
        )
        return found[0] if found is not None else None


def assignments_ahead_for_user(
    *,
    task: JudgmentTask,
    user: User,
    ahead_of: tuple[int, str],
    held: Sequence[str] = (),
    now: datetime | None = None,
) -> list[Assignment]:
    """Fill the judge page's queue in one request: the leases after ``ahead_of`` and after
    the items ``held`` (see :func:`assignment_next_for_user`), as many as the page still
    wants (:data:`AHEAD_MAX` minus ``len(held)``), in the task's order; fewer when the queue
    has no more for this user. Each is answered as :func:`assignment_next_for_user` answers
    one, naming the ones answered before it as held, under one transaction: the same rules
    (no item leased twice, at most :data:`AHEAD_MAX` ahead, gold schedule, units, pushes,
    doubt routing), the same locks, the same refusals (ValidationFailed: ``held`` naming
    :data:`AHEAD_MAX` items or more, or no live lease of ``ahead_of``)."""
    require(user=user, project=task.project, action="judge")
    if not task.active:
        raise ValidationFailed("this judgment task is closed")
    now = now or timezone.now()
    with transaction.atomic():
        # The user's open leases are read and locked, and the pushes, gate and pause read,
        # once for the whole fill; each new lease then costs only its own statements.
        ahead = _ahead_leases(task, user, now, ahead_of, held)
        _, pushed, gated, paused = _open_lease_and_pushes(task, user, now)
        if paused:
            raise Forbidden(gold.paused_message(task=task, user=user))
        want = AHEAD_MAX - len(held)
        ids = ahead.answers[:want]
        by_id = Assignment.objects.select_related("item").in_bulk(ids) if ids else {}
        answered = [by_id[pk] for pk in ids]
        skip, opened = list(ahead.skip), list(ahead.opened)
        finders = _finders(task, pushed=pushed, gated=gated)
        while len(answered) < want:
            found = _lease_new(task, user, now, finders, gated=gated, skip=skip, opened=opened)
            if found is None:
                break
            lease, row_id = found
            answered.append(lease)
            if row_id is not None:
                skip.append(row_id)
            opened.append((lease.item_id, lease.unit, lease.gold))
    return answered


#: The most keys one "give back" names (a page holds at most AHEAD_MAX; a few more may be
#: named by a page that held some before its queue was refilled).
RELEASE_MAX = 4 * AHEAD_MAX


def assignments_ahead_release(
    *, task: JudgmentTask, user: User, keys: Sequence[str], now: datetime | None = None
) -> int:
    """Give back the items (units) a judge page held leased ahead when it is left (closed,
    reloaded, or another page opened): the user's open leases in ``task`` of the items (unit
    keys) ``keys`` end now, so the items return to the pool at once instead of when the lease
    runs out, and the gold schedule no longer counts them. Only the user's own unsubmitted
    leases; a key naming nothing of theirs changes nothing. Answers how many ended.
    ValidationFailed: a key that is not an item id (a unit key, for a task with units)."""
    if not keys:
        return 0
    if len(keys) > RELEASE_MAX:
        raise ValidationFailed(
            f"held: {len(keys)} keys named; a page holds at most {AHEAD_MAX} items ahead, and "
            f"at most {RELEASE_MAX} are given back at once"
        )
    now = now or timezone.now()
    leases = Assignment.objects.filter(
        task=task, user=user, status=AssignmentStatus.ACTIVE, expires_at__gt=now
    )
    if task.has_units:
        leases = leases.filter(unit__in=[str(key) for key in keys])
    else:
        ids: list[int] = []
        for key in keys:
            if not (str(key).isascii() and str(key).isdigit() and len(str(key)) <= 18):
                raise ValidationFailed(f"held: {str(key)[:40]!r} is not the id of an item")
            ids.append(int(key))
        leases = leases.filter(item_id__in=ids, unit="")
    return leases.update(expires_at=now)


def _lease_new(
    task: JudgmentTask,
    user: User,
    now: datetime,
    finders: list[Any],
    *,
    gated: bool,
    skip: Collection[int],
    opened: Sequence[tuple[int, str, bool]] | None,
) -> tuple[Assignment, int | None] | None:
    """A new lease for ``user``: a gold item (unit) when one is due, else the first candidate
    of ``finders`` with a free place; with the candidate row it took (an item id, or a
    ``TaskUnit`` id; None for a gold unit, whose settled outcome keeps it out of the queue).
    ``skip``: candidate rows never answered; ``opened``: the user's open leases when leasing
    ahead (the gold schedule as it will stand once they are judged)."""
    if task.gold_rate:
        # A gold item (unit), when one is due (gold.py).
        lease = _lease_gold(task, user, now, opened=opened)
        if lease is not None:
            # The pull queue is searched all the same, so "next" takes as long for a gold
            # item (unit) as for any other (timing must not tell them apart).
            _finders(task, pushed=False, gated=gated)[0](
                task, user, now, list(skip), skip_locked=True
            )
            return lease, (None if lease.unit else lease.item_id)
    for find in finders:
        found = _lease_first(task, user, now, find, skip=skip)
        if found is not None:
            return found
    return None


def _finders(task: JudgmentTask, *, pushed: bool, gated: bool) -> list[Any]:
    """The candidate finders "next" tries, in order."""
    find = _unit_candidate if task.has_units else _candidate
    finders: list[Any] = [partial(find, gated=gated)]
    if task.serve_by_doubt:
        # Routing by doubt walks the doubt rows; an item (or unit) added by a path that
        # wrote none is served after them rather than never.
        finders.append(partial(find, gated=gated, unscored=True))
    if task.has_units and rater_order_seed(task) is not None:
        finders = [_shuffled_unit_candidate]
    if not task.has_units and pushed:
        # Items pushed to this user come first, then the pull queue.
        finders.insert(0, partial(_candidate, gated=gated, pushed=True))
    return finders


def page_key(item_id: int, unit: str) -> str:
    """How the judge page names an item (its id) or a unit (its key)."""
    return unit or str(item_id)


@dataclass(frozen=True)
class _Ahead:
    """The user's open leases, as leasing ahead reads them (their rows locked)."""

    #: The ids of the open leases taken after the current one that the page does not hold,
    #: in the order they were taken (none: a new lease is due).
    answers: list[int]
    #: The candidate rows of every open lease (item ids, or ``TaskUnit`` ids): never answered.
    skip: list[int]
    #: ``(item id, unit key, gold)`` of every open lease, in the order they were taken: the
    #: items judged before the one leased now.
    opened: list[tuple[int, str, bool]]


def _ahead_leases(
    task: JudgmentTask,
    user: User,
    now: datetime,
    ahead_of: tuple[int, str],
    held: Sequence[str],
) -> _Ahead:
    """Leasing ahead of ``ahead_of`` (see :func:`assignment_next_for_user`): the user's open
    leases in the task, and what to answer. The lease of ``ahead_of`` is locked, so two
    requests naming it (two tabs) take turns and the user never holds more than
    :data:`AHEAD_MAX` after it; the judgment of an earlier item being saved meanwhile is not
    waited for, except in a task with gold items, whose schedule counts every open lease as
    judged before the one leased now: there all of them are locked, so a judgment being saved
    is counted once (after its commit). ValidationFailed when the page holds
    :data:`AHEAD_MAX` items ahead already, or the user holds no live lease of ``ahead_of``."""
    if len(held) >= AHEAD_MAX:
        raise ValidationFailed(
            f"held: the page holds {len(held)} items ahead already; at most {AHEAD_MAX} are "
            "leased ahead of the one judged now"
        )
    leases = Assignment.objects.filter(
        task=task, user=user, status=AssignmentStatus.ACTIVE, expires_at__gt=now
    ).order_by("leased_at", "pk")
    if task.gold_rate:
        leases = leases.select_for_update()
    rows = list(leases.values_list("pk", "item_id", "unit", "gold"))
    item_id, unit = ahead_of
    at = next((n for n, row in enumerate(rows) if (row[1], row[2]) == (item_id, unit)), None)
    if at is None:
        what = f"unit {unit}" if unit else f"item {item_id}"
        raise ValidationFailed(
            f"after: you hold no open lease of {what} in this task, so nothing is leased ahead"
        )
    if not task.gold_rate:
        list(Assignment.objects.select_for_update().filter(pk=rows[at][0]).values_list("pk"))
    named = {str(key) for key in held}
    answers = [r[0] for r in rows[at + 1 :] if page_key(r[1], r[2]) not in named]
    if task.has_units:
        units = [row[2] for row in rows]
        skip = list(TaskUnit.objects.filter(task=task, key__in=units).values_list("pk", flat=True))
    else:
        skip = [row[1] for row in rows]
    return _Ahead(answers=answers, skip=skip, opened=[(r[1], r[2], r[3]) for r in rows])


def _open_lease_and_pushes(
    task: JudgmentTask, user: User, now: datetime
) -> tuple[int | None, bool, bool, bool]:
    """(the id of this user's oldest unexpired lease in the task, or None; whether items are
    pushed to this user and not taken yet; whether routing by doubt serves this user the least
    doubtful first, the reliability gate; whether a reviewer paused this user's queue in the
    task), in one statement: "next" asks them every time."""
    q = connection.ops.quote_name
    assignment, push, pause = (q(m._meta.db_table) for m in (Assignment, ItemPush, QueuePause))
    gate, gate_params = gated_sql(task, user)
    sql = (
        f"SELECT (SELECT a.id FROM {assignment} a WHERE a.task_id = %s AND a.user_id = %s "
        "AND a.status = %s AND a.expires_at > %s ORDER BY a.leased_at, a.id LIMIT 1), "
        f"EXISTS (SELECT 1 FROM {push} p WHERE p.task_id = %s AND p.user_id = %s "
        f"AND p.taken_at IS NULL), {gate}, "
        f"EXISTS (SELECT 1 FROM {pause} s WHERE s.task_id = %s AND s.user_id = %s "
        "AND s.resumed_at IS NULL)"
    )
    params: list[Any] = [
        task.pk, user.pk, AssignmentStatus.ACTIVE, now, task.pk, user.pk, task.pk, user.pk
    ]  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(sql, params[:6] + gate_params + params[6:])
        mine_id, pushed, gated, paused = cursor.fetchone()
    return mine_id, bool(pushed), bool(gated), bool(paused)


def item_next_guess(*, task: JudgmentTask, user: User, after: int) -> int | None:
    """The id of the item "next" would most likely lease for ``user`` once the item ``after``
    (the one they judge now) is judged: the first candidate in the queue's order other than
    ``after``, read without a lock and without a lease (nothing changes; by the time they ask,
    another annotator may have taken it). Items pushed to them come first, and a gold item the
    schedule serves next, as in :func:`assignment_next_for_user`. None for a task with units,
    a closed task, or a user who may not judge in the project."""
    if (
        task.has_units
        or not task.active
        or not can(user=user, project=task.project, action="judge")
    ):
        return None
    now = timezone.now()
    _, pushed, gated, _paused = _open_lease_and_pushes(task, user, now)
    if task.gold_rate:
        # A gold item due next is guessed too, or its images would load later than any
        # other item's (timing must not tell gold items apart).
        due = _gold_due_after(task, user, after)
        if due is not None:
            return due
    kinds: list[dict[str, bool]] = [{"pushed": True}] if pushed else []
    kinds.append({})
    if task.serve_by_doubt:
        kinds.append({"unscored": True})
    for kind in kinds:
        found = _candidate(
            task, user, now, [after], skip_locked=False, gated=gated, lock=False, **kind
        )
        if found is not None:
            return found[1]
    return None


def _gold_due_after(task: JudgmentTask, user: User, after: int) -> int | None:
    """The gold item the schedule serves next once ``after`` (the user's current item) is
    judged, or None."""
    is_gold = Assignment.objects.filter(
        task=task, user=user, item_id=after, unit="", status=AssignmentStatus.ACTIVE, gold=True
    ).exists()
    state = _gold_state_after(task, user, [(after, "", is_gold)])
    return state.open_ids[0] if state.due else None


def _gold_state_after(
    task: JudgmentTask, user: User, opened: Sequence[tuple[int, str, bool]]
) -> gold.GoldState:
    """The user's gold schedule as it will be once the items (units) ``opened`` (``(item id,
    unit key, gold)``, in the order they are judged: their open leases) are judged: a gold one
    starts the count again, any other adds one."""
    from dataclasses import replace

    state = gold.gold_state(task=task, user=user)
    since, served_before = state.since, state.served_before
    for _item_id, _unit, is_gold in opened:
        since, served_before = (0, True) if is_gold else (since + 1, served_before)
    keys = {(item_id, unit) for item_id, unit, _ in opened}
    return replace(
        state,
        since=since,
        served_before=served_before,
        open_keys=tuple(key for key in state.open_keys if key not in keys),
    )


def assignments_live(*, task: JudgmentTask, now: datetime) -> QuerySet[Assignment]:
    """The task's assignments that count towards the overlap (submitted, or leased and not
    expired)."""
    return Assignment.objects.filter(_live(task, now))


def _lease_gold(
    task: JudgmentTask,
    user: User,
    now: datetime,
    *,
    opened: Sequence[tuple[int, str, bool]] | None = None,
) -> Assignment | None:
    """Lease a gold item (or unit) to ``user`` when their schedule says one is due (see
    :mod:`annotation.judgment_tasks.gold`), its row locked as the pull queue locks its
    candidates (the item's, or the unit's ``TaskUnit``). Gold items take no place of the
    overlap (their outcome is settled). ``opened``: the user's open leases (leasing ahead):
    the schedule as it will stand once they are judged."""
    if opened is not None:
        state = _gold_state_after(task, user, opened)
    else:
        state = gold.gold_state(task=task, user=user)
    if not state.due:
        return None
    found = gold.gold_item_lock(task=task, state=state, skip_locked=True)
    if found is None:
        found = gold.gold_item_lock(task=task, state=state, skip_locked=False)
    if found is None:
        return None
    item_id, unit = found
    return _lease(task=task, user=user, item_id=item_id, unit=unit, now=now, gold=True)


def _lease_first(
    task: JudgmentTask, user: User, now: datetime, find: Any, *, skip: Collection[int] = ()
) -> tuple[Assignment, int] | None:
    """Lease the first candidate ``find`` answers that still has a free place once locked,
    and answer it with its candidate row's id; ``skip``: candidate rows never answered (the
    user's open leases, when leasing ahead)."""
    skip = list(skip)
    while True:
        # Prefer one nobody else is locking; if every candidate is locked right now,
        # wait for the first one instead of answering "nothing left".
        found = find(task, user, now, skip, skip_locked=True)
        if found is None:
            found = find(task, user, now, skip, skip_locked=False)
        if found is None:
            return None
        row_id, item_id, unit = found
        # Counted again once the row lock is held, in a fresh statement.
        if _places_taken(task, user, item_id, unit, now) < task.overlap:
            return _lease(task=task, user=user, item_id=item_id, unit=unit, now=now), row_id
        skip.append(row_id)


def _places_taken(task: JudgmentTask, user: User, item_id: int, unit: str, now: datetime) -> int:
    """The places of an item (or unit) taken: its live assignments, plus (for an item) the
    places held by untaken pushes of it to people other than ``user``; one statement."""
    q = connection.ops.quote_name
    assignment, push = (q(m._meta.db_table) for m in (Assignment, ItemPush))
    sql = (
        f"SELECT (SELECT COUNT(*) FROM {assignment} a WHERE a.task_id = %s AND a.item_id = %s "
        "AND a.unit = %s AND (a.status = %s OR (a.status = %s AND a.expires_at > %s)))"
    )
    params: list[Any] = [
        task.pk, item_id, unit, AssignmentStatus.SUBMITTED, AssignmentStatus.ACTIVE, now,
    ]  # fmt: skip
    if not task.has_units:
        sql += (
            f" + (SELECT COUNT(*) FROM {push} p WHERE p.task_id = %s AND p.item_id = %s "
            "AND p.taken_at IS NULL AND p.user_id <> %s)"
        )
        params += [task.pk, item_id, user.pk]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return int(cursor.fetchone()[0])


def _candidate(
    task: JudgmentTask,
    user: User,
    now: datetime,
    skip: list[int],
    *,
    skip_locked: bool,
    gated: bool = False,
    pushed: bool = False,
    unscored: bool = False,
    lock: bool = True,
) -> tuple[int, int, str] | None:
    """The first item (in position order) that this user has not judged, that the task has
    not settled and that has fewer than ``overlap`` live assignments plus places held by
    untaken pushes to other people; its row stays locked. Answers ``(item id, item id, "")``.
    A task that takes only listed items offers only those; ``pushed``: only the items pushed
    to this user and not yet taken. A task that serves items by doubt walks its doubt rows
    instead (``annotation.judgment_tasks.doubt.queue``; ``gated``: least doubtful first); ``unscored``: only
    the items without a doubt row, in position order. ``lock=False``: a read
    that locks nothing (a guess).

    Plain SQL: this runs on every "next item", and building the same query through the ORM
    cost more than the database took to answer it."""
    q = connection.ops.quote_name
    item, assignment, outcome, push, listed = (
        q(m._meta.db_table) for m in (Item, Assignment, Outcome, ItemPush, TaskItem)
    )
    where = [
        "i.project_id = %s",
        "i.status <> %s",
        f"NOT EXISTS (SELECT 1 FROM {assignment} a WHERE a.task_id = %s AND a.item_id = i.id "
        "AND a.user_id = %s AND a.status = %s)",
        f"NOT EXISTS (SELECT 1 FROM {outcome} o WHERE o.task_id = %s AND o.item_id = i.id "
        "AND o.verdict <> %s)",
        f"(SELECT COUNT(*) FROM {assignment} a WHERE a.task_id = %s AND a.item_id = i.id "
        "AND (a.status = %s OR (a.status = %s AND a.expires_at > %s))) "
        f"+ (SELECT COUNT(*) FROM {push} p WHERE p.task_id = %s AND p.item_id = i.id "
        "AND p.taken_at IS NULL AND p.user_id <> %s) < %s",
    ]
    params: list[Any] = [
        task.project_id, ItemStatus.DISCARDED,
        task.pk, user.pk, AssignmentStatus.SUBMITTED,
        task.pk, Verdict.PENDING,
        task.pk, AssignmentStatus.SUBMITTED, AssignmentStatus.ACTIVE, now,
        task.pk, user.pk, task.overlap,
    ]  # fmt: skip
    if task.items_listed:
        where.append(f"EXISTS (SELECT 1 FROM {listed} t WHERE t.task_id = %s AND t.item_id = i.id)")
        params.append(task.pk)
    if pushed:
        where.append(
            f"EXISTS (SELECT 1 FROM {push} p WHERE p.task_id = %s AND p.item_id = i.id "
            "AND p.user_id = %s AND p.taken_at IS NULL)"
        )
        params += [task.pk, user.pk]
    if task.updates_item_status:
        # A task that decides item status verifies drafts: items it (or anything else) has
        # already verified, disputed or discarded are not offered again. This also keeps
        # "next item" fast late in a project, when most items are settled.
        where.append("i.status = %s")
        params.append(ItemStatus.DRAFT)
    if not task.author_may_judge:
        # Not the item's author: "user:<name>", "drafted by <name>" or "written by <name>",
        # maybe with more words.
        whole, prefixes = solving.author_provenance(user.get_username())
        where.append(f"i.provenance NOT IN ({', '.join(['%s'] * len(whole))})")
        params += whole
        for prefix in prefixes:
            where.append("i.provenance NOT LIKE %s ESCAPE '!'")
            params.append(re.sub(r"([!%_])", r"!\1", prefix) + "%")
    if skip:
        where.append(f"i.id NOT IN ({', '.join(['%s'] * len(skip))})")
        params.extend(skip)
    source, order = f"{item} i", "i.position, i.id"
    source_params: list[Any] = []
    if unscored:
        no_row, no_row_params = unscored_sql(task, item="i.id", unit="''")
        where.append(no_row)
        params += no_row_params
    elif pushed and task.serve_by_doubt:  # few items: driven by the pushes, ordered by doubt
        join, source_params, by_doubt = doubt_join(task, gated=gated, item="i.id", unit="''")
        source, order = f"{item} i{join}", f"{by_doubt}i.position, i.id"
    elif task.serve_by_doubt:  # walk the doubt index; the first free row ends the walk
        source, order = doubt_walk(task, gated=gated, row=f"{item} i", on="i.id = d.item_id")
        where[:0] = ["d.task_id = %s", f"d.{q('unit')} = ''"]
        params[:0] = [task.pk]
    sql = f"SELECT i.id FROM {source} WHERE {' AND '.join(where)} ORDER BY {order} LIMIT 1"
    if lock and connection.features.has_select_for_update:
        sql += " FOR UPDATE OF i" + (" SKIP LOCKED" if skip_locked else "")
    with connection.cursor() as cursor:
        cursor.execute(sql, source_params + params)
        row = cursor.fetchone()
    return (row[0], row[0], "") if row else None


def _unit_where(
    task: JudgmentTask, user: User, now: datetime, skip: list[int]
) -> tuple[list[str], list[Any]]:
    """The conditions on a task's units ``u`` that :func:`_unit_candidate` offers."""
    q = connection.ops.quote_name
    assignment, outcome = (q(m._meta.db_table) for m in (Assignment, Outcome))
    where = [
        "u.task_id = %s",
        f"NOT EXISTS (SELECT 1 FROM {assignment} a WHERE a.task_id = %s AND a.item_id = u.item_id "
        "AND a.unit = u.key AND a.user_id = %s AND a.status = %s)",
        f"NOT EXISTS (SELECT 1 FROM {outcome} o WHERE o.task_id = %s AND o.item_id = u.item_id "
        "AND o.unit = u.key AND o.verdict <> %s)",
        f"(SELECT COUNT(*) FROM {assignment} a WHERE a.task_id = %s AND a.item_id = u.item_id "
        "AND a.unit = u.key AND (a.status = %s OR (a.status = %s AND a.expires_at > %s))) < %s",
    ]
    params: list[Any] = [
        task.pk,
        task.pk, user.pk, AssignmentStatus.SUBMITTED,
        task.pk, Verdict.PENDING,
        task.pk, AssignmentStatus.SUBMITTED, AssignmentStatus.ACTIVE, now, task.overlap,
    ]  # fmt: skip
    if skip:
        where.append(f"u.id NOT IN ({', '.join(['%s'] * len(skip))})")
        params.extend(skip)
    return where, params


def _unit_candidate(
    task: JudgmentTask,
    user: User,
    now: datetime,
    skip: list[int],
    *,
    skip_locked: bool,
    gated: bool = False,
    unscored: bool = False,
) -> tuple[int, int, str] | None:
    """:func:`_candidate` for a task with units: the first of the task's units (in position
    order) that this user has not judged, that is not settled and that has fewer than
    ``overlap`` live assignments; its ``TaskUnit`` row stays locked. Answers ``(TaskUnit id,
    item id, unit key)``. Units are rated whatever their item's status or author: the task
    rates answers and judge reports, it does not verify items."""
    q = connection.ops.quote_name
    unit = q(TaskUnit._meta.db_table)
    where, params = _unit_where(task, user, now, skip)
    source, order = f"{unit} u", "u.position, u.id"
    if unscored:
        no_row, no_row_params = unscored_sql(task, item="u.item_id", unit=f"u.{q('key')}")
        where.append(no_row)
        params += no_row_params
    elif task.serve_by_doubt:  # walk the doubt index; the first free row ends the walk
        source, order = doubt_walk(
            task,
            gated=gated,
            row=f"{unit} u",
            on=f"u.task_id = d.task_id AND u.{q('key')} = d.{q('unit')}",
        )
        where[:0] = ["d.task_id = %s"]
        params[:0] = [task.pk]
    sql = (
        f"SELECT u.id, u.item_id, u.{q('key')} FROM {source} WHERE {' AND '.join(where)} "
        f"ORDER BY {order} LIMIT 1"
    )
    if connection.features.has_select_for_update:
        sql += " FOR UPDATE OF u" + (" SKIP LOCKED" if skip_locked else "")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return (row[0], row[1], row[2]) if row else None


def rater_order_seed(task: JudgmentTask) -> int | None:
    """The seed of a task whose units each rater meets in an order of their own
    (``unit_params["rater_order_seed"]``, response-level evaluation); None: position order."""
    seed = (task.unit_params or {}).get("rater_order_seed") if task.has_units else None
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else None


def rater_rank(*, seed: int, user_id: int, key: str) -> int:
    """Where a unit comes in one rater's order: a hash of (task seed, rater, unit key), so the
    order is random-looking, differs between raters, and is the same every time for one rater
    (it does not depend on which units are still open)."""
    digest = hashlib.blake2b(f"{seed}:{user_id}:{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def _shuffled_unit_candidate(
    task: JudgmentTask, user: User, now: datetime, skip: list[int], *, skip_locked: bool
) -> tuple[int, int, str] | None:
    """:func:`_unit_candidate` in the rater's own order (:func:`rater_rank`) instead of the
    units' positions: the open units are read, ranked here, and the first one that can be
    locked is answered, its row locked."""
    q = connection.ops.quote_name
    unit = q(TaskUnit._meta.db_table)
    where, params = _unit_where(task, user, now, skip)
    sql = f"SELECT u.id, u.item_id, u.{q('key')} FROM {unit} u WHERE {' AND '.join(where)}"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    seed = rater_order_seed(task) or 0
    rows.sort(key=lambda row: (rater_rank(seed=seed, user_id=user.pk, key=row[2]), row[0]))
    if not connection.features.has_select_for_update:
        return (rows[0][0], rows[0][1], rows[0][2]) if rows else None
    lock = f"SELECT u.id FROM {unit} u WHERE u.id = %s FOR UPDATE OF u" + (
        " SKIP LOCKED" if skip_locked else ""
    )
    with connection.cursor() as cursor:
        for row in rows:
            cursor.execute(lock, [row[0]])
            if cursor.fetchone() is not None:
                return (row[0], row[1], row[2])
    return None


def verification_begin(*, task: JudgmentTask, item_id: int) -> Outcome | None:
    """Inside a transaction, when an item is leased for a solve task: record the answer the
    verification is decided against, once (the item is read again here, never taken from a
    caller, whose copy may have the answer hidden). Other tasks: nothing."""
    if not solving.is_solve_task(task):
        return None
    outcome, _ = Outcome.objects.select_for_update().get_or_create(task=task, item_id=item_id)
    if outcome.answer_snapshot is None:
        outcome.answer_snapshot = solving.golden_answer(Item.objects.get(pk=item_id))
        outcome.save(update_fields=["answer_snapshot", "updated_at"])
    return outcome


def _lease(
    *,
    task: JudgmentTask,
    user: User,
    item_id: int,
    now: datetime,
    unit: str = "",
    gold: bool = False,
) -> Assignment:
    """One statement: a new lease, or the renewal of this user's own expired one. The first
    lease of an item for a blind solve task records the answer its verification is decided
    against (``verification_begin``). ``gold``: the item is served as a gold item."""
    lease = Assignment(
        task=task,
        user=user,
        item_id=item_id,
        unit=unit,
        status=AssignmentStatus.ACTIVE,
        leased_at=now,
        expires_at=now + timedelta(minutes=task.lease_minutes),
        gold=gold,
    )
    Assignment.objects.bulk_create(
        [lease],
        update_conflicts=True,
        unique_fields=["task", "item", "unit", "user"],
        update_fields=["status", "leased_at", "expires_at", "gold"],
    )
    if lease.pk is None:  # a backend that does not return ids on conflict
        lease = Assignment.objects.get(task=task, item_id=item_id, unit=unit, user=user)
    if not unit:  # a push of this item to this user is taken now
        ItemPush.objects.filter(
            task=task, item_id=item_id, user=user, taken_at__isnull=True
        ).update(taken_at=now)
    if not gold:
        verification_begin(task=task, item_id=item_id)
    elif solving.is_solve_task(task):
        # A gold item's outcome is settled: nothing to begin, but its row is read as a later
        # verifier's lease of any item reads it, so timing does not tell gold items apart.
        Outcome.objects.select_for_update().filter(task=task, item_id=item_id).first()
    return lease


def _score_field(entry: dict[str, Any], raw: Any) -> int:
    """One field of a ``scores`` judgment: a whole number within the field's bounds."""
    name = entry.get("label") or entry["value"]
    low, high = entry.get("min"), entry.get("max")
    bounds = f"{low} to {high}" if high is not None else f"{low} or more"
    value = raw
    if isinstance(raw, str) and re.fullmatch(r"\s*-?\d+\s*", raw):
        value = int(raw)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationFailed(f"{name}: {raw!r} is not a whole number ({bounds})")
    if low is not None and value < low:
        raise ValidationFailed(f"{name}: {value} is below {low} (give {bounds})")
    if high is not None and value > high:
        raise ValidationFailed(f"{name}: {value} is above {high} (give {bounds})")
    return value


def _check_scores(task: JudgmentTask, value: Any) -> dict[str, int]:
    """A ``scores`` judgment: an object with exactly the task's fields, each a whole number
    within its bounds (a JSON text of one is read)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            pass
    names = [e["value"] for e in task.labels]
    if not isinstance(value, dict):
        raise ValidationFailed(f"give one score for each of {', '.join(names)} (an object)")
    unknown = [k for k in value if k not in names]
    if unknown:
        raise ValidationFailed(
            f"unknown score {', '.join(map(repr, unknown))}; the scores are {', '.join(names)}"
        )
    missing = [
        e.get("label") or e["value"] for e in task.labels if value.get(e["value"]) in (None, "")
    ]
    if missing:
        raise ValidationFailed(f"missing score: {', '.join(missing)}")
    return {e["value"]: _score_field(e, value[e["value"]]) for e in task.labels}


def _check_value(task: JudgmentTask, value: Any, reason: str) -> Any:
    if task.scheme == Scheme.SCORES:
        return _check_scores(task, value)
    if task.scheme == Scheme.NUMBER:
        if isinstance(value, bool) or not isinstance(value, int | float):
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise ValidationFailed(f"{value!r} is not a number") from None
        return value
    if task.scheme == Scheme.TEXT:
        if not isinstance(value, str) or not value.strip():
            raise ValidationFailed("the answer is empty")
        return value.strip()
    return _check_label(task, value, reason)


def _check_label(task: JudgmentTask, value: Any, reason: str) -> Any:
    """A value of a binary, nominal or ordinal scale: one of the labels (a number may come
    as its text), with a reason where the label asks for one."""
    allowed = task.label_values
    for candidate in allowed:
        if value == candidate or (isinstance(candidate, int) and str(value) == str(candidate)):
            value = candidate
            break
    else:
        raise ValidationFailed(
            f"{value!r} is not one of the labels: {', '.join(map(str, allowed))}"
        )
    if task.scheme == Scheme.NOMINAL:
        entry = next(e for e in task.labels if e["value"] == value)
        reasons = entry.get("reasons") or []
        if reasons and reason not in reasons:
            raise ValidationFailed(f"choose a reason for {value!r}: {', '.join(reasons)}")
    return value


def judgment_submit(
    *,
    task: JudgmentTask,
    item: Item,
    user: User,
    value: Any,
    reason: str = "",
    comment: str = "",
    relabel: dict[str, str] | None = None,
    seconds: float = 0,
    unit: str = "",
) -> Judgment:
    """Record one annotator's judgment of an item (or of one ``unit`` of it, for a task with
    units). Submitting the same judgment twice is harmless (the first stands); judging an
    item or unit not leased to you is refused."""
    return judgment_submit_once(
        task=task,
        item=item,
        user=user,
        value=value,
        reason=reason,
        comment=comment,
        relabel=relabel,
        seconds=seconds,
        unit=unit,
    )[0]


def _check_unit(task: JudgmentTask, item: Item, unit: str) -> None:
    """A task with units is judged unit by unit, and only its own units; an item-level task
    has none."""
    if not task.has_units:
        if unit:
            raise ValidationFailed(
                f"task {task.name!r} judges whole items; it has no unit {unit!r}"
            )
        return
    if not unit:
        raise ValidationFailed(
            f"task {task.name!r} is judged unit by unit: say which unit (response:<id>:<label>)"
        )
    if not TaskUnit.objects.filter(task=task, item=item, key=unit).exists():
        raise ValidationFailed(f"unit {unit!r} of item {item.pk} is not part of task {task.name!r}")


def _check_relabel(
    task: JudgmentTask, item: Item, relabel: dict[str, str] | None
) -> dict[str, str]:
    """The relabel proposals of a judgment (blank ones left out), checked against the project's
    taxonomy: each changed value must be a term of its kind there, and a changed category or
    intent given must make a pair the taxonomy knows (listed under the category the item has
    after the relabel). Values equal to the item's own are not changes and pass as they
    are (imported items may pair category and intent in ways the taxonomy does not)."""
    relabel = {k: v for k, v in (relabel or {}).items() if v not in (None, "")}
    unknown = set(relabel) - set(task.relabel_fields)
    if unknown:
        raise ValidationFailed(f"this task does not relabel {', '.join(sorted(unknown))}")
    changed = {k: v for k, v in relabel.items() if v != (getattr(item, k, "") or "")}
    taxonomy_id = task.project.taxonomy_id
    if not changed or taxonomy_id is None:
        return relabel
    parents: dict[tuple[str, str], set[str]] = {}
    rows = TaxonomyTerm.objects.filter(taxonomy_id=taxonomy_id, kind__in=set(changed)).values_list(
        "kind", "name", "parent__name"
    )
    for kind, name, parent in rows:
        parents.setdefault((kind, name), set()).update([parent] if parent else [])
    for field, value in sorted(changed.items()):
        if (field, value) not in parents:
            known = sorted(name for kind, name in parents if kind == field)
            hint = (
                f" (its {field} terms: {', '.join(known[:12])}{', ...' if len(known) > 12 else ''})"
            )
            raise ValidationFailed(
                f"relabel {field}: {value!r} is not a term of the project's taxonomy"
                + (hint if known else "")
            )
    if "intent" in relabel and {"category", "intent"} & set(changed):
        _check_relabel_pair(taxonomy_id, item, relabel, parents)
    return relabel


def _check_relabel_pair(
    taxonomy_id: int, item: Item, relabel: dict[str, str], parents: dict[tuple[str, str], set[str]]
) -> None:
    """The pair proposed (an intent given with a changed category, or a changed intent): the
    intent must sit under the category the item has after the relabel."""
    category = relabel.get("category") or item.category or ""
    intent = relabel["intent"]
    of_intent = parents.get(("intent", intent))
    if of_intent is None:
        of_intent = set(
            TaxonomyTerm.objects.filter(taxonomy_id=taxonomy_id, kind="intent", name=intent)
            .exclude(parent=None)
            .values_list("parent__name", flat=True)
        )
    if of_intent and category and category not in of_intent:
        raise ValidationFailed(
            f"relabel intent: {intent!r} is not an intent of the category {category!r} "
            f"(it belongs to {', '.join(sorted(of_intent))}); choose one of the "
            f"intents of {category!r}"
        )


def judgment_submit_once(
    *,
    task: JudgmentTask,
    item: Item,
    user: User,
    value: Any,
    reason: str = "",
    comment: str = "",
    relabel: dict[str, str] | None = None,
    seconds: float = 0,
    unit: str = "",
) -> tuple[Judgment, bool]:
    """:func:`judgment_submit`, also saying whether this call recorded the judgment (False:
    one was already recorded, and it stands unchanged)."""
    relabel = _check_relabel(task, item, relabel)
    _check_unit(task, item, unit)
    with transaction.atomic():
        assignment = (
            Assignment.objects.select_for_update()
            .filter(task=task, item=item, unit=unit, user=user)
            .first()
        )
        if assignment is None:
            raise Forbidden(f"this {'unit' if unit else 'item'} is not assigned to you")
        # A judgment is only ever stored with its assignment marked submitted (below, in one
        # transaction, the assignment row locked), so an active lease has none to look for.
        if assignment.status == AssignmentStatus.SUBMITTED:
            existing = Judgment.with_gold.filter(assignment=assignment).first()
            if existing is not None:
                return existing, False
        value = _check_value(task, value, reason)
        now = timezone.now()
        if assignment.expires_at <= now:
            taken = (
                Assignment.objects.filter(_live(task, now), item=item, unit=unit).exclude(
                    pk=assignment.pk
                )
            ).count()
            if taken >= task.overlap:
                raise Conflict(
                    f"your lease expired and the {'unit' if unit else 'item'} was judged by "
                    "others meanwhile"
                )
        try:
            judgment = Judgment.objects.create(
                task=task,
                item=item,
                unit=unit,
                user=user,
                assignment=assignment,
                value=value,
                reason=reason,
                comment=comment,
                relabel=relabel,
                seconds=max(0.0, float(seconds or 0)),
                gold=assignment.gold,
            )
        except IntegrityError:
            raise Conflict("a judgment of yours for this item already exists") from None
        assignment.status = AssignmentStatus.SUBMITTED
        assignment.submitted_at = now
        assignment.save(update_fields=["status", "submitted_at"])
        if not judgment.gold:  # a gold judgment never enters the outcome
            outcome_recompute(task=task, item=item, unit=unit)
        else:
            _outcome_read_as_recompute(task=task, item=item, unit=unit)
    return judgment, True


def _outcome_read_as_recompute(*, task: JudgmentTask, item: Item, unit: str) -> None:
    """For a gold judgment, which changes no outcome: the reads ``outcome_recompute`` makes
    (the outcome row locked, its judgments and their credits), so a submit takes about as
    long for a gold item as for any other (timing must not tell them apart)."""
    Outcome.objects.select_for_update().filter(task=task, item=item, unit=unit).first()
    rows = Judgment.objects.filter(task=task, item=item, unit=unit).order_by("created_at")
    list(rows.values_list("pk", "item_id", "unit", "value", "agrees", "relabel"))
    list(
        Outcome.objects.filter(task=task, item=item, unit=unit, verdict__in=SETTLED).values_list(
            "item_id", "unit", "verdict", "value"
        )
    )


def judgment_edit(
    *,
    task: JudgmentTask,
    item: Item,
    user: User,
    version: int,
    value: Any,
    reason: str = "",
    comment: str = "",
    relabel: dict[str, str] | None = None,
    seconds: float = 0,
    unit: str = "",
    now: datetime | None = None,
) -> Judgment:
    """Change one's own judgment after an undo: allowed while the item's (or unit's) outcome
    is pending and for ``JUDGMENT_UNDO_MINUTES`` after it was submitted (see
    :mod:`annotation.judgment_tasks.undo`). The values it had are kept as a
    :class:`JudgmentVersion` (its ``number``) and its ``version`` goes up by one; ``version`` is the one the
    page showed, so a change made meanwhile in another window is answered with a conflict.
    The outcome is decided again from the changed judgment."""
    relabel = _check_relabel(task, item, relabel)
    _check_unit(task, item, unit)
    what = "unit" if unit else "item"
    with transaction.atomic():
        judgment = (
            Judgment.with_gold.select_for_update()
            .filter(task=task, item=item, unit=unit, user=user)
            .first()
        )
        if judgment is None:
            raise Forbidden(f"you have no judgment of this {what} to change")
        now = now or timezone.now()
        verdict = (  # locked: no other judgment settles it while this one changes
            Outcome.objects.select_for_update()
            .filter(task=task, item=item, unit=unit)
            .values_list("verdict", flat=True)
            .first()
        )
        if judgment.gold:  # outside the outcome: changed as a pending one would be
            verdict = None
        refusal = change_refusal(submitted_at=judgment.created_at, verdict=verdict, now=now)
        if refusal:
            raise Conflict(refusal)
        if judgment.version != version:
            raise Conflict(
                f"you changed this judgment in another window meanwhile (it is at version "
                f"{judgment.version}, value {judgment.value!r}); open the {what} again to see it"
            )
        value = _check_value(task, value, reason)
        JudgmentVersion.objects.create(
            judgment=judgment,
            number=judgment.version,
            author=judgment.user,
            created_at=judgment.edited_at or judgment.created_at,
            value=judgment.value,
            reason=judgment.reason,
            comment=judgment.comment,
            relabel=judgment.relabel,
            seconds=judgment.seconds,
            replaced_at=now,
        )
        judgment.value, judgment.reason, judgment.comment = value, reason, comment
        judgment.relabel = relabel
        judgment.seconds = judgment.seconds + max(0.0, float(seconds or 0))
        judgment.version += 1
        judgment.edited_at = now
        judgment.save(
            update_fields=["value", "reason", "comment", "relabel", "seconds", "version",
                           "edited_at"]
        )  # fmt: skip
        if not judgment.gold:
            outcome_recompute(task=task, item=item, unit=unit)
    return judgment


def judgment_agreement_sync(
    *, task: JudgmentTask, item_ids: Collection[int] | None = None, unit: str | None = None
) -> int:
    """Store on the judgments of ``task`` (of ``item_ids`` and ``unit`` when given, else all)
    their credit for agreeing with the settled outcome (``Judgment.agrees``, None while it is
    not settled), in bulk: every writer of an outcome calls it in its transaction, so the team
    page sums the credits. Answers the number of judgments changed."""
    outcomes = Outcome.objects.filter(task=task, verdict__in=SETTLED)
    judgments = Judgment.objects.filter(task=task)
    if item_ids is not None:
        outcomes, judgments = (
            outcomes.filter(item_id__in=item_ids),
            judgments.filter(item_id__in=item_ids),
        )
    if unit is not None:
        outcomes, judgments = outcomes.filter(unit=unit), judgments.filter(unit=unit)
    settled = {
        (item_id, u): (verdict, value)
        for item_id, u, verdict, value in outcomes.values_list(
            "item_id", "unit", "verdict", "value"
        )
    }
    rows = list(judgments.order_by().values_list("pk", "item_id", "unit", "value", "agrees"))
    changed = 0
    for credit, ids in agreement_credits(task.scheme, settled, rows).items():
        for start in range(0, len(ids), 900):
            changed += Judgment.objects.filter(pk__in=ids[start : start + 900]).update(
                agrees=credit
            )
    return changed


def outcome_recompute(*, task: JudgmentTask, item: Item, unit: str = "") -> Outcome:
    """Apply the consensus rule once ``overlap`` judgments are in; a reviewer's decision stands.
    The item's judgments follow with their agreement credit (``judgment_agreement_sync``)."""
    outcome, rows = _outcome_recompute(task=task, item=item, unit=unit)
    if rows is None:
        judgment_agreement_sync(task=task, item_ids=[item.pk], unit=unit)
    else:  # the item's judgments were read already: their credits from those rows
        _agreement_sync_rows(task, outcome, [r[:5] for r in rows])
    if task.serve_by_doubt:  # routing by doubt: the item's doubt follows its judgments
        item_doubt_update(task=task, item_id=item.pk, unit=unit)
    return outcome


def _agreement_sync_rows(
    task: JudgmentTask, outcome: Outcome, rows: list[tuple[int, int, str, Any, float | None]]
) -> None:
    """:func:`judgment_agreement_sync` of one outcome's judgments, given as (id, item id,
    unit, value, stored credit) rows read in the same transaction (the outcome row locked)."""
    settled = {}
    if outcome.verdict in SETTLED:
        settled[(outcome.item_id, outcome.unit)] = (outcome.verdict, outcome.value)
    for credit, ids in agreement_credits(task.scheme, settled, rows).items():
        Judgment.objects.filter(pk__in=ids).update(agrees=credit)


def _outcome_recompute(
    *, task: JudgmentTask, item: Item, unit: str = ""
) -> tuple[Outcome, list[tuple[Any, ...]] | None]:
    """(the outcome, the judgments it was decided from as (id, item id, unit, value, stored
    credit, relabel) rows; None when a decision stands and they were not read)."""
    outcome, _ = Outcome.objects.select_for_update().get_or_create(task=task, item=item, unit=unit)
    if outcome.decided_by_id is not None or outcome.verdict == "discarded":
        return outcome, None
    rows = list(
        Judgment.objects.filter(task=task, item=item, unit=unit)
        .order_by("created_at")
        .values_list("pk", "item_id", "unit", "value", "agrees", "relabel")
    )
    values = [r[3] for r in rows]
    matches_author = None
    author_value: Any = None
    if solving.is_solve_task(task):
        # Blind solving: compare as the benchmark scores (answer, variants, match type), with
        # the answer recorded when verification began (not the caller's copy of the item,
        # whose answer may be hidden from the user, nor a later edit).
        if outcome.answer_snapshot is None:
            outcome.answer_snapshot = solving.golden_answer(Item.objects.get(pk=item.pk))
        matches_author = partial(solving.answer_matches, outcome.answer_snapshot)
        author_value = outcome.answer_snapshot.get("value")
    elif task.consensus == Rule.AUTHOR_PLUS_TWO:
        author_value = Item.objects.values_list("expected_answer", flat=True).get(pk=item.pk)
    result = decide(
        Rule(task.consensus),
        values,
        needed=task.overlap,
        accept=task.accepts,
        required=task.required_value,
        author_value=author_value,
        matches_author=matches_author,
    )
    outcome.verdict, outcome.value, outcome.reason = result.verdict, result.value, result.reason
    outcome.decided_at = timezone.now() if result.verdict != Verdict.PENDING else None
    if result.verdict == Verdict.ACCEPTED and task.relabel_fields:
        outcome.relabel = _apply_relabels(task, item, [r[5] for r in rows])
    outcome.save()
    if task.updates_item_status and not task.has_units:
        item_follows_outcome(item, outcome.verdict, outcome.reason, task=task)
    return outcome, rows


def _apply_relabels(
    task: JudgmentTask, item: Item, proposals: list[Any]
) -> dict[str, dict[str, str]]:
    """Where more than half of the judgments (their ``relabel`` ``proposals``) propose the
    same new value for a field (category, intent), the item takes it; returns what
    changed. The row is read again under a lock and saved (``item`` is the caller's read,
    which may be one that cannot be saved); ``item`` shows the new values too."""
    changed: dict[str, dict[str, str]] = {}
    for field in task.relabel_fields:
        votes = Counter(p.get(field) for p in proposals if p.get(field))
        if not votes:
            continue
        value, n = votes.most_common(1)[0]
        current = getattr(item, field, "")
        if n * 2 > len(proposals) and value != current:
            changed[field] = {"from": current, "to": value}
    if changed:
        locked = Item.objects.select_for_update().get(pk=item.pk)
        for field, change in changed.items():
            setattr(locked, field, change["to"])
            setattr(item, field, change["to"])
        locked.save(update_fields=[*changed, "updated_at"])
    return changed


def item_follows_outcome(
    item: Item,
    verdict: str,
    reason: str,
    *,
    task: JudgmentTask | None = None,
    reviewer: User | None = None,
) -> None:
    """Set the item's status from an outcome, recorded as a status change: by ``reviewer``
    when one decided, else by the consensus rule of ``task``."""
    status = {
        Verdict.ACCEPTED: ItemStatus.VERIFIED,
        Verdict.REJECTED: ItemStatus.DISCARDED,
        Verdict.DISPUTED: ItemStatus.IN_REVIEW,
        "discarded": ItemStatus.DISCARDED,
    }.get(verdict)
    if status is None:
        return
    rule = (
        f"consensus ({task.consensus}) of judgment task {task.name!r}"
        if task is not None
        else "judgment outcome"
    )
    item_status_set(
        item=item,
        user=reviewer,
        status=status,
        reason=(reason or verdict) if status == ItemStatus.DISCARDED else reason,
        rule=rule,
    )


def judgment_task_ensure_defaults(*, project: Any) -> list[JudgmentTask]:
    """The judgment task the project's benchmark prescribes (``project.benchmark
    .default_task``: m&m's plan validity, ATP-Bench query verification, Agentic-MME's blind
    solving), created once per project."""
    task = project.benchmark.default_task
    if task is None:
        return []
    made, _ = JudgmentTask.objects.get_or_create(
        project=project, name=task.name, defaults=dict(task.settings)
    )
    return [made]


def _keep_unit_scale(task: JudgmentTask) -> None:
    """A task with units never sets items' status (an item has many units). Rating a judge
    or a criterion is on the 0-2 scale (its ratings are compared with the judge's); any other
    unit task keeps the scale, labels and rule it was created with (a response-level
    evaluation's scale is what its results are computed from), and its name and question
    never name the models it evaluates (``unit_params["models"]``): raters read both."""
    task.updates_item_status = False
    if task.unit_kind in RATING_LABELS:
        if task.scheme != Scheme.ORDINAL or task.label_values != [0, 1, 2]:
            raise ValidationFailed(
                "this task rates units on the 0-2 scale (ordinal labels 0, 1, 2); keep it"
            )
        return
    hidden = [
        m for m in (task.unit_params or {}).get("models") or []
        if isinstance(m, str) and m.strip() and m.lower() in f"{task.name} {task.question}".lower()
    ]  # fmt: skip
    if hidden:
        raise ValidationFailed(
            f"name and question: raters see them and must not know the models under "
            f"evaluation; leave {', '.join(map(repr, hidden))} out"
        )
    stored = JudgmentTask.objects.filter(pk=task.pk).values("scheme", "labels", "consensus").first()
    if stored is not None and (
        stored["scheme"] != task.scheme
        or stored["labels"] != task.labels
        or stored["consensus"] != task.consensus
    ):
        raise ValidationFailed(
            "this task's scale, labels and rule were set when it was created (its results are "
            "computed from them); keep them, or create a new task"
        )


def _check_rule_fits_scheme(task: JudgmentTask) -> None:
    """The median rule takes numbers (ordinal values, numbers, several scores); several
    scores per judgment are decided by the median alone, and only tasks with units have them."""
    scheme, rule = Scheme(task.scheme), Rule(task.consensus)
    if scheme is Scheme.SCORES and not task.has_units:
        raise ValidationFailed(
            "scheme: several scores per judgment are for response-level evaluation tasks "
            "(Human evaluation on the judging page)"
        )
    if scheme is Scheme.SCORES and rule is not Rule.MEDIAN:
        raise ValidationFailed("rule: several scores per judgment are decided by their median")
    if rule is Rule.MEDIAN:
        numeric = scheme in (Scheme.NUMBER, Scheme.SCORES) or (
            scheme is Scheme.ORDINAL
            and all(
                isinstance(v, int | float) and not isinstance(v, bool) for v in task.label_values
            )
        )
        if not numeric:
            raise ValidationFailed(
                "rule: the median needs numeric ratings (an ordinal scale of numbers, numbers, "
                "or several scores)"
            )


def judgment_task_save(
    *, project: Any, user: Any, task: JudgmentTask | None, **fields: Any
) -> JudgmentTask:
    """Create or change a judgment task (project admins). The label scheme and the consensus
    rule are checked together, so a task can always decide its items."""
    require(user=user, project=project, action="manage")
    task = task or JudgmentTask(project=project)
    scheme_before = task.scheme if task.pk else None
    routed_before = task.serve_by_doubt if task.pk else False
    for name, value in fields.items():
        setattr(task, name, value)
    scheme, rule = Scheme(task.scheme), Rule(task.consensus)
    if scheme in (Scheme.NOMINAL, Scheme.ORDINAL):
        labels = task.labels
        if (
            not isinstance(labels, list)
            or len(labels) < 2
            or not all(isinstance(e, dict) and "value" in e for e in labels)
        ):
            raise ValidationFailed('labels: give at least two, as [{"value": ..., "label": ...}]')
        values = [e["value"] for e in labels]
        if len(set(map(repr, values))) != len(values):
            raise ValidationFailed("labels: each value may appear once")
    if rule is Rule.ALL_REQUIRED:
        allowed = task.label_values if scheme not in (Scheme.NUMBER, Scheme.TEXT) else None
        if task.required_value is None or (
            allowed is not None and task.required_value not in allowed
        ):
            raise ValidationFailed("the rule 'all required' needs a required value from the labels")
    if rule is Rule.AUTHOR_PLUS_TWO and task.overlap < 2:
        raise ValidationFailed("author plus two verifiers needs an overlap of at least 2")
    if task.overlap < 1 or task.overlap > 50:
        raise ValidationFailed("overlap is the number of annotators per item: 1 to 50")
    _check_quality_settings(task)
    _check_rule_fits_scheme(task)
    if task.has_units:
        _keep_unit_scale(task)
    task.full_clean()
    return _task_store(
        task, scheme_before=scheme_before, route=task.serve_by_doubt and not routed_before
    )


def _check_quality_settings(task: JudgmentTask) -> None:
    """The task's quality-control settings: routing by doubt's reliability threshold and the
    gold items' rate and threshold (issue 26)."""
    threshold = task.reliability_threshold
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not (0 <= threshold <= 1)
    ):
        raise ValidationFailed(f"reliability threshold: {threshold!r} is not a number from 0 to 1")
    if not 0 <= (task.gold_rate or 0) <= 50:
        raise ValidationFailed("gold rate: the percent of items served that are gold, 0 to 50")
    refusal = gold.gold_refusal(task) if task.gold_rate else ""
    if refusal:
        raise ValidationFailed(f"gold rate: {refusal}")
    if not 0 <= task.gold_threshold <= 1:
        raise ValidationFailed("gold threshold: an accuracy from 0 to 1, e.g. 0.7")


def _task_store(
    task: JudgmentTask, *, scheme_before: str | None, route: bool = False
) -> JudgmentTask:
    with transaction.atomic():
        task.save()
        if scheme_before is not None and scheme_before != task.scheme:
            # Values compare by the scheme: the stored agreement credits follow.
            judgment_agreement_sync(task=task)
        if route:  # routing by doubt turned on: every item's doubt, as a job
            from annotation.judgment_tasks.doubt.services import doubt_recompute_start

            doubt_recompute_start(task=task, user=None)
    return task


UNIT_QUESTIONS = {
    UnitKind.JUDGE_REPORT: "Do you agree with this report of the judge on this answer? "
    "0 disagree, 1 partly agree, 2 agree.",
    UnitKind.ANSWER_CRITERION: "How well does this answer meet this criterion? "
    "0 not met, 1 partially met, 2 fully met.",
}
MAX_UNITS = 100_000


def _unit_kind_scale(
    unit_kind: str, scale: dict[str, Any] | None
) -> tuple[UnitKind, dict[str, Any]]:
    """The kind of a new unit task and its scale: the 0-2 scale for rating a judge or a
    criterion, else the ``scale`` the caller brings."""
    try:
        kind = UnitKind(unit_kind)
    except ValueError:
        kinds = ", ".join(k.value for k in UnitKind if k is not UnitKind.ITEM)
        raise ValidationFailed(f"unit kind: {unit_kind!r} is not one of {kinds}") from None
    if kind is UnitKind.ITEM:
        raise ValidationFailed("unit kind: item-level tasks are made with 'New judgment task'")
    if kind in RATING_LABELS:
        return kind, {"scheme": Scheme.ORDINAL, "labels": RATING_LABELS[kind],
                      "consensus": Rule.MAJORITY}  # fmt: skip
    if not (isinstance(scale, dict) and {"scheme", "labels", "consensus"} <= set(scale)):
        raise ValidationFailed(f"unit kind {kind.value!r}: say the scale (scheme, labels, rule)")
    return kind, scale


def unit_task_create(
    *,
    project: Any,
    user: User,
    unit_kind: str,
    name: str,
    unit_params: dict[str, Any],
    overlap: int = 3,
    question: str = "",
    lease_minutes: int = 30,
    scale: dict[str, Any] | None = None,
) -> JudgmentTask:
    """Create a task whose judgments are about units rather than items (reviewers and
    admins): rate a judge's agent reports (``judge-report``), score rubric criteria of
    answers (``answer-criterion``), or evaluate answers (``answer-eval``, ``answer-pair``).
    k = ``overlap`` people rate each unit blind and item status is left alone. The first two
    kinds rate on the 0-2 scale (ordinal) and the majority decides a unit's outcome; the
    others bring their ``scale``: ``{"scheme", "labels", "consensus"}``. The units are listed
    now by the unit source registered for the kind, from ``unit_params``, and kept as
    ``TaskUnit`` rows in the order given."""
    require(user=user, project=project, action="manage_studies")
    kind, scale = _unit_kind_scale(unit_kind, scale)
    name = (name or "").strip()
    if not name:
        raise ValidationFailed("name: give the task a name")
    if isinstance(overlap, bool) or not isinstance(overlap, int) or not 1 <= overlap <= 50:
        raise ValidationFailed("overlap: the number of people who rate each unit, 1 to 50")
    if JudgmentTask.objects.filter(project=project, name=name).exists():
        raise ValidationFailed(f"name: this project already has a judgment task {name!r}")
    source = unit_source(kind)
    with transaction.atomic():
        task = JudgmentTask(
            project=project,
            name=name,
            question=question.strip() or UNIT_QUESTIONS.get(kind, ""),
            scheme=scale["scheme"],
            labels=scale["labels"],
            overlap=overlap,
            consensus=scale["consensus"],
            updates_item_status=False,
            author_may_judge=True,
            lease_minutes=lease_minutes,
            unit_kind=kind,
            unit_params=unit_params,
        )
        _check_rule_fits_scheme(task)
        task.full_clean()
        task.save()
        units = source.units(task=task)
        if not units:
            raise ValidationFailed("nothing to rate: the chosen answers have no such units")
        if len(units) > MAX_UNITS:
            raise ValidationFailed(
                f"{len(units)} units is too many for one task (at most {MAX_UNITS}); "
                "rate a sample of the answers"
            )
        keys = [key for _, key in units]
        if len(set(keys)) != len(keys):
            raise ValidationFailed("the unit source listed a unit twice")
        item_ids = {item_id for item_id, _ in units}
        if Item.objects.filter(pk__in=item_ids, project=project).count() != len(item_ids):
            raise ValidationFailed("every unit must belong to an item of this project")
        TaskUnit.objects.bulk_create(
            [
                TaskUnit(task=task, item_id=item_id, key=key, position=n)
                for n, (item_id, key) in enumerate(units)
            ],
            batch_size=2000,
        )
        doubt_rows_fill(task=task)  # routing by doubt walks a row per unit
    return task
