"""A resumed ATP-Bench or LLM-I evaluation whose answers the answer judges judged has its new
answers judged by the same judges as soon as its last chunk finishes, through the one
mechanism Agentic-MME's S/V judges follow a resume by (``review.evaluation.judges.JUDGES``):
each judge run of the evaluation is run again as a follow-up job that makes only the new
answers' calls, the answers judged before are kept, the job's card says so, and the
leaderboard's figures include the new answers (the same as if every answer had been judged
at once). Against the scripted judge server (``tests/judge_server.py`` on
``tests/llm_server.py``), on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from benchmark.evaluation.base import Status
from benchmark.models import Job, JobStatus, Origin, Project, Response
from review.evaluation import judges, services
from review.evaluation.models import EvaluationCall, EvaluationResult, EvaluationRun
from review.judges import services as judge_services
from review.judges.models import JudgeCall, JudgeRun
from review.judges.selectors import judge_run_report
from tests import evaluation_protocol
from tests.factories import ItemFactory
from tests.judge_server import ScriptedServer
from tests.llm_server import MODEL, FakeModelServer, point_at
from tests.review.evaluation.conftest import WORDS, lookup_then_answer

pytestmark = pytest.mark.django_db

RUBRIC = [{"key": "r1", "text": "says what it is"}, {"key": "r2", "text": "is short"}]


def judge_script(system: str, user: str, model: str) -> str:
    """MAM's agents, and the rubric: 2 for an answer saying "a fruit", else 0 (the reward
    judges' replies do not parse)."""
    if system.startswith("You are the Recall"):
        missed = [] if "a fruit" in user else [{"after": "x", "tool": "Search", "why": "y"}]
        return json.dumps({"missed": missed})
    if "Chief Judge" in system:
        good = "a fruit" in user
        return json.dumps(
            {"score": 85 if good else 30, "tier": "Excellent" if good else "Poor", "why": "w"}
        )
    if "Criterion" in user:
        return json.dumps({"score": 2 if "a fruit" in user else 0, "justification": "j"})
    return "I think it is fine."


@pytest.fixture
def judge_server() -> Iterator[ScriptedServer]:
    server = ScriptedServer()
    server.script = staticmethod(judge_script)  # type: ignore[assignment]
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["atp", "llmi"])
def evaluated(
    request: Any, project: Project, model_server: FakeModelServer, monkeypatch: Any, settings: Any
) -> EvaluationRun:
    """A finished evaluation of the kind (the test protocol installed on it) over three
    verified items, the answers kept as the model's."""
    evaluation_protocol.install(monkeypatch, request.param)
    settings.EVALUATION_TOOL_PROVIDERS = ["tests.evaluation_protocol.lookup_provider"]
    provider = evaluation_protocol.LOOKUP_PROVIDER
    monkeypatch.setattr(provider, "answers", {"apple": "a fruit", "kiwi": "a fruit"})
    monkeypatch.setattr(provider, "calls", 0)
    project.data_format = request.param
    project.save(update_fields=["data_format"])
    for n, (word, answer) in enumerate(WORDS):
        ItemFactory(
            project=project, external_id=word, query=word, status="verified", position=n,
            rubric=RUBRIC, raw=json.dumps({"id": word, "query": word, "answer": answer}),
        )  # fmt: skip
    model_server.respond = lookup_then_answer
    point_at(project, model_server)
    run, jobs = services.evaluation_run_create(
        project=project, user=None, model=MODEL, base_url=model_server.url, items="all"
    )
    run = services.evaluation_run_execute(run=run, jobs=jobs)
    assert run.finished_at is not None
    return run


def _fail(run: EvaluationRun, external_id: str) -> None:
    """The item's evaluation failed (the model server gave up): an error, no answer kept, no
    model calls; the run finished with it as an error."""
    EvaluationResult.objects.filter(run=run, item__external_id=external_id).update(
        status=Status.ERROR, output=None, scores={}, files={}, error="the model server failed"
    )
    EvaluationCall.objects.filter(item__project=run.project, item__external_id=external_id).delete()
    Response.objects.filter(
        item__project=run.project, item__external_id=external_id, origin=Origin.MODEL
    ).delete()
    services.run_summarize(run=run)


def _judge_all(run: EvaluationRun, judge_server: ScriptedServer) -> list[Job]:
    jobs = judges.evaluation_judge_start(
        run=run, user=None, base_url=judge_server.url, model="judge-m", workers=1, enqueue=False
    )
    for job in jobs:
        judge_services.judge_run_execute(job=job)
    return [Job.objects.get(pk=job.pk) for job in jobs]


def _figures(judge_run: JudgeRun) -> dict[str, Any]:
    """The run's figures of each model (empty for a judge with nothing to judge here: the
    pairwise judge without references)."""
    return dict(judge_run_report(run=judge_run)["summary"]["models"])


def test_a_resumed_evaluation_has_its_new_answers_judged_by_the_judges_that_judged_it(
    evaluated: EvaluationRun,
    judge_server: ScriptedServer,
    users: dict[str, Any],
    clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any,
    settings: Any,
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    run = evaluated
    # What the judges give when they judge all three answers at once.
    whole = {j.params["run_id"]: j for j in _judge_all(run, judge_server)}
    once = {r.judge: _figures(r) for r in JudgeRun.objects.filter(pk__in=list(whole))}
    assert once["atp-mam"][MODEL]["n"] == 3
    JudgeRun.objects.all().delete()
    Job.objects.filter(kind="judge").delete()
    # pear had failed when the judges ran: they judged apple and kiwi.
    _fail(run, "pear")
    first = _judge_all(run, judge_server)
    assert first and {j.status for j in first} == {JobStatus.SUCCEEDED}
    judge_runs = {r.judge: r for r in JudgeRun.objects.filter(project=run.project)}
    mam = judge_runs["atp-mam"]
    assert _figures(mam)[MODEL]["n"] == 2
    kept = {
        pk: (key, outputs)
        for pk, key, outputs in JudgeCall.objects.filter(
            run__in=list(judge_runs.values())
        ).values_list("pk", "key", "outputs")
    }
    asked = judge_server.count
    with django_capture_on_commit_callbacks(execute=True):
        jobs = services.evaluation_run_resume(run=run, user=users["reviewer"])
        services.evaluation_run_execute(run=run, jobs=jobs)
    evaluated_job = Job.objects.get(pk=jobs[0].pk)
    follows = list(Job.objects.filter(pk__in=evaluated_job.result["judge_jobs"]).order_by("pk"))
    # One follow-up job per judge run of the evaluation that makes calls (the pairwise judge
    # has no reference to compare with here), each resuming that run.
    calling = sorted(set(JudgeCall.objects.values_list("run_id", flat=True)))
    assert mam.pk in calling and len(calling) > 1
    assert sorted(j.params["run_id"] for j in follows) == calling
    for job in follows:
        assert job.kind == "judge" and job.status == JobStatus.SUCCEEDED, job.error
        assert job.params["follows"] == evaluated_job.pk
        assert job.params["evaluation_run"] == run.pk
        assert job.created_by == users["reviewer"]
        assert (job.result["judged"], job.result["already_judged"]) == (1, 2)
    assert judge_server.count > asked  # pear's calls were made
    # The calls made before are kept, untouched; only pear's are new.
    after = JudgeCall.objects.filter(run__in=list(judge_runs.values()))
    assert {pk: (key, outputs) for pk, key, outputs in after.values_list("pk", "key", "outputs")
            if pk in kept} == kept  # fmt: skip
    new = after.exclude(pk__in=list(kept))
    assert new.exists() and set(new.values_list("response__item__external_id", flat=True)) == {
        "pear"
    }
    # The figures include pear: the same as judging every answer at once.
    for judge, judge_run in judge_runs.items():
        judge_run.refresh_from_db()
        assert _figures(judge_run) == once[judge], judge
    # The card says what the follow-up judged and what it kept.
    mam_follow = next(j for j in follows if j.params["run_id"] == mam.pk)
    card = clients["reviewer"].get(reverse("benchmark:job_detail", args=[mam_follow.pk]))
    assert "1 answer judged by judge-m (2 judged before, kept)" in card.content.decode()
    # The run's Judges card lists the follow-up jobs and says what happens on a resume.
    page = clients["reviewer"].get(reverse("review:evaluation_run", args=[run.pk]))
    text = page.content.decode()
    assert "what the resume added judged by the same judges" in text
    assert all(f'data-judge-job="{job.pk}"' in text for job in follows)
    # The leaderboard reads the judge run with pear in it: (85 + 85 + 30) / 3.
    board = clients["reviewer"].get(reverse("review:leaderboard", args=[run.project.pk]))
    assert f'<a href="/judges/runs/{mam.pk}/" data-judged>66.67</a>' in board.content.decode()


def test_judges_follow_a_resume_once_and_only_a_judged_evaluation(
    evaluated: EvaluationRun,
    judge_server: ScriptedServer,
    django_capture_on_commit_callbacks: Any,
    django_assert_num_queries: Any,
) -> None:
    run = evaluated
    assert run.project  # loaded, as the job loads it with the run
    with django_assert_num_queries(1):  # never judged: one look, no lock
        assert judges.evaluation_judge_follow(run=run, user=None) == []
    _fail(run, "pear")
    _judge_all(run, judge_server)
    assert judges.evaluation_judge_follow(run=run, user=None) == []  # every answer judged
    EvaluationResult.objects.filter(run=run, item__external_id="pear").update(
        status=Status.OK, output="unknown", error=""
    )
    services.answers_store(run=run)
    count = len(set(JudgeCall.objects.values_list("run_id", flat=True)))
    # Two chunks finishing the run together: one job per judge run.
    with django_capture_on_commit_callbacks(execute=False) as enqueued:
        first = judges.evaluation_judge_follow(run=run, user=None)
        second = judges.evaluation_judge_follow(run=run, user=None)
    assert len(first) == count and second == [] and len(enqueued) == count
    # A judge run whose job failed is not followed (it is resumed from its card).
    Job.objects.filter(pk__in=[j.pk for j in first]).update(status=JobStatus.FAILED)
    assert judges.evaluation_judge_follow(run=run, user=None) == []


def test_a_resume_waits_for_the_answer_judges(
    evaluated: EvaluationRun, judge_server: ScriptedServer, clients: dict[str, Client]
) -> None:
    run = evaluated
    _fail(run, "pear")
    jobs = judges.evaluation_judge_start(
        run=run, user=None, base_url=judge_server.url, model="judge-m", enqueue=False
    )
    assert {j.status for j in jobs} == {JobStatus.QUEUED}
    response = clients["reviewer"].post(reverse("review:evaluation_run_resume", args=[run.pk]))
    assert response.status_code == 409
    assert f"judges are still running on evaluation #{run.pk}" in response.content.decode()
