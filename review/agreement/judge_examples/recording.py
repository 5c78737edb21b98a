"""Recording a set of worked examples, the same for every kind of correction (a judgment task's
cases, corrected reports, a run set's checks): each template given its examples block becomes a
new version of the project's template (the version service; nothing overwritten), and the set
with its cases is recorded (``ExampleSet``, ``WorkedExampleCase``). What the set was made from
(``task`` and ``source_run``, or ``run_set``) is the caller's."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from benchmark.judge_prompts import Template
from benchmark.judge_prompts.examples import WorkedExample, with_examples
from review.agreement.judge_examples.models import ExampleSet, WorkedExampleCase
from review.judge_settings.services import judge_template_version_create
from review.judges.run_settings import judge_templates_for, template_current


def earlier_examples(*, project: Any, judge: str) -> list[WorkedExample]:
    """The worked examples already added to ``judge``'s templates in ``project``, oldest
    first (a new version keeps them all)."""
    return [
        WorkedExample(unit=row.unit, summary=row.summary, answer=row.answer, reason=row.reason)
        for row in WorkedExampleCase.objects.filter(
            example_set__project=project, example_set__judge=judge
        ).order_by("example_set__created_at", "example_set_id", "id")
    ]


def template_versions_with_examples(
    *,
    project: Any,
    user: Any,
    blocks: Iterable[tuple[str, str]],
    current: Mapping[str, Template],
    note: str,
) -> list[Any]:
    """For each ``(template id, examples block)``: the project's current template
    (``current``) with the block, saved as its next version; the versions, in that order."""
    versions = []
    for template_id, block in blocks:
        template = with_examples(current[template_id], block)
        row = template_current(project=project, template_id=template_id)
        versions.append(
            judge_template_version_create(
                project=project,
                user=user,
                template_id=template_id,
                system=template.system,
                user_text=template.user,
                base_number=row.number if row is not None else 0,
                note=note[:300],
            )
        )
    return versions


def example_set_record(
    *,
    project: Any,
    judge: str,
    user: Any,
    versions: list[Any],
    cases: list[WorkedExampleCase],
    **source: Any,
) -> ExampleSet:
    """The set of ``cases`` written into ``versions`` of ``judge``'s templates, recorded with
    the template versions the judge now runs with; ``source``: what it was made from."""
    after = judge_templates_for(project=project, judge=judge)
    example_set = ExampleSet(
        project=project,
        judge=judge,
        templates={t.id: t.version for t in after.values()},
        created_by=user,
        **source,
    )
    example_set.full_clean()
    example_set.save()
    example_set.template_versions.set(versions)
    for case in cases:
        case.example_set = example_set
        case.full_clean(validate_constraints=False)
    WorkedExampleCase.objects.bulk_create(cases)
    return example_set
