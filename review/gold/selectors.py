"""Gold items and gold accuracy (reviewers).

**Gold accuracy** of an annotator in a task: of their gold judgments (judgments of a gold
item served to them as such) of the task's current gold items, the share whose value equals
the gold item's value (compared as the consensus compares: free answers normalized, numbers
by value), with its 95 % Wilson score interval (``benchmark.metrics.aggregation
.wilson_interval``). An annotator is **flagged** once they have at least the task's
``gold_min_judgments`` gold judgments and their accuracy is below its ``gold_threshold``.
Gold judgments never enter outcomes, agreement figures or exports of outcomes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import QuerySet
from django.urls import reverse

from annotation.judgment_tasks.gold import gold_tallies
from annotation.judgment_tasks.models import GoldItem, JudgmentTask, QueuePause
from benchmark.exceptions import NotFound
from benchmark.metrics.aggregation import wilson_interval
from benchmark.models import Item, Project
from benchmark.notices import ItemNotice
from benchmark.permissions import can
from benchmark.typing import AnyUser


@dataclass
class GoldAccuracy:
    """One annotator's gold accuracy in one task."""

    task_id: int
    user_id: int
    username: str
    correct: int
    total: int
    low: float
    high: float
    flagged: bool
    paused: bool

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0


@dataclass
class GoldReport:
    """Per task: its settings and its annotators' gold accuracy (the most judged first)."""

    task: JudgmentTask
    rows: list[GoldAccuracy] = field(default_factory=list)
    n_gold: int = 0

    @property
    def flagged(self) -> list[GoldAccuracy]:
        return [row for row in self.rows if row.flagged]


def gold_items(*, user: AnyUser, task: JudgmentTask) -> QuerySet[GoldItem]:
    """The task's current gold items, with their item and who marked them (reviewers only:
    nobody else may know which items are gold)."""
    if not can(user=user, project=task.project, action="adjudicate"):
        return GoldItem.objects.none()
    return (
        GoldItem.objects.filter(task=task, removed_at__isnull=True)
        .select_related("item", "created_by")
        .order_by("item__position", "item_id")
    )


def gold_reports(
    *, user: AnyUser, project: Project, tasks: Iterable[JudgmentTask]
) -> list[GoldReport]:
    """The gold accuracy of every annotator in each of ``tasks`` (of ``project``) that has
    gold items (one query when none has, three for all the tasks otherwise); reviewers only
    (else nothing)."""
    if not can(user=user, project=project, action="adjudicate"):
        return []
    tasks = [t for t in tasks if t.project_id == project.pk]
    if not tasks:
        return []
    by_id = {t.pk: t for t in tasks}
    n_gold: dict[int, int] = defaultdict(int)
    for task_id in GoldItem.objects.filter(task_id__in=by_id, removed_at__isnull=True).values_list(
        "task_id", flat=True
    ):
        n_gold[task_id] += 1
    if not n_gold:  # accuracy is measured on current gold items only: nothing to show
        return []
    counts = gold_tallies(tasks=tasks)
    paused = set(
        QueuePause.objects.filter(task_id__in=by_id, resumed_at__isnull=True).values_list(
            "task_id", "user_id"
        )
    )
    reports = {t.pk: GoldReport(task=t, n_gold=n_gold[t.pk]) for t in tasks}
    for (task_id, user_id), (correct, total, username) in counts.items():
        task = by_id[task_id]
        low, high = wilson_interval(correct, total)
        reports[task_id].rows.append(
            GoldAccuracy(
                task_id=task_id,
                user_id=user_id,
                username=username,
                correct=correct,
                total=total,
                low=low,
                high=high,
                flagged=total >= task.gold_min_judgments and correct / total < task.gold_threshold,
                paused=(task_id, user_id) in paused,
            )
        )
    for report in reports.values():
        report.rows.sort(key=lambda r: (-r.total, r.username))
    return [r for r in reports.values() if r.n_gold]


def gold_report(*, user: AnyUser, task: JudgmentTask) -> GoldReport:
    """:func:`gold_reports` of one task (an empty report when it has no gold)."""
    found = gold_reports(user=user, project=task.project, tasks=[task])
    return found[0] if found else GoldReport(task=task)


def paused_people(*, user: AnyUser, task: JudgmentTask) -> QuerySet[QueuePause]:
    """The pauses in force in the task, with who is paused and who paused them."""
    if not can(user=user, project=task.project, action="adjudicate"):
        return QueuePause.objects.none()
    return (
        QueuePause.objects.filter(task=task, resumed_at__isnull=True)
        .select_related("user", "paused_by")
        .order_by("paused_at")
    )


def gold_item_lookup(*, user: AnyUser, task: JudgmentTask, ref: str) -> Item:
    """An item of the task's project named by its id or its external id (reviewers), for
    marking it gold; NotFound says which reference matched nothing."""
    ref = (ref or "").strip()
    items = Item.objects.filter(project=task.project)
    if not ref or not can(user=user, project=task.project, action="adjudicate"):
        raise NotFound("item: say which item (its id or external id)")
    found = items.filter(external_id=ref).first()
    if found is None and ref.isdigit():
        found = items.filter(pk=int(ref)).first()
    if found is None:
        raise NotFound(f"item: no item {ref!r} in this project")
    return found


def item_gold_notices(*, user: AnyUser, project: Project, item: Item) -> list[ItemNotice]:
    """On a gold item's page, for reviewers only (nobody else may learn which items are
    gold): "gold item of task T, answer v", and the task's annotators whose gold accuracy is
    below its threshold. Nothing (and no query) for anyone else."""
    if not can(user=user, project=project, action="adjudicate"):
        return []
    marks = list(
        GoldItem.objects.filter(item=item, removed_at__isnull=True)
        .select_related("task__project")
        .order_by("task__name")
    )
    notices = []
    tasks = [m.task for m in marks]
    reports = {r.task.pk: r for r in gold_reports(user=user, project=project, tasks=tasks)}
    for mark in marks:
        report = reports.get(mark.task_id)
        flagged = ", ".join(
            f"{row.username} ({row.accuracy:.2f})" for row in (report.flagged if report else [])
        )
        what = f"unit {mark.unit}" if mark.unit else "item"
        text = f"The answer that counts for the gold {what}: {mark.value!r}."
        if flagged:
            text += f" Below the gold threshold in this task: {flagged}."
        notices.append(
            ItemNotice(
                kind="gold",
                title=f"Gold {'unit' if mark.unit else 'item'} of task {mark.task.name}",
                text=text,
                url=reverse("review:gold", args=[mark.task_id]),
                link_text="Gold items and accuracy",
            )
        )
    return notices
