"""Reads for response-level human evaluation: the answers a rater sees (blind), the results
(ATP-Bench Table 11, LLM-I Table 2's "Human" column, pairwise win rates and a Bradley-Terry
ranking, agreement per scale), Spearman's rho against a judge run over the same answers, and
the raw ratings. Callers check the user may review before calling the results and exports;
the rater's reads never load a model's name.

Definitions (``benchmark.metrics.human_eval``):

* a model's mean on a scale is the mean of all its ratings (with k raters per answer, the
  mean of its answers' mean ratings); the 95 % interval is a percentile bootstrap over its
  answers, each with all its ratings, seeded with the task's seed;
* the *average scoring rate* of the Likert scale (LLM-I Table 2, "Human") is 100 x mean / 5;
* agreement: Krippendorff's alpha over the units judged twice or more, at the level of the
  scale (counts ratio, FS and Likert ordinal, preference nominal), with a bootstrap interval;
* rho: Spearman's rho (with p) between the models' ranking by people and by the judge, over
  the answers both rated (ATP-Bench App. B.2: FS with FS, MI with MI; Likert with the rubric
  rate or R; the Bradley-Terry ranking with the judge's headline figure); and for a scale of
  single answers, also between the answers' mean rating and the judge's score of each answer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db.models import CharField, Count, Exists, OuterRef, Q, QuerySet, Value
from django.db.models.functions import Cast, Concat

from annotation.judgment_tasks.models import Judgment, JudgmentTask, TaskUnit, UnitKind
from annotation.judgment_tasks.selectors import tasks_below_reviewer_exist
from annotation.judgment_tasks.units import unit_responses
from benchmark import visibility
from benchmark.exceptions import ValidationFailed
from benchmark.judge_prompts import rankings
from benchmark.metrics.human_eval import bradley_terry, group_means, win_rates
from benchmark.models import JobStatus, Membership, Origin, Project, Response
from benchmark.permissions import can, roles_for
from benchmark.typing import AnyUser
from review.human_eval.scales import LIKERT, PAIR, Scale, scale_of
from review.judges.models import JudgeRun
from review.judges.selectors import judge_run_report
from review.judges.specs import Column, judge_specs

BOOTSTRAP = 1000

# =========================================================================== the rater's view


def identity_hidden(*, user: AnyUser) -> QuerySet[Response]:
    """The answers whose model ``user`` may not see: the units of an active human evaluation
    (``answer-eval`` or ``answer-pair`` task) of their project, when ``user`` may rate them
    (a member below reviewer: any annotator may take units from the queue). Reviewers and
    admins see every model. One small query first asks whether any such task could hide a
    model from ``user`` (a unit's item belongs to its task's project;
    ``Response.objects.none()`` when none can); otherwise use the answer as a subquery.

    This is the human-evaluation identity-hiding rule: ``review.apps`` registers it with
    :mod:`benchmark.visibility`, which every selector that returns responses applies."""
    if not user.is_authenticated:
        return Response.objects.none()

    # Decided in Python first, with one small query: without an active human evaluation in a
    # project where ``user`` is below reviewer, no model is hidden, and the callers skip the
    # rule (its subqueries are not built nor compiled).
    def evaluations() -> bool:
        return tasks_below_reviewer_exist(
            user=user,
            tasks=JudgmentTask.objects.filter(
                active=True, unit_kind__in=(UnitKind.ANSWER_EVAL, UnitKind.ANSWER_PAIR)
            ),
        )

    if not visibility.decided(user, "human-evaluation", evaluations):
        return Response.objects.none()
    pk = Cast(OuterRef("pk"), CharField())
    units = TaskUnit.objects.filter(
        Q(key__startswith=Concat(Value("response:"), pk, Value(":")))
        | Q(key__startswith=Concat(Value("pair:"), pk, Value(":")))
        | (Q(key__startswith="pair:") & Q(key__endswith=Concat(Value(":"), pk))),
        item_id=OuterRef("item_id"),
        task__active=True,
        task__unit_kind__in=(UnitKind.ANSWER_EVAL, UnitKind.ANSWER_PAIR),
    )
    reviewer = Membership.objects.filter(
        project_id=OuterRef("item__project_id"),
        user=user.pk,
        role__in=roles_for("adjudicate"),
    )
    return Response.objects.filter(Exists(units), ~Exists(reviewer))


def unit_answers(*, task: JudgmentTask, unit: TaskUnit) -> list[Response]:
    """The answer (or the two answers, A then B) a unit names, with their text only: the
    rating page never loads the model's name. Answers deleted since are left out."""
    ids = unit_responses(unit.key)
    rows = {
        r.pk: r
        for r in Response.objects.filter(pk__in=ids, item_id=unit.item_id).only(
            "pk", "item_id", "text"
        )
    }
    return [rows[pk] for pk in ids if pk in rows]


# =========================================================================== loading


@dataclass
class _Rated:
    """A task's units (key -> answer ids), the answers' models, and its judgments."""

    scale: Scale
    models: list[str]
    units: dict[str, tuple[int, ...]]
    model_of: dict[int, str]
    judgments: list[tuple[str, str, Any]] = field(default_factory=list)

    def unit_models(self, key: str) -> tuple[str, ...]:
        return tuple(self.model_of.get(pk, "?") for pk in self.units.get(key, ()))


def _load(task: JudgmentTask) -> _Rated:
    scale = scale_of(task)
    if scale is None:
        raise ValidationFailed(f"task {task.name!r} is not a human evaluation of answers")
    units = {
        key: unit_responses(key)
        for key in TaskUnit.objects.filter(task=task).values_list("key", flat=True)
    }
    ids = {pk for pks in units.values() for pk in pks}
    model_of = dict(Response.objects.filter(pk__in=ids).values_list("pk", "model_name"))
    judgments = list(
        Judgment.objects.filter(task=task)
        .order_by("unit", "user__username")
        .values_list("unit", "user__username", "value")
    )
    models = list((task.unit_params or {}).get("models") or sorted(set(model_of.values())))
    return _Rated(scale, models, units, model_of, judgments)


def _seed(task: JudgmentTask) -> int:
    seed = (task.unit_params or {}).get("seed")
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else 0


def _value(scale: Scale, value: Any, key: str) -> Any:
    """One field of a rating: the object's field for several scores, else the value."""
    if scale.scheme == "scores":
        return value.get(key) if isinstance(value, dict) else None
    return value


# =========================================================================== results


def _alpha(rows: list[tuple[str, str, Any]], level: Any, categories: Any, seed: int) -> dict:
    rows = [r for r in rows if r[2] is not None]
    from benchmark.metrics import agreement  # lazy: NumPy, ~0.1 s

    stat = agreement.krippendorff_alpha(rows, level, categories)
    stat["ci"] = None
    if stat["value"] is not None:
        stat["ci"] = agreement.bootstrap_intervals(
            rows, level, categories, n_resamples=BOOTSTRAP, seed=seed
        )["krippendorff_alpha"]
    return stat


def _progress(task: JudgmentTask, rated: _Rated) -> dict[str, Any]:
    per_unit: dict[str, int] = defaultdict(int)
    for unit, _, _ in rated.judgments:
        per_unit[unit] += 1
    return {
        "units": len(rated.units),
        "done": sum(1 for key in rated.units if per_unit.get(key, 0) >= task.overlap),
        "ratings": len(rated.judgments),
        "raters": len({rater for _, rater, _ in rated.judgments}),
    }


def _scale_results(task: JudgmentTask, rated: _Rated, bootstrap: int) -> dict[str, Any]:
    seed = _seed(task)
    figures: list[dict[str, Any]] = []
    for f in rated.scale.fields:
        rows = [
            (unit, rated.unit_models(unit)[0], _value(rated.scale, value, f.key))
            for unit, _, value in rated.judgments
            if unit in rated.units
        ]
        means = group_means(rows, groups=rated.models, n_resamples=bootstrap, seed=seed)
        by_model = {g["group"]: g for g in means["groups"]}
        categories = list(range(f.low, f.high + 1)) if f.level == "ordinal" else None
        alpha = _alpha(
            [(u, r, _value(rated.scale, v, f.key)) for u, r, v in rated.judgments],
            f.level,
            categories,
            seed,
        )
        figures.append({"field": f, "by_model": by_model, "alpha": alpha})
    table: list[dict[str, Any]] = []
    for model in rated.models:
        cells = []
        for figure in figures:
            entry = dict(figure["by_model"].get(model) or {})
            if rated.scale.key == LIKERT and entry.get("mean") is not None:
                # LLM-I's average scoring rate: the mean score over the top of the scale.
                entry["rate"] = 100.0 * entry["mean"] / 5
                ci = entry.get("ci") or {}
                if ci.get("low") is not None:
                    entry["rate_ci"] = (100.0 * ci["low"] / 5, 100.0 * ci["high"] / 5)
            cells.append({"field": figure["field"], **entry})
        table.append({"model": model, "cells": cells})
    return {
        "rows": table,
        "agreement": [{"field": fig["field"], "alpha": fig["alpha"]} for fig in figures],
    }


def _pair_rows(rated: _Rated) -> list[tuple[str, str, str, Any]]:
    rows = []
    for unit, _, value in rated.judgments:
        models = rated.unit_models(unit)
        if len(models) == 2:
            rows.append((unit, models[0], models[1], value))
    return rows


def _pair_results(task: JudgmentTask, rated: _Rated, bootstrap: int) -> dict[str, Any]:
    rows = _pair_rows(rated)
    rates = win_rates(rows, models=rated.models, n_resamples=bootstrap, seed=_seed(task))
    bt = bradley_terry([(a, b, v) for _, a, b, v in rows], models=rated.models)
    strengths = {m["model"]: m for m in bt["models"]}
    for row in rates["models"]:
        row["bt"] = strengths.get(row["model"])
    return {
        "wins": rates,
        "bt": bt,
        "agreement": [
            {
                "field": None,
                "alpha": _alpha(rated.judgments, "nominal", ["a", "b", "tie"], _seed(task)),
            }
        ],
    }


def human_eval_results(*, task: JudgmentTask, bootstrap: int = BOOTSTRAP) -> dict[str, Any]:
    """The task's figures (see the module docs): ``scale``, ``progress``, and ``rows`` (per
    model, one cell per field of the scale: mean, ci, n_units, n_ratings; Likert also rate
    and rate_ci) or for pairs ``wins`` and ``bt``; ``agreement`` per field."""
    rated = _load(task)
    out: dict[str, Any] = {
        "scale": rated.scale,
        "progress": _progress(task, rated),
        "seed": _seed(task),
        "bootstrap": bootstrap,
    }
    if rated.scale.key == PAIR:
        out.update(_pair_results(task, rated, bootstrap))
    else:
        out.update(_scale_results(task, rated, bootstrap))
    return out


# =========================================================================== against a judge

LOWER_IS_BETTER = {"mi"}
"""Human figures that rank lower first (MI: fewer missed images is better)."""


def judge_figures(scale: str) -> dict[str, dict[str, tuple[str, str | None]]]:
    """What each human figure of the scale is compared with, per judge (its spec's
    ``human_eval``): ``{human figure: {judge name: (the judge's per-model figure, the
    per-answer score in the run's report, or None: per model only)}}``."""
    out: dict[str, dict[str, tuple[str, str | None]]] = {}
    for spec in judge_specs(runnable=True):
        for key, pair in (spec.human_eval.get(scale) or {}).items():
            out.setdefault(key, {})[spec.name] = pair
    return out


def _judge_column(run: JudgeRun, name: str) -> Column | None:
    return next((c for c in run.spec.columns if c.name == name), None)


def comparable_runs(*, user: AnyUser, task: JudgmentTask) -> QuerySet[JudgeRun]:
    """The project's finished judge runs whose figures the task's scale compares with
    (reviewers only; none for anyone else)."""
    scale = scale_of(task)
    if scale is None or not can(user=user, project=task.project, action="manage_studies"):
        return JudgeRun.objects.none()
    judges = {j for by_judge in judge_figures(scale.key).values() for j in by_judge}
    runs = JudgeRun.objects.filter(project=task.project, judge__in=judges).select_related("job")
    return runs.exclude(job__status__in=(JobStatus.QUEUED, JobStatus.RUNNING)).order_by("-id")


def _rho(a: dict[str, float], b: dict[str, float], lower_a: bool, lower_b: bool) -> dict:
    result = rankings.rank_correlation(
        a, b, higher_is_better_a=not lower_a, higher_is_better_b=not lower_b
    )
    return {"rho": result.rho, "p": result.p, "n": result.n, "note": result.note,
            "ranking_a": result.ranking_a, "ranking_b": result.ranking_b}  # fmt: skip


def _human_answer_means(rated: _Rated, key: str, shared: set[int]) -> dict[int, float]:
    sums: dict[int, list[float]] = defaultdict(list)
    for unit, _, value in rated.judgments:
        pk = rated.units.get(unit, (None,))[0]
        field_value = _value(rated.scale, value, key)
        if pk in shared and isinstance(field_value, int | float):
            sums[pk].append(float(field_value))
    return {pk: sum(v) / len(v) for pk, v in sums.items()}


def _human_model_figure(rated: _Rated, key: str, shared: set[int]) -> dict[str, float]:
    """Per model, over the shared answers: the mean rating of ``key`` (every rating once),
    or for pairs the Bradley-Terry strength from the pairs of shared answers."""
    if key == "bt":
        rows = [
            (a, b, v) for unit, a, b, v in _pair_rows(rated) if set(rated.units[unit]) <= shared
        ]
        bt = bradley_terry(rows, models=rated.models)
        return {m["model"]: m["theta"] for m in bt["models"]}
    totals: dict[str, list[float]] = defaultdict(list)
    for unit, _, value in rated.judgments:
        pk = rated.units.get(unit, (None,))[0]
        field_value = _value(rated.scale, value, key)
        if pk in shared and isinstance(field_value, int | float):
            totals[rated.model_of[pk]].append(float(field_value))
    return {m: sum(v) / len(v) for m, v in totals.items() if v}


def judge_comparison(*, task: JudgmentTask, run: JudgeRun) -> dict[str, Any]:
    """People against a judge run on the answers both rated: per compared figure, both
    sides' per-model figures, rho over models (and over answers, for single answers)."""
    rated = _load(task)
    figures = judge_figures(rated.scale.key)
    pairs = {key: by_judge[run.judge] for key, by_judge in figures.items() if run.judge in by_judge}
    if not pairs:
        raise ValidationFailed(
            f"a {run.get_judge_display()} run has no figure to compare with the "
            f"{rated.scale.title} scale"
        )
    rated_answers = {pk for pks in rated.units.values() for pk in pks}
    judged = set(
        run.calls.filter(response_id__in=rated_answers).values_list("response_id", flat=True)
    )
    out: dict[str, Any] = {"run": run, "rated": len(rated_answers), "shared": len(judged)}
    if not judged:
        out["note"] = f"Judge run #{run.pk} judged none of the answers people rated."
        out["rows"] = []
        return out
    report = judge_run_report(run=run, responses=judged)
    judge_models = report["summary"].get("models") or {}
    per_answer = {a["response"]: a["scores"] for a in report["answers"]}
    rows = [
        _comparison_row(rated, run, key, judge_key, answer_key, judged, judge_models, per_answer)
        for key, (judge_key, answer_key) in pairs.items()
    ]
    out["rows"] = rows
    if len(judged) < len(rated_answers):
        out["note"] = (
            f"Judge run #{run.pk} judged {len(judged)} of the {len(rated_answers)} answers "
            "people rated; both sides are taken over those answers."
        )
    return out


def _comparison_row(
    rated: _Rated,
    run: JudgeRun,
    key: str,
    judge_key: str,
    answer_key: str | None,
    judged: set[int],
    judge_models: dict[str, Any],
    per_answer: dict[Any, Any],
) -> dict[str, Any]:
    """One compared figure: both sides per model with rho over models, and over answers when
    the judge scores single answers."""
    answer_means = _human_answer_means(rated, key, judged) if answer_key is not None else {}
    human = _human_model_figure(rated, key, judged)
    judge = {
        m: float(v)
        for m, figs in judge_models.items()
        if (v := (figs or {}).get(judge_key)) is not None
    }
    lower = key in LOWER_IS_BETTER
    column = _judge_column(run, judge_key)
    judge_lower = column is not None and column.lower_is_better
    field_of = rated.scale.field_of(key)
    row: dict[str, Any] = {
        "human": field_of.label if field_of is not None else "Bradley-Terry strength",
        "key": key,
        "judge": column.label if column is not None else judge_key,
        "models": _rho(human, judge, lower, judge_lower),
        "table": [
            (m, human.get(m), judge.get(m)) for m in rated.models if m in human or m in judge
        ],
    }
    if answer_key is not None:
        theirs = {
            str(pk): float(score)
            for pk, scores in per_answer.items()
            if isinstance(score := (scores or {}).get(answer_key), int | float)
        }
        mine = {str(pk): v for pk, v in answer_means.items()}
        over_answers = _rho(mine, theirs, lower, judge_lower)
        over_answers["note"] = over_answers["note"].replace("model", "answer")
        row["answers"] = over_answers
    return row


# =========================================================================== raw ratings


def ratings_rows(*, task: JudgmentTask) -> Iterator[dict[str, Any]]:
    """Every rating with the model(s) it is about, one dict per judgment, in unit order."""
    rated = _load(task)
    scale = rated.scale
    rows = (
        Judgment.objects.filter(task=task)
        .order_by("item__position", "unit", "user__username")
        .values_list(
            "unit", "item__external_id", "user__username", "value", "comment", "seconds",
            "created_at",
        )
    )  # fmt: skip
    for unit, item, rater, value, comment, seconds, created in rows.iterator(2000):
        ids = rated.units.get(unit) or unit_responses(unit)
        row: dict[str, Any] = {"task": task.pk, "unit": unit, "item": item, "scale": scale.key}
        if scale.key == PAIR:
            a, b = (ids + (None, None))[:2]
            row.update(
                answer_a=a, model_a=rated.model_of.get(a or 0, ""),
                answer_b=b, model_b=rated.model_of.get(b or 0, ""),
                rater=rater, preference=value,
                preferred_model={"a": rated.model_of.get(a or 0, ""),
                                 "b": rated.model_of.get(b or 0, "")}.get(value, ""),
            )  # fmt: skip
        else:
            row.update(answer=ids[0], model=rated.model_of.get(ids[0], ""), rater=rater)
            for f in scale.fields:
                row[f.key] = _value(scale, value, f.key)
        row.update(comment=comment, seconds=seconds, created_at=created.isoformat())
        yield row


def ratings_fields(*, task: JudgmentTask) -> list[str]:
    scale = scale_of(task)
    head = ["task", "unit", "item", "scale"]
    tail = ["comment", "seconds", "created_at"]
    if scale is not None and scale.key == PAIR:
        return [*head, "answer_a", "model_a", "answer_b", "model_b", "rater", "preference",
                "preferred_model", *tail]  # fmt: skip
    keys = [f.key for f in scale.fields] if scale is not None else []
    return [*head, "answer", "model", "rater", *keys, *tail]


def project_models(*, project: Project) -> list[tuple[str, int]]:
    """``(model, number of answers)`` of the project's model answers, by name."""
    rows = (
        Response.objects.filter(item__project=project, origin=Origin.MODEL)
        .values("model_name")
        .annotate(n=Count("id"))
        .order_by("model_name")
    )
    return [(r["model_name"], r["n"]) for r in rows]
