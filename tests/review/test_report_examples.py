"""Corrections of a judge's reports become worked examples (issue 26), for the judges whose
agents' reports people rate 0-2 in "Rate the judge" tasks (ATP-Bench's MAM agents, the LLM-I
judges): correction cases (rated wrong, or a reviewer's override), corrections checked by the
judge's own parser and kept as versions, a new version of the corrected agent's template only,
the held-back run on the reports people rated minus the examples, before/after against
people's verdicts, and the leaderboard's trust figure; every figure by hand."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.judgment_tasks.models import JudgmentTask, TaskUnit
from benchmark.exceptions import Forbidden, ValidationFailed
from benchmark.judge_prompts.examples import BEGIN
from benchmark.metrics import report_agreement
from benchmark.models import Item, JobStatus, Project, Response
from review.agreement import judge_sources
from review.agreement.judge_examples import services as example_services
from review.agreement.judge_examples.models import ExampleSet, ReportCorrection
from review.agreement.judge_examples.reports import selectors, services
from review.judges import services as judge_services
from review.judges.models import JudgeRun, JudgeTemplateVersion
from review.judges.specs import judge_spec
from review.rate_judge.services import rate_judge_task_create
from tests.factories import ItemFactory, JudgmentFactory, ProjectFactory, UserFactory
from tests.review.test_judge_runs import ScriptedServer, files

pytestmark = pytest.mark.django_db

#: Queries; those with "awkward" get a Poor chief verdict once the Chief Judge's prompt
#: holds worked examples.
QUERIES = {
    "q1": "Show the cathedral",
    "q2": "Show the awkward bridge",
    "q3": "Explain the tides",
    "q4": "Draw the awkward robot",
    "q5": "Plot the awkward curve",
    "q6": "Sketch the awkward cat",
}
#: Three people's ratings of each answer's Chief Judge report (0 disagree .. 2 agree).
RATINGS = {
    "q1": (2, 2, 2),  # 100 %: right
    "q2": (0, 0, 1),  # 16.7 %: wrong
    "q3": (2, 2, 1),  # 83.3 %: right at 80 %
    "q4": (0, 0, 0),  # wrong
    "q5": (0, 1, 0),  # wrong
    "q6": (2, 2, 2),  # right
}
EXCELLENT = {"score": 85, "tier": "Excellent", "why": "well placed"}


def poor(score: int) -> str:
    return json.dumps({"score": score, "tier": "Poor", "why": "the image is missing"})


def script(system: str, user: Any) -> str:
    text = user if isinstance(user, str) else " ".join(str(p.get("text", "")) for p in user)
    if system.startswith("You are the Recall"):
        return json.dumps({"missed": []})
    if BEGIN in system and "awkward" in text:
        return poor(30)
    return json.dumps(EXCELLENT)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    s = ScriptedServer().start()
    s.script = script
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def project(db: None, server: ScriptedServer) -> Project:
    from tests.llm_server import point_at

    project = ProjectFactory(name="ATP judged by people", data_format="atp")
    point_at(project, server)
    return project


def run_judge(project: Project) -> JudgeRun:
    run, job = judge_services.judge_run_create(project=project, user=None, judge="atp-mam")
    job = judge_services.judge_run_execute(job=job)
    assert job.status == JobStatus.SUCCEEDED, job.error
    return run


class Rated:
    def __init__(self, project: Project, reviewer: Any) -> None:
        self.items: dict[str, Item] = {}
        for n, (ext, query) in enumerate(QUERIES.items()):
            self.items[ext] = ItemFactory(project=project, external_id=ext, query=query, position=n)
        rows = [{"trace_id": ext, "answer": f"A plain answer to {ext}."} for ext in QUERIES]
        judge_services.answers_import(project=project, files=files({"alpha": rows}))
        self.run = run_judge(project)
        self.task = rate_judge_task_create(
            run=self.run, user=reviewer, labels=["chief"], overlap=3, name="Rate the Chief"
        )
        self.people = [UserFactory(username=f"rater-{n}") for n in range(3)]
        for ext, ratings in RATINGS.items():
            for user, value in zip(self.people, ratings, strict=True):
                self.rate(ext, user, value)

    def unit(self, ext: str) -> str:
        response = Response.objects.get(item=self.items[ext], model_name="alpha")
        return f"response:{response.pk}:chief"

    def rate(self, ext: str, user: Any, value: int) -> None:
        JudgmentFactory(
            task=self.task, item=self.items[ext], user=user, value=value, unit=self.unit(ext)
        )


@pytest.fixture
def rated(project: Project, users: dict[str, Any]) -> Rated:
    return Rated(project, users["reviewer"])


# --------------------------------------------------------------------------- pure code


def test_rated_right_share_and_verdict_agreement_by_hand() -> None:
    assert report_agreement.unit_rate([2, 2, 1]) == pytest.approx(250 / 3)
    assert report_agreement.rated_right([2, 1, 1], 80) is False
    assert report_agreement.rated_right([], 80) is None
    share = report_agreement.rated_right_share({u: RATINGS[u] for u in RATINGS}, 80)
    # q1, q3, q6 of 6: 0.5, Wilson [0.1876, 0.8124].
    assert share["value"] == 0.5 and share["n"] == 6
    assert share["low"] == pytest.approx(0.18761, abs=1e-4)
    assert share["high"] == pytest.approx(0.81239, abs=1e-4)
    reference = {"a": "x", "b": "y", "c": "x", "d": "y"}
    found = report_agreement.verdict_comparison(
        reference, {"a": "x", "b": "x", "c": "x", "d": None}, reference
    )
    # Before: 2 of 4; kappa (0.5 - 0.375) / 0.625 = 0.2 (x .5/.75, y .5/0, none 0/.25).
    assert found["before"]["share"]["value"] == 0.5 and found["before"]["n_no_verdict"] == 1
    assert found["before"]["kappa"] == pytest.approx(0.2)
    assert found["after"]["kappa"] == pytest.approx(1.0)
    assert found["difference"] == {"share": 0.5, "kappa": pytest.approx(0.8)}


def test_each_report_judge_names_its_verdict_and_parses_a_correction() -> None:
    mam = judge_spec("atp-mam")
    assert mam.report_templates["chief"] == "atp.mam.chief"
    from benchmark.judge_prompts import llmi
    from benchmark.judge_prompts import mam as mam_prompts

    assert mam.report_verdict("chief", mam_prompts.parse_chief(poor(25))) == "Poor"
    recall = mam_prompts.parse_recall('{"missed": [{"after": "a", "tool": "Search", "why": ""}]}')
    assert mam.report_verdict("recall", recall) == "1 missed"
    checks = {"index": 1, "necessity": 2, "position": 1, "structure": 2, "tool_choice": 2,
              "parameters": 0, "format": 2, "comment": ""}  # fmt: skip
    precision = mam_prompts.parse_precision(json.dumps({"calls": [checks]}), 1)
    assert mam.report_verdict("precision", precision) == "1: 212202"
    assert mam.held_back_call_units(["response:4:chief"]) == [
        "response:4:chief",
        "response:4:precision",
        "response:4:recall",
    ]
    llm = judge_spec("llmi-llm")
    assert llm.report_verdict("llm", llmi.parse_llm("Text: 4\nImage: 2")) == "text 4, image 2"
    mllm = judge_spec("llmi-mllm")
    assert set(mllm.report_templates) == {"llm", "mllm"}
    scores = llmi.parse_mllm("Image quality: 3\nTask relevance: 5\nText-image relevance: 1")
    assert mllm.report_verdict("mllm", scores) == (
        "image quality 3, task relevance 5, text-image relevance 1"
    )
    # Judges people rate on their own scale take no report corrections.
    assert judge_spec("llmi-rubric").report_templates == {}


# --------------------------------------------------------------------------- end to end


def test_cases_corrections_examples_and_the_held_back_comparison(
    rated: Rated, users: dict[str, Any], server: ScriptedServer, project: Project
) -> None:
    reviewer = users["reviewer"]
    task = rated.task
    cases = selectors.report_cases(user=reviewer, task=task)
    assert [c.unit for c in cases] == [rated.unit(e) for e in ("q2", "q4", "q5")]
    assert cases[0].agent == "Chief Judge" and cases[0].verdict == "Excellent"
    assert json.loads(cases[0].prefill) == EXCELLENT  # the report as the agent wrote it
    with pytest.raises(Forbidden):
        selectors.report_cases(user=users["annotator"], task=task)
    # A correction the Chief Judge's parser refuses says where and why; nothing is kept.
    with pytest.raises(ValidationFailed, match=r"\(Chief Judge\): score 85 is outside tier"):
        services.report_correction_save(
            user=reviewer,
            task=task,
            unit=rated.unit("q2"),
            text=json.dumps(EXCELLENT | {"tier": "Poor"}),
        )
    with pytest.raises(ValidationFailed, match="not a unit of task"):
        services.report_correction_save(user=reviewer, task=task, unit="response:1:x", text="{}")
    assert not ReportCorrection.objects.exists()
    # Every save is a new version; the newest counts.
    services.report_correction_save(user=reviewer, task=task, unit=rated.unit("q2"), text=poor(39))
    second = services.report_correction_save(
        user=reviewer, task=task, unit=rated.unit("q2"), text=poor(35)
    )
    assert second.version == 2 and second.verdict == "Poor"
    assert ReportCorrection.objects.filter(unit=rated.unit("q2")).count() == 2
    for ext, score in (("q4", 25), ("q5", 30)):
        services.report_correction_save(
            user=reviewer, task=task, unit=rated.unit(ext), text=poor(score)
        )
    # A report must be corrected before it becomes an example.
    with pytest.raises(ValidationFailed, match="should have said before adding it"):
        services.report_examples_add(user=reviewer, task=task, units=[rated.unit("q1")])

    chosen = [rated.unit("q2"), rated.unit("q4")]
    example_set = services.report_examples_add(user=reviewer, task=task, units=chosen)
    # Only the Chief Judge's template got a new version; its text holds both corrections.
    version = JudgeTemplateVersion.objects.get(project=project)
    assert version.template_id == "atp.mam.chief" and version.author == reviewer
    assert BEGIN in version.system and '"score": 35' in version.system
    assert "Show the awkward bridge" in version.system and '"score": 25' in version.system
    assert set(example_set.templates) == {"atp.mam.precision", "atp.mam.recall", "atp.mam.chief"}
    case = example_set.cases.get(unit=rated.unit("q2"))
    assert case.people == "Poor" and case.judge_value == "Excellent" and case.source == "people"
    with pytest.raises(ValidationFailed, match="worked example already"):
        services.report_examples_add(user=reviewer, task=task, units=chosen[:1])

    # Held back: the reports people rated, minus the examples.
    from review.agreement.judge_examples import selectors as example_selectors

    held = example_selectors.held_back_units(example_set=example_set)
    assert held == sorted(rated.unit(e) for e in ("q1", "q3", "q5", "q6"))
    server.requests.clear()
    job = example_services.held_back_run_start(user=reviewer, example_set=example_set)
    job = judge_services.judge_run_execute(job=job)  # enqueued after commit: run it here
    assert job.status == JobStatus.SUCCEEDED, job.error
    example_set.refresh_from_db()
    # Four answers' Chief Judge, with the examples (the Recall Inspector's reports it reads
    # have the same prompt as before: they come from the call cache).
    assert len(server.requests) == 4
    chief_systems = [
        m["content"]
        for r in server.requests
        for m in r.messages
        if m["role"] == "system" and m["content"].startswith("You are the Chief")
    ]
    assert len(chief_systems) == 4 and all(BEGIN in s for s in chief_systems)

    report = selectors.report_comparison(user=reviewer, example_set=example_set)
    assert report is not None and report["units"] == held
    # People's verdicts: q1, q3, q6 rated right (Excellent); q5 corrected (Poor).
    assert report["n_corrected"] == 1 and report["n_unknown"] == 0
    before, after = report["before"], report["after"]
    # Before: Excellent x4 -> 3 of 4; kappa: po 3/4, pe 3/4 x 1 = 3/4 -> 0.
    assert before["share"]["hits"] == 3 and before["kappa"] == pytest.approx(0.0)
    # After: E, E, Poor, Poor -> 3 of 4 (q6 now wrong); po 3/4, pe 3/4 x 1/2 + 1/4 x 1/2 = 1/2
    # -> kappa 1/2. Wilson 3 of 4: [0.3006, 0.9544].
    assert after["share"]["hits"] == 3 and after["kappa"] == pytest.approx(0.5)
    assert after["share"]["low"] == pytest.approx(0.30064, abs=1e-4)
    assert after["share"]["high"] == pytest.approx(0.95440, abs=1e-4)
    assert report["difference"] == {"share": 0.0, "kappa": pytest.approx(0.5)}
    assert report["rated_right"]["hits"] == 3 and report["rated_right"]["n"] == 4


def test_a_reviewer_overrides_a_report_people_rated_right(
    rated: Rated, users: dict[str, Any]
) -> None:
    reviewer = users["reviewer"]
    services.report_correction_save(
        user=reviewer, task=rated.task, unit=rated.unit("q6"), text=poor(20)
    )
    cases = {c.unit: c for c in selectors.report_cases(user=reviewer, task=rated.task)}
    assert cases[rated.unit("q6")].source == "override"
    every = selectors.report_cases(user=reviewer, task=rated.task, every=True)
    assert [c.source for c in every] == ["right", "people", "right", "people", "people", "override"]


def test_trust_of_a_report_judge_is_the_share_rated_right_and_follows_new_ratings(
    rated: Rated, project: Project
) -> None:
    from django.core.cache import cache

    cache.clear()
    spec = judge_spec("atp-mam")
    tasks = judge_sources.trust_tasks(project=project)
    trust = judge_sources.judge_trust(spec=spec, run=rated.run, tasks=tasks, threshold=0.6)
    assert trust is not None and trust["figure"] == "rated-right"
    assert trust["share"] == 0.5 and trust["n_units"] == 6 and trust["flagged"] is True
    assert trust["low"] == pytest.approx(0.18761, abs=1e-4)
    assert trust["task"] == rated.task.pk
    with CaptureQueriesContext(connection) as kept:
        again = judge_sources.judge_trust(spec=spec, run=rated.run, tasks=tasks, threshold=0.6)
    assert again == trust and len(kept.captured_queries) <= 3  # from the cache
    # A new rating changes the figure: q3 gets a 0 (2, 2, 1, 0: 62.5 %, wrong): 2 of 6.
    rated.rate("q3", UserFactory(username="late-rater"), 0)
    tasks = judge_sources.trust_tasks(project=project)
    changed = judge_sources.judge_trust(spec=spec, run=rated.run, tasks=tasks, threshold=0.6)
    assert changed is not None and changed["share"] == pytest.approx(2 / 6)
    # The leaderboard's judge group carries it.
    from review.evaluation.selectors import judge_figures

    groups, cells = judge_figures(project, {"alpha"})
    group = next(g for g in groups if g.label == spec.label)
    assert group.trust is not None and group.trust.share == pytest.approx(2 / 6)
    assert all(c is not None and c.flagged for c in cells["alpha"][: len(spec.columns)])


# --------------------------------------------------------------------------- pages


def test_pages_correct_add_and_compare(
    rated: Rated, clients: dict[str, Client], django_assert_max_num_queries: Any
) -> None:
    reviewer = clients["reviewer"]
    task = rated.task
    agreement = reviewer.get(reverse("review:agreement", args=[task.pk]))
    assert b'id="report-corrections-link"' in agreement.content
    page_url = reverse("review:report_cases", args=[task.pk])
    with django_assert_max_num_queries(25):
        page = reviewer.get(page_url)
    assert page.status_code == 200 and page.content.count(b"Save correction") == 3
    assert reviewer.get(page_url, {"rate_threshold": "abc"}).status_code == 400
    assert clients["annotator"].get(page_url).status_code == 403
    correct = reverse("review:report_correct", args=[task.pk])
    bad = reviewer.post(correct, {"unit": rated.unit("q2"), "text": '{"score": 30'})
    # Refused with the reason, the text kept in its box.
    assert bad.status_code == 400 and b"Chief Judge" in bad.content
    assert b"{&quot;score&quot;: 30" in bad.content
    ok = reviewer.post(correct, {"unit": rated.unit("q2"), "text": poor(30)})
    assert ok.status_code == 302
    add = reverse("review:report_examples_add", args=[task.pk])
    assert reviewer.post(add, {}).status_code == 400
    done = reviewer.post(add, {"units": [rated.unit("q2")]})
    example_set = ExampleSet.objects.get()
    assert done.status_code == 302 and done["Location"] == reverse(
        "review:example_set", args=[example_set.pk]
    )
    assert (
        reviewer.post(reverse("review:held_back_start", args=[example_set.pk])).status_code == 302
    )
    example_set.refresh_from_db()
    assert example_set.held_back_run is not None
    judge_services.judge_run_execute(job=example_set.held_back_run.job)
    with django_assert_max_num_queries(20):
        shown = reviewer.get(reverse("review:example_set", args=[example_set.pk]))
    html = shown.content.decode()
    assert shown.status_code == 200 and 'data-version="after"' in html
    assert "held-back report" in html and 'data-version="difference"' in html
    assert 'data-version="before"' in html
    assert reverse("review:report_cases", args=[task.pk]) in html  # the breadcrumb


def test_a_task_whose_judge_takes_no_report_corrections_is_refused(
    rated: Rated, users: dict[str, Any], project: Project
) -> None:
    other = JudgmentTask.objects.create(project=project, name="Plain votes", scheme="binary")
    with pytest.raises(ValidationFailed, match="not a 'Rate the judge' task"):
        selectors.report_cases(user=users["reviewer"], task=other)
    assert TaskUnit.objects.filter(task=rated.task).count() == 6


def test_the_llm_judge_takes_its_corrections_as_whole_score_lines(users: dict[str, Any]) -> None:
    from benchmark.judge_prompts import render
    from benchmark.models import Origin
    from review.judges.run_settings import judge_templates_for
    from tests.factories import JudgeCallFactory, JudgeRunFactory, ResponseFactory

    project = ProjectFactory(name="LLM-I rated", data_format="llmi")
    from tests.factories import MembershipFactory

    MembershipFactory(project=project, user=users["reviewer"], role="reviewer")
    item = ItemFactory(project=project, external_id="q1", query="Draw the harbour")
    answer = ResponseFactory(item=item, origin=Origin.MODEL, model_name="alpha", text="A harbour.")
    run = JudgeRunFactory(project=project, judge="llmi-llm", templates={})
    JudgeCallFactory(
        run=run, response=answer, label="llm", outputs=["Text: 5\nImage: 5"], parsed=None
    )
    reviewer = users["reviewer"]
    task = rate_judge_task_create(run=run, user=reviewer, labels=["llm"], overlap=2)
    unit = f"response:{answer.pk}:llm"
    for n, value in enumerate((0, 1)):
        JudgmentFactory(
            task=task,
            item=item,
            user=UserFactory(username=f"llm-rater-{n}"),
            value=value,
            unit=unit,
        )
    (case,) = selectors.report_cases(user=reviewer, task=task)
    assert case.agent == "LLM judge" and case.verdict == "text 5, image 5"
    assert case.prefill == "Text: 5\nImage: 5"
    with pytest.raises(ValidationFailed, match=r"\(LLM judge\): expected 2 lines"):
        services.report_correction_save(user=reviewer, task=task, unit=unit, text="Text: 2")
    services.report_correction_save(user=reviewer, task=task, unit=unit, text="Text: 2\nImage: 1")
    example_set = services.report_examples_add(user=reviewer, task=task, units=[unit])
    template = judge_templates_for(project=project, judge="llmi-llm")["llmi.llm_judge"]
    assert example_set.templates == {"llmi.llm_judge": template.version}
    # The correction is written whole, one score per line, and the template still renders.
    assert "Correct answer:\nText: 2\nImage: 1" in template.system
    system, _ = render(template, {"prompt": "p", "answer": "a"})
    assert "Draw the harbour" in system and "A judge answered: text 5, image 5" in system
