"""Reads for judging. Scoped to the user: another project's task answers 404, and annotators
only ever see their own judgments (blind)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.db.models import Count, F, OuterRef, Q, QuerySet, Subquery
from django.shortcuts import get_object_or_404
from django.utils import timezone

from annotation.judgment_tasks import gold
from annotation.judgment_tasks.models import (
    Assignment,
    AssignmentStatus,
    ItemPush,
    Judgment,
    JudgmentTask,
    Outcome,
    TaskItem,
    TaskUnit,
)
from annotation.judgment_tasks.undo import change_deadline, change_refusal
from annotation.judgment_tasks.units import unit_source
from benchmark import selectors as item_selectors
from benchmark.exceptions import ValidationFailed
from benchmark.models import Item, ItemStatus, Membership, Project
from benchmark.permissions import can, role_known, roles_for
from benchmark.typing import AnyUser


def task_list(*, user: AnyUser, project: Project) -> QuerySet[JudgmentTask]:
    if not user.is_authenticated:
        return JudgmentTask.objects.none()
    verdicts = {
        f"n_{v}": Count("outcomes", filter=Q(outcomes__verdict=v))
        for v in ("accepted", "rejected", "disputed", "discarded")
    }
    units = (
        TaskUnit.objects.filter(task=OuterRef("pk"))
        .order_by()
        .values("task")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return (
        JudgmentTask.objects.filter(project=project, project__memberships__user=user)
        .annotate(**verdicts, n_units=Subquery(units))
        .order_by("name")
    )


def task_get(*, user: AnyUser, pk: int) -> JudgmentTask:
    """A task of a project ``user`` is a member of (else 404), with its project; the user's
    role in it is read in the same query (the membership is joined anyway), so the permission
    checks that follow ask nothing more."""
    if not user.is_authenticated:
        return get_object_or_404(JudgmentTask.objects.none(), pk=pk)
    task = get_object_or_404(
        JudgmentTask.objects.filter(project__memberships__user=user)
        .select_related("project")
        .annotate(member_role=F("project__memberships__role")),
        pk=pk,
    )
    role_known(user=user, project=task.project, role=task.member_role)  # type: ignore[attr-defined]
    return task


def task_item_get(*, user: AnyUser, task: JudgmentTask, pk: int) -> Item:
    """An item of the task's project, with ``answer_hidden`` (a blind verifier who has not
    answered reads an empty answer; see :mod:`benchmark.visibility`)."""
    return item_selectors.item_get(user=user, project=task.project, pk=pk)


def next_item_guess(*, user: AnyUser, task: JudgmentTask, after: int) -> Item | None:
    """The item ``user`` will most likely judge after ``after`` (their current item), read as
    :func:`task_item_get` reads it for them (the visibility rules apply: a blind verifier's
    hidden answer stays hidden), or None. A guess that leases and locks nothing
    (:func:`annotation.judgment_tasks.services.item_next_guess`), so a page may ask it to
    fetch the next item's images while the current one is judged."""
    from annotation.judgment_tasks.services import item_next_guess

    item_id = item_next_guess(task=task, user=user, after=after)  # type: ignore[arg-type]
    if item_id is None:
        return None
    return task_item_get(user=user, task=task, pk=item_id)


def task_item_for_submit(*, user: AnyUser, task: JudgmentTask, pk: int) -> Item:
    """An item of the task's project to record a judgment of, which shows nothing of it:
    :func:`task_item_get`'s scope, read as hidden and without the answer-hiding query (see
    ``item_get_for_write``). A page that shows the item reads it by :func:`task_item_get`."""
    return item_selectors.item_get_for_write(user=user, project=task.project, pk=pk)


def task_unit_get(*, user: AnyUser, task: JudgmentTask, key: str) -> TaskUnit:
    """A unit of a task with units, with its item as :func:`task_item_get` reads it (so the
    item's visibility rules apply); 404 when the task has no such unit."""
    unit = get_object_or_404(TaskUnit.objects.filter(task=task), key=key)
    unit.item = task_item_get(user=user, task=task, pk=unit.item_id)
    return unit


def unit_item_id(*, task: JudgmentTask, key: str) -> int:
    """The item a unit of the task belongs to; ValidationFailed when there is no such unit."""
    if not task.has_units:
        raise ValidationFailed("item: say which item you judge")
    if not key:
        raise ValidationFailed("unit: say which unit you rate (response:<answer id>:<label>)")
    item_id = TaskUnit.objects.filter(task=task, key=key).values_list("item_id", flat=True).first()
    if item_id is None:
        raise ValidationFailed(f"unit {key!r} is not part of task {task.name!r}")
    return item_id


def unit_view(*, user: AnyUser, task: JudgmentTask, unit: TaskUnit) -> dict[str, Any]:
    """What the judge page shows about one unit, from the unit source of the task's kind
    (:mod:`annotation.judgment_tasks.units`), with ``template``: the fragment to include. It never
    holds other people's judgments (those come from :func:`judgments_visible`)."""
    source = unit_source(task.unit_kind)
    view = source.view(task=task, unit=unit, user=user)
    view.setdefault("template", source.template)
    view.setdefault("key", unit.key)
    return view


def assignment_for(
    *, user: AnyUser, task: JudgmentTask, item: Item, unit: str = ""
) -> Assignment | None:
    return Assignment.objects.filter(task=task, item=item, unit=unit, user=user).first()  # type: ignore[misc]


def judgments_visible(
    *,
    user: AnyUser,
    task: JudgmentTask,
    item: Item,
    unit: str = "",
    lease: Assignment | None = None,
) -> list[Judgment]:
    """Everyone's judgments of the item (or of one unit of it) for reviewers and admins;
    only one's own for annotators. ``lease``: the user's assignment of it, when the caller
    has it: an annotator whose lease is still active has no judgment of it (a judgment is
    stored only with its assignment marked submitted), so nothing is read (the next item
    after a submit)."""
    reviewer = can(user=user, project=task.project, action="adjudicate")
    if not reviewer and lease is not None and lease.status == AssignmentStatus.ACTIVE:
        return []
    rows = Judgment.with_gold.filter(task=task, item=item, unit=unit).select_related("user")
    if not reviewer:
        rows = rows.filter(user=user)  # type: ignore[misc]
    return list(rows.order_by("created_at"))


def my_progress(*, user: AnyUser, task: JudgmentTask) -> dict[str, Any]:
    mine = Assignment.objects.filter(task=task, user=user)  # type: ignore[misc]
    return {
        "submitted": mine.filter(status=AssignmentStatus.SUBMITTED).count(),
        "open": mine.filter(status=AssignmentStatus.ACTIVE).count(),
    }


def _progress_counts(
    *, user: AnyUser, task: JudgmentTask, item_id: int, unit: str
) -> tuple[int, int, int, int]:
    """(judged today, left, position, total) in one statement: the user's judgments in the
    task today (UTC); the items (units) of the task that are not settled and that the user
    has not judged (what "next" may still offer them, leases of others aside); where the
    item (unit) comes in the task's order, and how many the task has."""
    q = connection.ops.quote_name
    judgment, assignment, outcome, item, unit_table, listed = (
        q(m._meta.db_table) for m in (Judgment, Assignment, Outcome, Item, TaskUnit, TaskItem)
    )
    today = timezone.now().astimezone(dt.UTC).date()
    done = f"(SELECT COUNT(*) FROM {judgment} j WHERE j.task_id = %s AND j.user_id = %s AND j.day = %s)"
    params: list[Any] = [task.pk, user.pk, today]
    key = q("key")
    if task.has_units:
        left = (
            f"(SELECT COUNT(*) FROM {unit_table} u WHERE u.task_id = %s AND NOT EXISTS "
            f"(SELECT 1 FROM {assignment} a WHERE a.task_id = %s AND a.item_id = u.item_id "
            f"AND a.unit = u.{key} AND a.user_id = %s AND a.status = %s) AND NOT EXISTS "
            f"(SELECT 1 FROM {outcome} o WHERE o.task_id = %s AND o.item_id = u.item_id "
            f"AND o.unit = u.{key} AND o.verdict <> %s))"
        )
        params += [task.pk, task.pk, user.pk, AssignmentStatus.SUBMITTED, task.pk, "pending"]
        position = (
            f"(SELECT COUNT(*) FROM {unit_table} u, {unit_table} c WHERE u.task_id = %s "
            f"AND c.task_id = %s AND c.{key} = %s AND (u.position < c.position OR "
            "(u.position = c.position AND u.id <= c.id)))"
        )
        params += [task.pk, task.pk, unit]
        total = f"(SELECT COUNT(*) FROM {unit_table} u WHERE u.task_id = %s)"
        params += [task.pk]
    else:
        scope = "i.project_id = %s AND i.status <> %s"
        scope_params: list[Any] = [task.project_id, ItemStatus.DISCARDED]
        if task.items_listed:
            scope += (
                f" AND EXISTS (SELECT 1 FROM {listed} t WHERE t.task_id = %s AND t.item_id = i.id)"
            )
            scope_params.append(task.pk)
        left = (
            f"(SELECT COUNT(*) FROM {item} i WHERE {scope}"
            + (" AND i.status = %s" if task.updates_item_status else "")
            + f" AND NOT EXISTS (SELECT 1 FROM {assignment} a WHERE a.task_id = %s "
            "AND a.item_id = i.id AND a.user_id = %s AND a.status = %s) AND NOT EXISTS "
            f"(SELECT 1 FROM {outcome} o WHERE o.task_id = %s AND o.item_id = i.id "
            "AND o.verdict <> %s))"
        )
        params += scope_params
        if task.updates_item_status:
            params.append(ItemStatus.DRAFT)
        params += [task.pk, user.pk, AssignmentStatus.SUBMITTED, task.pk, "pending"]
        position = (
            f"(SELECT COUNT(*) FROM {item} i, {item} c WHERE {scope} AND c.id = %s AND "
            "(i.position < c.position OR (i.position = c.position AND i.id <= c.id)))"
        )
        params += [*scope_params, item_id]
        total = f"(SELECT COUNT(*) FROM {item} i WHERE {scope})"
        params += scope_params
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {done}, {left}, {position}, {total}", params)
        row = cursor.fetchone()
    return int(row[0]), int(row[1]), int(row[2]), int(row[3])


def judging_progress(
    *, user: AnyUser, task: JudgmentTask, item: Item, unit: str = ""
) -> dict[str, Any]:
    """What the judge page shows of the user's progress in ``task`` (two queries):
    ``done_today``, ``left`` (items or units they may still judge, this one included while it
    is open), ``position`` and ``total`` (where this one comes in the task), and ``last``:
    their latest judgment in the task when it is of another item (or unit) and may still be
    undone (see :mod:`annotation.judgment_tasks.undo`), else None."""
    done, left, position, total = _progress_counts(user=user, task=task, item_id=item.pk, unit=unit)
    if task.gold_rate:
        # The gold items (units) the schedule will still serve count as items left, so the
        # count goes down by one per item, gold or not (annotation.judgment_tasks.gold).
        left += gold.gold_state(task=task, user=user).ahead(other_left=left)
    verdicts = Outcome.objects.filter(task=task, item=OuterRef("item_id"), unit=OuterRef("unit"))
    last = (
        Judgment.with_gold.filter(task=task, user=user.pk)
        .annotate(verdict=Subquery(verdicts.values("verdict")[:1]))
        .select_related("item")
        .only("pk", "item_id", "unit", "created_at", "value", "gold", "item__external_id")
        .order_by("-created_at", "-pk")
        .first()
    )
    if last is not None and last.gold:  # outside the outcome: undone as a pending one is
        last.verdict = None  # type: ignore[attr-defined]
    if last is not None and (
        (last.item_id, last.unit) == (item.pk, unit)
        or change_refusal(
            submitted_at=last.created_at,
            verdict=last.verdict,  # type: ignore[attr-defined]
            now=timezone.now(),
        )
    ):
        last = None
    return {"done_today": done, "left": left, "position": position, "total": total, "last": last}


def judgment_change_state(*, judgment: Judgment, outcome_verdict: str | None) -> dict[str, Any]:
    """Whether the user may still change their ``judgment`` (shown on its judge page):
    ``refusal`` (why not, "" when they may) and ``until`` (when the window closes)."""
    return {
        "refusal": change_refusal(
            submitted_at=judgment.created_at, verdict=outcome_verdict, now=timezone.now()
        ),
        "until": change_deadline(submitted_at=judgment.created_at),
    }


def disputes(*, user: AnyUser, task: JudgmentTask) -> QuerySet[Outcome]:
    if not user.is_authenticated:
        return Outcome.objects.none()
    return (
        Outcome.objects.filter(task=task, verdict="disputed", task__project__memberships__user=user)
        .select_related("item")
        .order_by("item__position", "item_id")
    )


def outcome_verdict(*, task: JudgmentTask, item: Item, unit: str = "") -> str | None:
    """The verdict of the item's (unit's) outcome, None when it has none: no one else's
    judgment is in it, so an annotator may read it for their own judgment's sake."""
    return (
        Outcome.objects.filter(task=task, item=item, unit=unit)
        .values_list("verdict", flat=True)
        .first()
    )


def outcome_for(*, task: JudgmentTask, item: Item, unit: str = "") -> Outcome | None:
    return (
        Outcome.objects.filter(task=task, item=item, unit=unit).select_related("decided_by").first()
    )


def verification_stats(*, task: JudgmentTask) -> dict[str, Any]:
    """Per original category: items decided, share retained (accepted) and share relabelled,
    the figures ATP-Bench reports for its query verification (about 95% retained)."""
    rows: dict[str, dict[str, int]] = {}
    decided = (
        Outcome.objects.filter(task=task)
        .exclude(verdict__in=("pending", "disputed"))
        .values_list("verdict", "relabel", "item__category")
    )
    for verdict, relabel, category in decided:
        original = (relabel or {}).get("category", {}).get("from", category) or "(none)"
        row = rows.setdefault(original, {"decided": 0, "retained": 0, "relabelled": 0})
        row["decided"] += 1
        row["retained"] += verdict == "accepted"
        row["relabelled"] += bool(relabel)
    table = [
        {
            "category": name,
            **row,
            "retained_share": row["retained"] / row["decided"],
            "relabel_rate": row["relabelled"] / row["decided"],
        }
        for name, row in sorted(rows.items())
    ]
    total = {k: sum(r[k] for r in rows.values()) for k in ("decided", "retained", "relabelled")}
    if total["decided"]:
        total["retained_share"] = total["retained"] / total["decided"]  # type: ignore[assignment]
        total["relabel_rate"] = total["relabelled"] / total["decided"]  # type: ignore[assignment]
    return {"rows": table, "total": total}


def pushes_untaken(*, user: AnyUser, tasks: Iterable[JudgmentTask]) -> dict[int, list[ItemPush]]:
    """``{task id: [push, ...]}``: the items pushed to people and not yet taken, for tasks
    the user may see (one query for all the tasks), with the item and the person."""
    task_ids = [task.pk for task in tasks]
    if not user.is_authenticated or not task_ids:
        return {}
    rows = (
        ItemPush.objects.filter(
            task_id__in=task_ids,
            taken_at__isnull=True,
            task__project__memberships__user=user.pk,
        )
        .select_related("item", "user")
        .only("task_id", "created_at", "item__external_id", "item__project_id", "user__username")
        .order_by("task_id", "user__username", "item__position", "item_id")
    )
    out: dict[int, list[ItemPush]] = {}
    for push in rows:
        out.setdefault(push.task_id, []).append(push)
    return out


def tasks_below_reviewer_exist(*, user: AnyUser, tasks: QuerySet[JudgmentTask]) -> bool:
    """Whether any of ``tasks`` sits in a project where ``user`` is below reviewer (not a
    reviewer nor an admin there): the small query a hiding rule asks first, since a rule can
    hide nothing from ``user`` without such a task."""
    reviewed = Membership.objects.filter(user=user.pk, role__in=roles_for("adjudicate"))
    return tasks.exclude(project_id__in=reviewed.values("project_id")).exists()
