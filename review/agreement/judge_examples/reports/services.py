"""Report corrections become worked examples (issue 26), for the judges whose agents' reports
people rate ("Rate the judge"; ``JudgeSpec.report_templates``): a reviewer writes what the
agent should have said (in its own output format, checked by the judge's parser; every edit a
new version), ticks corrected cases, and a new version of each ticked agent's template carries
that agent's examples (the template-version service; nothing overwritten). The example set is
recorded as for any judge (``ExampleSet``, ``WorkedExampleCase``), so its held-back run and
page are the ones of ``review.agreement.judge_examples``."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import IntegrityError, transaction
from django.db.models import Max

from annotation.judgment_tasks.models import JudgmentTask, TaskUnit
from annotation.judgment_tasks.units import unit_parse
from benchmark import permissions
from benchmark.exceptions import Conflict, ValidationFailed
from benchmark.judge_prompts import JudgeOutputError
from benchmark.judge_prompts.examples import WorkedExample, examples_block, shorten
from benchmark.models import Response
from benchmark.typing import User
from review.agreement.judge_examples.models import ExampleSet, ReportCorrection, WorkedExampleCase
from review.agreement.judge_examples.recording import (
    example_set_record,
    template_versions_with_examples,
)
from review.agreement.judge_examples.reports import selectors
from review.judges.run_settings import judge_templates_for
from review.judges.specs import JudgeSpec

#: At most this many reports are added at once, and a correction has at most this many
#: characters.
MAX_CASES = 50
MAX_TEXT = 20_000
INTRO = (
    "In these cases people who checked your reports found them wrong. Each shows the input "
    "and the report as it should have been, in your output format. Report as in these cases."
)


def _require(user: User, task: JudgmentTask) -> JudgeSpec:
    permissions.require(user=user, project=task.project, action="run_judges")
    permissions.require(user=user, project=task.project, action="manage_studies")
    spec = selectors.report_spec(task)
    if spec is None:
        raise ValidationFailed(
            f"task {task.name!r} is not a 'Rate the judge' task of a judge whose reports "
            "take corrections"
        )
    return spec


def report_correction_save(
    *, user: User, task: JudgmentTask, unit: str, text: str
) -> ReportCorrection:
    """Record what the agent should have said in the report ``unit`` (a unit people rated):
    ``text`` in the agent's output format, parsed by the judge's own parser (ValidationFailed
    naming the unit, the agent and what is wrong). A new version of the unit's correction;
    Conflict when someone saved one at the same moment."""
    spec = _require(user, task)
    unit = str(unit or "").strip()
    if not TaskUnit.objects.filter(task=task, key=unit).exists():
        raise ValidationFailed(f"unit: {unit[:80]!r} is not a unit of task {task.name!r}")
    if unit not in selectors.unit_ratings(task):
        raise ValidationFailed(f"unit {unit}: nobody rated this report yet; nothing to correct")
    response_id, label = unit_parse(unit)
    agent = spec.agents.get(label, label)
    if label not in spec.report_templates:
        raise ValidationFailed(f"unit {unit}: the {agent}'s reports take no corrections")
    text = str(text or "").replace("\r\n", "\n").strip()
    if not text:
        raise ValidationFailed(f"unit {unit} ({agent}): the corrected report is empty")
    if len(text) > MAX_TEXT:
        raise ValidationFailed(
            f"unit {unit} ({agent}): the corrected report has {len(text)} characters; "
            f"at most {MAX_TEXT}"
        )
    response = (
        Response.objects.select_related("item")
        .filter(pk=response_id, item__project=task.project)
        .first()
    )
    if response is None:
        raise ValidationFailed(f"unit {unit}: the answer it rates was deleted")
    try:
        value = spec.parser(label, response)(text)
    except JudgeOutputError as exc:
        raise ValidationFailed(
            f"unit {unit} ({agent}): {exc}; write the report as the {agent} answers"
        ) from None
    verdict = spec.report_verdict(label, value) or ""
    with transaction.atomic():
        last = ReportCorrection.objects.filter(task=task, unit=unit).aggregate(n=Max("version"))
        row = ReportCorrection(
            task=task,
            unit=unit,
            version=(last["n"] or 0) + 1,
            text=text,
            verdict=verdict[:300],
            created_by=user,
        )
        row.full_clean(validate_constraints=False)
        try:
            with transaction.atomic():
                row.save()
        except IntegrityError:
            raise Conflict(
                f"unit {unit}: someone saved a correction at the same moment; reload and "
                "check theirs"
            ) from None
    return row


def _summary(case: selectors.ReportCase, task: JudgmentTask) -> str:
    response_id, _ = unit_parse(case.unit)
    response = Response.objects.select_related("item").filter(pk=response_id).first()
    if response is None:
        return f"unit {case.unit}"
    return f"Task: {shorten(response.item.query, 200)} | Answer: {shorten(response.text, 300)}"


def _reason(case: selectors.ReportCase) -> str:
    ratings = ", ".join(str(r) for r in case.ratings)
    rate = "" if case.rate is None else f" (agreement {case.rate:.0f} %)"
    if case.source == selectors.OVERRIDE:
        return f"a reviewer corrected it; people rated it {ratings}{rate}"
    return f"people rated the report {ratings}{rate}; a reviewer wrote the correct report"


def _checked_cases(
    user: User, task: JudgmentTask, units: Sequence[str], threshold: float
) -> list[selectors.ReportCase]:
    wanted = list(dict.fromkeys(str(u) for u in units))
    if not wanted:
        raise ValidationFailed("tick at least one corrected report to add as a worked example")
    if len(wanted) > MAX_CASES:
        raise ValidationFailed(f"{len(wanted)} reports ticked; add at most {MAX_CASES} at once")
    cases = {
        c.unit: c
        for c in selectors.report_cases(user=user, task=task, threshold=threshold, every=True)
    }
    out = []
    for unit in wanted:
        case = cases.get(unit)
        if case is None:
            raise ValidationFailed(f"{unit[:80]!r}: nobody rated this report in this task")
        if case.correction is None:
            raise ValidationFailed(
                f"{unit}: write what the {case.agent} should have said before adding it"
            )
        if case.example_set:
            raise ValidationFailed(f"{unit} is a worked example already (set #{case.example_set})")
        out.append(case)
    return out


def _template_examples(
    spec: JudgeSpec, task: JudgmentTask, new_rows: list[WorkedExampleCase]
) -> dict[str, list[WorkedExample]]:
    """Per template of an agent with a new example: every example of that agent in the
    project (earlier sets first), the new ones last."""
    by_template: dict[str, list[WorkedExample]] = {}
    touched = {spec.report_templates[unit_parse(r.unit)[1]] for r in new_rows}
    earlier = WorkedExampleCase.objects.filter(
        example_set__project=task.project, example_set__judge=spec.name
    ).order_by("example_set__created_at", "example_set_id", "id")
    for row in [*earlier, *new_rows]:
        template_id = spec.report_templates.get(unit_parse(row.unit)[1])
        if template_id not in touched:
            continue
        by_template.setdefault(template_id, []).append(
            WorkedExample(
                unit=row.unit,
                summary=row.summary,
                answer=row.answer,
                reason=row.reason,
                judge_answer=str(row.judge_value or ""),
            )
        )
    return by_template


def report_examples_add(
    *,
    user: User,
    task: JudgmentTask,
    units: Sequence[str],
    threshold: float = selectors.DEFAULT_THRESHOLD,
) -> ExampleSet:
    """Add the corrected reports ``units`` as worked examples: a new version of the template
    of each agent they belong to, whose prompt holds that agent's examples in this project,
    and the record of the set (held back from every comparison). ValidationFailed for no
    unit, a unit without a correction, or one that is an example already."""
    spec = _require(user, task)
    cases = _checked_cases(user, task, units, threshold)
    project = task.project
    run = selectors.task_run(task)
    with transaction.atomic():
        new_rows = [
            WorkedExampleCase(
                unit=case.unit,
                people=case.correction.verdict if case.correction else None,
                judge_value=case.verdict,
                summary=_summary(case, task),
                answer=case.correction.text if case.correction else "",
                reason=_reason(case),
                source=case.source,
            )
            for case in cases
        ]
        current = judge_templates_for(project=project, judge=spec.name)
        note = f"worked examples: {len(new_rows)} corrected report(s) from task {task.name}"
        versions = template_versions_with_examples(
            project=project,
            user=user,
            blocks=[
                (template_id, examples_block(examples, intro=INTRO, answer_chars=None))
                for template_id, examples in _template_examples(spec, task, new_rows).items()
            ],
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
