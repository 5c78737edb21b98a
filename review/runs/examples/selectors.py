"""Reads of the worked examples of the check judges (the Agentic-MME S and V judges): an
upload's correction cases with the example sets that hold them, one example set made from an
upload, its held-back checks and its before/after comparison against the reviewers' majority.
Reviewers and admins only (``manage_studies``); another project's set answers 404."""

from __future__ import annotations

from typing import Any

from benchmark import permissions
from benchmark.exceptions import NotFound, ValidationFailed
from benchmark.typing import AnyUser
from review.agreement.judge_examples.models import ExampleSet
from review.agreement.judge_examples.selectors import example_units
from review.runs.models import RunSet
from review.runs.selectors import (
    CheckJudge,
    check_judge_get,
    check_verdicts,
    judge_answers,
    run_set_judge_rater,
)


def check_judge_of(example_set: ExampleSet) -> CheckJudge:
    judge = check_judge_get(example_set.judge)
    if judge is None or example_set.run_set_id is None:
        raise NotFound(f"set #{example_set.pk} is not made from an upload's checks")
    return judge


def correction_cases(*, user: AnyUser, run_set: RunSet, judge: CheckJudge) -> list[dict[str, Any]]:
    """The upload's correction cases of ``judge`` (the reviewers' majority differs from the
    judge), each with ``example_set``: the set holding it already (0: none)."""
    report = run_set_judge_rater(user=user, run_set=run_set, judge=judge)
    held = example_units(project=run_set.project, judge=judge.spec.name)
    return [
        {**case, "example_set": held.get(case["unit"], 0)}
        for case in (report or {}).get("corrections", [])
    ]


def held_back_before(*, run_set: RunSet, judge: CheckJudge) -> dict[str, Any]:
    """The held-back checks and the judge's answers to them now: every check reviewers
    answered in the upload that the judge answered too, minus every worked example of the
    judge in the project (``{unit: 1 / 0 / None}``)."""
    people = {unit for unit, _, value in check_verdicts(judge=judge, run_set=run_set)}
    answers, _ = judge_answers(judge, run_set.runs.values_list("id", "score").iterator(500))
    examples = example_units(project=run_set.project, judge=judge.spec.name)
    return {u: answers[u] for u in sorted(people) if u in answers and u not in examples}


def example_set_for_checks(*, user: AnyUser, pk: int) -> ExampleSet:
    """The example set ``pk`` made from an upload's checks, in a project where the user may
    manage studies; NotFound otherwise."""
    found = (
        ExampleSet.objects.filter(pk=pk, run_set__isnull=False)
        .select_related("project", "run_set", "held_back_job", "created_by")
        .first()
    )
    if found is None or permissions.role_in(user=user, project=found.project) is None:
        raise NotFound(f"no set of worked examples #{pk} made from an upload's checks")
    permissions.require(user=user, project=found.project, action="manage_studies")
    return found


def held_back_comparison(*, user: AnyUser, example_set: ExampleSet) -> dict[str, Any] | None:
    """The judge before (its answers when the examples were added) and after (the new
    version re-asked on the held-back checks) against the reviewers' majority on exactly the
    same held-back checks, never an example (``benchmark.metrics.judge_rater
    .held_back_comparison``: % agreement, kappa with its interval, TPR/FPR, difference); None
    until the held-back job has succeeded."""
    permissions.require(user=user, project=example_set.project, action="manage_studies")
    job = example_set.held_back_job
    values = example_set.held_back_values or {}
    if job is None or job.status != "succeeded" or "after" not in values:
        return None
    judge = check_judge_of(example_set)
    assert example_set.run_set is not None
    held = set(example_set.held_back)
    rows = [r for r in check_verdicts(judge=judge, run_set=example_set.run_set) if r[0] in held]
    before = {u: v for u, v in (values.get("before") or {}).items() if u in held}
    after = {u: v for u, v in (values.get("after") or {}).items() if u in held}
    from benchmark.metrics.judge_rater import DEFAULT_TRUST_THRESHOLD  # lazy: NumPy
    from benchmark.metrics.judge_rater import held_back_comparison as compare

    try:
        report = compare(
            rows,
            before,
            after,
            "nominal",
            [0, 1],
            examples=example_units(project=example_set.project, judge=example_set.judge),
            threshold=DEFAULT_TRUST_THRESHOLD,
        )
    except ValueError as exc:
        raise ValidationFailed(f"held-back comparison: {exc}") from None
    report["yes_no"] = True
    return report
