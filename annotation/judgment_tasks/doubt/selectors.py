"""Routing by doubt on a page: a task's items by doubt with the signals behind each, and the
annotators' cached reliabilities against the task's threshold (reviewers and admins only: an
annotator never sees which items are in doubt or why)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from annotation.judgment_tasks.doubt.models import AnnotatorReliability, ItemDoubt
from annotation.judgment_tasks.doubt.services import DOUBT_KIND, prior
from annotation.judgment_tasks.models import JudgmentTask
from benchmark import permissions
from benchmark.models import Job
from benchmark.typing import AnyUser

#: How many items the page lists.
TOP = 25


@dataclass(frozen=True)
class DoubtRow:
    item_id: int
    external_id: str
    unit: str
    score: float
    judgments: int
    signals: dict[str, Any]
    updated_at: datetime


@dataclass(frozen=True)
class ReliabilityRow:
    username: str
    score: float
    source: str
    judgments: int
    below: bool


@dataclass(frozen=True)
class DoubtTable:
    routing: bool
    threshold: float
    prior: float
    rows: list[DoubtRow]
    scored: int
    reliabilities: list[ReliabilityRow]
    job: Job | None


def doubt_table(*, user: AnyUser, task: JudgmentTask, top: int = TOP) -> DoubtTable:
    """The ``top`` items (or units) of the task most in doubt, with their signals, how many are
    scored, the annotators' reliabilities (lowest first) and the task's latest "Recompute doubt"
    job. Four statements."""
    permissions.require(user=user, project=task.project, action="manage_studies")
    # Not the rows that only hold the prior (written for the queue, nothing computed yet).
    doubts = ItemDoubt.objects.filter(task=task).exclude(judgments=0, signals={})
    rows = [
        DoubtRow(*values)
        for values in doubts.order_by("-score", "item__position", "item_id", "unit").values_list(
            "item_id", "item__external_id", "unit", "score", "judgments", "signals", "updated_at"
        )[:top]
    ]
    threshold = task.reliability_threshold
    reliabilities = [
        ReliabilityRow(name, score, source, n, score < threshold)
        for name, score, source, n in AnnotatorReliability.objects.filter(task=task)
        .order_by("score", "user__username")
        .values_list("user__username", "score", "source", "judgments")
    ]
    return DoubtTable(
        routing=task.serve_by_doubt,
        threshold=threshold,
        prior=prior(task),
        rows=rows,
        scored=doubts.count(),
        reliabilities=reliabilities,
        job=Job.objects.filter(kind=DOUBT_KIND, project_id=task.project_id, params__task_id=task.pk)
        .order_by("-id")
        .first(),
    )
