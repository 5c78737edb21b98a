"""Starting a comparison of two models: the pairwise judge (``pairwise-models``) on every item
both answered, or on a human evaluation's pairs of the two, each pair in both orders, as a judge
run through the one judge runner (``review.judges.services``)."""

from __future__ import annotations

from annotation.judgment_tasks.models import JudgmentTask
from benchmark.exceptions import ValidationFailed
from benchmark.models import Job, Project
from benchmark.typing import User
from review.judges import services as judge_services
from review.judges.models import JudgeRun
from review.judges.specs.model_pairs import JUDGE
from review.model_compare.selectors import comparison_pairs, task_pairs


def model_comparison_start(
    *,
    project: Project,
    user: User | None,
    model_a: str,
    model_b: str,
    task: JudgmentTask | None = None,
    base_url: str = "",
    model: str = "",
    workers: int = 4,
    enqueue: bool = True,
) -> tuple[JudgeRun, Job]:
    """A judge run comparing ``model_a`` (A) with ``model_b`` (B) and its job (enqueued after
    commit; without ``enqueue`` the caller runs it). ValidationFailed when the two are the
    same or share no item (or no pair of ``task``)."""
    model_a, model_b = model_a.strip(), model_b.strip()
    if not model_a or not model_b or model_a == model_b:
        raise ValidationFailed("choose two different models to compare")
    if task is not None:
        pairs = task_pairs(task=task, model_a=model_a, model_b=model_b)
        if not pairs:
            raise ValidationFailed(
                f"the human evaluation {task.name!r} has no pair of {model_a} and {model_b}"
            )
    else:
        pairs = comparison_pairs(project=project, model_a=model_a, model_b=model_b)
    selection: dict[str, object] = {"pairs": pairs}
    if task is not None:
        selection["human_eval_task"] = task.pk
    return judge_services.judge_run_create(
        project=project,
        user=user,
        judge=JUDGE.name,
        base_url=base_url,
        model=model,
        models=[model_a, model_b],
        workers=workers,
        enqueue=enqueue,
        selection=selection,
    )
