"""Gold items (reviewers): mark a verified item gold for a task with the answer that counts,
unmark it, pause and resume an annotator's queue, and send an annotator's recent judgments
back for review. The queue side (serving gold items) is ``annotation.judgment_tasks.gold``."""

from __future__ import annotations

import json
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.judgment_tasks import gold, solving
from annotation.judgment_tasks.consensus import SETTLED, Verdict
from annotation.judgment_tasks.models import (
    GoldItem,
    Judgment,
    JudgmentTask,
    Outcome,
    QueuePause,
    Scheme,
    SendBack,
    TaskItem,
    TaskUnit,
)
from annotation.judgment_tasks.services import item_follows_outcome, judgment_agreement_sync
from benchmark.exceptions import Conflict, NotFound, ValidationFailed
from benchmark.models import Item, ItemStatus, Membership, Project
from benchmark.permissions import require
from benchmark.typing import User

#: At most this many recent judgments are sent back at once.
SEND_BACK_MAX = 500


def gold_value_check(*, task: JudgmentTask, value: Any) -> Any:
    """``value`` as a value of the task's scheme (a label's value; a number; a text), read from
    its text where it comes as one; ValidationFailed says what fits."""
    scheme = Scheme(task.scheme)
    refusal = gold.gold_refusal(task)
    if refusal:
        raise ValidationFailed(refusal)
    if scheme is Scheme.TEXT:
        if not isinstance(value, str) or not value.strip():
            raise ValidationFailed("value: give the answer that counts")
        return value.strip()
    if scheme is Scheme.NUMBER:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValidationFailed(f"value: {value!r} is not a number") from None
        return int(number) if number.is_integer() else number
    for candidate in task.label_values:
        if value == candidate or str(value) == str(candidate) or value == json.dumps(candidate):
            return candidate
    labels = ", ".join(map(str, task.label_values))
    raise ValidationFailed(f"value: {value!r} is not one of the task's labels ({labels})")


def gold_mark(
    *, task: JudgmentTask, item: Item, user: User, value: Any = None, unit: str = ""
) -> GoldItem:
    """Mark ``item`` (for a task with units: its ``unit``, a unit key of the task) gold for
    ``task`` (reviewers), with the answer that counts. A whole item must be verified and in
    the task's items; a unit must have a settled outcome (the unit queue then no longer
    offers it). ``value`` defaults to the value of the item's (unit's) accepted outcome in
    the task; for blind solving, to the item's reference answer (a ``value`` given replaces
    the reference's answer and its variants; it is compared as a verifier's answer is).
    Marking again with another value keeps the earlier mark (``removed_at`` set) and adds
    the new one."""
    require(user=user, project=task.project, action="adjudicate")
    refusal = gold.gold_refusal(task)
    if refusal:
        raise ValidationFailed(refusal)
    if item.project_id != task.project_id:
        raise NotFound("no such item in this task's project")
    unit = (unit or "").strip()
    outcome = (
        _gold_unit_outcome(task, item, unit)
        if task.has_units
        else _gold_item_outcome(task, item, unit)
    )
    if solving.is_solve_task(task):
        value = _solve_gold_value(item, value)
    else:
        if value in (None, ""):
            if outcome is None or outcome.verdict != Verdict.ACCEPTED or outcome.value is None:
                raise ValidationFailed("value: give the answer that counts (no accepted outcome)")
            value = outcome.value
        value = gold_value_check(task=task, value=value)
    return _gold_store(task=task, item=item, unit=unit, user=user, value=value)


def _gold_item_outcome(task: JudgmentTask, item: Item, unit: str) -> Outcome | None:
    """A whole item's checks before it is marked gold; its outcome in the task."""
    if unit:
        raise ValidationFailed(f"unit: task {task.name!r} judges whole items; it has no units")
    if item.status != ItemStatus.VERIFIED:
        raise ValidationFailed(
            f"item {item.external_id}: only verified items can be gold (it is {item.status})"
        )
    if task.items_listed and not TaskItem.objects.filter(task=task, item=item).exists():
        raise ValidationFailed(f"item {item.external_id} is not among this task's items")
    outcome = Outcome.objects.filter(task=task, item=item, unit="").first()
    if not task.updates_item_status and (outcome is None or outcome.verdict not in SETTLED):
        # Such a task's queue offers the items it has not settled: a gold item must be settled.
        raise ValidationFailed(
            f"item {item.external_id}: its outcome in this task is not settled yet"
        )
    return outcome


def _gold_unit_outcome(task: JudgmentTask, item: Item, unit: str) -> Outcome:
    """A unit's checks before it is marked gold: a unit of the task, of ``item``, settled
    (the unit queue offers the units it has not settled); its outcome."""
    if not unit:
        raise ValidationFailed(
            f"unit: task {task.name!r} is judged unit by unit; say which unit of item "
            f"{item.external_id} (its key, e.g. response:<answer id>:<label>)"
        )
    if not TaskUnit.objects.filter(task=task, item=item, key=unit).exists():
        raise ValidationFailed(
            f"unit: {unit!r} is not a unit of item {item.external_id} in this task"
        )
    outcome = Outcome.objects.filter(task=task, item=item, unit=unit).first()
    if outcome is None or outcome.verdict not in SETTLED:
        raise ValidationFailed(
            f"unit {unit} of item {item.external_id}: its outcome in this task is not settled yet"
        )
    return outcome


def _solve_gold_value(item: Item, value: Any) -> dict[str, Any]:
    """The answer that counts for blind solving, in the scorer's golden shape
    (``solving.golden_answer``): the item's reference answer, or ``value`` in its place
    (same match type and tolerance, no other variants)."""
    golden = solving.golden_answer(item)
    if value in (None, ""):
        if not str(golden.get("value") or "").strip():
            raise ValidationFailed(
                f"value: item {item.external_id} has no reference answer; give the answer "
                "that counts"
            )
        return golden
    if not isinstance(value, str) or not value.strip():
        raise ValidationFailed("value: give the answer that counts as text")
    return {**golden, "value": value.strip(), "accepted_answers": []}


def _gold_store(*, task: JudgmentTask, item: Item, unit: str, user: User, value: Any) -> GoldItem:
    """The new mark, the current one (of another value) kept as removed."""
    what = f"unit {unit} of item {item.external_id}" if unit else f"item {item.external_id}"
    now = timezone.now()
    try:
        with transaction.atomic():
            current = GoldItem.objects.select_for_update().filter(
                task=task, item=item, unit=unit, removed_at__isnull=True
            )
            for mark in current:
                if mark.value == value:
                    return mark
                mark.removed_at, mark.removed_by = now, user
                mark.save(update_fields=["removed_at", "removed_by"])
            mark = GoldItem(task=task, item=item, unit=unit, value=value, created_by=user)
            mark.full_clean(validate_constraints=False)
            mark.save()
            project_has_gold_sync(project_id=task.project_id)
    except IntegrityError:
        raise Conflict(f"{what} was marked gold meanwhile") from None
    return mark


def gold_unmark(*, task: JudgmentTask, item_id: int, user: User, unit: str = "") -> GoldItem:
    """Unmark a gold item (or the gold ``unit`` of it) (reviewers): it is no longer served;
    the mark is kept with the time it was removed, and the judgments made of it stay gold
    (out of outcomes)."""
    require(user=user, project=task.project, action="adjudicate")
    with transaction.atomic():
        mark = (
            GoldItem.objects.select_for_update()
            .filter(task=task, item_id=item_id, unit=unit or "", removed_at__isnull=True)
            .first()
        )
        if mark is None:
            what = f"unit {unit!r} of this item" if unit else "this item"
            raise NotFound(f"{what} is not a gold {'unit' if unit else 'item'} of the task")
        mark.removed_at, mark.removed_by = timezone.now(), user
        mark.save(update_fields=["removed_at", "removed_by"])
        project_has_gold_sync(project_id=task.project_id)
    return mark


def project_has_gold_sync(*, project_id: int) -> bool:
    """Set the project's ``has_gold`` flag to whether any of its tasks has a current gold item
    (``benchmark`` hides item status from annotators by it); returns the flag."""
    with transaction.atomic():
        has_gold = GoldItem.objects.filter(
            task__project_id=project_id, removed_at__isnull=True
        ).exists()
        Project.objects.filter(pk=project_id).exclude(has_gold=has_gold).update(has_gold=has_gold)
    return has_gold


def _annotator(task: JudgmentTask, annotator_id: int) -> User:
    member = (
        Membership.objects.filter(project=task.project, user_id=annotator_id)
        .select_related("user")
        .first()
    )
    if member is None:
        raise NotFound("no such member of this project")
    return member.user


def queue_pause(
    *, task: JudgmentTask, user: User, annotator_id: int, reason: str = ""
) -> QueuePause:
    """Pause an annotator's queue in the task (reviewers): their "next item" answers that a
    reviewer paused it, until it is resumed. A lease they hold may still be submitted."""
    require(user=user, project=task.project, action="adjudicate")
    annotator = _annotator(task, annotator_id)
    reason = (reason or "").strip()[:200]
    try:
        with transaction.atomic():
            pause = QueuePause(task=task, user=annotator, reason=reason, paused_by=user)
            pause.save()
    except IntegrityError:
        raise Conflict(
            f"{annotator.get_username()}'s queue in this task is paused already"
        ) from None
    return pause


def queue_resume(*, task: JudgmentTask, user: User, annotator_id: int) -> QueuePause:
    """Lift the pause of an annotator's queue (reviewers); the pause is kept as history."""
    require(user=user, project=task.project, action="adjudicate")
    annotator = _annotator(task, annotator_id)
    with transaction.atomic():
        pause = (
            QueuePause.objects.select_for_update()
            .filter(task=task, user=annotator, resumed_at__isnull=True)
            .first()
        )
        if pause is None:
            raise Conflict(f"{annotator.get_username()}'s queue in this task is not paused")
        pause.resumed_at, pause.resumed_by = timezone.now(), user
        pause.save(update_fields=["resumed_at", "resumed_by"])
    return pause


def judgments_send_back(
    *, task: JudgmentTask, user: User, annotator_id: int, last: int
) -> SendBack:
    """Send the annotator's ``last`` judgments in the task (their most recent, gold judgments
    aside) back for review (reviewers): the outcome of each of those items (or units) becomes
    *disputed*, so it waits in the task's dispute queue for a reviewer's decision (and a task
    that sets item status puts the item in review). Outcomes a reviewer decided and discarded
    ones are left as they are. Nothing is deleted: the judgments stand, the status changes
    are recorded, and the send-back is kept (:class:`SendBack`)."""
    require(user=user, project=task.project, action="adjudicate")
    if isinstance(last, bool) or not isinstance(last, int) or not 1 <= last <= SEND_BACK_MAX:
        raise ValidationFailed(f"last: how many recent judgments, 1 to {SEND_BACK_MAX}")
    annotator = _annotator(task, annotator_id)
    reason = (
        f"sent back for review by {user.get_username()}: judged by "
        f"{annotator.get_username()}, whose gold accuracy is in question"
    )
    with transaction.atomic():
        rows = list(
            Judgment.objects.filter(task=task, user=annotator)
            .order_by("-created_at", "-pk")
            .values_list("pk", "item_id", "unit")[:last]
        )
        if not rows:
            raise ValidationFailed(f"{annotator.get_username()} has no judgments in this task")
        sent: list[int] = []
        for _, item_id, unit in rows:
            outcome, _ = Outcome.objects.select_for_update().get_or_create(
                task=task, item_id=item_id, unit=unit
            )
            if outcome.decided_by_id is not None or outcome.verdict in ("discarded", "disputed"):
                continue
            outcome.verdict, outcome.value = Verdict.DISPUTED, None
            outcome.reason, outcome.decided_at = reason, None
            outcome.save()
            if task.updates_item_status and not task.has_units:
                item = Item.objects.get(pk=item_id)
                item_follows_outcome(item, outcome.verdict, reason, task=task)
            sent.append(item_id)
        if sent:
            judgment_agreement_sync(task=task, item_ids=sent)
        return SendBack.objects.create(
            task=task,
            user=annotator,
            by=user,
            judgment_ids=[pk for pk, _, _ in rows],
            item_ids=sent,
        )
