"""The judge as a rater (issue 10): the m&m's plan validity judge run against the scripted model
server, the judge sources a judgment task can add, the agreement dashboard's "Add a judge as
rater" section and API with hand-computed figures, the V judge against people on a run set's
page, and that only reviewers and admins ever see a judge's values."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from annotation.judgment_tasks.models import JudgmentTask
from benchmark.exceptions import Forbidden, ValidationFailed
from benchmark.models import Item, Job, JobStatus, Origin, Project
from review.agreement import judge_sources
from review.judges import services as judge_services
from review.judges.models import JudgeCall, JudgeRun, PlanJudgeCall
from review.judges.selectors import judge_run_report
from review.judges.specs.mms_plan import plan_validity_by_item
from review.runs import selectors as run_selectors
from review.runs.models import AgentRun, RunSet, VisualVerdict
from tests.factories import (
    AgentRunFactory,
    AssignmentFactory,
    ItemFactory,
    JobFactory,
    JudgmentFactory,
    JudgmentTaskFactory,
    PlanFactory,
    PlanJudgeCallFactory,
    ProjectFactory,
    ResponseFactory,
    RunSetFactory,
    TrajectoryFactory,
    UserFactory,
)
from tests.llm_server import FakeModelServer, point_at

pytestmark = pytest.mark.django_db

VALID_WHY = "The caption step answers what the user asked."
INVALID_WHY = "A step the request needs is missing."


class PlanServer(FakeModelServer):
    """VALID for plans with an image captioning step, no parseable answer for a plan using
    "garbage tool", INVALID otherwise."""

    def _reply(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict]:
        status, payload, headers = super()._reply(path, body)
        if status == 200:
            user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
            if "garbage tool" in user:
                answer = "Probably fine, I think."
            elif "image captioning" in user:
                answer = f"VALID\n{VALID_WHY}"
            else:
                answer = f"INVALID\n{INVALID_WHY}"
            payload["choices"][0]["message"]["content"] = answer
        return status, payload, headers


@pytest.fixture
def server() -> Iterator[PlanServer]:
    s = PlanServer().start()
    try:
        yield s
    finally:
        s.stop()


def step(name: str, n: int = 0) -> dict[str, Any]:
    return {"id": n, "name": name, "args": {"image": "2371408.jpg"}}


@pytest.fixture
def project(db: None) -> Project:
    """An m&m's project (the ``users``/``clients`` fixtures give it one member per role)."""
    return ProjectFactory(name="m&m's sample", kind="plan", data_format="mms")


@pytest.fixture
def items(project: Project, server: PlanServer) -> list[Item]:
    """Four items with a ground-truth plan each (i2 also an alternative): the judge finds i1
    valid, i2 invalid (its alternative valid), i3 invalid and never parses on i4."""
    point_at(project, server)
    plans = {
        "i1": [step("image captioning")],
        "i2": [step("object detection")],
        "i3": [step("image classification")],
        "i4": [step("garbage tool")],
    }
    out = []
    for n, (ext, steps) in enumerate(plans.items()):
        item = ItemFactory(project=project, external_id=ext, query=f"Question {ext}", position=n)
        PlanFactory(item=item, key="gt", steps=steps)
        out.append(item)
    PlanFactory(item=out[1], key="alt", steps=[step("image captioning")], is_alternative=True)
    return out


def run_plan_judge(project: Project, **kw: Any) -> tuple[JudgeRun, dict[str, Any]]:
    run, job = judge_services.judge_run_create(project=project, user=None, judge="mms-plan", **kw)
    job = judge_services.judge_run_execute(job=job)
    assert job.status == JobStatus.SUCCEEDED, job.error
    return run, job.result["summary"]


# --------------------------------------------------------------------------- the plan judge


def test_plan_judge_run_judges_every_ground_truth_plan(
    project: Project, items: list[Item], server: PlanServer
) -> None:
    run, summary = run_plan_judge(project)
    assert run.judge == "mms-plan" and run.job is not None and run.job.kind == "judge"
    # Five plans, i4's twice (its output never parses): six requests.
    assert server.count == 6
    assert PlanJudgeCall.objects.filter(run=run).count() == 5
    assert not JudgeCall.objects.filter(run=run).exists()
    # Valid: i1 and i2's alternative of the four that parsed; i4 excluded.
    assert summary["valid"] == pytest.approx(50.0)
    assert (summary["n"], summary["n_valid"], summary["excluded"]) == (4, 2, 1)
    assert summary["models"] == {
        "ground truth": {"valid": 50.0, "n": 4, "n_valid": 2, "excluded": 1}
    }
    assert summary["calls"]["made"] == 5 and summary["calls"]["cached"] == 0
    failed = PlanJudgeCall.objects.get(run=run, plan__item__external_id="i4")
    assert failed.outputs == ["Probably fine, I think."] * 2 and not failed.ok
    assert "VALID or INVALID" in failed.error

    report = judge_run_report(run=run)
    rows = [(a["item"], a["plan"], a["scores"]["valid"]) for a in report["answers"]]
    assert rows == [
        ("i1", "gt", True),
        ("i2", "gt", False),
        ("i2", "alt", True),
        ("i3", "gt", False),
        ("i4", "gt", None),
    ]
    assert report["answers"][0]["scores"]["why"] == VALID_WHY
    assert report["answers"][4]["failed"]

    # The item-level verdicts a plan vote is compared with: the item's own plan only.
    by_item = plan_validity_by_item(run=run)
    assert by_item == {items[0].pk: 1, items[1].pk: 0, items[2].pk: 0, items[3].pk: None}


def test_a_second_run_is_served_from_the_cache_and_a_resume_repeats_nothing(
    project: Project, items: list[Item], server: PlanServer
) -> None:
    first, _ = run_plan_judge(project)
    before = server.count
    second, summary = run_plan_judge(project)
    assert server.count == before
    assert summary["calls"]["cached"] == 5 and summary["valid"] == pytest.approx(50.0)
    assert PlanJudgeCall.objects.filter(run=second, cached=True).count() == 5

    job = judge_services.judge_run_resume(run=first, user=None)
    job = judge_services.judge_run_execute(job=job)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.result["summary"]["calls"]["reused"] == 5
    assert server.count == before


def test_plan_judge_refuses_a_project_without_plans_and_annotators(
    project: Project, users: dict[str, Any], server: PlanServer
) -> None:
    empty = ProjectFactory(name="no plans", kind="plan", data_format="mms")
    point_at(empty, server)
    with pytest.raises(ValidationFailed, match="no ground-truth plans to judge"):
        judge_services.judge_run_create(project=empty, user=None, judge="mms-plan")
    point_at(project, server)
    PlanFactory(item=ItemFactory(project=project))
    with pytest.raises(Forbidden):
        judge_services.judge_run_create(project=project, user=users["annotator"], judge="mms-plan")
    assert not JudgeRun.objects.exists()


def test_manage_judge_prints_one_line_per_plan_and_the_summary(
    project: Project, items: list[Item]
) -> None:
    out = io.StringIO()
    call_command("judge", "--project", project.name, "--judge", "mms-plan", stdout=out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["item"] for line in lines[:-1]] == ["i1", "i2", "i2", "i3", "i4"]
    assert lines[-1]["summary"]["valid"] == pytest.approx(50.0)
    assert lines[-1]["summary"]["excluded"] == 1


# --------------------------------------------------------------------------- plan votes


# People's votes (1: the plan solves the query). i4 is a tie; the judge failed on i4.
VOTES = {
    "ann": {"i1": 1, "i2": 0, "i3": 1, "i4": 1},
    "bob": {"i1": 1, "i2": 1, "i3": 1, "i4": 0},
    "cat": {"i1": 0, "i2": 0},
}


@pytest.fixture
def voted(project: Project, items: list[Item]) -> tuple[JudgmentTask, JudgeRun]:
    task = JudgmentTaskFactory(project=project, name="Plan validity", scheme="binary")
    by_ext = {item.external_id: item for item in items}
    for name, votes in VOTES.items():
        user = UserFactory(username=name)
        for ext, value in votes.items():
            JudgmentFactory(task=task, item=by_ext[ext], user=user, value=value)
    run, _ = run_plan_judge(project)
    return task, run


def test_task_human_ratings_are_keyed_by_item(voted: tuple[JudgmentTask, JudgeRun]) -> None:
    task, _ = voted
    rows = judge_sources.task_human_ratings(task=task)
    assert len(rows) == 10
    items = {i.external_id: str(i.pk) for i in Item.objects.filter(project=task.project)}
    assert (items["i2"], "bob", 1) in rows


def test_plan_run_is_a_source_for_item_level_binary_tasks_only(
    voted: tuple[JudgmentTask, JudgeRun], users: dict[str, Any]
) -> None:
    task, run = voted
    sources = judge_sources.judge_sources_for(user=users["reviewer"], task=task)
    assert [s.key for s in sources] == [f"judge-run:{run.pk}"]
    assert "m&m's plan validity" in sources[0].label
    ordinal = JudgmentTaskFactory(
        project=task.project,
        scheme="ordinal",
        labels=[{"value": v} for v in (0, 1, 2)],
        consensus="majority",
    )
    assert judge_sources.judge_sources_for(user=users["reviewer"], task=ordinal) == []
    with pytest.raises(Forbidden):
        judge_sources.judge_sources_for(user=users["annotator"], task=task)
    # A run still under way is not offered.
    Job.objects.filter(pk=run.job_id).update(status=JobStatus.RUNNING)
    assert judge_sources.judge_sources_for(user=users["reviewer"], task=task) == []


def test_plan_judge_against_people_hand_computed(
    voted: tuple[JudgmentTask, JudgeRun], users: dict[str, Any]
) -> None:
    task, run = voted
    report = judge_sources.judge_rater_report(
        user=users["reviewer"], task=task, key=f"judge-run:{run.pk}"
    )
    # Judge: i1 1, i2 0, i3 0, i4 failed. Majority: i1 1, i2 0, i3 1, i4 tie.
    # Judge x majority on i1..i3: (1,1) (0,0) (0,1): [[1, 1], [0, 1]], po 2/3, pe 4/9, kappa 0.4.
    majority = report["majority"]
    assert majority["confusion"]["matrix"] == [[1, 1], [0, 1]]
    assert majority["n_units"] == 3 and majority["n_ties"] == 1
    assert majority["percent_agreement"] == pytest.approx(2 / 3)
    assert majority["cohen_kappa"]["value"] == pytest.approx(0.4)
    persons = {p["rater"]: p for p in report["persons"]}
    # bob: (1,1) (0,1) (0,1): po 1/3, pe (0 + 3) / 9: kappa 0. cat: (1,0) (0,0): kappa 0.
    assert persons["ann"]["cohen_kappa"]["value"] == pytest.approx(0.4)
    assert persons["bob"]["confusion"]["matrix"] == [[0, 2], [0, 1]]
    assert persons["bob"]["cohen_kappa"]["value"] == pytest.approx(0.0)
    assert persons["cat"]["n_units"] == 2
    assert persons["cat"]["cohen_kappa"]["value"] == pytest.approx(0.0)
    # Alpha, people: o00 1, o01 = o10 3, o11 3 (n 10, n0 4, n1 6): 1 - 9 * 6 / 48 = -1/8.
    # With the judge: o00 2, o01 = o10 4, o11 3 (n 13, n0 6, n1 7): 1 - 12 * 8 / 84 = -1/7.
    assert report["alpha"]["people"]["value"] == pytest.approx(-1 / 8)
    assert report["alpha"]["people_and_judge"]["value"] == pytest.approx(-1 / 7)
    assert report["judge"] == {"n_units": 3, "n_missing": 1, "n_units_rated_by_people": 3}
    assert report["source"]["key"] == f"judge-run:{run.pk}"


def test_a_key_that_does_not_fit_is_refused_with_the_choices(
    voted: tuple[JudgmentTask, JudgeRun], users: dict[str, Any]
) -> None:
    task, run = voted
    with pytest.raises(ValidationFailed, match=f"choose one of: judge-run:{run.pk}"):
        judge_sources.judge_rater_report(user=users["reviewer"], task=task, key="judge-run:999")


# --------------------------------------------------------------------------- the dashboard


def test_dashboard_offers_the_judge_and_shows_kappa_and_confusion(
    voted: tuple[JudgmentTask, JudgeRun],
    clients: dict[str, Client],
    django_assert_max_num_queries: Any,
) -> None:
    task, run = voted
    url = f"/agreement/{task.pk}/"
    page = clients["reviewer"].get(url).content.decode()
    assert "Add a judge as rater" in page
    assert f'value="judge-run:{run.pk}"' in page
    assert "data-judge-rater" not in page

    with django_assert_max_num_queries(25):
        response = clients["reviewer"].get(url, {"judge": f"judge-run:{run.pk}"})
    assert response.status_code == 200
    page = response.content.decode()
    assert f'data-judge-rater="judge-run:{run.pk}"' in page
    assert 'data-confusion="majority"' in page and 'data-confusion="bob"' in page
    assert "0.400" in page  # kappa judge x majority
    assert "-0.125" in page and "-0.143" in page  # alpha without and with the judge
    assert "heat heat-4 agree" in page
    assert "data-ties>1 tie" in page
    assert "style=" not in page


def test_dashboard_says_whether_the_judge_can_be_trusted(
    voted: tuple[JudgmentTask, JudgeRun], clients: dict[str, Client]
) -> None:
    """Issue 26: the judge's calibration against the majority (kappa 0.4 on i1..i3, as above)
    with its interval, TPR 1/2 and FPR 0/1, flagged below the reviewer's threshold."""
    task, run = voted
    url = f"/agreement/{task.pk}/"
    htmx = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "judge-rater"}
    response = clients["reviewer"].get(url, {"judge": f"judge-run:{run.pk}"}, **htmx)
    body = response.content.decode()
    assert response.status_code == 200
    calibration = response.context["calibration"]
    overall = calibration["rows"][0]
    assert overall["kappa"]["value"] == pytest.approx(0.4)
    # Majority yes on i1, i3; the judge says yes on i1 only: TPR 1/2; majority no on i2: FPR 0.
    assert overall["true_positive_rate"]["value"] == pytest.approx(0.5)
    assert overall["false_positive_rate"]["value"] == 0.0
    assert 'id="calibration-table"' in body and "not trustworthy" in body  # 0.4 < 0.6
    assert "style=" not in body
    lenient = clients["reviewer"].get(
        url, {"judge": f"judge-run:{run.pk}", "threshold": "0.3"}, **htmx
    )
    assert lenient.context["calibration"]["rows"][0]["flagged"] is False
    assert "not trustworthy" not in lenient.content.decode()
    for bad, message in (("lots", "is not a number"), ("1.5", "is not between 0 and 1")):
        answer = clients["reviewer"].get(
            url, {"judge": f"judge-run:{run.pk}", "threshold": bad}, **htmx
        )
        assert answer.status_code == 400 and message in answer.content.decode()


def test_dashboard_fragment_for_htmx_and_a_bad_key(
    voted: tuple[JudgmentTask, JudgeRun], clients: dict[str, Client]
) -> None:
    task, run = voted
    url = f"/agreement/{task.pk}/"
    htmx = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "judge-rater"}
    response = clients["reviewer"].get(url, {"judge": f"judge-run:{run.pk}"}, **htmx)
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<section class="card" id="judge-rater"')
    assert "rater-table" not in body and "0.400" in body
    assert "HX-Request" in response["Vary"]

    bad = clients["reviewer"].get(url, {"judge": "judge-run:abc"}, **htmx)
    assert bad.status_code == 400
    assert "is not a judge that rates this task" in bad.content.decode()
    page = clients["reviewer"].get(url, {"judge": "nonsense"})
    assert page.status_code == 400 and "Agreement" in page.content.decode()


def test_api_adds_the_judge_sources_and_the_judge_rater(
    voted: tuple[JudgmentTask, JudgeRun], clients: dict[str, Client]
) -> None:
    task, run = voted
    url = f"/api/judgment-tasks/{task.pk}/agreement/"
    data = clients["reviewer"].get(url).json()
    assert data["judge_sources"] == [
        {
            "key": f"judge-run:{run.pk}",
            "label": data["judge_sources"][0]["label"],
            "kind": "mms-plan",
        }
    ]
    assert "judge_rater" not in data
    data = clients["reviewer"].get(url, {"judge": f"judge-run:{run.pk}"}).json()
    assert data["judge_rater"]["majority"]["cohen_kappa"]["value"] == pytest.approx(0.4)
    bad = clients["reviewer"].get(url, {"judge": "judge-run:0"})
    assert bad.status_code == 400 and "choose one of" in json.dumps(bad.json())


@pytest.mark.parametrize(
    ("role", "status"),
    [("admin", 200), ("reviewer", 200), ("annotator", 403), ("outsider", 404)],
)
def test_only_reviewers_see_a_judge_as_rater(
    voted: tuple[JudgmentTask, JudgeRun], clients: dict[str, Client], role: str, status: int
) -> None:
    task, run = voted
    params = {"judge": f"judge-run:{run.pk}"}
    page = clients[role].get(f"/agreement/{task.pk}/", params)
    api = clients[role].get(f"/api/judgment-tasks/{task.pk}/agreement/", params)
    assert page.status_code == status
    assert api.status_code == status
    for response in (page, api):
        body = response.content.decode()
        assert (VALID_WHY in body) is False  # the judge's reasons are never on these pages
        if status != 200:
            assert "judge_rater" not in body and "data-judge-rater" not in body
    anonymous = clients["anonymous"].get(f"/agreement/{task.pk}/", params)
    assert anonymous.status_code == 302


def test_a_blind_annotator_judging_a_plan_sees_no_judge_verdict(
    voted: tuple[JudgmentTask, JudgeRun], users: dict[str, Any], clients: dict[str, Client]
) -> None:
    task, _ = voted
    item = Item.objects.get(project=task.project, external_id="i1")
    AssignmentFactory(task=task, item=item, user=users["annotator"])
    page = clients["annotator"].get(f"/judgment-tasks/{task.pk}/items/{item.pk}/").content.decode()
    assert "image captioning" in page  # the plan is shown
    assert VALID_WHY not in page and "VALID" not in page and "judge-run" not in page


# --------------------------------------------------------------------------- rubric criteria


@pytest.fixture
def rubric_run(db: None) -> tuple[Project, JudgeRun, list[Any]]:
    """An LLMI rubric judge run over two answers x criteria r1, r2 (r2 of the second answer
    failed to parse)."""
    project = ProjectFactory(name="LLMI sample", data_format="llmi")
    item = ItemFactory(
        project=project, rubric=[{"key": "r1", "text": "a"}, {"key": "r2", "text": "b"}]
    )
    answers = [
        ResponseFactory(item=item, key=f"model:{m}", origin=Origin.MODEL, model_name=m)
        for m in ("alpha", "beta")
    ]
    job = JobFactory(project=project, kind="judge", status=JobStatus.SUCCEEDED, params={})
    run = JudgeRun.objects.create(
        project=project, judge="llmi-rubric", base_url="http://x/v1", model="judge-m", job=job
    )
    scores = {(0, "r1"): 2, (0, "r2"): 1, (1, "r1"): 0, (1, "r2"): None}
    for (n, label), score in scores.items():
        outputs = (
            [json.dumps({"score": score, "justification": "j"})]
            if score is not None
            else ["?", "?"]
        )
        JudgeCall.objects.create(
            run=run,
            response=answers[n],
            label=label,
            key=f"{n}{label}",
            template_id="llmi.rubric",
            template_version="v",
            outputs=outputs,
            ok=score is not None,
        )
    return project, run, answers


def test_rubric_scores_are_keyed_by_answer_and_criterion(
    rubric_run: tuple[Project, JudgeRun, list[Any]],
) -> None:
    _, run, answers = rubric_run
    a, b = (r.pk for r in answers)
    assert judge_sources.judge_run_values(run=run) == {
        f"response:{a}:r1": 2,
        f"response:{a}:r2": 1,
        f"response:{b}:r1": 0,
        f"response:{b}:r2": None,
    }


def test_rubric_run_rates_answer_criterion_tasks(
    rubric_run: tuple[Project, JudgeRun, list[Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project, run, answers = rubric_run
    reviewer = UserFactory()
    project.memberships.create(user=reviewer, role="reviewer")
    task = JudgmentTaskFactory(
        project=project,
        scheme="ordinal",
        labels=[{"value": 0, "label": "not met"}, {"value": 1}, {"value": 2}],
        consensus="majority",
    )
    # An item-level ordinal task does not match the rubric's units.
    assert judge_sources.judge_sources_for(user=reviewer, task=task) == []
    task.unit_kind = "answer-criterion"  # type: ignore[attr-defined]
    sources = judge_sources.judge_sources_for(user=reviewer, task=task)
    assert [s.key for s in sources] == [f"judge-run:{run.pk}"]

    a, b = (r.pk for r in answers)
    people = [
        (f"response:{a}:r1", "pat", 2),
        (f"response:{a}:r2", "pat", 2),
        (f"response:{b}:r1", "pat", 1),
        (f"response:{b}:r2", "pat", 0),
    ]
    monkeypatch.setattr(judge_sources, "task_human_ratings", lambda *, task: people)
    report = judge_sources.judge_rater_report(user=reviewer, task=task, key=sources[0].key)
    pat = report["persons"][0]
    # (judge, pat): (2,2) (1,2) (0,1); r2 of b failed. Quadratic weights (i - j)^2: observed
    # 1 + 1 = 2; marginals judge [1, 1, 1], pat [0, 1, 2]: expected sum w r_i c_j / 3 =
    # (1 + 8 + 2 + 1) / 3 = 4; kappa = 1 - 2 / 4 = 1/2.
    assert pat["n_units"] == 3
    assert pat["confusion"]["matrix"] == [[0, 1, 0], [0, 0, 1], [0, 0, 1]]
    assert pat["cohen_kappa_quadratic"]["value"] == pytest.approx(0.5)
    assert report["judge"]["n_missing"] == 1


# --------------------------------------------------------------------------- V checkpoints


def judged(run: AgentRun, passed: bool | None, person: bool | None = None) -> None:
    """Record the V judge's answer on the run's checkpoint C1 (and a person's after it)."""
    score = dict(run.score)
    checkpoints = []
    for cp in score["checkpoints"]:
        if cp["id"] == "C1":
            cp = {**cp, "detail": dict(cp["detail"])}
            answer = {"method": "judge", "model": "v-judge-m", "passed": passed}
            if person is None:
                cp["detail"].update(decided_by="judge", visual=answer)
            else:
                cp["detail"].update(
                    decided_by="person", judge=answer, visual={"method": "person", "passed": person}
                )
        checkpoints.append(cp)
    score.update(checkpoints=checkpoints, judge_model="v-judge-m")
    AgentRun.objects.filter(pk=run.pk).update(score=score)


@pytest.fixture
def runs(users: dict[str, Any]) -> RunSet:
    """Five runs of a visual item: the judge decided C1 on r1, r3, r5 and on r2 before a
    person did; the proxy decided r4."""
    project = users["reviewer"].memberships.first().project
    project.kind, project.data_format = "trajectory", "agentic-mme"
    project.save()
    item = ItemFactory(project=project, query="What does the plaque say?", expected_answer="x")
    TrajectoryFactory(
        item=item,
        key="reference",
        checkpoints=[
            {
                "id": "C1",
                "axis": "V",
                "description": "crop the plaque",
                "tools": ["crop"],
                "code_check": {"verifier": "verify_crop_ast", "bbox_2d": [1, 1, 60, 60]},
                "visual_check": {"question": "What does it say?", "expected_answer": "x"},
            }
        ],
    )
    run_set = RunSetFactory(project=project, created_by=users["reviewer"])
    made = [AgentRunFactory(run_set=run_set, item=item, folder=f"r{n}") for n in range(1, 6)]
    assert made[0].score["checkpoints"][0]["has_visual_check"]
    judged(made[0], True)
    judged(made[1], False, person=True)
    judged(made[2], True)
    judged(made[4], True)
    rev1, rev2 = UserFactory(username="rev1"), UserFactory(username="rev2")
    for run, reviewer, passed in [
        (made[0], rev1, False),
        (made[0], rev1, True),  # newer: counts
        (made[0], rev2, True),
        (made[1], rev1, True),
        (made[2], rev1, False),
        (made[2], rev2, False),
        (made[3], rev1, True),
    ]:
        VisualVerdict.objects.create(run=run, checkpoint_id="C1", passed=passed, reviewer=reviewer)
    return run_set


def test_v_judge_against_people_hand_computed(runs: RunSet, users: dict[str, Any]) -> None:
    report = run_selectors.run_set_judge_rater(user=users["reviewer"], run_set=runs)
    assert report is not None
    # Judge: r1 1, r2 0, r3 1, r5 1. Majority: r1 1, r2 1, r3 0, r4 1 (r4: no judge).
    # (1,1) (0,1) (1,0): [[0, 1], [1, 1]], po 1/3, pe 5/9, kappa -1/2.
    assert report["majority"]["confusion"]["matrix"] == [[0, 1], [1, 1]]
    assert report["majority"]["cohen_kappa"]["value"] == pytest.approx(-0.5)
    assert report["majority"]["n_without_judge"] == 1
    persons = {p["rater"]: p for p in report["persons"]}
    assert persons["rev1"]["n_units"] == 3
    assert persons["rev1"]["cohen_kappa"]["value"] == pytest.approx(-0.5)
    # rev2: (1,1) (1,0): po 1/2, pe 1/2, kappa 0.
    assert persons["rev2"]["confusion"]["matrix"] == [[0, 0], [1, 1]]
    assert persons["rev2"]["cohen_kappa"]["value"] == pytest.approx(0.0)
    assert report["judge"]["n_units"] == 4 and report["judge"]["n_units_rated_by_people"] == 3
    assert report["source"]["label"] == "v-judge-m"
    # Calibration (issue 26: the V judge is covered): (judge, majority) = (1,1) (0,1) (1,0).
    calibration = report["calibration"]["overall"]
    assert calibration["n_units"] == 3 and calibration["kappa"]["value"] == pytest.approx(-0.5)
    assert calibration["true_positive_rate"]["value"] == pytest.approx(0.5)  # r1 of r1, r2
    assert calibration["false_positive_rate"]["value"] == pytest.approx(1.0)  # r3 of r3
    assert calibration["flagged"] is True
    with pytest.raises(Forbidden):
        run_selectors.run_set_judge_rater(user=users["annotator"], run_set=runs)


def test_run_set_page_has_a_judge_vs_people_section(
    runs: RunSet, clients: dict[str, Client], django_assert_max_num_queries: Any
) -> None:
    with django_assert_max_num_queries(8):
        response = clients["reviewer"].get(f"/runs/{runs.pk}/")
    page = response.content.decode()
    assert 'id="judge-vs-people"' in page and "V judge vs people" in page
    assert 'data-confusion="majority"' in page and "-0.500" in page
    assert 'id="judge-calibration"' in page and "not trustworthy" in page
    assert clients["annotator"].get(f"/runs/{runs.pk}/").status_code == 403


def test_run_set_without_judge_answers_has_no_such_section(
    users: dict[str, Any], clients: dict[str, Client], client_for: Callable[[Any], Client]
) -> None:
    project = users["reviewer"].memberships.first().project
    run_set = RunSetFactory(project=project)
    AgentRunFactory(run_set=run_set)
    page = clients["reviewer"].get(f"/runs/{run_set.pk}/").content.decode()
    assert "judge-vs-people" not in page
    assert run_selectors.run_set_judge_rater(user=users["reviewer"], run_set=run_set) is None


def test_plan_judge_call_factory(db: None) -> None:
    call = PlanJudgeCallFactory()
    assert call.run.project == call.plan.item.project
    assert plan_validity_by_item(run=call.run) == {call.plan.item_id: 1}
