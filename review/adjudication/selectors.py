"""Reads for reviewers settling items: the joint-review queue of a blind-solve task."""

from __future__ import annotations

from dataclasses import dataclass, field

from annotation.judgment_tasks.consensus import Verdict
from annotation.judgment_tasks.models import Judgment, JudgmentTask, Outcome
from annotation.judgment_tasks.solving import answer_matches, decided_against
from annotation.verification.selectors import AnswerRow
from benchmark.exceptions import Forbidden
from benchmark.models import Item
from benchmark.permissions import can
from benchmark.typing import AnyUser


@dataclass
class ReviewRow:
    """One item of the joint-review queue with every verifier's answer side by side."""

    outcome: Outcome
    answers: list[AnswerRow] = field(default_factory=list)

    @property
    def item(self) -> Item:
        return self.outcome.item


def joint_review_queue(*, user: AnyUser, task: JudgmentTask) -> list[ReviewRow]:
    """Items whose verifiers diverged (disputed), each with all answers and whether each one
    matches the answer the verification is decided against. Reviewers and admins only; two queries."""
    if not can(user=user, project=task.project, action="adjudicate"):
        raise Forbidden("only reviewers and admins see the joint-review queue")
    outcomes = list(
        Outcome.objects.filter(task=task, verdict=Verdict.DISPUTED)
        .select_related("item")
        .order_by("item__position", "item_id")
    )
    rows = {o.item_id: ReviewRow(outcome=o) for o in outcomes}
    judgments = (
        Judgment.objects.filter(task=task, item_id__in=list(rows))
        .select_related("user")
        .order_by("item_id", "created_at", "id")
    )
    for j in judgments:
        row = rows[j.item_id]
        golden = decided_against(row.outcome, row.outcome.item)
        row.answers.append(AnswerRow(j, answer_matches(golden, j.value)))
    return list(rows.values())
