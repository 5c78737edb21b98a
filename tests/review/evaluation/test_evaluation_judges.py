"""Judges on a finished evaluation's answers from the run's page (and the command line): the
project's answer judges run as judge runs of the answers the run kept, through the one judge
runner, as jobs the page lists and polls; the leaderboard shows their columns; their figures
are those of a judge run started on the judge page over the same answers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from benchmark.exceptions import Conflict, ValidationFailed
from benchmark.models import Job, JobStatus, Project
from review.evaluation import judges
from review.evaluation.models import EvaluationRun
from review.judges import services as judge_services
from review.judges.models import JudgeRun
from review.judges.selectors import judge_run_report
from review.judges.specs import judges_for
from tests.judge_server import ScriptedServer
from tests.llm_server import MODEL, FakeModelServer

pytestmark = pytest.mark.django_db


def judge_script(system: str, user: str, model: str) -> str:
    """MAM's three agents and the rubric answer; the reward judges' replies do not parse."""
    if system.startswith("You are the Recall"):
        missed = [] if "a fruit" in user else [{"after": "x", "tool": "Search", "why": "y"}]
        return json.dumps({"missed": missed})
    if "Chief Judge" in system:
        good = "a fruit" in user
        return json.dumps(
            {"score": 85 if good else 30, "tier": "Excellent" if good else "Poor", "why": "w"}
        )
    if "Criterion" in user:
        return json.dumps({"score": 2, "justification": "fine"})
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


@pytest.fixture
def finished(eval_project: Project, eval_server: FakeModelServer) -> EvaluationRun:
    from review.evaluation import services

    run, jobs = services.evaluation_run_create(
        project=eval_project, user=None, model=MODEL, base_url=eval_server.url, items="all"
    )
    run = services.evaluation_run_execute(run=run, jobs=jobs)
    assert run.finished_at is not None
    return run


def _mam(run: JudgeRun) -> dict[str, Any]:
    return dict(judge_run_report(run=run)["summary"]["models"][MODEL])


def test_the_judges_run_as_judge_runs_of_the_runs_answers_with_the_judge_pages_figures(
    finished: EvaluationRun, judge_server: ScriptedServer
) -> None:
    jobs = judges.evaluation_judge_start(
        run=finished, user=None, base_url=judge_server.url, model="judge-m", enqueue=False
    )
    # One judge run per answer judge of the project, each over this model's answers only.
    specs = judges_for(finished.project)
    assert len(jobs) == len(specs) > 1
    runs = list(JudgeRun.objects.filter(project=finished.project).order_by("pk"))
    assert sorted(r.judge for r in runs) == sorted(s.name for s in specs)
    assert all(r.selection == {"models": [MODEL], "evaluation_run": finished.pk} for r in runs)
    assert all(j.params["evaluation_run"] == finished.pk for j in jobs)
    for job in jobs:
        judge_services.judge_run_execute(job=job)
    mam = JudgeRun.objects.get(project=finished.project, judge="atp-mam")
    figures = _mam(mam)
    # apple and kiwi: "a fruit", nothing missed, Chief 85; pear: "unknown", one missed, 30.
    assert (figures["fs"], figures["mi"], figures["n"]) == (
        pytest.approx((85 + 85 + 30) / 3),
        pytest.approx(1 / 3),
        3,
    )
    # The same answers judged from the judge page give the same figures.
    page_run, job = judge_services.judge_run_create(
        project=finished.project, user=None, judge="atp-mam", base_url=judge_server.url,
        model="judge-m", models=[MODEL],
    )  # fmt: skip
    judge_services.judge_run_execute(job=job)
    assert _mam(page_run) == figures
    # The run's page lists the judge jobs it started.
    from review.evaluation.selectors import run_judging

    judging = run_judging(run=finished)
    assert {j.pk for j in judging.jobs} == {j.pk for j in jobs}
    assert not judging.running and not judging.of_runs


def test_judges_wait_for_the_run_to_finish_and_for_each_other(
    finished: EvaluationRun, judge_server: ScriptedServer
) -> None:
    finished.finished_at = None
    finished.save(update_fields=["finished_at"])
    with pytest.raises(Conflict, match=rf"evaluation #{finished.pk} has not finished"):
        judges.evaluation_judge_start(
            run=finished, user=None, base_url=judge_server.url, model="judge-m"
        )
    finished.refresh_from_db()
    from django.utils import timezone

    finished.finished_at = timezone.now()
    finished.save(update_fields=["finished_at"])
    judges.evaluation_judge_start(
        run=finished, user=None, base_url=judge_server.url, model="judge-m", enqueue=False
    )
    with pytest.raises(Conflict, match="judges are still running"):
        judges.evaluation_judge_start(
            run=finished, user=None, base_url=judge_server.url, model="judge-m"
        )


def test_no_judge_model_is_a_message_naming_what_to_give(finished: EvaluationRun) -> None:
    from review.evaluation.services import model_config  # noqa: F401  (the run's own model)

    finished.project.settings = {}
    finished.project.save(update_fields=["settings"])
    with pytest.raises(ValidationFailed, match="No judge model"):
        judges.evaluation_judge_start(run=finished, user=None)
    assert not JudgeRun.objects.exists()


def test_the_run_page_starts_the_judges_and_the_leaderboard_shows_their_columns(
    finished: EvaluationRun,
    judge_server: ScriptedServer,
    clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any,
    settings: Any,
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    page_url = reverse("review:evaluation_run", args=[finished.pk])
    page = clients["reviewer"].get(page_url).content.decode()
    assert "Run the judges" in page and 'id="evaluation-judges"' in page
    board_url = reverse("review:leaderboard", args=[finished.project.pk])
    assert 'data-judge-column="fs"' not in clients["reviewer"].get(board_url).content.decode()
    url = reverse("review:evaluation_run_judge", args=[finished.pk])
    with django_capture_on_commit_callbacks(execute=True):
        response = clients["reviewer"].post(
            url,
            {"base_url": judge_server.url, "model": "judge-m", "workers": "2"},
            headers={"HX-Request": "true", "HX-Target": "evaluation-judges"},
        )
    assert response.status_code == 200
    body = response.content.decode()
    assert body.lstrip().startswith('<section class="card" id="evaluation-judges"')
    jobs = list(Job.objects.filter(params__evaluation_run=finished.pk))
    assert len(jobs) == len(judges_for(finished.project))
    assert {j.status for j in jobs} == {JobStatus.SUCCEEDED}
    # The polled fragment stops polling: every judge job has ended.
    poll = clients["reviewer"].get(
        page_url, headers={"HX-Request": "true", "HX-Target": "evaluation-judges"}
    )
    assert poll.status_code == 286
    assert f"Judge run #{JudgeRun.objects.get(judge='atp-mam').pk}" in poll.content.decode()
    board = clients["reviewer"].get(board_url).content.decode()
    mam = JudgeRun.objects.get(judge="atp-mam")
    assert 'data-judge-column="fs"' in board
    assert f'<a href="/judges/runs/{mam.pk}/" data-judged>66.67</a>' in board


def test_bad_input_and_an_unfinished_run_answer_with_the_message(
    finished: EvaluationRun, clients: dict[str, Client], judge_server: ScriptedServer
) -> None:
    url = reverse("review:evaluation_run_judge", args=[finished.pk])
    bad = clients["reviewer"].post(url, {"base_url": "not a url", "workers": "0"})
    assert bad.status_code == 400
    assert "Ensure this value is greater than or equal to 1" in bad.content.decode()
    finished.finished_at = None
    finished.save(update_fields=["finished_at"])
    late = clients["reviewer"].post(
        url, {"base_url": judge_server.url, "model": "judge-m", "workers": "2"}
    )
    assert late.status_code == 409
    assert f"evaluation #{finished.pk} has not finished" in late.content.decode()
    assert not JudgeRun.objects.exists()
    # An annotator may not start judges.
    assert clients["annotator"].post(url, {"workers": "2"}).status_code in (403, 404)
