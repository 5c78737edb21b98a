"""Corrections become worked examples (issue 26): a reviewer picks correction cases of a judge
run on a people's task; a new version of each of the judge's templates (the template-version
service, ``review.judge_settings.services.judge_template_version_create``: nothing overwritten)
carries every example of the judge in the project, written as the judge's spec declares
(``JudgeSpec.worked_examples_block``); the cases are recorded with the versions. Then the new
version runs on the held-back units (never an example unit) as a judge run, through the one
judge runner and job pipeline."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction

from annotation.judgment_tasks.models import JudgmentTask
from benchmark import permissions
from benchmark.exceptions import Conflict, ValidationFailed
from benchmark.judge_prompts.examples import WorkedExample
from benchmark.models import Job
from benchmark.typing import User
from review.agreement.judge_examples import selectors
from review.agreement.judge_examples.models import ExampleSet, WorkedExampleCase
from review.agreement.judge_examples.recording import (
    earlier_examples,
    example_set_record,
    template_versions_with_examples,
)
from review.judges.run_settings import judge_templates_for
from review.judges.services import judge_run_create

#: At most this many cases are added at once.
MAX_CASES = 50


def judge_examples_add(
    *, user: User, task: JudgmentTask, key: str, units: Sequence[str]
) -> ExampleSet:
    """Add the correction cases ``units`` of the judge run ``key`` as worked examples: a new
    version of the judge's templates whose prompt holds them (and the judge's earlier
    examples in this project), and the record of which units went into which version.
    ValidationFailed for no case, a unit that is not a correction case, or one that is an
    example already."""
    permissions.require(user=user, project=task.project, action="run_judges")
    permissions.require(user=user, project=task.project, action="manage_studies")
    wanted = list(dict.fromkeys(str(u) for u in units))
    if not wanted:
        raise ValidationFailed("tick at least one correction case to add as a worked example")
    if len(wanted) > MAX_CASES:
        raise ValidationFailed(f"{len(wanted)} cases ticked; add at most {MAX_CASES} at once")
    run = selectors.source_run(user=user, task=task, key=key)
    spec = run.spec
    cases = {c.unit: c for c in selectors.correction_cases(user=user, task=task, key=key)}
    for unit in wanted:
        case = cases.get(unit)
        if case is None:
            raise ValidationFailed(
                f"{unit[:80]!r} is not a correction case of this judge on this task "
                "(people and the judge agree there, or people did not judge it)"
            )
        if case.example_set:
            raise ValidationFailed(f"{unit} is a worked example already (set #{case.example_set})")
    template_ids = spec.worked_examples_templates()
    if not template_ids:
        raise ValidationFailed(f"the {spec.label}'s templates cannot be edited by a project")
    project = task.project
    with transaction.atomic():
        earlier = earlier_examples(project=project, judge=spec.name)
        new_rows = []
        for unit in wanted:
            case = cases[unit]
            new_rows.append(
                WorkedExampleCase(
                    unit=unit,
                    people=case.people,
                    judge_value=case.judge,
                    summary=spec.worked_example_input(unit, project),
                    answer=spec.worked_example_answer(case.people),
                    reason=case.reason,
                    source=case.source,
                )
            )
        examples = earlier + [
            WorkedExample(
                unit=r.unit,
                summary=r.summary,
                answer=r.answer,
                reason=r.reason,
                judge_answer=spec.worked_example_answer(r.judge_value),
            )
            for r in new_rows
        ]
        block = spec.worked_examples_block(examples)
        current = judge_templates_for(project=project, judge=spec.name)
        note = f"worked examples: {len(examples)} correction case(s) from task {task.name}"[:300]
        versions = template_versions_with_examples(
            project=project,
            user=user,
            blocks=[(template_id, block) for template_id in template_ids],
            current=current,
            note=note,
        )
        example_set = example_set_record(
            project=project,
            judge=spec.name,
            user=user,
            versions=versions,
            cases=new_rows,
            task=task,
            source_run=run,
        )
    return example_set


def held_back_run_start(
    *, user: User, example_set: ExampleSet, units: Sequence[str] | None = None, workers: int = 4
) -> Job:
    """Run the set's new template version on the held-back units (by default every unit
    people judged that the source run judged, minus every example unit) as a judge run (a
    Job, enqueued after commit). ValidationFailed when ``units`` holds an example unit or a
    unit outside the held-back set, or when nothing is left; Conflict while its run is going."""
    project = example_set.project
    permissions.require(user=user, project=project, action="run_judges")
    permissions.require(user=user, project=project, action="manage_studies")
    if example_set.source_run is None:
        raise ValidationFailed(
            f"set #{example_set.pk} is made from an upload's checks; start its held-back "
            "comparison on its own page"
        )
    allowed = selectors.held_back_units(example_set=example_set)
    if units is None:
        chosen = allowed
    else:
        chosen = sorted(dict.fromkeys(str(u) for u in units))
        examples = selectors.example_units(project=project, judge=example_set.judge)
        used = [u for u in chosen if u in examples]
        if used:
            raise ValidationFailed(
                f"{', '.join(used[:5])}: worked example unit(s) are held back from every "
                "comparison; they cannot be in the held-back set"
            )
        outside = sorted(set(chosen) - set(allowed))
        if outside:
            raise ValidationFailed(
                f"{', '.join(outside[:5])}: not a unit both people and the judge rated"
            )
    if not chosen:
        raise ValidationFailed(
            "no held-back unit: people judged no unit of this task, besides the examples, "
            "that the judge run rated"
        )
    source = example_set.source_run
    with transaction.atomic():
        locked = (
            ExampleSet.objects.select_for_update(of=("self",))
            .select_related("held_back_run__job")
            .get(pk=example_set.pk)
        )
        current = locked.held_back_run
        if current is not None and current.job is not None and not current.job.done:
            raise Conflict(
                f"the held-back run #{current.pk} is still {current.job.status}; wait for it"
            )
        run, job = judge_run_create(
            project=project,
            user=user,
            judge=example_set.judge,
            base_url=source.base_url,
            model=source.model,
            models=list((source.selection or {}).get("models") or []),
            workers=workers,
            enqueue=True,
            units=source.spec.held_back_call_units(chosen),
            templates=example_set.templates,
        )
        locked.held_back_run = run
        locked.held_back = chosen
        locked.save(update_fields=["held_back_run", "held_back"])
    example_set.held_back_run = run
    example_set.held_back = chosen
    return job
