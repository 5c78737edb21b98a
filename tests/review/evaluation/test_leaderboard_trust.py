"""The leaderboard shows judge trust (issue 26): beside every judge column, the judge's agreement
with people on this project (Cohen's kappa with the people's majority, with its bootstrap 95 %
interval, from the calibration report machinery), "no human ratings yet" where nobody rated
what the judge rates, and a flag below the trust threshold; the page's query count stays
bounded."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.judgment_tasks.models import Judgment, JudgmentTask, TaskUnit
from benchmark.models import JobStatus, Origin, Project, Response, Role
from review.judges.models import JudgeCall, JudgeRun
from review.judges.selectors import judge_run_report
from tests import evaluation_protocol
from tests.factories import (
    AssignmentFactory,
    EvaluationRunFactory,
    ItemFactory,
    JobFactory,
    MembershipFactory,
    ProjectFactory,
    ResponseFactory,
)

pytestmark = pytest.mark.django_db

#: The rubric judge's scores and the people's (two people agreeing) on six units: three
#: answers x criteria r1, r2. Quadratic-weighted kappa 0.379 (sklearn agrees), below 0.6.
JUDGE = [2, 0, 0, 2, 1, 2]
PEOPLE = [2, 2, 0, 1, 0, 2]


@pytest.fixture
def project(monkeypatch: Any, users: dict[str, Any]) -> Project:
    evaluation_protocol.install(monkeypatch, "llmi")
    project = ProjectFactory(name="LLM-I trust", data_format="llmi")
    for role in (Role.ADMIN, Role.REVIEWER, Role.ANNOTATOR):
        MembershipFactory(project=project, user=users[str(role)], role=role)
    for model in ("alpha", "beta"):
        EvaluationRunFactory(project=project, model=model, finished_at=timezone.now(), summary={})
    rubric = [{"key": "r1", "text": "a"}, {"key": "r2", "text": "b"}]
    q1 = ItemFactory(project=project, external_id="q1", rubric=rubric, position=1)
    q2 = ItemFactory(project=project, external_id="q2", rubric=rubric, position=2)
    for item, model in ((q1, "alpha"), (q1, "beta"), (q2, "alpha")):
        ResponseFactory(item=item, key=f"model:{model}", origin=Origin.MODEL, model_name=model)
    return project


def units(project: Project) -> list[str]:
    answers = Response.objects.filter(item__project=project, origin=Origin.MODEL).order_by(
        "item__position", "model_name"
    )
    return [f"response:{a.pk}:{label}" for a in answers for label in ("r1", "r2")]


def rubric_run(project: Project) -> JudgeRun:
    job = JobFactory(project=project, kind="judge", status=JobStatus.SUCCEEDED, params={})
    run = JudgeRun.objects.create(
        project=project, judge="llmi-rubric", base_url="http://x/v1", model="judge-m", job=job
    )
    for n, (unit, score) in enumerate(zip(units(project), JUDGE, strict=True)):
        _, pk, label = unit.split(":")
        JudgeCall.objects.create(
            run=run,
            response_id=int(pk),
            label=label,
            key=f"k{n}",
            template_id="llmi.rubric",
            template_version="v",
            outputs=[json.dumps({"score": score, "justification": "j"})],
            ok=True,
        )
    job.result = {"run_id": run.pk, "summary": judge_run_report(run=run)["summary"]}
    job.save(update_fields=["result"])
    return run


def other_run(project: Project) -> JudgeRun:
    """An LLM-I LLM judge run: nobody rates what it rates."""
    job = JobFactory(
        project=project,
        kind="judge",
        status=JobStatus.SUCCEEDED,
        params={},
        result={"summary": {"models": {"alpha": {"r": 0.5, "n": 1}, "beta": {"r": 0.25, "n": 1}}}},
    )
    return JudgeRun.objects.create(
        project=project, judge="llmi-llm", base_url="http://x/v1", model="judge-m", job=job
    )


def people_rate(
    project: Project, users: dict[str, Any], names: tuple[str, ...] = ("annotator", "reviewer")
) -> JudgmentTask:
    """A task where the people ``names`` give each unit its PEOPLE score."""
    task = JudgmentTask.objects.create(
        project=project,
        name="Score the criteria",
        question="Is the criterion met?",
        scheme="ordinal",
        labels=[{"value": 0}, {"value": 1}, {"value": 2}],
        unit_kind="answer-criterion",
        overlap=2,
        consensus="majority",
    )
    for unit, value in zip(units(project), PEOPLE, strict=True):
        for name in names:
            rate(task, unit, users[name], value)
    return task


def rate(task: JudgmentTask, unit: str, person: Any, value: int) -> Judgment:
    item = Response.objects.get(pk=int(unit.split(":")[1])).item
    lease = AssignmentFactory(task=task, item=item, user=person, unit=unit, status="submitted")
    return Judgment.objects.create(
        task=task, item=item, user=person, assignment=lease, unit=unit, value=value
    )


def trust_cells(html: str) -> list[str]:
    row = html[html.index('id="judge-trust"') :]
    row = row[: row.index("</tr>")]
    return [part.split("</td>")[0] for part in row.split("data-trust=")[1:]]


def test_no_human_ratings_yet(project: Project, clients: dict[str, Client]) -> None:
    rubric_run(project)
    other_run(project)
    html = clients["reviewer"].get(reverse("review:leaderboard", args=[project.pk])).content
    cells = trust_cells(html.decode())
    assert cells and all("no human ratings yet" in cell for cell in cells)
    assert "low trust" not in html.decode()


def test_every_judge_column_shows_its_agreement_with_people(
    project: Project,
    users: dict[str, Any],
    clients: dict[str, Client],
    django_assert_max_num_queries: Any,
) -> None:
    from sklearn.metrics import cohen_kappa_score

    run = rubric_run(project)
    other_run(project)
    task = people_rate(project, users)
    url = reverse("review:leaderboard", args=[project.pk])
    with django_assert_max_num_queries(20):
        html = clients["reviewer"].get(url).content.decode()
    cells = trust_cells(html)
    # The LLM judge's column (its run is the newest), then the rubric judge's.
    assert [cell.split(">")[0] for cell in cells] == ['"r_llm"', '"rubric"']
    other, rubric = cells
    expected = cohen_kappa_score(JUDGE, PEOPLE, weights="quadratic")
    assert expected == pytest.approx(0.3793, abs=1e-4)
    assert f"data-trust-kappa>{expected:.2f}<" in rubric
    assert "data-trust-interval>[" in rubric
    assert "below 0.6" in rubric  # flagged: under the default trust threshold
    assert f"/agreement/{task.pk}/?judge=judge-run%3A{run.pk}" in rubric
    assert "no human ratings yet" in other and "no human ratings yet" not in rubric
    # Each figure of the untrusted judge carries the flag; the other judge's do not.
    assert html.count("data-low-trust") == 2  # alpha's and beta's rubric figures


def test_the_query_count_does_not_grow_with_the_models(
    project: Project,
    users: dict[str, Any],
    clients: dict[str, Client],
    django_assert_max_num_queries: Any,
) -> None:
    rubric_run(project)
    other_run(project)
    people_rate(project, users)
    for n in range(8):
        EvaluationRunFactory(
            project=project, model=f"extra-{n}", finished_at=timezone.now(), summary={}
        )
    with django_assert_max_num_queries(20):
        response = clients["reviewer"].get(reverse("review:leaderboard", args=[project.pk]))
    assert response.status_code == 200


# --------------------------------------------------------------------------- the cached trust


@pytest.fixture
def calibrations(monkeypatch: Any) -> list[int]:
    """Counts the trust computations (calls of ``judge_calibration``, the bootstrap)."""
    from benchmark.metrics import judge_rater

    calls: list[int] = []
    real = judge_rater.judge_calibration

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(judge_rater, "judge_calibration", counting)
    return calls


def kappa_shown(html: str) -> str:
    cell = trust_cells(html)[-1]
    return cell.split("data-trust-kappa>")[1].split("<")[0]


def quadratic_kappa(people: list[int]) -> str:
    from sklearn.metrics import cohen_kappa_score

    return f"{cohen_kappa_score(JUDGE, people, weights='quadratic'):.2f}"


def test_a_second_view_reads_the_trust_from_the_cache(
    project: Project,
    users: dict[str, Any],
    clients: dict[str, Client],
    calibrations: list[int],
    django_assert_max_num_queries: Any,
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    rubric_run(project)
    other_run(project)
    people_rate(project, users)
    url = reverse("review:leaderboard", args=[project.pk])
    with CaptureQueriesContext(connection) as first_queries:
        first = clients["reviewer"].get(url).content.decode()
    assert len(calibrations) == 1
    with django_assert_max_num_queries(20), CaptureQueriesContext(connection) as second_queries:
        second = clients["admin"].get(url).content.decode()
    assert len(calibrations) == 1  # not computed again
    assert trust_cells(second) == trust_cells(first)
    assert kappa_shown(second) == quadratic_kappa(PEOPLE)
    # Neither the people's ratings nor the judge's calls are read again.
    assert len(second_queries) <= len(first_queries) - 2


def test_a_new_or_changed_judgment_moves_the_key(
    project: Project,
    users: dict[str, Any],
    clients: dict[str, Client],
    calibrations: list[int],
) -> None:
    from annotation.judgment_tasks.services import judgment_edit

    rubric_run(project)
    task = people_rate(project, users, names=("annotator",))
    url = reverse("review:leaderboard", args=[project.pk])
    assert kappa_shown(clients["reviewer"].get(url).content.decode()) == quadratic_kappa(PEOPLE)
    # Two more people give the second unit the judge's 0 (the annotator gave 2): the majority
    # there is now 0, and the figure moves at once.
    second = units(project)[1]
    for name in ("reviewer", "admin"):
        rate(task, second, users[name], 0)
    moved = [2, 0, 0, 1, 0, 2]
    assert quadratic_kappa(moved) != quadratic_kappa(PEOPLE)
    assert kappa_shown(clients["reviewer"].get(url).content.decode()) == quadratic_kappa(moved)
    assert len(calibrations) == 2
    # The annotator changes their fourth score (1 -> 2, the judge's): same count, same ids.
    fourth = units(project)[3]
    judgment = Judgment.objects.get(task=task, unit=fourth)
    TaskUnit.objects.create(task=task, item=judgment.item, key=fourth)  # the task lists it
    judgment_edit(
        task=task,
        item=judgment.item,
        user=users["annotator"],
        version=judgment.version,
        value=2,
        unit=fourth,
    )
    edited = [2, 0, 0, 2, 0, 2]
    assert quadratic_kappa(edited) != quadratic_kappa(moved)
    assert kappa_shown(clients["reviewer"].get(url).content.decode()) == quadratic_kappa(edited)
    assert len(calibrations) == 3


def test_a_resumed_run_or_another_threshold_is_computed_again(
    project: Project, users: dict[str, Any], calibrations: list[int]
) -> None:
    from review.agreement.judge_sources import judge_trust, trust_tasks

    run = rubric_run(project)
    people_rate(project, users)
    # The judge failed its first call; Resume makes it again in a new job.
    failed = run.calls.order_by("id").first()
    assert failed is not None
    JudgeCall.objects.filter(pk=failed.pk).update(
        outputs=[], transport_error=True, error="no answer"
    )

    def trust(threshold: float = 0.6) -> dict[str, Any] | None:
        tasks = trust_tasks(project=project)
        fresh = JudgeRun.objects.select_related("job").get(pk=run.pk)
        return judge_trust(spec=fresh.spec, run=fresh, tasks=tasks, threshold=threshold)

    before = trust()
    assert before is not None and before["n_units"] == 5
    assert trust() == before and len(calibrations) == 1
    lenient = trust(threshold=0.2)
    assert lenient is not None and before["flagged"] and not lenient["flagged"]
    assert len(calibrations) == 2
    JudgeCall.objects.filter(pk=failed.pk).update(
        outputs=[json.dumps({"score": JUDGE[0], "justification": "j"})],
        transport_error=False,
        error="",
    )
    run.job = JobFactory(project=project, kind="judge", status=JobStatus.SUCCEEDED, params={})
    run.save(update_fields=["job"])
    after = trust()
    assert after is not None and after["n_units"] == 6 and len(calibrations) == 3
    assert after["kappa"] == pytest.approx(float(quadratic_kappa(PEOPLE)), abs=0.005)
