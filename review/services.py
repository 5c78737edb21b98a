"""Reviewers settle disputed items; every decision is kept with who and when."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation.consensus import Verdict
from annotation.models import JudgmentTask, Outcome
from annotation.services import item_follows_outcome
from benchmark.exceptions import PermissionDenied, ValidationFailed
from benchmark.models import Item
from benchmark.permissions import can
from benchmark.typing import User
from review.models import Decision

DECISIONS = (Verdict.ACCEPTED, Verdict.REJECTED, "discarded")


def outcome_decide(
    *,
    task: JudgmentTask,
    item: Item,
    reviewer: User,
    verdict: str,
    value: Any = None,
    reason: str = "",
) -> Outcome:
    """Accept, reject, or discard with a reason; the item's status follows."""
    if not can(user=reviewer, project=task.project, action="review"):
        raise PermissionDenied("only reviewers and admins decide disputed items")
    if item.project_id != task.project_id:
        raise ValidationFailed("the item is not in this task's project")
    if verdict not in DECISIONS:
        raise ValidationFailed("decide accepted, rejected or discarded")
    reason = reason.strip()
    if verdict == "discarded" and not reason:
        raise ValidationFailed("say why the item is discarded")
    with transaction.atomic():
        outcome, _ = Outcome.objects.select_for_update().get_or_create(task=task, item=item)
        outcome.verdict = verdict
        outcome.value = value
        outcome.reason = reason or f"decided by {reviewer.get_username()}"
        outcome.decided_by = reviewer
        outcome.decided_at = timezone.now()
        outcome.save()
        Decision.objects.create(
            task=task, item=item, reviewer=reviewer, verdict=verdict, value=value, reason=reason
        )
        if task.updates_item_status:
            item_follows_outcome(item, verdict, outcome.reason)
    return outcome
