"""Reads for judging. Scoped to the user: another project's task answers 404, and annotators
only ever see their own judgments (blind)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Q, QuerySet
from django.shortcuts import get_object_or_404

from annotation.models import Assignment, AssignmentStatus, Judgment, JudgmentTask, Outcome
from benchmark.models import Item, Project
from benchmark.permissions import can

User = AbstractBaseUser | AnonymousUser


def task_list(*, user: User, project: Project) -> QuerySet[JudgmentTask]:
    verdicts = {
        f"n_{v}": Count("outcomes", filter=Q(outcomes__verdict=v))
        for v in ("accepted", "rejected", "disputed", "discarded")
    }
    return (
        JudgmentTask.objects.filter(project=project, project__memberships__user=user)
        .annotate(**verdicts)
        .order_by("name")
    )


def task_get(*, user: User, pk: int) -> JudgmentTask:
    if not user.is_authenticated:
        return get_object_or_404(JudgmentTask.objects.none(), pk=pk)
    return get_object_or_404(
        JudgmentTask.objects.filter(project__memberships__user=user).select_related("project"),
        pk=pk,
    )


def task_item_get(*, user: User, task: JudgmentTask, pk: int) -> Item:
    return get_object_or_404(
        Item.objects.filter(project=task.project, project__memberships__user=user), pk=pk
    )


def assignment_for(*, user: User, task: JudgmentTask, item: Item) -> Assignment | None:
    return Assignment.objects.filter(task=task, item=item, user=user).first()  # type: ignore[misc]


def judgments_visible(*, user: User, task: JudgmentTask, item: Item) -> list[Judgment]:
    """Everyone's judgments for reviewers and admins; only one's own for annotators."""
    rows = Judgment.objects.filter(task=task, item=item).select_related("user")
    if not can(user=user, project=task.project, action="review"):
        rows = rows.filter(user=user)  # type: ignore[misc]
    return list(rows.order_by("created_at"))


def my_progress(*, user: User, task: JudgmentTask) -> dict[str, Any]:
    mine = Assignment.objects.filter(task=task, user=user)  # type: ignore[misc]
    return {
        "submitted": mine.filter(status=AssignmentStatus.SUBMITTED).count(),
        "open": mine.filter(status=AssignmentStatus.ACTIVE).count(),
    }


def disputes(*, user: User, task: JudgmentTask) -> QuerySet[Outcome]:
    return (
        Outcome.objects.filter(task=task, verdict="disputed", task__project__memberships__user=user)
        .select_related("item")
        .order_by("item__position", "item_id")
    )


def outcome_for(*, task: JudgmentTask, item: Item) -> Outcome | None:
    return Outcome.objects.filter(task=task, item=item).select_related("decided_by").first()
