"""Reads of report corrections (issue 26): for the judges whose agents' *reports* people rate
0-2 in "Rate the judge" tasks (``review.rate_judge``; ATP-Bench's MAM agents, the LLM-I
judges: ``JudgeSpec.report_templates``), the correction cases of such a task, the reviewer's
corrections, the held-back units of an example set made from them and its before/after
comparison against people's verdicts (``benchmark.metrics.report_agreement``).

A **correction case** is a report people rated wrong (their agreement rate with it below the
reviewer's threshold, 80 % by default: a majority of 0, or too many 0 and 1) or one a reviewer
corrected (an override, even where people rated it right). Reviewers and admins only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from annotation.judgment_tasks.models import Judgment, JudgmentTask, TaskUnit, UnitKind
from annotation.judgment_tasks.units import UNIT_KEY
from benchmark import permissions
from benchmark.exceptions import ValidationFailed
from benchmark.metrics import report_agreement
from benchmark.typing import AnyUser
from review.agreement.judge_examples.models import ExampleSet, ReportCorrection
from review.judges.calls import stored_judgment
from review.judges.models import JudgeCall, JudgeRun
from review.judges.specs import JudgeSpec, judge_spec_get

#: A report is rated right from this agreement rate (percent) unless the reviewer sets another
#: (``review.rate_judge.selectors.DEFAULT_RATE_THRESHOLD``, the same figure).
DEFAULT_THRESHOLD = 80.0
PEOPLE = "people"
OVERRIDE = "override"
#: A report people rated right that nobody corrected (listed only with ``every``).
RIGHT = "right"


def report_spec(task: JudgmentTask) -> JudgeSpec | None:
    """The judge of a "Rate the judge" task when its reports take corrections
    (``JudgeSpec.report_templates``); None for any other task."""
    if task.unit_kind != UnitKind.JUDGE_REPORT:
        return None
    spec = judge_spec_get(str((task.unit_params or {}).get("judge") or ""))
    return spec if spec is not None and spec.report_templates else None


def is_report_task(task: JudgmentTask) -> bool:
    return report_spec(task) is not None


def task_run(task: JudgmentTask) -> JudgeRun:
    """The judge run whose reports the task's people rated."""
    run_id = (task.unit_params or {}).get("judge_run")
    run = (
        JudgeRun.objects.filter(project=task.project, pk=run_id).first()
        if isinstance(run_id, int)
        else None
    )
    if run is None:
        raise ValidationFailed(f"task {task.name!r}: the judge run its people rated is gone")
    return run


def threshold_of(value: Any) -> float:
    """The reviewer's threshold (percent) from a query or form value; ValidationFailed
    naming the field for anything but a number from 0 to 100."""
    if value in (None, ""):
        return DEFAULT_THRESHOLD
    try:
        threshold = float(value)
    except (TypeError, ValueError):
        raise ValidationFailed(f"rate_threshold: {str(value)[:20]!r} is not a number") from None
    if not 0.0 <= threshold <= 100.0:
        raise ValidationFailed(f"rate_threshold: {threshold:g} is not between 0 and 100")
    return threshold


def unit_ratings(task: JudgmentTask) -> dict[str, list[Any]]:
    """People's ratings per unit of the task (units nobody rated are absent)."""
    out: dict[str, list[Any]] = {}
    for unit, value in Judgment.objects.filter(task=task).values_list("unit", "value"):
        if unit and value is not None:
            out.setdefault(unit, []).append(value)
    return out


def newest_corrections(task: JudgmentTask) -> dict[str, ReportCorrection]:
    """The newest correction of each unit of the task."""
    found: dict[str, ReportCorrection] = {}
    for row in ReportCorrection.objects.filter(task=task).select_related("created_by"):
        found[row.unit] = row  # ordered by unit, then version: the last one wins
    return found


@dataclass(frozen=True)
class Report:
    """One report of a run as the agent wrote it: its output text and verdict."""

    text: str
    verdict: str | None


def run_reports(*, run: JudgeRun, units: set[str] | None = None) -> dict[str, Report]:
    """``{unit: Report}`` of the run's calls whose agent people rate (``units``: only
    these); a failed call has no verdict and its last output as text."""
    spec = run.spec
    calls = JudgeCall.objects.filter(run=run, label__in=list(spec.report_templates))
    out: dict[str, Report] = {}
    for row in calls.select_related("response").order_by("id"):
        unit = f"response:{row.response_id}:{row.label}"
        if units is not None and unit not in units:
            continue
        judgment = stored_judgment(row, spec.parser(row.label, row.response))
        text = judgment.attempts[-1].raw if judgment.attempts else ""
        verdict = spec.report_verdict(row.label, judgment.value) if judgment.ok else None
        out[unit] = Report(text=text, verdict=verdict)
    return out


@dataclass(frozen=True)
class ReportCase:
    """A report people rated wrong or a reviewer corrected."""

    unit: str
    label: str
    agent: str
    ratings: tuple[Any, ...]
    rate: float | None
    rated_right: bool
    said: str
    verdict: str | None
    source: str
    correction: ReportCorrection | None = None
    #: The example set that holds this unit already (0: none).
    example_set: int = 0

    @property
    def prefill(self) -> str:
        """What the correction form starts from: the newest correction, else the report."""
        return self.correction.text if self.correction is not None else self.said


def example_units(task: JudgmentTask, spec: JudgeSpec) -> dict[str, int]:
    from review.agreement.judge_examples.selectors import example_units as held

    return held(project=task.project, judge=spec.name)


def report_cases(
    *, user: AnyUser, task: JudgmentTask, threshold: float = DEFAULT_THRESHOLD, every: bool = False
) -> list[ReportCase]:
    """The task's correction cases in unit order (``every``: every rated report, so a
    reviewer can override one people rated right). ValidationFailed for a task whose reports
    take no corrections."""
    permissions.require(user=user, project=task.project, action="manage_studies")
    spec = report_spec(task)
    if spec is None:
        raise ValidationFailed(
            f"task {task.name!r} is not a 'Rate the judge' task of a judge whose reports "
            "take corrections"
        )
    ratings = unit_ratings(task)
    corrections = newest_corrections(task)
    reports = run_reports(run=task_run(task), units=set(ratings) | set(corrections))
    held = example_units(task, spec)
    order = TaskUnit.objects.filter(task=task).values_list("key", flat=True)
    cases = []
    for unit in order:
        right = report_agreement.rated_right(ratings.get(unit, ()), threshold)
        correction = corrections.get(unit)
        if right is None or (right and correction is None and not every):
            continue
        match = UNIT_KEY.match(unit)
        label = match.group(2) if match else ""
        report = reports.get(unit, Report(text="", verdict=None))
        cases.append(
            ReportCase(
                unit=unit,
                label=label,
                agent=spec.agents.get(label, label),
                ratings=tuple(ratings.get(unit, ())),
                rate=report_agreement.unit_rate(ratings.get(unit, ())),
                rated_right=bool(right),
                said=report.text,
                verdict=report.verdict,
                source=PEOPLE if not right else OVERRIDE if correction else RIGHT,
                correction=correction,
                example_set=held.get(unit, 0),
            )
        )
    return cases


# =========================================================================== held back


def held_back_units(*, example_set: ExampleSet) -> list[str]:
    """The reports a held-back comparison uses: those people rated in the set's task that the
    source run reported on, minus every worked example unit of the judge in the project."""
    task = example_set.people_task
    rated = set(unit_ratings(task))
    reported = set(run_reports(run=example_set.judge_run, units=rated))
    spec = example_set.judge_run.spec
    return sorted((rated & reported) - set(example_units(task, spec)))


def report_comparison(
    *, user: AnyUser, example_set: ExampleSet, threshold: float = DEFAULT_THRESHOLD
) -> dict[str, Any] | None:
    """Before (the source run) and after (the held-back run of the new version) against
    people's verdicts on the same held-back reports (a reviewer's correction, else the
    agent's own verdict where people rated the report right; reports rated wrong without a
    correction are left out and counted); and the share of the held-back reports people rated
    right. None until the held-back run has succeeded."""
    permissions.require(user=user, project=example_set.project, action="manage_studies")
    run = example_set.held_back_run
    if run is None or run.job is None or run.job.status != "succeeded":
        return None
    held = set(example_set.held_back)
    task = example_set.people_task
    ratings = {u: r for u, r in unit_ratings(task).items() if u in held}
    before = {u: r.verdict for u, r in run_reports(run=example_set.judge_run, units=held).items()}
    after = {u: r.verdict for u, r in run_reports(run=run, units=held).items()}
    corrected = {u: c.verdict for u, c in newest_corrections(task).items() if u in held}
    reference, unknown = report_agreement.reference_verdicts(
        sorted(held), ratings, before, corrected, threshold
    )
    report = report_agreement.verdict_comparison(reference, before, after)
    report["n_unknown"] = len(unknown)
    report["n_corrected"] = len(set(corrected) & set(reference))
    report["threshold"] = threshold
    report["rated_right"] = report_agreement.rated_right_share(ratings, threshold)
    return report
