"""Creating a response-level human evaluation (ATP-Bench App. B.2, LLM-I App. C, pairwise
preference): which answers, on which scale, rated by how many people.

It is an ordinary judgment task with units (``annotation.judgment_tasks.services.unit_task_create``):
overlap k, leases, blind judgments and outcomes work as for any other task. What is specific
here is the sample. Each chosen model contributes at most one answer per item (its first
stored one); discarded items are left out. With ``same_items`` (the default) the sample is
drawn from the items every chosen model answered, so each model is rated on the same queries;
without it, each model's answers are drawn on their own (as ATP-Bench "sampled 100 responses
from each model"). A pairwise task samples items answered by at least two of the models and
makes one pair per two models that answered it, the side (A or B) drawn per pair. Every draw
uses ``random.Random`` seeded from ``seed`` (and the model's name, for draws per model), so the
same choices give the same sample; the seed also orders each rater's units.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from itertools import combinations
from typing import Any

from annotation.judgment_tasks.models import JudgmentTask
from annotation.judgment_tasks.services import unit_task_create
from benchmark.exceptions import ValidationFailed
from benchmark.models import ItemStatus, Origin, Project, Response
from benchmark.permissions import require
from benchmark.typing import User
from review.human_eval.scales import PAIR, SCALES

MAX_SEED = 2**31 - 1


def _answers(project: Project, models: Sequence[str]) -> dict[str, dict[int, int]]:
    """``{model: {item id: answer id}}``: each model's first answer to each item that is not
    discarded."""
    rows = (
        Response.objects.filter(item__project=project, origin=Origin.MODEL, model_name__in=models)
        .exclude(item__status=ItemStatus.DISCARDED)
        .order_by("item_id", "position", "id")
        .values_list("model_name", "item_id", "pk")
    )
    out: dict[str, dict[int, int]] = defaultdict(dict)
    for model, item_id, pk in rows:
        out[model].setdefault(item_id, pk)
    return out


def _draw(population: list[int], n: int | None, rng: random.Random) -> list[int]:
    ordered = sorted(population)
    if n is None or n >= len(ordered):
        return ordered
    return sorted(rng.sample(ordered, n))


def _sample_answers(
    answers: dict[str, dict[int, int]],
    models: list[str],
    per_model: int | None,
    seed: int,
    same_items: bool,
) -> list[int]:
    if same_items:
        common = set.intersection(*(set(answers[m]) for m in models))
        if not common:
            raise ValidationFailed(
                "answers: no item was answered by every chosen model; untick 'same items' to "
                "sample each model's answers on their own"
            )
        items = _draw(list(common), per_model, random.Random(f"{seed}:items"))
        return [answers[m][item] for item in items for m in models]
    chosen: list[int] = []
    for model in models:
        items = _draw(list(answers[model]), per_model, random.Random(f"{seed}:{model}"))
        chosen += [answers[model][item] for item in items]
    return chosen


def _sample_pairs(
    answers: dict[str, dict[int, int]], models: list[str], per_model: int | None, seed: int
) -> list[list[int]]:
    by_item: dict[int, list[str]] = defaultdict(list)
    for model in models:
        for item in answers[model]:
            by_item[item].append(model)
    shared = [item for item, who in by_item.items() if len(who) >= 2]
    if not shared:
        raise ValidationFailed("answers: no item was answered by two of the chosen models")
    items = _draw(shared, per_model, random.Random(f"{seed}:items"))
    sides = random.Random(f"{seed}:sides")
    pairs = []
    for item in items:
        for first, second in combinations(by_item[item], 2):
            a, b = answers[first][item], answers[second][item]
            pairs.append([a, b] if sides.random() < 0.5 else [b, a])
    return pairs


def _check_name(name: str, models: list[str]) -> str:
    """Raters see the task's name: it may not name a model under evaluation."""
    named = [m for m in models if m.strip() and m.strip().lower() in name.lower()]
    if named:
        raise ValidationFailed(
            f"name: raters see the task's name and must not know the models; leave "
            f"{', '.join(map(repr, named))} out of it"
        )
    return name


def _default_name(project: Project, title: str) -> str:
    taken = set(JudgmentTask.objects.filter(project=project).values_list("name", flat=True))
    base = f"Human evaluation: {title}"
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base} ({n})", n + 1
    return candidate


def human_eval_task_create(
    *,
    project: Project,
    user: User,
    scale: str,
    models: Sequence[str],
    per_model: int | None = None,
    seed: int = 0,
    overlap: int = 3,
    same_items: bool = True,
    name: str = "",
) -> JudgmentTask:
    """A response-level evaluation task (reviewers and admins): ``per_model`` answers of each
    of ``models`` (None: all; for ``pair``: that many items, each giving one pair per two
    models that answered it), drawn with ``seed``, each rated blind on ``scale`` ("atp",
    "likert" or "pair") by ``overlap`` people."""
    require(user=user, project=project, action="manage_studies")
    chosen = SCALES.get(scale)
    if chosen is None:
        raise ValidationFailed(f"scale: {scale!r} is not one of {', '.join(SCALES)}")
    models = sorted(dict.fromkeys(str(m) for m in models if str(m).strip()))
    if len(models) < (2 if scale == PAIR else 1):
        raise ValidationFailed(
            "models: choose at least two models to compare"
            if scale == PAIR
            else "models: choose at least one model whose answers people rate"
        )
    if per_model is not None and (
        isinstance(per_model, bool) or not isinstance(per_model, int) or per_model < 1
    ):
        raise ValidationFailed("answers per model: at least 1 (or leave it empty for all)")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ValidationFailed(f"seed: a whole number from 0 to {MAX_SEED}")
    answers = _answers(project, models)
    missing = [m for m in models if not answers.get(m)]
    if missing:
        raise ValidationFailed(f"models: no answers of {', '.join(map(repr, missing))}")
    params: dict[str, Any] = {
        "scale": scale,
        "models": models,
        "per_model": per_model,
        "seed": seed,
        "same_items": bool(same_items) if scale != PAIR else True,
        "rater_order_seed": seed,
    }
    if scale == PAIR:
        params["pairs"] = _sample_pairs(answers, models, per_model, seed)
    else:
        params["responses"] = _sample_answers(answers, models, per_model, seed, same_items)
    name = (name or "").strip() or _default_name(project, chosen.title)
    return unit_task_create(
        project=project,
        user=user,
        unit_kind=chosen.unit_kind,
        name=_check_name(name, models),
        question=chosen.question,
        unit_params=params,
        overlap=overlap,
        scale={"scheme": chosen.scheme, "labels": chosen.labels, "consensus": chosen.consensus},
    )
