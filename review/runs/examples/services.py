"""Corrections become worked examples for the check judges (issue 26): on an upload's page a
reviewer ticks correction cases of the S or V judge (checks where the reviewers' majority
differs from the judge); a new version of the judge's template (the template-version service:
nothing overwritten) carries every example of that judge in the project, each written as the
checkpoint's inputs and the reviewers' answer in the judge's own format (PASS/FAIL for S,
``Answer: ...`` for V). The set is an ``ExampleSet`` like any judge's, with the upload as its
source. The held-back comparison is a job (the one job pipeline) that re-asks the judge, with
the set's version, on the held-back checks of the stored runs only (V: their images, the
any-pass rule) through the judge call lifecycle, cached model calls reused. Scoring reads the
project's newest template versions, so rescoring the runs uses the new version too."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from django.db import transaction

from benchmark import permissions
from benchmark.exceptions import Conflict, ValidationFailed
from benchmark.jobs import services as job_services
from benchmark.judge_prompts.examples import WorkedExample
from benchmark.models import Job
from benchmark.typing import User
from review import job_names
from review.agreement.judge_examples.models import ExampleSet, WorkedExampleCase
from review.agreement.judge_examples.recording import (
    earlier_examples,
    example_set_record,
    template_versions_with_examples,
)
from review.judges.run_settings import judge_templates_for
from review.runs import services as run_services
from review.runs.examples import selectors
from review.runs.models import AgentRun, RunSet
from review.runs.selectors import CheckJudge, check_judge_get

#: At most this many cases are added at once.
MAX_CASES = 50
HELD_BACK_KIND = job_names.CHECK_EXAMPLES_HELD_BACK_KIND


def _require(user: User, run_set: RunSet) -> None:
    permissions.require(user=user, project=run_set.project, action="run_judges")
    permissions.require(user=user, project=run_set.project, action="manage_studies")


def _checked_cases(
    user: User, run_set: RunSet, judge: CheckJudge, units: Sequence[str]
) -> list[dict[str, Any]]:
    wanted = list(dict.fromkeys(str(u) for u in units))
    if not wanted:
        raise ValidationFailed(f"tick at least one {judge.noun} to add as a worked example")
    if len(wanted) > MAX_CASES:
        raise ValidationFailed(f"{len(wanted)} checks ticked; add at most {MAX_CASES} at once")
    cases = {
        c["unit"]: c for c in selectors.correction_cases(user=user, run_set=run_set, judge=judge)
    }
    out = []
    for unit in wanted:
        case = cases.get(unit)
        if case is None:
            raise ValidationFailed(
                f"{unit[:80]!r} is not a correction case of the {judge.title} in this upload "
                "(the reviewers' majority agrees with the judge there, or nobody answered it)"
            )
        if case["example_set"]:
            raise ValidationFailed(
                f"{unit} is a worked example already (set #{case['example_set']})"
            )
        out.append(case)
    return out


def _new_rows(
    judge: CheckJudge, cases: list[dict[str, Any]]
) -> list[tuple[WorkedExampleCase, str]]:
    """Each case as an example row, with the judge's answer written as it answers."""
    runs = {
        r.pk: r
        for r in AgentRun.objects.select_related("item").filter(pk__in={c["run_id"] for c in cases})
    }
    rows = []
    for case in cases:
        run = runs[case["run_id"]]
        cp = run_services.run_task_checkpoints(run=run).get(case["checkpoint"], {})
        stored = next(
            (
                c
                for c in (run.score or {}).get("checkpoints") or []
                if isinstance(c, dict) and str(c.get("id")) == case["checkpoint"]
            ),
            {},
        )
        said = judge.answers.get(case["people"], str(case["people"]))
        judge_said = judge.spec.check_example_answer(case["judge"], cp)
        rows.append(
            (
                WorkedExampleCase(
                    unit=case["unit"],
                    people=case["people"],
                    judge_value=case["judge"],
                    summary=judge.spec.check_example_input(cp, stored.get("detail") or {}),
                    answer=judge.spec.check_example_answer(case["people"], cp),
                    reason=f"{case['votes']} of {case['n_raters']} reviewers answered {said}; "
                    f"the judge answered {judge.answers.get(case['judge'], str(case['judge']))}",
                    source="majority",
                ),
                judge_said,
            )
        )
    return rows


def check_examples_add(
    *, user: User, run_set: RunSet, key: str, units: Sequence[str]
) -> ExampleSet:
    """Add the correction cases ``units`` (``run:<run id>:<checkpoint id>``) of the check
    judge ``key`` (``s-judge``, ``v-judge``) in the upload as worked examples: a new version
    of the judge's template whose prompt holds them (and the judge's earlier examples in this
    project), the record of the set, and the held-back checks with the judge's answers now
    (the "before"). ValidationFailed for no case, a check that is not a correction case, or
    one that is an example already."""
    _require(user, run_set)
    judge = _check_judge(key)
    cases = _checked_cases(user, run_set, judge, units)
    spec = judge.spec
    project = run_set.project
    with transaction.atomic():
        earlier = earlier_examples(project=project, judge=spec.name)
        made = _new_rows(judge, cases)
        new_rows = [r for r, _ in made]
        examples = earlier + [
            WorkedExample(
                unit=r.unit,
                summary=r.summary,
                answer=r.answer,
                reason=r.reason,
                judge_answer=judge_said,
            )
            for r, judge_said in made
        ]
        block = spec.worked_examples_block(examples)
        current = judge_templates_for(project=project, judge=spec.name)
        note = f"worked examples: {len(examples)} correction case(s) from upload {run_set.name}"
        versions = template_versions_with_examples(
            project=project,
            user=user,
            blocks=[(template_id, block) for template_id in spec.worked_examples_templates()],
            current=current,
            note=note,
        )
        example_set = example_set_record(
            project=project,
            judge=spec.name,
            user=user,
            versions=versions,
            cases=new_rows,
            run_set=run_set,
        )
        before = selectors.held_back_before(run_set=run_set, judge=judge)
        example_set.held_back = sorted(before)
        example_set.held_back_values = {"before": before}
        example_set.save(update_fields=["held_back", "held_back_values"])
    return example_set


def _check_judge(key: str) -> CheckJudge:
    judge = check_judge_get(str(key or "").strip())
    if judge is None:
        raise ValidationFailed(f"judge: {str(key)[:40]!r} is not a check judge (s-judge, v-judge)")
    return judge


def held_back_checks_start(*, user: User, example_set: ExampleSet) -> Job:
    """Start the job that re-asks the judge, with the set's template version, on its
    held-back checks. ValidationFailed when there is none or no judge model is configured;
    Conflict while its job is going."""
    assert example_set.run_set is not None
    _require(user, example_set.run_set)
    if not example_set.held_back:
        raise ValidationFailed(
            "no held-back check: reviewers answered no check of this upload, besides the "
            "examples, that the judge answered"
        )
    if run_services.run_judge_for(project=example_set.project) is None:
        raise ValidationFailed(
            "the project has no judge model configured (Settings › Model); the held-back "
            "checks cannot be asked again"
        )
    with transaction.atomic():
        locked = (
            ExampleSet.objects.select_for_update(of=("self",))
            .select_related("held_back_job")
            .get(pk=example_set.pk)
        )
        current = locked.held_back_job
        if current is not None and not current.done:
            raise Conflict(
                f"the held-back job #{current.pk} is still {current.status}; wait for it"
            )
        job = job_services.job_start(
            kind=HELD_BACK_KIND,
            user=user,
            project=example_set.project,
            total=len({u.split(":")[1] for u in locked.held_back}),
            params={"example_set_id": locked.pk},
        )
        locked.held_back_job = job
        locked.save(update_fields=["held_back_job"])
    example_set.held_back_job = job
    return job


def held_back_checks_job(*, job: Job, progress: Callable[..., None]) -> dict[str, Any]:
    """The held-back job's runner: per run, its held-back checkpoints asked again with the
    set's template version (nothing else of the run; its score is not changed), then the
    answers stored as the set's "after". Running it twice gives the same values (the model
    calls are cached)."""
    example_set = ExampleSet.objects.select_related("project").get(pk=job.params["example_set_id"])
    check_judge = selectors.check_judge_of(example_set)
    judge = run_services.run_judge_for(project=example_set.project, user_id=job.created_by_id)
    if judge is None:
        raise ValidationFailed("the project has no judge model configured (Settings › Model)")
    judge.templates = run_services.run_judge_templates(
        project=example_set.project, versions=example_set.templates
    )
    by_run: dict[int, list[str]] = defaultdict(list)
    for unit in example_set.held_back:
        _, run_id, checkpoint = unit.split(":", 2)
        by_run[int(run_id)].append(checkpoint)
    runs = AgentRun.objects.select_related("item").in_bulk(list(by_run))
    progress(progress=0, total=len(by_run), message="asking the judge again")
    after: dict[str, int | None] = {}
    for n, (run_id, checkpoints) in enumerate(sorted(by_run.items()), start=1):
        run = runs.get(run_id)
        if run is not None:
            found = run_services.run_checkpoints_rejudge(
                run=run, judge=judge, kind=check_judge.checkpoint_kind, ids=checkpoints
            )
            after.update({f"run:{run_id}:{cid}": v for cid, v in found.items()})
        progress(progress=n)
    values = dict(example_set.held_back_values or {})
    values["after"] = after
    ExampleSet.objects.filter(pk=example_set.pk).update(held_back_values=values)
    return {
        "example_set_id": example_set.pk,
        "checks": len(after),
        "calls": judge.calls,
        "no_verdict": sum(1 for v in after.values() if v is None),
    }
