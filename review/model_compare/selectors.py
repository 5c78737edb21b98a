"""Reads for "Compare two models": which models can be compared (their answers on the
project, or the models of a human evaluation's pairs), the human evaluation whose pairs are
judged, and the pairs two models form."""

from __future__ import annotations

from collections import Counter

from annotation.judgment_tasks.models import JudgmentTask, UnitKind
from benchmark.exceptions import NotFound
from benchmark.models import Project, Response
from benchmark.typing import AnyUser
from review.judges.models import JudgeRun
from review.judges.specs.model_pairs import JUDGE, comparison_pairs
from review.judges.specs.subjects import model_answer_counts

__all__ = [
    "comparison_models",
    "comparison_pairs",
    "comparison_runs",
    "pair_task_get",
    "task_pairs",
]


def pair_task_get(*, user: AnyUser, project: Project, pk: int) -> JudgmentTask:
    """A human evaluation of pairs (``answer-pair``) of the project; NotFound otherwise (the
    caller has checked the user may review the project)."""
    task = JudgmentTask.objects.filter(
        pk=pk, project=project, unit_kind=UnitKind.ANSWER_PAIR
    ).first()
    if task is None:
        raise NotFound(f"task {pk} is not a human evaluation of pairs of this project")
    return task


def _task_pair_models(task: JudgmentTask) -> tuple[list[tuple[int, int]], dict[int, str]]:
    pairs = [(int(a), int(b)) for a, b in (task.unit_params or {}).get("pairs") or []]
    ids = {pk for pair in pairs for pk in pair}
    models = dict(
        Response.objects.filter(pk__in=ids, item__project=task.project).values_list(
            "pk", "model_name"
        )
    )
    return pairs, models


def task_pairs(*, task: JudgmentTask, model_a: str, model_b: str) -> list[list[int]]:
    """The task's pairs of answers of ``model_a`` and ``model_b`` (shown in either order), as
    ``[A's answer, B's answer]``, each of A's answers once."""
    pairs, models = _task_pair_models(task)
    out: dict[int, int] = {}
    for first, second in pairs:
        names = (models.get(first), models.get(second))
        if names == (model_a, model_b):
            out.setdefault(first, second)
        elif names == (model_b, model_a):
            out.setdefault(second, first)
    return [[a, b] for a, b in out.items()]


def comparison_models(
    *, user: AnyUser, project: Project, task: JudgmentTask | None = None
) -> list[tuple[str, int]]:
    """``(model, answers)`` of the models that can be compared, by name: the project's model
    answers, or with ``task`` the models of its pairs (answers in its pairs)."""
    if task is None:
        return model_answer_counts(project=project)
    pairs, models = _task_pair_models(task)
    counts = Counter(models[pk] for pair in pairs for pk in pair if pk in models)
    return sorted(counts.items())


def comparison_runs(*, user: AnyUser, project: Project, limit: int = 20) -> list[JudgeRun]:
    """The project's model comparisons (``pairwise-models`` runs), newest first."""
    from review.judges.reports import judge_runs_of

    return list(judge_runs_of(user=user, project=project).filter(judge=JUDGE.name)[:limit])
