"""Reads of the worked examples (``review.agreement.judge_examples``): a judge's correction cases on a
people's task, the example units held back, one example set and its held-back comparison.
Reviewers and admins only (``manage_studies``); another project's set answers 404."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from annotation.judgment_tasks.models import JudgmentTask
from benchmark import permissions
from benchmark.exceptions import NotFound, ValidationFailed
from benchmark.models import Project
from benchmark.typing import AnyUser
from review.adjudication.models import Decision
from review.agreement import judge_sources
from review.agreement.judge_examples.models import ExampleSet, WorkedExampleCase
from review.judges.models import JudgeRun

MAJORITY = "majority"
OVERRIDE = "override"


@dataclass(frozen=True)
class CorrectionCase:
    """A unit where people's answer differs from the judge's: a reviewer's decision that
    overrides the judge (``source`` "override"), or else the people's majority."""

    unit: str
    judge: Any
    people: Any
    source: str
    reason: str
    votes: int = 0
    n_raters: int = 0
    #: The example set that already holds this unit (0: none).
    example_set: int = 0


def _source(user: AnyUser, task: JudgmentTask, key: str) -> judge_sources.JudgeSource:
    sources = judge_sources.judge_sources_for(user=user, task=task)
    source = next((s for s in sources if s.key == key), None)
    if source is None or source.run is None:
        raise ValidationFailed(
            f"judge: {key[:80]!r} is not a finished judge run that rates this task's units"
        )
    return source


def source_run(*, user: AnyUser, task: JudgmentTask, key: str) -> JudgeRun:
    """The judge run named ``key`` (``judge-run:<id>``) among the task's judge sources."""
    run = _source(user, task, key).run
    assert run is not None
    return run


def example_units(*, project: Project, judge: str) -> dict[str, int]:
    """``{unit: example set id}`` of every unit written into any version of ``judge``'s
    templates in ``project``: held back from every comparison of that judge."""
    rows = WorkedExampleCase.objects.filter(
        example_set__project=project, example_set__judge=judge
    ).values_list("unit", "example_set_id")
    return {unit: set_id for unit, set_id in rows}


def examples_in_run(*, run: JudgeRun) -> set[str]:
    """The example units written into the template versions ``run`` used: those of every
    example set whose versions the run used, and of the sets before it (a version's block
    carries every earlier example). A run's evaluation never counts them."""
    sets = list(
        ExampleSet.objects.filter(project_id=run.project_id, judge=run.judge).order_by(
            "created_at", "id"
        )
    )
    used = set((run.templates or {}).items())
    last = -1
    for n, example_set in enumerate(sets):
        created = set((example_set.templates or {}).items())
        if created and created <= used:
            last = n
    if last < 0:
        return set()
    ids = [s.pk for s in sets[: last + 1]]
    return set(
        WorkedExampleCase.objects.filter(example_set_id__in=ids).values_list("unit", flat=True)
    )


def _reason(names: dict[Any, str], judge: Any, people: Any, votes: int, n: int) -> str:
    said = names.get(judge, str(judge))
    right = names.get(people, str(people))
    return f"{votes} of {n} annotators gave {right}; the judge gave {said}"


def correction_cases(*, user: AnyUser, task: JudgmentTask, key: str) -> list[CorrectionCase]:
    """The units where a reviewer's decision (item-level tasks) or else the people's majority
    differs from the judge run ``key``'s value, in the task's unit order."""
    source = _source(user, task, key)
    assert source.run is not None
    judge = source.values()
    level, categories = judge_sources.task_scale(task)
    names = judge_sources.value_names(task)
    from benchmark.metrics.judge_rater import disagreements  # lazy: NumPy

    try:
        found = disagreements(judge_sources.task_human_ratings(task=task), judge, level, categories)
    except ValueError as exc:
        raise ValidationFailed(f"judge {source.key}: {exc}") from None
    held = example_units(project=task.project, judge=source.run.judge)
    cases: dict[str, CorrectionCase] = {}
    for d in found:
        unit = str(d["unit"])
        cases[unit] = CorrectionCase(
            unit=unit,
            judge=d["judge"],
            people=d["people"],
            source=MAJORITY,
            reason=_reason(names, d["judge"], d["people"], d["votes"], d["n_raters"]),
            votes=d["votes"],
            n_raters=d["n_raters"],
            example_set=held.get(unit, 0),
        )
    if not task.has_units:
        # A reviewer's newest decision on an item, where it gives a value, overrides people.
        newest: dict[str, Decision] = {}
        for decision in (
            Decision.objects.filter(task=task).exclude(value=None).order_by("created_at", "id")
        ):
            newest[str(decision.item_id)] = decision
        for unit, decision in newest.items():
            value = judge.get(unit)
            if value is None:
                continue
            if decision.value == value:  # the reviewer sided with the judge
                cases.pop(unit, None)
                continue
            said = names.get(value, str(value))
            cases[unit] = CorrectionCase(
                unit=unit,
                judge=value,
                people=decision.value,
                source=OVERRIDE,
                reason=decision.reason.strip()
                or f"a reviewer decided {names.get(decision.value, str(decision.value))}; "
                f"the judge gave {said}",
                example_set=held.get(unit, 0),
            )
    order = {unit: n for n, unit in enumerate(judge)}
    return sorted(cases.values(), key=lambda c: (order.get(c.unit, len(order)), c.unit))


def example_sets_for(*, user: AnyUser, task: JudgmentTask) -> list[ExampleSet]:
    """The example sets made from the task's correction cases, newest first."""
    permissions.require(user=user, project=task.project, action="manage_studies")
    return list(ExampleSet.objects.filter(task=task).order_by("-created_at", "-id"))


def example_set_get(*, user: AnyUser, pk: int) -> ExampleSet:
    """The example set ``pk`` of a project where the user may manage studies; NotFound
    otherwise (another project's set does not exist for them)."""
    found = (
        ExampleSet.objects.filter(pk=pk)
        .select_related("project", "task", "source_run", "held_back_run__job", "created_by")
        .first()
    )
    if found is None or permissions.role_in(user=user, project=found.project) is None:
        raise NotFound(f"no set of worked examples #{pk}")
    permissions.require(user=user, project=found.project, action="manage_studies")
    return found


@dataclass(frozen=True)
class HeldBackInputs:
    """What a held-back comparison reads once: people's ratings of the task, the source run's
    values, and the judge's example units in the project."""

    rows: list[tuple[str, str, Any]]
    before: dict[str, Any]
    examples: dict[str, int]


def held_back_inputs(*, example_set: ExampleSet) -> HeldBackInputs:
    run = example_set.judge_run
    return HeldBackInputs(
        rows=judge_sources.task_human_ratings(task=example_set.people_task),
        before=run.spec.rater_values(run),
        examples=example_units(project=example_set.project, judge=example_set.judge),
    )


def held_back_units(*, example_set: ExampleSet, inputs: HeldBackInputs | None = None) -> list[str]:
    """The units a held-back comparison uses: those people judged in the set's task that the
    source run judged, minus every example unit of the judge in the project. For a judge whose
    reports people rate: the reports they rated (``reports.selectors.held_back_units``)."""
    from review.agreement.judge_examples.reports import selectors as reports

    if reports.is_report_task(example_set.people_task):
        return reports.held_back_units(example_set=example_set)
    inputs = inputs or held_back_inputs(example_set=example_set)
    people = {unit for unit, _, value in inputs.rows if value is not None}
    before = {u for u, v in inputs.before.items() if v is not None}
    return sorted((people & before) - set(inputs.examples))


def held_back_comparison(
    *, user: AnyUser, example_set: ExampleSet, inputs: HeldBackInputs | None = None
) -> dict[str, Any] | None:
    """Before (the source run) and after (the held-back run of the new version) against the
    people's majority on the same held-back units, never an example unit
    (``benchmark.metrics.judge_rater.held_back_comparison``); None until the held-back run
    has succeeded."""
    permissions.require(user=user, project=example_set.project, action="manage_studies")
    run = example_set.held_back_run
    if run is None or run.job is None or run.job.status != "succeeded":
        return None
    inputs = inputs or held_back_inputs(example_set=example_set)
    level, categories = judge_sources.task_scale(example_set.people_task)
    held = set(example_set.held_back)
    before = {u: v for u, v in inputs.before.items() if u in held}
    after = {u: v for u, v in run.spec.rater_values(run).items() if u in held}
    rows = [r for r in inputs.rows if r[0] in held]
    from benchmark.metrics.judge_rater import DEFAULT_TRUST_THRESHOLD  # lazy: NumPy
    from benchmark.metrics.judge_rater import held_back_comparison as compare

    try:
        report = compare(
            rows,
            before,
            after,
            level,
            categories,
            examples=inputs.examples,
            threshold=DEFAULT_TRUST_THRESHOLD,
        )
    except ValueError as exc:
        raise ValidationFailed(f"held-back comparison: {exc}") from None
    report["yes_no"] = "true_positive_rate" in report["before"]
    return report
