"""Agentic-MME's S and V judges on evaluated runs: ``evaluate --judge-base-url`` and "Run the
judges" on a finished run's page score every agent run the evaluation produced again with the
judge model, as run scoring scores imported runs; the run's figures (Acc, S, V, Overthink) then
equal what ``score_runs --judge-base-url`` gives on the run folders ``--out`` wrote."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from benchmark.datasets.services import dataset_import
from benchmark.evaluation.base import ToolResult
from benchmark.models import Job, JobStatus, Membership, Project, ProjectKind, Role
from review.evaluation.models import EvaluationResult, EvaluationRun
from tests.factories import ProjectFactory
from tests.llm_server import MODEL, FakeModelServer, point_at

pytestmark = pytest.mark.django_db

DEMO = Path(__file__).resolve().parents[3] / "review" / "demo" / "agentic-mme"
SPINE = {"image_index": 0, "bbox_2d": [530, 170, 578, 482]}
STICKER = {"image_index": 0, "bbox_2d": [525, 486, 583, 512]}
QUERY = "On the Origin of Species first published"


class SearchProvider:
    """A retrieval provider that knows one page of the web: the year the book came out."""

    calls = 0

    def tools(self) -> list[str]:
        return ["google_search"]

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        SearchProvider.calls += 1
        return ToolResult(
            output={"context": "On the Origin of Species was first published on 24 November 1859."}
        )


def search_provider(project: Any) -> SearchProvider:
    return SearchProvider()


def agent(body: dict[str, Any]) -> Any:
    """The model under test on demo04: crop the spine, turn it, crop the sticker, search the
    year the book came out, answer 102. On any other task: answer at once."""
    prompt = json.dumps(body["messages"][:2])
    if "rare-books room" not in prompt:
        return "<answer>7</answer>"
    steps = [
        ("crop", SPINE),
        ("rotate", {"image_index": 1, "angle": 90}),
        ("crop", STICKER),
        ("google_search", {"query": QUERY}),
    ]
    done = sum(1 for m in body["messages"] if m["role"] == "tool")
    if done < len(steps):
        name, arguments = steps[done]
        return {"content": None, "tool_calls": [{"name": name, "arguments": arguments}]}
    return "<answer>102</answer>"


def text_of(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
    return str(content)


def judge(body: dict[str, Any]) -> str:
    """The S judge fails the search (where the proxy passes it: its keywords are in the
    query); the V judge reads the title and the year on any image."""
    asked = " ".join(text_of(m["content"]) for m in body["messages"])
    if "search step" in asked:
        return "FAIL\nthe results do not say where it was published"
    if "title" in asked:
        return "Answer: On the Origin of Species"
    if "year" in asked:
        return "Answer: 1961"
    return "Answer: nothing"


@pytest.fixture
def mme(
    settings: Any, monkeypatch: Any
) -> Iterator[tuple[Project, FakeModelServer, FakeModelServer]]:
    settings.EVALUATION_TOOL_PROVIDERS = [f"{__name__}.search_provider"]
    monkeypatch.setattr(SearchProvider, "calls", 0)
    project = ProjectFactory(
        name="MME evaluated", kind=ProjectKind.TRAJECTORY, data_format="agentic-mme"
    )
    dataset_import(project=project, path=DEMO)
    model = FakeModelServer()
    model.respond = agent
    judge_server = FakeModelServer()
    judge_server.respond = judge
    model.start()
    judge_server.start()
    point_at(project, model)
    try:
        yield project, model, judge_server
    finally:
        model.stop()
        judge_server.stop()


def _evaluate(project: Project, *args: str) -> list[dict[str, Any]]:
    out = io.StringIO()
    call_command("evaluate", "--project", project.name, "--items", "all", "--workers", "1",
                 *args, stdout=out, stderr=io.StringIO())  # fmt: skip
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _score_runs(runs: Path, judge_server: FakeModelServer) -> list[dict[str, Any]]:
    out = io.StringIO()
    call_command(
        "score_runs", "--tasks", str(DEMO), "--runs", str(runs),
        "--judge-base-url", judge_server.url, "--judge-model", "judge-m", stdout=out,
    )  # fmt: skip
    return [json.loads(line) for line in out.getvalue().splitlines()]


FIGURES = ("acc", "S", "V", "V_true", "overthink")


def test_evaluate_with_a_judge_scores_the_runs_as_run_scoring_does(
    mme: tuple[Project, FakeModelServer, FakeModelServer], tmp_path: Path
) -> None:
    project, model, judge_server = mme
    plain = _evaluate(project, "--model", MODEL, "--base-url", model.url)
    lines = _evaluate(
        project, "--model", MODEL, "--base-url", model.url,
        "--judge-base-url", judge_server.url, "--judge-model", "judge-m",
        "--out", str(tmp_path / "runs"),
    )  # fmt: skip
    summary = lines[-1]["summary"]
    judged = summary["judges"]["agentic-mme-sv"]
    assert (judged["runs"], judged["judge_model"]) == (4, "judge-m")
    assert judged["judge_calls"] > 0 and judge_server.requests
    demo04 = next(x for x in lines[:-1] if x["item"] == "demo04")
    assert demo04["scores"]["judge_model"] == "judge-m"
    decided = {c["id"]: c["detail"].get("decided_by") for c in demo04["scores"]["checkpoints"]}
    assert decided["C4"] == "judge" and decided["C3"] == "judge"
    # The judge decided otherwise than the proxy did.
    plain04 = next(x for x in plain[:-1] if x["item"] == "demo04")
    assert (demo04["scores"]["S"], plain04["scores"]["S"]) == (0.0, 1.0)
    assert summary["S"] != plain[-1]["summary"]["S"]
    # The existing run scoring of the run folders written, with the same judge, agrees.
    scored = _score_runs(tmp_path / "runs", judge_server)
    by_task = {line["task_id"]: line for line in scored[:-1]}
    for line in lines[:-1]:
        for key in ("acc", "S", "V", "V_true", "penalty"):
            assert line["scores"][key] == by_task[line["item"]][key], (line["item"], key)
    overall = scored[-1]["overall"]
    for key in FIGURES:
        assert summary[key] == pytest.approx(overall[key]), key
    run = EvaluationRun.objects.filter(project=project).latest("pk")
    assert run.summary["judge_model"] == "judge-m" and run.summary["S"] == summary["S"]


def test_the_run_page_starts_the_s_and_v_judges_as_a_job(
    mme: tuple[Project, FakeModelServer, FakeModelServer],
    clients: dict[str, Client],
    users: dict[str, Any],
    django_capture_on_commit_callbacks: Any,
    settings: Any,
) -> None:
    project, model, judge_server = mme
    Membership.objects.get_or_create(project=project, user=users["reviewer"], role=Role.REVIEWER)
    settings.CELERY_TASK_ALWAYS_EAGER = True
    _evaluate(project, "--model", MODEL, "--base-url", model.url)
    run = EvaluationRun.objects.get(project=project)
    before = run.summary["S"]
    page = clients["reviewer"].get(reverse("review:evaluation_run", args=[run.pk])).content
    assert b"The S and V judges of run scoring" in page
    with django_capture_on_commit_callbacks(execute=True):
        response = clients["reviewer"].post(
            reverse("review:evaluation_run_judge", args=[run.pk]),
            {"base_url": judge_server.url, "model": "judge-m", "workers": "1"},
        )
    assert response.status_code == 302
    job = Job.objects.get(params__evaluation_run=run.pk)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert (job.progress, job.total, job.result["runs"]) == (4, 4, 4)
    run.refresh_from_db()
    assert run.summary["judge_model"] == "judge-m" and run.summary["S"] != before
    scores = EvaluationResult.objects.get(run=run, item__external_id="demo04").scores
    assert scores["judge_model"] == "judge-m"
    # The judges card's last poll also brings the figures computed again.
    poll = clients["reviewer"].get(
        reverse("review:evaluation_run", args=[run.pk]),
        headers={"HX-Request": "true", "HX-Target": "evaluation-judges"},
    )
    assert poll.status_code == 286
    text = poll.content.decode()
    assert 'id="evaluation-figures" hx-swap-oob="true"' in text
    assert "Scored with the judge model judge-m." in text
    # The job's card says what it did and links back to the run.
    card = clients["reviewer"].get(reverse("benchmark:job_detail", args=[job.pk])).content
    assert b"4 runs judged by judge-m" in card


def _judge(run: EvaluationRun, judge_server: FakeModelServer) -> None:
    from review.evaluation.judges import evaluation_judge

    evaluation_judge(run=run, base_url=judge_server.url, model="judge-m", workers=1)
    run.refresh_from_db()


def _fail(run: EvaluationRun, external_id: str) -> None:
    """The item's run failed (its model's server gave up): an error, no scores, no calls; the
    run finished with it as an error."""
    from benchmark.evaluation.base import Status
    from review.evaluation import services
    from review.evaluation.models import EvaluationCall, ToolCallRecord

    EvaluationResult.objects.filter(run=run, item__external_id=external_id).update(
        status=Status.ERROR, output=None, scores={}, files={}, error="the model server failed"
    )
    for model in (EvaluationCall, ToolCallRecord):
        model.objects.filter(item__project=run.project, item__external_id=external_id).delete()
    services.run_summarize(run=run)


def test_a_judged_run_resumed_has_its_new_runs_judged_by_the_same_judge(
    mme: tuple[Project, FakeModelServer, FakeModelServer],
    django_capture_on_commit_callbacks: Any,
    users: dict[str, Any],
    clients: dict[str, Client],
) -> None:
    from review.evaluation import services

    project, model, judge_server = mme
    Membership.objects.get_or_create(project=project, user=users["reviewer"], role=Role.REVIEWER)
    _evaluate(project, "--model", MODEL, "--base-url", model.url)
    run = EvaluationRun.objects.get(project=project)
    _judge(run, judge_server)
    whole = {key: run.summary[key] for key in FIGURES}
    judged04 = EvaluationResult.objects.get(run=run, item__external_id="demo04").scores
    assert judged04["judge_model"] == "judge-m" and judged04["S"] == 0.0
    # demo04 had failed when the judges ran: they judged the other three.
    _fail(run, "demo04")
    _judge(run, judge_server)
    first = Job.objects.filter(params__evaluation_run=run.pk).latest("pk")
    assert (first.result["runs"], first.result["already_judged"]) == (0, 3)
    asked = model.count
    with django_capture_on_commit_callbacks(execute=True):
        jobs = services.evaluation_run_resume(run=run, user=users["reviewer"])
        services.evaluation_run_execute(run=run, jobs=jobs)
    assert model.count > asked  # demo04 evaluated again
    evaluated = Job.objects.get(pk=jobs[0].pk)
    (follow_pk,) = evaluated.result["judge_jobs"]
    follow = Job.objects.get(pk=follow_pk)
    assert follow.kind == "evaluation_judge" and follow.status == JobStatus.SUCCEEDED, follow.error
    assert follow.params["follows"] == evaluated.pk and follow.created_by == users["reviewer"]
    assert (follow.params["base_url"], follow.params["model"]) == (judge_server.url, "judge-m")
    assert (follow.total, follow.result["runs"], follow.result["already_judged"]) == (1, 1, 3)
    card = clients["reviewer"].get(reverse("benchmark:job_detail", args=[follow.pk])).content
    assert b"1 run judged by judge-m (3 judged before, kept)" in card
    scores = EvaluationResult.objects.get(run=run, item__external_id="demo04").scores
    assert scores["judge_model"] == "judge-m"
    assert scores["S"] == 0.0  # the judge's verdict, not the proxy's (1.0)
    decided = {c["id"]: c["detail"].get("decided_by") for c in scores["checkpoints"]}
    assert decided["C4"] == "judge"
    run.refresh_from_db()
    assert run.finished_at is not None and run.summary["judge_model"] == "judge-m"
    assert {key: run.summary[key] for key in FIGURES} == whole


def test_judges_follow_a_resume_once_and_only_a_judged_run(
    mme: tuple[Project, FakeModelServer, FakeModelServer],
    django_capture_on_commit_callbacks: Any,
) -> None:
    from review.evaluation.judges import evaluation_judge_follow

    project, model, judge_server = mme
    _evaluate(project, "--model", MODEL, "--base-url", model.url)
    run = EvaluationRun.objects.get(project=project)
    assert evaluation_judge_follow(run=run, user=None) == []  # never judged
    _judge(run, judge_server)
    assert evaluation_judge_follow(run=run, user=None) == []  # every run judged
    _fail(run, "demo02")
    EvaluationResult.objects.filter(run=run, item__external_id="demo02").update(
        status="ok", scores={"acc": True, "judge_model": ""}
    )
    # Two chunks finishing the run together: one judge job.
    with django_capture_on_commit_callbacks(execute=False) as enqueued:
        (first,) = evaluation_judge_follow(run=run, user=None)
        second = evaluation_judge_follow(run=run, user=None)
    assert second == [] and len(enqueued) == 1
    assert first.total == 1


def test_a_run_is_not_resumed_while_its_judges_run(
    mme: tuple[Project, FakeModelServer, FakeModelServer],
    clients: dict[str, Client],
    users: dict[str, Any],
) -> None:
    from review.evaluation import judges

    project, model, judge_server = mme
    Membership.objects.get_or_create(project=project, user=users["reviewer"], role=Role.REVIEWER)
    _evaluate(project, "--model", MODEL, "--base-url", model.url)
    run = EvaluationRun.objects.get(project=project)
    _fail(run, "demo04")
    (job,) = judges.evaluation_judge_start(
        run=run, user=None, base_url=judge_server.url, model="judge-m", enqueue=False
    )
    assert job.status == JobStatus.QUEUED and job.total == 3
    response = clients["reviewer"].post(reverse("review:evaluation_run_resume", args=[run.pk]))
    assert response.status_code == 409
    assert f"judges are still running on evaluation #{run.pk}" in response.content.decode()
    run.refresh_from_db()
    assert run.finished_at is not None and len(run.job_ids) == 1  # nothing started
