"""People as a ranking source (issue 10, "Rankings"): the per-model rubric figure of a "score
the criteria" judgment task (``unit_kind`` "answer-criterion", units ``response:<id>:r<k>``,
people score 0 not met, 1 partially, 2 fully met), computed exactly like the LLMI-Bench rubric
judge's, so a rubric judge run and people can be compared per model (Spearman's rho on the
compare page) and per criterion.

The rule (stated on the compare page, :data:`RULE`):

* a unit's value: the task's outcome value when the unit is decided (a majority of its k
  ratings agreed), else the mean of the ratings it has so far; a unit nobody rated has none;
* per answer: the sum of its criteria's values / (2 x number of criteria with a value);
* per model: the mean over its answers with at least one rated criterion, as a percentage.

Per criterion, against a judge run: the judge's mean score and the people's mean value over
the units both scored, and how often the judge's score equals the people's majority (per unit
the value most people gave it; a tie is left out), as on the agreement page.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from annotation.judgment_tasks.consensus import Verdict
from annotation.judgment_tasks.models import Judgment, JudgmentTask, Outcome, TaskUnit, UnitKind
from annotation.judgment_tasks.units import UNIT_KEY
from benchmark.exceptions import ValidationFailed
from benchmark.models import Project, Response

PREFIX = "people:"
SCALE = (0, 1, 2)
RULE = (
    "A unit (one criterion of one answer) counts with the task's outcome value when it is "
    "decided (a majority of its ratings agreed), else with the mean of the people's ratings so "
    "far; units nobody rated are left out. Per answer: the sum of its criteria's values / "
    "(2 × number of criteria rated); per model: the mean over its answers, as a percentage — "
    "the judge's Rubric figure computed from people's scores."
)
MAJORITY_RULE = (
    "The people's majority of a unit is the value most people gave it (a tie is left out), as "
    "on the agreement page."
)


def criterion_tasks(*, project: Project) -> list[JudgmentTask]:
    """The project's "score the criteria" tasks (answer-criterion units), newest first."""
    return list(
        JudgmentTask.objects.filter(project=project, unit_kind=UnitKind.ANSWER_CRITERION).order_by(
            "-created_at", "-id"
        )
    )


def _score(value: Any) -> int | None:
    if isinstance(value, bool) or value not in SCALE:
        return None
    return int(value)


def _unit(key: str) -> tuple[int, str] | None:
    match = UNIT_KEY.match(key or "")
    return (int(match.group(1)), match.group(2)) if match else None


@dataclass
class PeopleRubric:
    """What people said about a criterion task's units."""

    task: JudgmentTask
    #: unit key -> its value (decided outcome, else mean of the ratings); rated units only.
    values: dict[str, float]
    #: unit key -> the value most people gave it (ties absent).
    majority: dict[str, int]
    #: unit key -> (response id, criterion label), every unit of the task.
    units: dict[str, tuple[int, str]]
    #: response id -> answering model, for every answer of the task.
    models: dict[int, str]
    n_ratings: int = 0
    n_decided: int = 0
    n_ties: int = 0

    @property
    def rated_answers(self) -> frozenset[int]:
        return frozenset(self.units[key][0] for key in self.values)

    @property
    def task_answers(self) -> frozenset[int]:
        return frozenset(response for response, _ in self.units.values())

    def figures(self) -> dict[str, dict[str, Any]]:
        """Per model: ``rubric`` (percent), ``n`` (answers with a rated criterion) and
        ``units`` (rated criteria)."""
        per_answer: dict[int, list[float]] = defaultdict(list)
        for key, value in self.values.items():
            per_answer[self.units[key][0]].append(value)
        per_model: dict[str, list[float]] = defaultdict(list)
        units: Counter[str] = Counter()
        for response, values in per_answer.items():
            model = self.models.get(response, "")
            per_model[model].append(sum(values) / (2 * len(values)))
            units[model] += len(values)
        return {
            model: {
                "rubric": 100 * sum(rates) / len(rates),
                "n": len(rates),
                "units": units[model],
            }
            for model, rates in sorted(per_model.items())
        }


def _ratings(task: JudgmentTask, units: Mapping[str, Any]) -> dict[str, list[int]]:
    """Per unit of the task, the people's ratings on the 0-2 scale."""
    ratings: dict[str, list[int]] = defaultdict(list)
    for unit, value in Judgment.objects.filter(task=task).values_list("unit", "value"):
        score = _score(value)
        if unit in units and score is not None:
            ratings[unit].append(score)
    return ratings


def _decided(task: JudgmentTask, units: Mapping[str, Any]) -> dict[str, int]:
    """Per decided unit (accepted or rejected: a majority agreed), the outcome's value."""
    decided: dict[str, int] = {}
    outcomes = Outcome.objects.filter(
        task=task, verdict__in=[Verdict.ACCEPTED, Verdict.REJECTED]
    ).values_list("unit", "value")
    for unit, value in outcomes:
        score = _score(value)
        if unit in units and score is not None:
            decided[unit] = score
    return decided


def people_rubric(*, task: JudgmentTask) -> PeopleRubric:
    """The task's people as a rubric source (see the module docs). ValidationFailed when the
    task is not a criterion task on the 0-2 scale."""
    if task.unit_kind != UnitKind.ANSWER_CRITERION:
        raise ValidationFailed(
            f"task {task.name!r} does not score rubric criteria of answers; only a 'score the "
            "criteria' task gives people's rubric figures"
        )
    if set(task.label_values) != set(SCALE):
        raise ValidationFailed(f"task {task.name!r} does not rate on the 0-2 rubric scale")
    units: dict[str, tuple[int, str]] = {}
    for key in TaskUnit.objects.filter(task=task).values_list("key", flat=True):
        parsed = _unit(key)
        if parsed is not None:
            units[key] = parsed
    ratings = _ratings(task, units)
    decided = _decided(task, units)
    values: dict[str, float] = {}
    for unit in units:
        if unit in decided:
            values[unit] = float(decided[unit])
        elif ratings.get(unit):
            values[unit] = sum(ratings[unit]) / len(ratings[unit])
    majority, ties = majorities(ratings)
    responses = {response for response, _ in units.values()}
    models = dict(
        Response.objects.filter(pk__in=responses).values_list("pk", "model_name").iterator(2000)
    )
    return PeopleRubric(
        task=task,
        values=values,
        majority=majority,
        units=units,
        models=models,
        n_ratings=sum(len(v) for v in ratings.values()),
        n_decided=len(decided),
        n_ties=len(ties),
    )


def majorities(ratings: Mapping[str, Iterable[int]]) -> tuple[dict[str, int], list[str]]:
    """Per unit the value most people gave it, and the units whose top count is shared."""
    out: dict[str, int] = {}
    ties: list[str] = []
    for unit, values in ratings.items():
        counts = Counter(values).most_common()
        if not counts:
            continue
        if len(counts) > 1 and counts[0][1] == counts[1][1]:
            ties.append(unit)
        else:
            out[unit] = counts[0][0]
    return out, ties


@dataclass
class _Criterion:
    judge: list[int] = field(default_factory=list)
    people: list[float] = field(default_factory=list)
    agree: list[bool] = field(default_factory=list)
    no_majority: int = 0


def judge_on_units(
    judged: Mapping[int, Mapping[str, int]],
    units: Iterable[tuple[int, str]],
    models: Mapping[int, str],
) -> dict[str, dict[str, Any]]:
    """The rubric judge's per-model figures over ``units`` only (``judged``: the judge's valid
    scores ``{response id: {criterion: score}}``): per answer the sum of its judged units'
    scores / (2 x their number), per model the mean as a percentage."""
    per_answer: dict[int, list[int]] = defaultdict(list)
    for response, label in units:
        score = (judged.get(response) or {}).get(label)
        if score is not None:
            per_answer[response].append(score)
    per_model: dict[str, list[float]] = defaultdict(list)
    for response, scores in per_answer.items():
        per_model[models.get(response, "")].append(sum(scores) / (2 * len(scores)))
    return {
        model: {"rubric": 100 * sum(rates) / len(rates), "n": len(rates)}
        for model, rates in sorted(per_model.items())
    }


def criteria_against_judge(
    people: PeopleRubric, judged: Mapping[int, Mapping[str, int]]
) -> dict[str, Any]:
    """Per criterion, over the units both the judge (a valid score) and people (a value)
    scored: the judge's mean score, the people's mean value, and the share of units whose
    judge score equals the people's majority. ``units``: the shared units."""
    rows: dict[str, _Criterion] = defaultdict(_Criterion)
    shared = 0
    for key, value in people.values.items():
        response, label = people.units[key]
        score = (judged.get(response) or {}).get(label)
        if score is None:
            continue
        shared += 1
        row = rows[label]
        row.judge.append(score)
        row.people.append(value)
        if key in people.majority:
            row.agree.append(people.majority[key] == score)
        else:
            row.no_majority += 1

    def as_dict(label: str, row: _Criterion) -> dict[str, Any]:
        return {
            "key": label,
            "n": len(row.judge),
            "judge": sum(row.judge) / len(row.judge),
            "people": sum(row.people) / len(row.people),
            "agree": 100 * sum(row.agree) / len(row.agree) if row.agree else None,
            "pairs": len(row.agree),
            "no_majority": row.no_majority,
        }

    ordered = sorted(rows, key=lambda k: (int(k[1:]) if k[1:].isdigit() else 10**6, k))
    everything = _Criterion()
    for row in rows.values():
        everything.judge += row.judge
        everything.people += row.people
        everything.agree += row.agree
        everything.no_majority += row.no_majority
    return {
        "rows": [as_dict(k, rows[k]) for k in ordered],
        "all": as_dict("all", everything) if everything.judge else None,
        "units": shared,
    }
