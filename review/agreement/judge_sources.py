"""The judge as a rater: where people and a model judge rate the same units on the same scale,
compare them (``benchmark.metrics.judge_rater``). Reviewers and admins only: a judge's values
are shown nowhere an annotator can reach.

Human rating contexts and their judge sources:

* a judgment task: its people's judgments (:func:`task_human_ratings`, the one place that
  reads them as ``(unit, rater, value)``) against a source from the registry
  (:func:`judge_source_register`). A source gives the judge's value per unit. Built in: the
  finished runs of every judge whose spec rates the task's units on its scale
  (``JudgeSpec.rates_task`` and ``rater_values``, ``review.judges.specs``), e.g.

  - an LLMI-Bench rubric judge run, for tasks whose unit is a criterion of an answer
    (``unit_kind`` "answer-criterion", ordinal 0/1/2): units ``response:<response id>:r<k>``;
  - an m&m's plan validity judge run, for item-level binary tasks (plan votes): unit
    ``<item id>``, value 1 when the judge found the item's ground-truth plan valid, else 0.

* an upload of Agentic-MME runs (``review.runs.selectors.run_set_judge_rater``, which the
  runs feature owns, since it reads the runs' models): people's answers to visual
  checks (each reviewer's newest ``VisualVerdict`` per run and checkpoint) against the V
  judge's answer recorded in the run's score (``detail["visual"]`` when the judge decided the
  check, ``detail["judge"]`` once a person's answer replaced it); units
  ``run:<run id>:<checkpoint id>``. No judgment task is needed.

A judgment the judge failed (unparseable twice, or no answer) has the value None: it is left
out and counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import orjson

from annotation.judgment_tasks.models import Judgment, JudgmentTask, Scheme, UnitKind
from benchmark import permissions
from benchmark.exceptions import ValidationFailed
from benchmark.typing import AnyUser
from review.agreement.services import LEVELS
from review.judges.models import JudgeRun
from review.judges.specs import JudgeSpec, judge_label, judge_specs

#: A task whose unit is one criterion of one answer (people score it 0/1/2), as the judge run's
#: rubric calls are; its judgments carry the unit ``response:<response id>:r<k>``.
UNIT_ANSWER_CRITERION = UnitKind.ANSWER_CRITERION
ITEM_LEVEL = UnitKind.ITEM

Row = tuple[str, str, Any]


# =========================================================================== people


def task_unit_kind(task: JudgmentTask) -> str:
    """What one unit of the task is (``UnitKind``): an item, one criterion of an answer..."""
    return str(task.unit_kind)


def task_human_ratings(*, task: JudgmentTask) -> list[Row]:
    """Every person's judgment of the task as ``(unit key, username, value)``. The unit key is
    the judgment's ``unit`` for tasks with units, else the item id as text (item-level tasks).
    Lists and objects become their JSON text."""
    rows: list[Row] = []
    judgments = Judgment.objects.filter(task=task).values_list(
        "item_id", "user__username", "value", "unit"
    )
    for item_id, username, value, unit in judgments.iterator(2000):
        if isinstance(value, list | dict):
            value = orjson.dumps(value).decode()
        rows.append((str(unit or item_id), username, value))
    return rows


def task_scale(task: JudgmentTask) -> tuple[Any, list[Any] | None]:
    """The level of measurement and categories the task's values are compared on."""
    level = LEVELS[Scheme(task.scheme)]
    if task.scheme == Scheme.BINARY:
        return level, [0, 1]
    if task.scheme in (Scheme.NOMINAL, Scheme.ORDINAL):
        return level, list(task.label_values)
    return level, None


def value_names(task: JudgmentTask) -> dict[Any, str]:
    """How the task's values read on the page."""
    if task.scheme == Scheme.BINARY:
        return {1: "1 · yes", 0: "0 · no"}
    return {
        e["value"]: f"{e['value']} · {e['label']}" if e.get("label") else str(e["value"])
        for e in task.labels or []
        if isinstance(e, dict) and "value" in e
    }


# =========================================================================== judge sources


@dataclass(frozen=True)
class JudgeSource:
    """A judge's ratings that fit a task: ``key`` names it in a URL (``judge-run:12``),
    ``values()`` reads ``{unit key: value or None}``."""

    key: str
    label: str
    kind: str
    values: Callable[[], dict[str, Any]]
    run: JudgeRun | None = None


Provider = Callable[[JudgmentTask], list[JudgeSource]]
_PROVIDERS: list[Provider] = []


def judge_source_register(provider: Provider) -> Provider:
    """Add a provider: ``provider(task)`` lists the judge sources compatible with the task
    (same project, same units, same scale). Usable as a decorator."""
    if provider not in _PROVIDERS:
        _PROVIDERS.append(provider)
    return provider


def _finished_runs(task: JudgmentTask, judge: str) -> list[JudgeRun]:
    return list(
        JudgeRun.objects.filter(project=task.project, judge=judge, job__status="succeeded")
        .select_related("job")
        .order_by("-created_at", "-id")
    )


def _run_label(run: JudgeRun) -> str:
    return f"{judge_label(run.judge)} · {run.model} (run #{run.pk}, {run.created_at:%Y-%m-%d})"


def judge_run_values(*, run: JudgeRun) -> dict[str, Any]:
    """``{unit key: value or None}`` of a judge run, as its judge rates units
    (``JudgeSpec.rater_values``)."""
    return run.spec.rater_values(run)


def _runs_of(spec: JudgeSpec, task: JudgmentTask) -> list[JudgeSource]:
    if not spec.rates_task(task):
        return []
    return [
        JudgeSource(
            key=f"judge-run:{run.pk}",
            label=_run_label(run),
            kind=run.judge,
            values=partial(spec.rater_values, run),
            run=run,
        )
        for run in _finished_runs(task, spec.name)
        if spec.rater_run(run)
    ]


@judge_source_register
def judge_runs(task: JudgmentTask) -> list[JudgeSource]:
    """The finished runs of every judge that rates the task's units on its scale."""
    return [source for spec in judge_specs(runnable=True) for source in _runs_of(spec, task)]


def judge_sources_for(*, user: AnyUser, task: JudgmentTask) -> list[JudgeSource]:
    """The judge sources that can rate alongside the task's people (reviewers and admins)."""
    permissions.require(user=user, project=task.project, action="manage_studies")
    return [source for provider in _PROVIDERS for source in provider(task)]


def judge_rater_report(*, user: AnyUser, task: JudgmentTask, key: str) -> dict[str, Any]:
    """The judge named ``key`` against the task's people: per person and against the majority
    Cohen's kappa, percent agreement, n and the confusion matrix; alpha with and without the
    judge (``benchmark.metrics.judge_rater``). ValidationFailed for a key that names no
    compatible source."""
    sources = judge_sources_for(user=user, task=task)
    source = next((s for s in sources if s.key == key), None)
    if source is None:
        choices = ", ".join(s.key for s in sources) or "none: no finished judge run fits this task"
        raise ValidationFailed(
            f"judge: {key[:80]!r} is not a judge that rates this task's units on its scale "
            f"(choose one of: {choices})"
        )
    level, categories = task_scale(task)
    people, judge, left_out = _without_examples(source, task)
    try:
        from benchmark.metrics.judge_rater import judge_as_rater  # lazy: NumPy, ~0.1 s

        report = judge_as_rater(people, judge, level, categories)
    except ValueError as exc:
        raise ValidationFailed(f"judge {source.key}: {exc}") from None
    report["source"] = {"key": source.key, "label": source.label, "kind": source.kind}
    report["n_examples_left_out"] = left_out
    return report


def _without_examples(source: JudgeSource, task: JudgmentTask) -> tuple[list[Row], dict, int]:
    """People's ratings and the judge's values, without the units written as worked examples
    into the template versions the judge run used (``review.agreement.judge_examples``): a version is
    never evaluated on its own examples. Also how many judged units were left out."""
    people = task_human_ratings(task=task)
    judge = source.values()
    if source.run is None:
        return people, judge, 0
    from review.agreement.judge_examples.selectors import examples_in_run

    examples = examples_in_run(run=source.run)
    if not examples:
        return people, judge, 0
    left_out = len(examples & set(judge))
    return (
        [r for r in people if r[0] not in examples],
        {u: v for u, v in judge.items() if u not in examples},
        left_out,
    )


def _unit_group(unit: Any) -> str:
    """The criterion or agent a unit rates (the label of ``response:<id>:<label>``)."""
    from annotation.judgment_tasks.units import UNIT_KEY

    match = UNIT_KEY.match(str(unit))
    return match.group(2) if match else ""


def judge_calibration_report(
    *, user: AnyUser, task: JudgmentTask, key: str, threshold: float
) -> dict[str, Any]:
    """How far the judge named ``key`` can be trusted on this task: against the people's
    majority per unit, overall and per criterion or agent (``benchmark.metrics.judge_rater.
    judge_calibration``), flagging kappa below ``threshold``. ValidationFailed as
    ``judge_rater_report``."""
    sources = judge_sources_for(user=user, task=task)
    source = next((s for s in sources if s.key == key), None)
    if source is None:
        raise ValidationFailed(f"judge: {key[:80]!r} is not a judge that rates this task's units")
    if not 0.0 <= threshold <= 1.0:
        raise ValidationFailed(f"threshold: {threshold} is not between 0 and 1")
    level, categories = task_scale(task)
    people, judge, left_out = _without_examples(source, task)
    from benchmark.metrics.judge_rater import judge_calibration  # lazy: NumPy

    try:
        report = judge_calibration(
            people,
            judge,
            level,
            categories,
            group_of=_unit_group if task.has_units else None,
            threshold=threshold,
        )
    except ValueError as exc:
        raise ValidationFailed(f"judge {source.key}: {exc}") from None
    report["n_examples_left_out"] = left_out
    return report


# =========================================================================== trust per judge

#: Judgment tasks tried, most judged first, when looking for a judge's agreement with people.
TRUST_TASKS_TRIED = 3
#: How long a judge's trust figure stays in Django's cache. Its key names everything the figure
#: is computed from (:func:`_trust_key`), so a kept figure is never stale: a change is a new key.
TRUST_CACHE_SECONDS = 7 * 24 * 3600
#: Bumped when what the figure holds or how it is computed changes (old keys are then unread).
TRUST_CACHE_VERSION = 1


def trust_tasks(*, project: Any) -> list[JudgmentTask]:
    """The project's judgment tasks that people have judged, most judgments first (one
    query): where a judge's trust is looked for (:func:`judge_trust`). Each carries the state
    of its judgments (:func:`_ratings_state`) in the same query."""
    from django.db.models import Count, Max, Sum

    return list(
        JudgmentTask.objects.filter(project=project)
        .annotate(
            n_judgments=Count("judgments"),
            last_judgment=Max("judgments__id"),
            judgment_versions=Sum("judgments__version"),
            last_edit=Max("judgments__edited_at"),
        )
        .filter(n_judgments__gt=0)
        .order_by("-n_judgments", "id")
    )


def _ratings_state(task: JudgmentTask) -> list[Any]:
    """What the task's people's ratings are, in four numbers: how many judgments, the largest
    id (an added one raises it, a removed one lowers the count), the sum of their versions and
    the latest edit (a changed judgment raises its ``version``). From :func:`trust_tasks`'s
    annotations, else one query."""
    from django.db.models import Count, Max, Sum

    names = ("n_judgments", "last_judgment", "judgment_versions", "last_edit")
    if all(hasattr(task, name) for name in names):
        found = {name: getattr(task, name) for name in names}
    else:
        found = Judgment.objects.filter(task=task).aggregate(
            n_judgments=Count("id"),
            last_judgment=Max("id"),
            judgment_versions=Sum("version"),
            last_edit=Max("edited_at"),
        )
    last_edit = found["last_edit"]
    return [
        found["n_judgments"],
        found["last_judgment"],
        found["judgment_versions"],
        last_edit.isoformat() if last_edit else None,
    ]


def _trust_key(
    *,
    spec: JudgeSpec,
    run: JudgeRun,
    tasks: list[JudgmentTask],
    threshold: float,
    examples: set[str],
) -> str:
    """The cache key of a judge's trust: a digest of everything :func:`judge_trust` reads.
    The judge and its run (the run's values change only through a new job: Resume), the worked
    examples written into the run's template versions (left out), the threshold, and per task
    tried, in order, its scale and the state of its people's judgments."""
    import hashlib

    state = [
        TRUST_CACHE_VERSION,
        spec.name,
        run.pk,
        run.job_id,
        threshold,
        sorted(examples),
        [
            [task.pk, str(task.scheme), str(task.unit_kind), task.label_values]
            + _ratings_state(task)
            for task in tasks
        ],
    ]
    digest = hashlib.blake2b(orjson.dumps(state), digest_size=16).hexdigest()
    return f"judge-trust:v{TRUST_CACHE_VERSION}:run{run.pk}:{digest}"


def judge_trust(
    *, spec: JudgeSpec, run: JudgeRun, tasks: list[JudgmentTask], threshold: float
) -> dict[str, Any] | None:
    """How far the judge's ``run`` agrees with people on this project: the calibration report's
    overall figures (:func:`judge_calibration_report`: Cohen's kappa against the people's
    majority per unit, with its bootstrap interval, flagged below ``threshold``) on the most
    judged of ``tasks`` (from :func:`trust_tasks`) whose units the judge rates on their scale
    and shares with the run. None when there is none ("no human ratings yet").

    Kept in Django's cache under a key that names all it is computed from (:func:`_trust_key`):
    the bootstrap runs once per state of the run, its examples and the people's judgments. A
    view reads one or two small queries per judge (the run's worked examples) and, on a miss,
    at most TRUST_TASKS_TRIED tasks' ratings, so a page that shows it stays bounded."""
    if spec.report_templates:  # people rate its agents' reports, not on its scale
        return report_trust(spec=spec, tasks=tasks)
    if not spec.rater_run(run):
        return None
    fitting = [task for task in tasks if spec.rates_task(task)][:TRUST_TASKS_TRIED]
    if not fitting:
        return None
    from django.core.cache import cache

    from review.agreement.judge_examples.selectors import examples_in_run

    # A version is never evaluated on its own worked examples.
    examples = set(examples_in_run(run=run))
    key = _trust_key(spec=spec, run=run, tasks=fitting, threshold=threshold, examples=examples)
    kept = cache.get(key)
    if kept is not None:
        return kept["trust"]
    trust = _trust_compute(
        spec=spec, run=run, tasks=fitting, threshold=threshold, examples=examples
    )
    cache.set(key, {"trust": trust}, TRUST_CACHE_SECONDS)
    return trust


def _trust_compute(
    *,
    spec: JudgeSpec,
    run: JudgeRun,
    tasks: list[JudgmentTask],
    threshold: float,
    examples: set[str],
) -> dict[str, Any] | None:
    """:func:`judge_trust` computed: the first of ``tasks`` where the judge and people share
    units."""
    from benchmark.metrics.judge_rater import judge_calibration  # lazy: NumPy

    values = {u: v for u, v in spec.rater_values(run).items() if u not in examples}
    for task in tasks:
        level, categories = task_scale(task)
        try:
            report = judge_calibration(
                [r for r in task_human_ratings(task=task) if r[0] not in examples],
                values,
                level,
                categories,
                threshold=threshold,
            )
        except ValueError:
            continue
        overall = report["overall"]
        if not overall["n_units"]:
            continue
        kappa = overall["kappa"]
        interval = kappa.get("interval") or {}
        return {
            "kappa": kappa.get("value"),
            "low": interval.get("low"),
            "high": interval.get("high"),
            "n_units": overall["n_units"],
            "flagged": overall["flagged"],
            "threshold": threshold,
            "task": task.pk,
            "task_name": task.name,
            "source": f"judge-run:{run.pk}",
        }
    return None


def report_trust(*, spec: JudgeSpec, tasks: list[JudgmentTask]) -> dict[str, Any] | None:
    """The trust of a judge whose agents' reports people rate ("Rate the judge"): on the most
    rated such task of this judge (from :func:`trust_tasks`), the share of its reports people
    rated right (agreement rate with the report at least 80 %,
    ``benchmark.metrics.report_agreement``) with its 95 % Wilson interval, flagged below 0.8;
    reports written as worked examples into the versions that run used are left out. None when
    people rated none. Cached as :func:`judge_trust` is, on the task's ratings."""
    from django.core.cache import cache

    from review.agreement.judge_examples.reports import selectors as reports
    from review.agreement.judge_examples.selectors import examples_in_run

    task = next((t for t in tasks if reports.report_spec(t) is spec), None)
    if task is None:
        return None
    run_id = (task.unit_params or {}).get("judge_run")
    run = (
        JudgeRun.objects.filter(project_id=task.project_id, pk=run_id).first()
        if isinstance(run_id, int)
        else None
    )
    if run is None:
        return None
    threshold = reports.DEFAULT_THRESHOLD / 100
    examples = set(examples_in_run(run=run))
    key = _trust_key(spec=spec, run=run, tasks=[task], threshold=threshold, examples=examples)
    kept = cache.get(key)
    if kept is not None:
        return kept["trust"]
    from benchmark.metrics.report_agreement import rated_right_share

    ratings = {u: r for u, r in reports.unit_ratings(task).items() if u not in examples}
    found = rated_right_share(ratings, reports.DEFAULT_THRESHOLD)
    trust = None
    if found["n"]:
        trust = {
            "kappa": None,
            "low": found["low"],
            "high": found["high"],
            "n_units": found["n"],
            "flagged": found["value"] < threshold,
            "threshold": threshold,
            "task": task.pk,
            "task_name": task.name,
            "source": f"judge-run:{run.pk}",
            "figure": "rated-right",
            "share": found["value"],
        }
    cache.set(key, {"trust": trust}, TRUST_CACHE_SECONDS)
    return trust


# =========================================================================== routing by doubt


def doubt_judge_values(task: JudgmentTask) -> dict[str, dict[str, Any]]:
    """Routing by doubt's judge signal (``annotation.judgment_tasks.doubt``): the values of the newest run of
    a judge that rates the task's units, ``{unit key: {"judge": value, "judge_name": ...}}``.
    A run that is finishing counts (the doubt is recomputed at the end of each judge run,
    before its job is marked done); failed runs do not. Two statements per judge that rates the
    task, then the run's values."""
    best: tuple[JudgeSpec, JudgeRun] | None = None
    for spec in judge_specs(runnable=True):
        if not spec.rates_task(task):
            continue
        run = (
            JudgeRun.objects.filter(
                project=task.project, judge=spec.name, job__status__in=("succeeded", "running")
            )
            .select_related("job")
            .order_by("-created_at", "-id")
            .first()
        )
        if run is None or not spec.rater_run(run):
            continue
        if best is None or (run.created_at, run.pk) > (best[1].created_at, best[1].pk):
            best = (spec, run)
    if best is None:
        return {}
    spec, run = best
    label = _run_label(run)
    return {
        str(key): {"judge": value, "judge_name": label}
        for key, value in spec.rater_values(run).items()
        if value is not None
    }
