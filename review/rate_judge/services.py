"""Creating the judgment tasks in which people rate a judge's reports (ATP-Bench §6) or score
rubric criteria of answers themselves, from a judge run or from chosen models' answers.

Both are ordinary judgment tasks with units (``annotation.judgment_tasks.services.unit_task_create``):
overlap k, leases, blind judgments and outcomes work as for items. What is specific here is
choosing the units: which run, which agents or criteria, and optionally a seeded random
sample of the answers (ATP-Bench sampled 400 answers from all models)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from annotation.judgment_tasks.models import JudgmentTask, UnitKind
from annotation.judgment_tasks.services import unit_task_create
from benchmark.exceptions import ValidationFailed
from benchmark.models import Origin, Project, Response
from benchmark.permissions import require
from benchmark.typing import User
from review.judges.models import JudgeRun
from review.rate_judge.units import agent_name, label_order


def run_labels(*, run: JudgeRun) -> dict[str, int]:
    """The labels (agents, criteria) of a run's successful calls, each with how many answers
    it reported on, in agent order."""
    counts: dict[str, int] = {}
    for label in run.calls.filter(ok=True).values_list("label", flat=True):
        counts[label] = counts.get(label, 0) + 1
    return {label: counts[label] for label in sorted(counts, key=label_order)}


def _sample(ids: Sequence[int], sample: int | None, seed: int) -> list[int] | None:
    """None (every answer), or ``sample`` of the answer ids drawn without replacement."""
    if sample is None:
        return None
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 1:
        raise ValidationFailed("sample: the number of answers to rate, at least 1 (or leave empty)")
    ordered = sorted(set(ids))
    if sample >= len(ordered):
        return None
    return sorted(random.Random(seed).sample(ordered, sample))


def _name(project: Project, name: str, default: str) -> str:
    name = (name or "").strip()
    if name:
        return name
    taken = set(JudgmentTask.objects.filter(project=project).values_list("name", flat=True))
    candidate, n = default, 2
    while candidate in taken:
        candidate, n = f"{default} ({n})", n + 1
    return candidate


def rate_judge_task_create(
    *,
    run: JudgeRun,
    user: User,
    labels: Sequence[str],
    overlap: int = 3,
    sample: int | None = None,
    seed: int = 0,
    name: str = "",
) -> JudgmentTask:
    """A "rate the judge" task over a judge run (reviewers and admins): one unit per answer
    and chosen agent the run reported on successfully (``response:<answer id>:<label>``);
    annotators rate their agreement with that one report 0-2. ``sample``: rate only that many
    answers, drawn at random with ``seed`` (every chosen agent's report on each)."""
    require(user=user, project=run.project, action="manage_studies")
    available = run_labels(run=run)
    labels = [str(label) for label in dict.fromkeys(labels)]
    if not labels:
        raise ValidationFailed("agents: choose at least one agent whose reports people rate")
    unknown = [label for label in labels if label not in available]
    if unknown:
        raise ValidationFailed(
            f"agents: run #{run.pk} has no successful report by {', '.join(map(repr, unknown))}; "
            f"it has {', '.join(available) or 'none'}"
        )
    labels.sort(key=label_order)
    answers = run.calls.filter(ok=True, label__in=labels).values_list("response_id", flat=True)
    responses = _sample(list(answers), sample, seed)
    params: dict[str, Any] = {
        "judge_run": run.pk,
        "judge": run.judge,
        "judge_model": run.model,
        "labels": labels,
        "responses": responses,
        "sample": sample,
        "seed": seed,
    }
    agents = ", ".join(agent_name(label) for label in labels)
    return unit_task_create(
        project=run.project,
        user=user,
        unit_kind=UnitKind.JUDGE_REPORT,
        name=_name(run.project, name, f"Rate the judge: run #{run.pk}"),
        question=f"Do you agree with this report of the judge ({agents}) on this answer? "
        "0 disagree, 1 partly agree, 2 agree.",
        unit_params=params,
        overlap=overlap,
    )


def criterion_task_create(
    *,
    project: Project,
    user: User,
    run: JudgeRun | None = None,
    models: Sequence[str] = (),
    criteria: Sequence[str] = (),
    overlap: int = 3,
    sample: int | None = None,
    seed: int = 0,
    name: str = "",
) -> JudgmentTask:
    """A task in which people score rubric criteria of answers themselves, 0 not met,
    1 partially, 2 fully met (the LLMI rubric judge's scale), one unit per answer and
    criterion (``response:<answer id>:r<k>``): the answers a judge ``run`` judged, or the
    answers of ``models``. ``criteria``: only these (e.g. ["r1", "r3"]); empty: all of each
    item's criteria. The same keys as the rubric judge's calls, so the judge can be compared
    with people as one more rater."""
    require(user=user, project=project, action="manage_studies")
    if run is not None and run.project_id != project.pk:
        raise ValidationFailed("run: that judge run belongs to another project")
    if (run is None) == (not models):
        raise ValidationFailed("answers: choose either a judge run or one or more models")
    bad = [c for c in criteria if not (c[:1] == "r" and c[1:].isdigit())]
    if bad:
        raise ValidationFailed(f"criteria: {', '.join(map(repr, bad))} is not r1, r2, ...")
    if run is not None:
        ids = list(run.calls.values_list("response_id", flat=True))
        source: dict[str, Any] = {"judge_run": run.pk}
    else:
        models = sorted(dict.fromkeys(models))
        rows = Response.objects.filter(
            item__project=project, origin=Origin.MODEL, model_name__in=models
        )
        found = set(rows.values_list("model_name", flat=True))
        missing = [m for m in models if m not in found]
        if missing:
            raise ValidationFailed(f"models: no answers of {', '.join(map(repr, missing))}")
        ids = list(rows.values_list("pk", flat=True))
        source = {"models": list(models)}
    params = {
        **source,
        "criteria": sorted(dict.fromkeys(criteria), key=label_order),
        "responses": _sample(ids, sample, seed),
        "sample": sample,
        "seed": seed,
    }
    what = f"run #{run.pk}" if run is not None else ", ".join(models)
    return unit_task_create(
        project=project,
        user=user,
        unit_kind=UnitKind.ANSWER_CRITERION,
        name=_name(project, name, f"Score the criteria: {what}"[:200]),
        unit_params=params,
        overlap=overlap,
    )
