"""Rate the judge (ATP-Bench §6) and scoring criteria of answers: judgment tasks whose unit is
(answer, agent report) or (answer, criterion), through the same queue, leases, overlap and
blindness as item tasks; the agreement rate per agent with bootstrap intervals; permissions
and bad input."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.judgment_tasks import selectors, services
from annotation.judgment_tasks.models import Assignment, Judgment, JudgmentTask, Outcome, TaskUnit
from annotation.judgment_tasks.units import unit_key, unit_parse
from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.models import ItemStatus, Origin
from review.agreement.services import agreement_compute, judgments_csv
from review.rate_judge import selectors as rate_selectors
from review.rate_judge import services as rate_services
from tests.factories import (
    ItemFactory,
    JudgeCallFactory,
    JudgeRunFactory,
    MembershipFactory,
    ProjectFactory,
    ResponseFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

PRECISION = {
    "calls": [
        {
            "index": 1, "necessity": 2, "position": 2, "structure": 2, "tool_choice": 1,
            "parameters": 2, "format": 2, "comment": "Reference fits; the diffusion would not.",
        }
    ]
}  # fmt: skip
RECALL = {"missed": [{"after": "the nave", "tool": "Search", "why": "a plan of the nave helps"}]}
CHIEF = {"score": 72, "tier": "good", "why": "The image placement is sensible."}
RUBRIC = [{"key": "r1", "text": "Mentions the nave."}, {"key": "r2", "text": "Shows a plan."}]


class World:
    def __init__(self) -> None:
        self.project = ProjectFactory(name="Rate the judge", data_format="atp")
        self.users = {}
        for name, role in [
            ("admin", "admin"), ("reviewer", "reviewer"),
            ("a1", "annotator"), ("a2", "annotator"), ("a3", "annotator"),
        ]:  # fmt: skip
            self.users[name] = UserFactory(username=name)
            MembershipFactory(project=self.project, user=self.users[name], role=role)
        self.outsider = UserFactory(username="outsider")
        MembershipFactory(user=self.outsider, role="admin")  # admin of another project
        self.items = [
            ItemFactory(project=self.project, position=n, external_id=f"q{n}", rubric=RUBRIC)
            for n in range(2)
        ]
        self.run = JudgeRunFactory(project=self.project)
        self.responses = []
        for item in self.items:
            for model in ("model-b", "model-a"):
                response = ResponseFactory(
                    item=item, origin=Origin.MODEL, model_name=model, key=f"model:{model}"
                )
                self.responses.append(response)
                for label, parsed in (("precision", PRECISION), ("recall", RECALL)):
                    JudgeCallFactory(run=self.run, response=response, label=label, parsed=parsed)
        # The Chief Judge failed on one answer: nothing to rate there.
        for n, response in enumerate(self.responses):
            JudgeCallFactory(
                run=self.run,
                response=response,
                label="chief",
                parsed=CHIEF if n else None,
                ok=bool(n),
                error="" if n else "not JSON",
            )

    def task(self, **kw: Any) -> JudgmentTask:
        params: dict[str, Any] = {"labels": ["precision", "recall", "chief"], "overlap": 2}
        params.update(kw)
        return rate_services.rate_judge_task_create(
            run=self.run, user=self.users["reviewer"], **params
        )


@pytest.fixture
def world() -> World:
    return World()


def answer_order(w: World) -> list[int]:
    """Answers in unit order: item position, then model name."""
    return [r.pk for r in sorted(w.responses, key=lambda r: (r.item.position, r.model_name, r.pk))]


def rate(task: JudgmentTask, user: Any, value: Any) -> Judgment:
    lease = services.assignment_next_for_user(task=task, user=user)
    assert lease is not None
    return services.judgment_submit(
        task=task, item=lease.item, user=user, value=value, unit=lease.unit
    )


# --------------------------------------------------------------------------- units


def test_units_are_answer_agent_pairs_the_run_reported_on(world: World) -> None:
    task = world.task()
    assert task.unit_kind == "judge-report" and task.has_units
    assert task.scheme == "ordinal" and task.label_values == [0, 1, 2]
    assert task.updates_item_status is False
    keys = list(TaskUnit.objects.filter(task=task).values_list("key", flat=True))
    failed = world.responses[0].pk
    expected = [
        f"response:{rid}:{label}"
        for rid in answer_order(world)
        for label in ("precision", "recall", "chief")
        if not (rid == failed and label == "chief")
    ]
    assert keys == expected  # 4 answers x 3 agents, less the failed Chief call
    assert unit_parse(keys[0]) == (answer_order(world)[0], "precision")
    unit = TaskUnit.objects.get(task=task, key=keys[0])
    assert unit.item_id == world.items[0].pk


def test_a_sample_of_answers_is_fixed_when_the_task_is_made(world: World) -> None:
    task = world.task(sample=2, seed=7, labels=["chief"])
    sampled = task.unit_params["responses"]
    assert len(sampled) == 2
    assert set(sampled) <= {r.pk for r in world.responses[1:]}  # answers with a Chief report
    keys = set(TaskUnit.objects.filter(task=task).values_list("key", flat=True))
    assert keys == {f"response:{rid}:chief" for rid in sampled}
    again = rate_services.rate_judge_task_create(
        run=world.run, user=world.users["reviewer"], labels=["chief"], sample=2, seed=7
    )
    assert again.unit_params["responses"] == sampled  # the same seed draws the same answers


def test_criterion_units_from_models(world: World) -> None:
    task = rate_services.criterion_task_create(
        project=world.project, user=world.users["reviewer"], models=["model-a"], overlap=1
    )
    assert task.unit_kind == "answer-criterion"
    model_a = [r for r in world.responses if r.model_name == "model-a"]
    assert list(TaskUnit.objects.filter(task=task).values_list("key", flat=True)) == [
        unit_key(response_id=r.pk, label=k) for r in model_a for k in ("r1", "r2")
    ]
    only_r2 = rate_services.criterion_task_create(
        project=world.project, user=world.users["reviewer"], run=world.run, criteria=["r2"]
    )
    assert TaskUnit.objects.filter(task=only_r2).count() == 4
    assert all(k.endswith(":r2") for k in only_r2.units.values_list("key", flat=True))


def test_criterion_page_shows_the_criterion_and_not_the_judge(world: World) -> None:
    JudgeCallFactory(
        run=world.run,
        response=world.responses[0],
        label="r1",
        parsed={"score": 2, "justification": "JUDGE-SAYS-MET"},
    )
    task = rate_services.criterion_task_create(
        project=world.project, user=world.users["reviewer"], run=world.run, criteria=["r1"]
    )
    lease = services.assignment_next_for_user(task=task, user=world.users["a1"])
    client = Client()
    client.force_login(world.users["a1"])
    page = client.get(reverse("annotation:judge_unit", args=[task.pk, lease.unit]))
    assert page.status_code == 200
    body = page.content.decode()
    assert "Mentions the nave." in body
    assert "JUDGE-SAYS-MET" not in body
    assert "2 · fully met" in body


# --------------------------------------------------------------------------- the queue


def test_overlap_k_leases_and_no_unit_twice(world: World) -> None:
    task = world.task(labels=["chief"], overlap=2)
    a1, a2, a3 = (world.users[n] for n in ("a1", "a2", "a3"))
    first = services.assignment_next_for_user(task=task, user=a1)
    assert first.unit == task.units.first().key
    assert services.assignment_next_for_user(task=task, user=a1).pk == first.pk  # open lease
    second = services.assignment_next_for_user(task=task, user=a2)
    assert second.unit == first.unit
    third = services.assignment_next_for_user(task=task, user=a3)
    assert third.unit != first.unit  # k = 2 live leases on the first unit
    assert third.item_id == TaskUnit.objects.get(task=task, key=third.unit).item_id
    services.judgment_submit(task=task, item=first.item, user=a1, value=2, unit=first.unit)
    nxt = services.assignment_next_for_user(task=task, user=a1)
    assert nxt.unit not in (first.unit,)
    assert Assignment.objects.filter(task=task, unit=first.unit).count() == 2


def test_an_expired_lease_returns_the_unit_to_the_pool(world: World) -> None:
    task = world.task(labels=["chief"], overlap=1)
    a1, a2 = world.users["a1"], world.users["a2"]
    lease = services.assignment_next_for_user(task=task, user=a1)
    Assignment.objects.filter(pk=lease.pk).update(expires_at=timezone.now() - timedelta(1))
    other = services.assignment_next_for_user(task=task, user=a2)
    assert other.unit == lease.unit
    services.judgment_submit(task=task, item=other.item, user=a2, value=1, unit=other.unit)
    with pytest.raises(Conflict, match="lease expired and the unit was judged by others"):
        services.judgment_submit(task=task, item=lease.item, user=a1, value=2, unit=lease.unit)


def test_every_unit_rated_k_times_then_the_queue_is_empty(world: World) -> None:
    task = world.task(labels=["recall"], overlap=2)
    for name in ("a1", "a2"):
        for _ in range(4):
            rate(task, world.users[name], 2)
        assert services.assignment_next_for_user(task=task, user=world.users[name]) is None
    assert services.assignment_next_for_user(task=task, user=world.users["a3"]) is None
    assert Judgment.objects.filter(task=task).count() == 8
    outcomes = Outcome.objects.filter(task=task)
    assert outcomes.count() == 4 and {o.verdict for o in outcomes} == {"accepted"}
    assert all(o.unit for o in outcomes)
    assert {i.status for i in world.items} == {ItemStatus.DRAFT}  # item status left alone


def test_units_of_one_answer_have_their_own_outcomes(world: World) -> None:
    task = world.task(labels=["precision", "recall"], overlap=1)
    a1 = world.users["a1"]
    first = rate(task, a1, 0)
    second = rate(task, a1, 2)
    assert first.item_id == second.item_id and first.unit != second.unit
    verdicts = dict(Outcome.objects.filter(task=task).values_list("unit", "verdict"))
    assert verdicts == {first.unit: "rejected", second.unit: "accepted"}


# --------------------------------------------------------------------------- bad input


def test_bad_ratings_and_units_are_refused_clearly(world: World) -> None:
    task = world.task(labels=["chief"], overlap=1)
    a1 = world.users["a1"]
    lease = services.assignment_next_for_user(task=task, user=a1)
    with pytest.raises(ValidationFailed, match="3 is not one of the labels: 0, 1, 2"):
        services.judgment_submit(task=task, item=lease.item, user=a1, value=3, unit=lease.unit)
    wrong = unit_key(response_id=world.responses[1].pk, label="precision")  # not in this task
    with pytest.raises(ValidationFailed, match="is not part of task"):
        services.judgment_submit(task=task, item=lease.item, user=a1, value=2, unit=wrong)
    with pytest.raises(ValidationFailed, match="unit by unit"):
        services.judgment_submit(task=task, item=lease.item, user=a1, value=2)
    other = TaskUnit.objects.filter(task=task).exclude(key=lease.unit).first()
    with pytest.raises(Forbidden, match="not assigned to you"):
        services.judgment_submit(task=task, item=other.item, user=a1, value=2, unit=other.key)
    with pytest.raises(ValidationFailed, match="not a unit key"):
        unit_parse("response:x:chief")
    assert not Judgment.objects.exists()


def test_item_tasks_take_no_unit(world: World) -> None:
    task = JudgmentTask.objects.create(
        project=world.project, name="items", question="?", scheme="binary", consensus="majority"
    )
    lease = services.assignment_next_for_user(task=task, user=world.users["a1"])
    assert lease.unit == ""
    with pytest.raises(ValidationFailed, match="judges whole items"):
        services.judgment_submit(
            task=task, item=lease.item, user=world.users["a1"], value=1, unit="response:1:chief"
        )


def test_creating_a_task_checks_its_input(world: World) -> None:
    reviewer = world.users["reviewer"]
    with pytest.raises(ValidationFailed, match="choose at least one agent"):
        rate_services.rate_judge_task_create(run=world.run, user=reviewer, labels=[])
    with pytest.raises(ValidationFailed, match="no successful report by 'r9'"):
        rate_services.rate_judge_task_create(run=world.run, user=reviewer, labels=["r9"])
    with pytest.raises(ValidationFailed, match="overlap"):
        world.task(overlap=0)
    with pytest.raises(ValidationFailed, match="sample"):
        world.task(sample=0)
    world.task(name="Same")
    with pytest.raises(ValidationFailed, match="already has a judgment task 'Same'"):
        world.task(name="Same")
    with pytest.raises(ValidationFailed, match="either a judge run or one or more models"):
        rate_services.criterion_task_create(project=world.project, user=reviewer)
    with pytest.raises(ValidationFailed, match="no answers of 'nobody'"):
        rate_services.criterion_task_create(project=world.project, user=reviewer, models=["nobody"])
    with pytest.raises(Forbidden):
        rate_services.rate_judge_task_create(
            run=world.run, user=world.users["a1"], labels=["chief"]
        )
    assert JudgmentTask.objects.filter(project=world.project).count() == 1


def test_a_unit_task_keeps_its_scale_and_is_not_adjudicated(world: World) -> None:
    from review.adjudication.services import outcome_decide

    task = world.task(labels=["chief"], overlap=1)
    with pytest.raises(ValidationFailed, match="0-2 scale"):
        services.judgment_task_save(
            project=world.project, user=world.users["admin"], task=task, scheme="binary"
        )
    task.refresh_from_db()
    assert task.scheme == "ordinal"
    renamed = services.judgment_task_save(
        project=world.project, user=world.users["admin"], task=task, name="Renamed", overlap=3
    )
    assert renamed.overlap == 3 and renamed.unit_kind == "judge-report"
    with pytest.raises(ValidationFailed, match="rated unit by unit"):
        outcome_decide(
            task=task, item=world.items[0], reviewer=world.users["reviewer"], verdict="accepted"
        )


# --------------------------------------------------------------------------- pages and blindness


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_judge_page_shows_one_report_and_no_other_rater(world: World) -> None:
    task = world.task(labels=["precision", "chief"], overlap=2)
    a1, a2 = world.users["a1"], world.users["a2"]
    lease = services.assignment_next_for_user(task=task, user=a1)
    services.judgment_submit(
        task=task, item=lease.item, user=a1, value=0, unit=lease.unit, comment="A1-SECRET-NOTE"
    )
    c2 = _client(a2)
    nxt = c2.post(reverse("annotation:task_next", args=[task.pk]))
    url = reverse("annotation:judge_unit", args=[task.pk, lease.unit])
    assert nxt.status_code == 302 and nxt["Location"] == url
    page = c2.get(url)
    body = page.content.decode()
    assert page.status_code == 200
    assert "Precision Inspector" in body and "Reference fits; the diffusion would not." in body
    assert "The image placement is sensible." not in body  # not the Chief Judge's report
    assert "A1-SECRET-NOTE" not in body and "table judgments" not in body  # blind
    assert "data-pick-submits" in body and "2 · agree" in body  # the 0-2 keys pick and submit
    # a unit leased to nobody: an annotator may not open it
    other = TaskUnit.objects.filter(task=task).exclude(key=lease.unit).last()
    refused = c2.get(reverse("annotation:judge_unit", args=[task.pk, other.key]))
    assert refused.status_code == 403
    assert c2.get(reverse("annotation:judge_unit", args=[task.pk, "response:1:x"])).status_code == (
        404
    )
    # a reviewer sees everyone's ratings of the unit
    review = _client(world.users["reviewer"]).get(url).content.decode()
    assert "A1-SECRET-NOTE" in review


def test_rating_through_the_page_with_a_bad_value_says_why(world: World) -> None:
    task = world.task(labels=["chief"], overlap=1)
    a1 = world.users["a1"]
    lease = services.assignment_next_for_user(task=task, user=a1)
    client = _client(a1)
    url = reverse("annotation:judge_unit", args=[task.pk, lease.unit])
    bad = client.post(url, {"value": "3"})
    assert (
        bad.status_code == 200 and "3 is not one of the available choices" in bad.content.decode()
    )
    good = client.post(url, {"value": "2"})
    assert good.status_code == 302 and good["Location"].endswith(f"/judgment-tasks/{task.pk}/next/")
    assert Judgment.objects.get(task=task, user=a1).value == 2


def test_the_api_rates_units_blind(world: World) -> None:
    task = world.task(labels=["chief"], overlap=2)
    base = f"/api/judgment-tasks/{task.pk}"
    clients = {}
    for name in ("a1", "a2", "reviewer"):
        clients[name] = APIClient()
        clients[name].force_authenticate(world.users[name])
    lease = clients["a1"].post(f"{base}/next/").json()
    assert lease["unit"].startswith("response:") and lease["unit"].endswith(":chief")
    three = clients["a1"].post(
        f"{base}/judgments/", {"unit": lease["unit"], "value": 3}, format="json"
    )
    assert three.status_code == 400 and "3 is not one of the labels" in three.json()["detail"]
    elsewhere = clients["a1"].post(
        f"{base}/judgments/", {"unit": "response:999999:chief", "value": 2}, format="json"
    )
    assert elsewhere.status_code == 400 and "not part of task" in elsewhere.json()["detail"]
    done = clients["a1"].post(
        f"{base}/judgments/", {"unit": lease["unit"], "value": 2}, format="json"
    )
    assert done.status_code == 201 and done.json()["unit"] == lease["unit"]
    # a2 cannot fetch a1's rating
    assert clients["a2"].get(f"{base}/judgments/").json()["results"] == []
    assert len(clients["reviewer"].get(f"{base}/judgments/").json()["results"]) == 1
    rates = clients["reviewer"].get(f"{base}/agreement/").json()["judge_rates"]
    assert rates["groups"][0]["rate"] == 100.0


def test_a_stale_lease_through_the_api_is_409(world: World) -> None:
    task = world.task(labels=["chief"], overlap=1)
    a1, a2 = world.users["a1"], world.users["a2"]
    lease = services.assignment_next_for_user(task=task, user=a1)
    Assignment.objects.filter(pk=lease.pk).update(expires_at=timezone.now() - timedelta(1))
    rate(task, a2, 1)
    client = APIClient()
    client.force_authenticate(a1)
    r = client.post(
        f"/api/judgment-tasks/{task.pk}/judgments/",
        {"unit": lease.unit, "value": 2},
        format="json",
    )
    assert r.status_code == 409 and "lease expired" in r.json()["detail"]


def test_who_may_create_a_task(world: World) -> None:
    url = reverse("review:rate_judge_new", args=[world.project.pk])
    assert _client(world.users["a1"]).get(url).status_code == 403
    assert _client(world.outsider).get(url).status_code == 404
    reviewer = _client(world.users["reviewer"])
    page = reviewer.get(url, {"run": world.run.pk})
    assert page.status_code == 200 and "Chief Judge (3 reports)" in page.content.decode()
    bad = reviewer.post(url, {"run": world.run.pk, "agents": ["chief"], "overlap": "0"})
    assert bad.status_code == 400
    made = reviewer.post(
        url, {"run": world.run.pk, "agents": ["chief", "recall"], "overlap": "3", "name": "RJ"}
    )
    assert made.status_code == 302
    task = JudgmentTask.objects.get(name="RJ")
    assert task.overlap == 3 and task.unit_params["labels"] == ["recall", "chief"]
    crit = reverse("review:criterion_task_new", args=[world.project.pk])
    assert _client(world.users["a1"]).post(crit, {"models": ["model-a"]}).status_code == 403
    assert reviewer.post(crit, {"overlap": "2"}).status_code == 400
    assert reviewer.post(crit, {"models": ["model-a"], "overlap": "2"}).status_code == 302


def test_the_task_list_offers_units(world: World, django_assert_max_num_queries: Any) -> None:
    world.task(name="RJ")
    client = _client(world.users["a1"])
    with django_assert_max_num_queries(12):
        page = client.get(reverse("annotation:task_list", args=[world.project.pk]))
    body = page.content.decode()
    assert "11 units" in body and "Rate next unit" in body


# --------------------------------------------------------------------------- figures


def test_task_figures_per_agent_and_annotator(world: World) -> None:
    task = world.task(labels=["precision", "chief"], overlap=2)
    ratings = {"a1": [2, 2, 1, 0, 2, 2, 2], "a2": [2, 1, 1, 0, 2, 2, 2]}
    for name, values in ratings.items():
        for value in values:
            rate(task, world.users[name], value)
    figures = rate_selectors.rate_figures(task=task, bootstrap=100)
    by_agent = {g["group"]: g for g in figures["groups"]}
    got: dict[str, list[int]] = {"precision": [], "chief": []}
    for j in Judgment.objects.filter(task=task):
        got[unit_parse(j.unit)[1]].append(j.value)
    for label, values in got.items():
        assert by_agent[label]["rate"] == pytest.approx(100 * sum(values) / (2 * len(values)))
        assert by_agent[label]["n_ratings"] == len(values)
    assert by_agent["precision"]["name"] == "Precision Inspector"
    a1 = next(a for a in figures["annotators"] if a["rater"] == "a1")
    assert a1["rate"] == pytest.approx(100 * 11 / 14) and a1["n"] == 7
    # the usual statistics work on units: raters are users, units are (item, unit)
    report = agreement_compute(task=task, bootstrap=0)
    assert report["n_items"] == 7 and report["n_raters"] == 2
    assert report["percent_agreement"]["value"] == pytest.approx(6 / 7)
    assert report["krippendorff_alpha"]["value"] is not None
    header = next(iter(judgments_csv(task=task))).splitlines()[0]
    assert header.startswith("item,unit,annotator,value")
    page = _client(world.users["reviewer"]).get(reverse("review:agreement", args=[task.pk]))
    body = page.content.decode()
    assert page.status_code == 200 and 'id="judge-agreement"' in body
    assert f"{by_agent['chief']['rate']:.2f} %" in body
    # Trust: flagged below the reviewer's threshold (issue 26: MAM agents are covered).
    assert [g["flagged"] for g in figures["groups"]] == [
        g["rate"] < 80.0 for g in figures["groups"]
    ]
    lowest = min(g["rate"] for g in figures["groups"])
    strict = rate_selectors.rate_figures(task=task, bootstrap=0, threshold=lowest + 0.01)
    assert any(g["flagged"] for g in strict["groups"])
    lenient = rate_selectors.rate_figures(task=task, bootstrap=0, threshold=lowest)
    assert not any(g["flagged"] for g in lenient["groups"])
    flagged = _client(world.users["reviewer"]).get(
        reverse("review:agreement", args=[task.pk]), {"rate_threshold": "100"}
    )
    assert flagged.content.decode().count("data-flagged") == 2
    relaxed = _client(world.users["reviewer"]).get(
        reverse("review:agreement", args=[task.pk]), {"rate_threshold": "0"}
    )
    assert "data-flagged" not in relaxed.content.decode()


def test_figures_only_for_judge_report_tasks(world: World) -> None:
    task = rate_services.criterion_task_create(
        project=world.project, user=world.users["reviewer"], models=["model-a"]
    )
    assert rate_selectors.rate_figures(task=task) is None
    assert (
        selectors.task_unit_get(
            user=world.users["a1"], task=task, key=task.units.first().key
        ).item.pk
        == world.items[0].pk
    )
