"""People and the rubric judge on the same answers, end to end through the services (issue 10):
a real LLMI-Bench rubric run against the scripted server, a "score the criteria" task made from
it, annotators leasing and rating its units, then

* the judge as one more rater (``judge_rater_report``): Cohen's kappa against each person and
  the majority, and the confusion matrices, all computed by hand below;
* people as a ranking source on the compare page (``people:<task id>``): per model the people's
  rubric figure computed like the judge's (a decided unit counts with its outcome value, an
  undecided one with the mean of its ratings), Spearman's rho and p against the judge's figures
  on the same units, and per criterion the mean scores and the exact agreement between the
  judge and the people's majority; a task whose answers the run did not judge is said so.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.judgment_tasks import services as judging
from annotation.judgment_tasks.models import JudgmentTask, Outcome
from benchmark.models import JobStatus, Role
from review.agreement.judge_sources import judge_rater_report, judge_sources_for
from review.judges import reports
from review.judges import services as judge_services
from review.rate_judge.services import criterion_task_create
from tests.factories import ItemFactory, MembershipFactory, ProjectFactory, UserFactory
from tests.judge_server import GARBAGE, ScriptedServer, criterion_of, jsonl, rubric
from tests.llm_server import point_at
from tests.review.test_judge_pages import text

pytestmark = pytest.mark.django_db

MODELS = ("alpha", "beta", "delta", "gamma")

#: The judge's scores: (model, item, criterion) -> 0/1/2, None: never parses.
JUDGE = {
    ("alpha", "q1", "r1"): 2, ("alpha", "q1", "r2"): 2,
    ("alpha", "q2", "r1"): 2, ("alpha", "q2", "r2"): 1,
    ("beta", "q1", "r1"): 1, ("beta", "q1", "r2"): 1,
    ("beta", "q2", "r1"): 2, ("beta", "q2", "r2"): 0,
    ("delta", "q1", "r1"): 2, ("delta", "q1", "r2"): 2,
    ("delta", "q2", "r1"): 2, ("delta", "q2", "r2"): 2,
    ("gamma", "q1", "r1"): 0, ("gamma", "q1", "r2"): 0,
    ("gamma", "q2", "r1"): 1, ("gamma", "q2", "r2"): None,
}  # fmt: skip


def judge_script(system: str, user: str, model: str) -> str:
    answer = re.search(r"(ALPHA|BETA|DELTA|GAMMA) (\d)", user)
    assert answer, user
    score = JUDGE[(answer.group(1).lower(), f"q{answer.group(2)}", criterion_of(user))]
    return GARBAGE if score is None else rubric(score, "scripted")


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    s = ScriptedServer().start()
    s.script = judge_script  # type: ignore[assignment]
    try:
        yield s
    finally:
        s.stop()


class World:
    """An LLM-I project with items q1, q2 (criteria r1, r2), four models' answers, a reviewer
    and three annotators, and a finished rubric judge run over every answer."""

    def __init__(self, server: ScriptedServer) -> None:
        self.project = ProjectFactory(name="People vs judge", data_format="llmi")
        point_at(self.project, server)
        self.reviewer = UserFactory(username="pvj-reviewer")
        MembershipFactory(project=self.project, user=self.reviewer, role=Role.REVIEWER)
        self.annotators = []
        for n in (1, 2, 3):
            user = UserFactory(username=f"ann{n}")
            MembershipFactory(project=self.project, user=user, role=Role.ANNOTATOR)
            self.annotators.append(user)
        self.items = {
            f"q{n}": ItemFactory(
                project=self.project,
                external_id=f"q{n}",
                position=n,
                query=f"Explain topic {n}",
                rubric=[{"key": "r1", "text": "is correct"}, {"key": "r2", "text": "is clear"}],
            )
            for n in (1, 2)
        }
        judge_services.answers_import(
            project=self.project,
            files=[
                (
                    f"{model}.jsonl",
                    jsonl(
                        [{"trace_id": f"q{n}", "answer": f"{model.upper()} {n}"} for n in (1, 2)]
                    ),
                )
                for model in MODELS
            ],
        )
        run, job = judge_services.judge_run_create(
            project=self.project, user=None, judge="llmi-rubric", workers=2
        )
        job = judge_services.judge_run_execute(job=job)
        assert job.status == JobStatus.SUCCEEDED, job.error
        self.run = run
        item_of = {item.pk: ext for ext, item in self.items.items()}
        self.answer: dict[tuple[str, str], int] = {}
        for response in judge_services.answers_for(project=self.project):
            self.answer[(response.model_name, item_of[response.item_id])] = response.pk

    def describe(self, unit: str) -> tuple[str, str, str]:
        pk, criterion = unit.split(":")[1:]
        model, item = next(k for k, v in self.answer.items() if v == int(pk))
        return model, item, criterion

    def rate(self, task: JudgmentTask, user: Any, values: dict[tuple[str, str, str], int]) -> int:
        """``user`` leases units in queue order and rates each from ``values``; they stop at
        the first unit ``values`` has no rating for. Returns how many they rated."""
        rated = 0
        while True:
            lease = judging.assignment_next_for_user(task=task, user=user)
            if lease is None:
                return rated
            key = self.describe(lease.unit)
            if key not in values:
                return rated
            judging.judgment_submit(
                task=task, item=lease.item, user=user, value=values[key], unit=lease.unit
            )
            rated += 1


@pytest.fixture
def world(server: ScriptedServer) -> World:
    return World(server)


def ratings(per_unit: dict[tuple[str, str, str], tuple[int, ...]], n: int) -> dict:
    """The ``n``-th annotator's ratings out of ``{unit: (ann1, ann2, ann3)}``."""
    return {unit: values[n] for unit, values in per_unit.items() if len(values) > n}


# --------------------------------------------------------------------------- the judge as rater

#: Criterion r1 of every answer, rated by all three annotators.
R1 = {
    ("alpha", "q1", "r1"): (2, 2, 1),
    ("alpha", "q2", "r1"): (2, 1, 2),
    ("beta", "q1", "r1"): (1, 1, 0),
    ("beta", "q2", "r1"): (1, 2, 1),
    ("gamma", "q1", "r1"): (0, 0, 0),
    ("gamma", "q2", "r1"): (0, 1, 1),
    ("delta", "q1", "r1"): (2, 2, 1),
    ("delta", "q2", "r1"): (1, 2, 2),
}


def test_the_judge_rates_a_criterion_task_like_one_more_person(world: World) -> None:
    task = criterion_task_create(
        project=world.project, user=world.reviewer, run=world.run, criteria=["r1"], overlap=3
    )
    assert task.unit_kind == "answer-criterion" and task.units.count() == 8
    for n, user in enumerate(world.annotators):
        assert world.rate(task, user, ratings(R1, n)) == 8
    # Every unit got its three ratings and an outcome.
    assert Outcome.objects.filter(task=task).exclude(verdict="pending").count() == 8

    sources = judge_sources_for(user=world.reviewer, task=task)
    assert [s.key for s in sources] == [f"judge-run:{world.run.pk}"]
    report = judge_rater_report(user=world.reviewer, task=task, key=sources[0].key)
    assert report["categories"] == [0, 1, 2]
    assert report["judge"]["n_units_rated_by_people"] == 8
    persons = {p["rater"]: p for p in report["persons"]}
    # Judge over (alpha q1, alpha q2, beta q1, beta q2, gamma q1, gamma q2, delta q1, delta q2):
    # 2 2 1 2 0 1 2 2, marginals 0:1 1:2 2:5 of 8.
    # ann1 2 2 1 1 0 0 2 1: po 5/8, marginals 2 3 3, pe (2 + 6 + 15)/64, kappa 17/41.
    assert persons["ann1"]["confusion"]["matrix"] == [[1, 0, 0], [1, 1, 0], [0, 2, 3]]
    assert persons["ann1"]["cohen_kappa"]["value"] == pytest.approx(17 / 41)
    # ann2 2 1 1 2 0 1 2 2: po 7/8, marginals 1 3 4, pe 27/64, kappa 29/37.
    assert persons["ann2"]["confusion"]["matrix"] == [[1, 0, 0], [0, 2, 0], [0, 1, 4]]
    assert persons["ann2"]["cohen_kappa"]["value"] == pytest.approx(29 / 37)
    # ann3 1 2 0 1 0 1 1 2: po 4/8, marginals 2 4 2, pe 20/64, kappa 12/44.
    assert persons["ann3"]["confusion"]["matrix"] == [[1, 0, 0], [1, 1, 0], [0, 3, 2]]
    assert persons["ann3"]["cohen_kappa"]["value"] == pytest.approx(3 / 11)
    assert all(p["n_units"] == 8 for p in persons.values())
    # Majority 2 2 1 1 0 1 2 2: the same table as ann2's.
    majority = report["majority"]
    assert majority["confusion"]["matrix"] == [[1, 0, 0], [0, 2, 0], [0, 1, 4]]
    assert majority["cohen_kappa"]["value"] == pytest.approx(29 / 37)
    assert majority["percent_agreement"] == pytest.approx(7 / 8)
    assert (majority["n_units"], majority["n_ties"]) == (8, 0)

    # The agreement page shows the same, for reviewers.
    client = Client()
    client.force_login(world.reviewer)
    page = client.get(reverse("review:agreement", args=[task.pk]) + f"?judge={sources[0].key}")
    assert page.status_code == 200
    assert "0.784" in page.content.decode()  # 29/37


# --------------------------------------------------------------------------- people as a source

#: Both criteria of every answer: three ratings on q1 (ann3 stops at q2), two on q2.
BOTH = {
    ("alpha", "q1", "r1"): (2, 2, 2),  # decided 2
    ("alpha", "q1", "r2"): (2, 2, 1),  # decided 2 (the mean would be 1.67)
    ("beta", "q1", "r1"): (0, 1, 2),  # disputed: the mean, 1
    ("beta", "q1", "r2"): (1, 1, 1),
    ("delta", "q1", "r1"): (1, 1, 1),
    ("delta", "q1", "r2"): (1, 1, 0),
    ("gamma", "q1", "r1"): (0, 0, 1),
    ("gamma", "q1", "r2"): (0, 0, 0),
    ("alpha", "q2", "r1"): (2, 1),  # pending: the mean, 1.5
    ("alpha", "q2", "r2"): (2, 2),
    ("beta", "q2", "r1"): (1, 2),
    ("beta", "q2", "r2"): (0, 1),
    ("delta", "q2", "r1"): (1, 1),
    ("delta", "q2", "r2"): (1, 2),
    ("gamma", "q2", "r1"): (1, 1),
    ("gamma", "q2", "r2"): (0, 2),
}


@pytest.fixture
def rated(world: World) -> JudgmentTask:
    task = criterion_task_create(
        project=world.project, user=world.reviewer, run=world.run, overlap=3
    )
    assert [
        world.rate(task, user, ratings(BOTH, n)) for n, user in enumerate(world.annotators)
    ] == [
        16,
        16,
        8,
    ]
    return task


def cell(html: str, row: str, figure: str, attribute: str = "data-criterion") -> str:
    match = re.search(rf'<tr {attribute}="{re.escape(row)}".*?</tr>', html, re.S)
    assert match, row
    value = re.search(rf'data-figure="{re.escape(figure)}">(.*?)</td>', match.group(0), re.S)
    assert value, figure
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", value.group(1))).strip()


def test_people_and_the_judge_compared_per_model_and_per_criterion(
    world: World, rated: JudgmentTask
) -> None:
    result = reports.judge_compare(
        user=world.reviewer, project=world.project, a=f"run:{world.run.pk}", b=f"people:{rated.pk}"
    )
    judge, people = result["a"], result["b"]
    # People per answer (sum of values / 2n), per model the mean:
    # alpha (2+2)/4, (1.5+2)/4 -> 93.75; beta (1+1)/4, (1.5+0.5)/4 -> 50;
    # delta (1+1)/4, (1+1.5)/4 -> 56.25; gamma 0, (1+1)/4 -> 25.
    assert {m: f["rubric"] for m, f in people.figures.items()} == pytest.approx(
        {"alpha": 93.75, "beta": 50.0, "delta": 56.25, "gamma": 25.0}
    )
    # The judge on the same 15 units (gamma q2 r2 never parsed): 87.5, 50, 100, 25.
    assert {m: f["rubric"] for m, f in judge.figures.items()} == pytest.approx(
        {"alpha": 87.5, "beta": 50.0, "delta": 100.0, "gamma": 25.0}
    )
    # Ranks: people alpha delta beta gamma, judge delta alpha beta gamma: sum d^2 = 2,
    # rho = 1 - 6*2/(4*15) = 0.8; t = 0.8 sqrt(2/0.36), df 2: p = 0.2.
    (row,) = result["rho"]
    assert row["rho"] == pytest.approx(0.8) and row["p"] == pytest.approx(0.2)
    assert row["n"] == 4
    criteria = {c["key"]: c for c in result["criteria"]["rows"]}
    # r1: judge 2 1 2 0 2 2 2 1 -> 1.5; people 2 1 1 0 1.5 1.5 1 1 -> 1.125; majorities:
    # alpha q1 2, delta q1 1, gamma q1 0, delta q2 1, gamma q2 1 (three ties): 3 of 5 agree.
    assert criteria["r1"] == pytest.approx(
        {
            "key": "r1",
            "n": 8,
            "judge": 1.5,
            "people": 1.125,
            "agree": 60.0,
            "pairs": 5,
            "no_majority": 3,
        }  # fmt: skip
    )
    # r2 (gamma q2 left out): judge 2 1 2 0 1 0 2, people 2 1 1 0 2 0.5 1.5: 8/7 each; majorities
    # alpha q1 2, beta q1 1, delta q1 1, gamma q1 0, alpha q2 2 (two ties): 3 of 5 agree.
    assert criteria["r2"] == pytest.approx(
        {
            "key": "r2",
            "n": 7,
            "judge": 8 / 7,
            "people": 8 / 7,
            "agree": 60.0,
            "pairs": 5,
            "no_majority": 2,
        }  # fmt: skip
    )
    assert result["criteria"]["all"]["agree"] == pytest.approx(60.0)
    assert result["criteria"]["units"] == 15
    assert not result["notes"] or all("do not overlap" not in n for n in result["notes"])


def test_the_compare_page_lists_people_and_states_the_rule(
    world: World, rated: JudgmentTask
) -> None:
    client = Client()
    client.force_login(world.reviewer)
    url = reverse("review:judge_compare", args=[world.project.pk])
    form = client.get(url).content.decode()
    assert f'<option value="people:{rated.pk}">People: {rated.name}' in form
    page = client.get(f"{url}?a=run:{world.run.pk}&b=people:{rated.pk}")
    assert page.status_code == 200
    html = page.content.decode()
    assert "data-people-rule" in html and "decided (a majority of its ratings agreed)" in html
    assert "the mean of the people" in html
    assert re.search(r'data-figure="rho">\s*0\.800', html)
    assert cell(html, "alpha", "b-rubric", "data-model") == "93.75%"
    assert cell(html, "delta", "a-rubric", "data-model") == "100.00%"
    assert cell(html, "r1", "agree").startswith("60.0%")
    assert cell(html, "all", "judge") == "1.33"
    assert "on the units people scored" in html
    assert "40 ratings of 16 of the task's 16 units (7 decided by a majority)" in unescape(
        text(html)
    )


def test_a_task_that_does_not_overlap_the_run_is_said_so(world: World) -> None:
    # A judge run over alpha's answers only, and people scoring gamma's.
    run, job = judge_services.judge_run_create(
        project=world.project, user=None, judge="llmi-rubric", models=["alpha"]
    )
    assert judge_services.judge_run_execute(job=job).status == JobStatus.SUCCEEDED
    task = criterion_task_create(
        project=world.project, user=world.reviewer, models=["gamma"], overlap=1
    )
    world.rate(task, world.annotators[0], ratings(BOTH, 0))
    result = reports.judge_compare(
        user=world.reviewer, project=world.project, a=f"run:{run.pk}", b=f"people:{task.pk}"
    )
    assert any("do not overlap" in note for note in result["notes"]), result["notes"]
    assert result["shared_answers"] == 0 and result["criteria"]["units"] == 0
    client = Client()
    client.force_login(world.reviewer)
    html = client.get(
        reverse("review:judge_compare", args=[world.project.pk])
        + f"?a=run:{run.pk}&b=people:{task.pk}"
    ).content.decode()
    assert "do not overlap" in html and 'id="compare-criteria-none"' in html


def test_people_sources_refuse_what_is_not_a_criterion_task(
    world: World, rated: JudgmentTask
) -> None:
    item_task = JudgmentTask.objects.create(
        project=world.project,
        name="Item level",
        question="?",
        scheme="binary",
        consensus="majority",
    )
    client = Client()
    client.force_login(world.reviewer)
    url = reverse("review:judge_compare", args=[world.project.pk])
    for b, message in [
        (f"people:{item_task.pk}", "no &#x27;score the criteria&#x27; task"),
        ("people:999999", "no &#x27;score the criteria&#x27; task #999999"),
        ("people:x", "is not a source"),
    ]:
        response = client.get(f"{url}?a=run:{world.run.pk}&b={b}")
        assert response.status_code == 400, b
        assert message in response.content.decode(), (b, message)
    # People compare with the tool-set F1 of the answers they rated too.
    f1 = client.get(f"{url}?a=people:{rated.pk}&b=f1")
    assert f1.status_code == 200 and "Tool-set F1" in f1.content.decode()
    # Annotators never reach the page.
    annotator = Client()
    annotator.force_login(world.annotators[0])
    assert annotator.get(url).status_code == 403
