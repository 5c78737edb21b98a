"""Bulk actions on a project's item list: one action applied to many selected items.

The actions (``BULK_ACTIONS``):

* ``status``: set the status (reviewers and admins), each change through
  ``benchmark.projects.services.item_status_set`` and so recorded. An item whose status
  changed since the user saw it (``seen``) is skipped and reported, not changed.
* ``discard``: discard with a reason (reviewers and admins, the same path as ``status``);
  an annotator proposes discarding instead (``annotation.discarding``), a reviewer decides.
  With ``propose`` anyone makes proposals (the evaluation's pilot lists do).
* ``task``: add the items to the item set of a judgment task that takes only listed items
  (``JudgmentTask.items_listed``, :class:`~annotation.judgment_tasks.models.TaskItem`).
* ``requeue``: return the items to a task's pool. Precisely: their open leases for the task
  are ended (the lease expires now, so it stops counting towards the overlap and the queue
  offers the item again; the annotator's unsubmitted work on it is lost) and their untaken
  pushes are withdrawn. Submitted judgments and outcomes are kept: an item the task has
  settled (an outcome other than pending) is skipped and reported; set its status to judge
  it again.
* ``push``: push the items to chosen people for a task (:class:`ItemPush`): their "next
  item" serves them before the pull queue, and the pull queue keeps a place for each
  untaken push, so nobody gets the item beyond the overlap.
* ``export``: the selection in the project's format (``dataset_export_file`` with the ids);
  see ``benchmark.datasets``.

Each action runs in one transaction, all or nothing, and answers a summary ("12 items set to
verified; 3 already were"). More than ``BULK_DIRECT_LIMIT`` items run as a ``bulk_action``
job through the job pipeline (a progress bar); fewer run at once. Exports are always direct
(a download).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from annotation.discarding.services import discard_propose
from annotation.judgment_tasks import solving
from annotation.judgment_tasks.consensus import Verdict
from annotation.judgment_tasks.doubt.services import doubt_rows_fill
from annotation.judgment_tasks.models import ItemPush, JudgmentTask, Outcome, TaskItem
from annotation.judgment_tasks.services import assignments_live
from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.jobs.services import job_start
from benchmark.models import Item, ItemStatus, Job, Project
from benchmark.permissions import can, require
from benchmark.projects.services import item_status_set
from benchmark.typing import User

__all__ = [
    "BULK_ACTIONS",
    "BULK_DIRECT_LIMIT",
    "BULK_KIND",
    "BulkResult",
    "bulk_action_apply",
    "bulk_action_job",
    "bulk_action_start",
]

BULK_KIND = "bulk_action"
#: Selections larger than this run as a job with a progress bar.
BULK_DIRECT_LIMIT = 300
#: Rows locked and read per statement.
CHUNK = 500

BULK_ACTIONS = {
    "status": "Set status",
    "discard": "Discard with a reason",
    "task": "Assign to a judgment task",
    "push": "Assign to people (push)",
    "requeue": "Re-queue for a task",
    "export": "Export the selection",
}

Progress = Callable[..., None]


@dataclass
class BulkResult:
    """What a bulk action did: the summary the user reads, the counts it was made from, and
    the job when it runs as one."""

    message: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    job: Job | None = None


def _items(n: int) -> str:
    return f"{n} item{'s' if n != 1 else ''}"


def _chunks(ids: Sequence[int]) -> Iterator[list[int]]:
    for start in range(0, len(ids), CHUNK):
        yield list(ids[start : start + CHUNK])


def _summary(first: str, *rest: tuple[int, str]) -> str:
    return "; ".join([first, *(f"{n} {text}" for n, text in rest if n)])


# --------------------------------------------------------------------------- entry points


def _check(*, project: Project, user: User, action: str, params: dict[str, Any]) -> dict[str, Any]:
    """Who may take the action, and its parameters checked (field-named messages); answers
    the parameters in the shape the runners read (ids, not objects)."""
    if action not in BULK_ACTIONS:
        raise ValidationFailed(f"action: {action!r} is not one of {', '.join(BULK_ACTIONS)}")
    if action == "export":
        require(user=user, project=project, action="export")
        return {}
    if action == "discard":
        require(user=user, project=project, action="view")
        reason = (params.get("reason") or "").strip()
        if not reason:
            raise ValidationFailed("reason: say why the items are discarded")
        # ``propose``: make discard proposals even for a reviewer (a reviewer decides later).
        return {"reason": reason, "propose": bool(params.get("propose"))}
    if not can(user=user, project=project, action="set_status"):
        raise Forbidden(
            f"{BULK_ACTIONS[action].lower()}: only reviewers and admins may; an annotator may "
            "propose discarding items"
        )
    if action == "status":
        return _check_status(params)
    task = _task(project=project, task_id=params.get("task"))
    checked: dict[str, Any] = {"task": task.pk}
    if action == "task" and not task.items_listed:
        raise ValidationFailed(
            f"task: {task.name!r} takes every item of the project, so these items are in it "
            "already; turn on its setting 'items listed' to give it its own item set"
        )
    if action == "push":
        if not task.active:
            raise ValidationFailed(f"task: {task.name!r} is closed")
        checked["users"] = _people(project=project, user_ids=params.get("users") or [])
    return checked


def _check_status(params: dict[str, Any]) -> dict[str, Any]:
    status = params.get("status") or ""
    if status not in ItemStatus.values:
        raise ValidationFailed(
            f"status: choose one of {', '.join(ItemStatus.values)} (not {status!r})"
        )
    reason = (params.get("reason") or "").strip()
    if status == ItemStatus.DISCARDED and not reason:
        raise ValidationFailed("reason: say why the items are discarded")
    return {"status": status, "reason": reason}


def _task(*, project: Project, task_id: Any) -> JudgmentTask:
    if not task_id:
        raise ValidationFailed("task: choose a judgment task")
    task = JudgmentTask.objects.filter(project=project, pk=task_id).first()
    if task is None:
        raise ValidationFailed(f"task: no judgment task {task_id} in {project.name!r}")
    if task.has_units:
        raise ValidationFailed(
            f"task: {task.name!r} judges parts of items (units), listed when it was created; "
            "choose a task that judges whole items"
        )
    return task


def _people(*, project: Project, user_ids: Sequence[Any]) -> list[int]:
    if not user_ids:
        raise ValidationFailed("users: choose the people to push the items to")
    wanted = {int(pk) for pk in user_ids}
    members = set(
        get_user_model()
        .objects.filter(pk__in=wanted, memberships__project=project, is_active=True)
        .values_list("pk", flat=True)
    )
    if wanted - members:
        raise ValidationFailed("users: push only to active members of this project")
    return sorted(members)


def bulk_action_start(
    *,
    project: Project,
    user: User,
    action: str,
    item_ids: Sequence[int],
    seen: dict[int, str] | None = None,
    params: dict[str, Any] | None = None,
) -> BulkResult:
    """Check the action and run it: at once for up to ``BULK_DIRECT_LIMIT`` items, else as a
    ``bulk_action`` job (``result.job``). ``item_ids`` are items of ``project`` the user may
    see (the caller's selector chose them); ``seen`` the status the user saw for each."""
    checked = _check(project=project, user=user, action=action, params=params or {})
    if action == "export":
        raise ValidationFailed("action: an export is a download (bulk_actions.views)")
    if not item_ids:
        raise ValidationFailed("selection: select at least one item")
    if len(item_ids) <= BULK_DIRECT_LIMIT:
        return bulk_action_apply(
            project=project, user=user, action=action, item_ids=item_ids, seen=seen, **checked
        )
    job = job_start(
        kind=BULK_KIND,
        user=user,
        project=project,
        params={
            "action": action,
            "item_ids": list(item_ids),
            "seen": {str(k): v for k, v in (seen or {}).items()},
            "name": f"{BULK_ACTIONS[action]}: {_items(len(item_ids))}",
            **checked,
        },
        total=len(item_ids),
    )
    return BulkResult(message=f"{BULK_ACTIONS[action]}: {_items(len(item_ids))} (job)", job=job)


def bulk_action_job(*, job: Job, progress: Progress) -> dict[str, Any]:
    """The runner of ``bulk_action`` jobs: the action as started, all or nothing."""
    params = dict(job.params)
    if job.project is None or job.created_by is None:
        raise ValidationFailed("the job has no project or no user")
    user = job.created_by
    project = job.project
    action = params.pop("action")
    item_ids = params.pop("item_ids")
    seen = {int(k): v for k, v in params.pop("seen", {}).items()}
    params.pop("name", None)
    result = bulk_action_apply(
        project=project,
        user=user,
        action=action,
        item_ids=item_ids,
        seen=seen,
        progress=progress,
        **_check(project=project, user=user, action=action, params=params),
    )
    return {"message": result.message, "counts": result.counts}


def bulk_action_apply(
    *,
    project: Project,
    user: User,
    action: str,
    item_ids: Sequence[int],
    seen: dict[int, str] | None = None,
    progress: Progress | None = None,
    **params: Any,
) -> BulkResult:
    """Apply a checked action (see :func:`_check`) to the items, in one transaction."""
    runner = _RUNNERS[action]
    ids = sorted(set(item_ids))
    report = progress or (lambda **kwargs: None)
    with transaction.atomic():
        # Only the project's items: ids from elsewhere are left out (a chunk per statement).
        ids = sorted(
            pk
            for batch in _chunks(ids)
            for pk in Item.objects.filter(project=project, pk__in=batch).values_list(
                "pk", flat=True
            )
        )
        report(progress=0, total=len(ids), message=BULK_ACTIONS[action].lower())
        return runner(
            project=project, user=user, ids=ids, seen=seen or {}, progress=report, **params
        )


# --------------------------------------------------------------------------- status


def _statuses(project: Project, batch: list[int]) -> dict[int, str]:
    """The batch's items, locked, with their status now."""
    rows = Item.objects.select_for_update().filter(project=project, pk__in=batch)
    return dict(rows.values_list("pk", "status"))


def _set_status(
    *,
    project: Project,
    user: User,
    ids: list[int],
    seen: dict[int, str],
    progress: Progress,
    status: str,
    reason: str,
) -> BulkResult:
    counts: Counter[str] = Counter()
    done = 0
    for batch in _chunks(ids):
        for pk, now in _statuses(project, batch).items():
            expected = seen.get(pk)
            if now == status:
                counts["already"] += 1
            elif expected and expected != now:
                counts["stale"] += 1
            else:
                stub = Item(pk=pk, project=project)
                item_status_set(item=stub, user=user, status=status, reason=reason, expect=now)
                counts["changed"] += 1
        done += len(batch)
        progress(progress=done)
    label = ItemStatus(status).label.lower()
    message = _summary(
        f"{_items(counts['changed'])} set to {label}",
        (counts["already"], "already were"),
        (counts["stale"], "skipped: changed by someone else since you looked (reload)"),
    )
    return BulkResult(message=message, counts=dict(counts))


def _discard(
    *,
    project: Project,
    user: User,
    ids: list[int],
    seen: dict[int, str],
    progress: Progress,
    reason: str,
    propose: bool = False,
) -> BulkResult:
    if not propose and can(user=user, project=project, action="set_status"):
        return _set_status(
            project=project,
            user=user,
            ids=ids,
            seen=seen,
            progress=progress,
            status=ItemStatus.DISCARDED,
            reason=reason,
        )
    counts: Counter[str] = Counter()
    done = 0
    for batch in _chunks(ids):
        for pk in _statuses(project, batch):
            try:
                with transaction.atomic():
                    discard_propose(item=Item(pk=pk, project=project), user=user, reason=reason)
            except Conflict:
                counts["skipped"] += 1
            else:
                counts["proposed"] += 1
        done += len(batch)
        progress(progress=done)
    message = _summary(
        f"{counts['proposed']} discard proposal{'s' if counts['proposed'] != 1 else ''} made; "
        "a reviewer decides",
        (counts["skipped"], "skipped: already discarded or already proposed by you"),
    )
    return BulkResult(message=message, counts=dict(counts))


# --------------------------------------------------------------------------- tasks


def _add_to_task(
    *,
    project: Project,
    user: User,
    ids: list[int],
    seen: dict[int, str],
    progress: Progress,
    task: int,
) -> BulkResult:
    the_task = JudgmentTask.objects.get(pk=task, project=project)
    added = _list_items(task=the_task, user=user, ids=ids, progress=progress)
    message = _summary(
        f"{_items(added)} added to {the_task.name!r}",
        (len(ids) - added, "already were in it"),
    )
    return BulkResult(message=message, counts={"added": added, "already": len(ids) - added})


def _list_items(
    *, task: JudgmentTask, user: User, ids: list[int], progress: Progress | None = None
) -> int:
    """Add the items to the task's item set; answers how many were not in it."""
    added = 0
    done = 0
    for batch in _chunks(ids):
        have = set(
            TaskItem.objects.filter(task=task, item_id__in=batch).values_list("item_id", flat=True)
        )
        new = [TaskItem(task=task, item_id=pk, added_by=user) for pk in batch if pk not in have]
        TaskItem.objects.bulk_create(new, ignore_conflicts=True)
        doubt_rows_fill(task=task, item_ids=[row.item_id for row in new])
        added += len(new)
        done += len(batch)
        if progress is not None:
            progress(progress=done)
    return added


def _settled(task: JudgmentTask, batch: list[int]) -> set[int]:
    rows = Outcome.objects.filter(task=task, item_id__in=batch, unit="").exclude(
        verdict=Verdict.PENDING
    )
    return set(rows.values_list("item_id", flat=True))


def _requeue(
    *,
    project: Project,
    user: User,
    ids: list[int],
    seen: dict[int, str],
    progress: Progress,
    task: int,
) -> BulkResult:
    the_task = JudgmentTask.objects.get(pk=task, project=project)
    now = timezone.now()
    counts: Counter[str] = Counter()
    done = 0
    for batch in _chunks(ids):
        settled = _settled(the_task, batch)
        open_ids = [pk for pk in batch if pk not in settled]
        leases = assignments_live(task=the_task, now=now).filter(
            item_id__in=open_ids, status="active"
        )
        leased = set(leases.values_list("item_id", flat=True))
        counts["leases"] += leases.update(expires_at=now)
        pushes = ItemPush.objects.filter(task=the_task, item_id__in=open_ids, taken_at__isnull=True)
        pushed = set(pushes.values_list("item_id", flat=True))
        counts["pushes"] += pushes.delete()[0]
        counts["returned"] += len(leased | pushed)
        counts["in_pool"] += len(open_ids) - len(leased | pushed)
        counts["settled"] += len(settled)
        done += len(batch)
        progress(progress=done)
    message = _summary(
        f"{_items(counts['returned'])} returned to the pool of {the_task.name!r} "
        f"({counts['leases']} lease{'s' if counts['leases'] != 1 else ''} ended, "
        f"{counts['pushes']} push{'es' if counts['pushes'] != 1 else ''} withdrawn)",
        (counts["in_pool"], "were in the pool already"),
        (counts["settled"], "skipped: settled by the task (set their status to judge again)"),
    )
    return BulkResult(message=message, counts=dict(counts))


def _authors(user_ids: list[int]) -> dict[int, tuple[list[str], list[str]]]:
    names = get_user_model().objects.filter(pk__in=user_ids).values_list("pk", "username")
    return {pk: solving.author_provenance(name) for pk, name in names}


def _is_author(provenance: str, names: tuple[list[str], list[str]]) -> bool:
    whole, prefixes = names
    return provenance in whole or any(provenance.startswith(p) for p in prefixes)


def _push(
    *,
    project: Project,
    user: User,
    ids: list[int],
    seen: dict[int, str],
    progress: Progress,
    task: int,
    users: list[int],
) -> BulkResult:
    """Push each item to each person, where the item still has a free place and the person
    may judge it; what cannot be pushed is counted by why."""
    the_task = JudgmentTask.objects.get(pk=task, project=project)
    now = timezone.now()
    authors = {} if the_task.author_may_judge else _authors(users)
    counts: Counter[str] = Counter()
    done = 0
    for batch in _chunks(ids):
        items = dict(
            Item.objects.select_for_update()
            .filter(project=project, pk__in=batch)
            .values_list("pk", "status")
        )
        provenance = dict(Item.objects.filter(pk__in=batch).values_list("pk", "provenance"))
        settled = _settled(the_task, batch)
        live = assignments_live(task=the_task, now=now).filter(item_id__in=batch)
        has = set(live.values_list("item_id", "user_id"))
        places = Counter(pk for pk, _ in has)
        open_pushes = set(
            ItemPush.objects.filter(
                task=the_task, item_id__in=batch, taken_at__isnull=True
            ).values_list("item_id", "user_id")
        )
        places.update(pk for pk, _ in open_pushes)
        new: list[ItemPush] = []
        for pk in batch:
            status = items.get(pk)
            for person in users:
                if status is None:
                    continue
                if (
                    pk in settled
                    or status == ItemStatus.DISCARDED
                    or (the_task.updates_item_status and status != ItemStatus.DRAFT)
                ):
                    counts["settled"] += 1
                elif (pk, person) in has or (pk, person) in open_pushes:
                    counts["already"] += 1
                elif person in authors and _is_author(provenance.get(pk, ""), authors[person]):
                    counts["author"] += 1
                elif places[pk] >= the_task.overlap:
                    counts["full"] += 1
                else:
                    places[pk] += 1
                    new.append(ItemPush(task=the_task, item_id=pk, user_id=person, pushed_by=user))
        ItemPush.objects.bulk_create(new)
        counts["pushed"] += len(new)
        if the_task.items_listed:
            _list_items(task=the_task, user=user, ids=sorted({p.item_id for p in new}))
        done += len(batch)
        progress(progress=done)
    message = _summary(
        f"{counts['pushed']} push{'es' if counts['pushed'] != 1 else ''} made for "
        f"{the_task.name!r} ({_items(len(ids))} × {len(users)} "
        f"{'people' if len(users) != 1 else 'person'})",
        (counts["already"], "already had the item"),
        (counts["full"], "skipped: the item already has all its judges (overlap)"),
        (counts["author"], "skipped: the person wrote the item"),
        (counts["settled"], "skipped: the task does not offer the item (settled or not a draft)"),
    )
    return BulkResult(message=message, counts=dict(counts))


_RUNNERS: dict[str, Callable[..., BulkResult]] = {
    "status": _set_status,
    "discard": _discard,
    "task": _add_to_task,
    "requeue": _requeue,
    "push": _push,
}
