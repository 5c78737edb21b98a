"""The "Evaluate a model" page, a run's page, a result's page and the Leaderboard: who may
open them, what they show, the settings fields the protocol decides, and bounded queries."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from benchmark.models import Item, Project
from review.evaluation import services
from review.evaluation.models import EvaluationRun
from tests.factories import (
    EvaluationResultFactory,
    EvaluationRunFactory,
    ItemVersionFactory,
    JobFactory,
    JudgeRunFactory,
)
from tests.llm_server import MODEL, FakeModelServer

pytestmark = pytest.mark.django_db


def _finished_run(project: Project, model: str, correct: list[float]) -> EvaluationRun:
    run = EvaluationRunFactory(project=project, model=model, item_count=len(correct))
    items = list(Item.objects.filter(project=project).order_by("position", "id"))
    for item, value in zip(items, correct, strict=False):
        EvaluationResultFactory(run=run, item=item, scores={"correct": value})
    run.item_versions = services.item_versions([i.pk for i in items[: len(correct)]])
    run.save()
    services.run_summarize(run=run)
    run.refresh_from_db()
    return run


def test_starting_an_evaluation_from_the_page_runs_it_and_shows_progress(
    eval_project: Project, eval_server: FakeModelServer, clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any, settings: Any,
) -> None:  # fmt: skip
    settings.CELERY_TASK_ALWAYS_EAGER = True
    url = reverse("review:evaluation", args=[eval_project.pk])
    page = clients["reviewer"].get(url)
    assert page.status_code == 200
    body = page.content.decode()
    # The test protocol takes max_rounds and max_tool_calls; no m&m's or Agentic-MME fields.
    assert 'name="max_rounds"' in body and 'name="max_tool_calls"' in body
    assert 'name="plan_format"' not in body and 'name="mode"' not in body
    with django_capture_on_commit_callbacks(execute=True):
        response = clients["reviewer"].post(
            url,
            {"base_url": eval_server.url, "model": MODEL, "items": "verified",
             "max_rounds": "5", "max_tool_calls": "5", "workers": "2"},
        )  # fmt: skip
    assert response.status_code == 302
    run = EvaluationRun.objects.get(project=eval_project)
    run_page = clients["reviewer"].get(response.url)
    text = run_page.content.decode()
    assert "3 of 3 items · 3 tool calls" in text
    assert run.results.count() == 3 and "apple" in text
    # The polled fragment stops polling once the run's jobs have ended.
    poll = clients["reviewer"].get(
        response.url, headers={"HX-Request": "true", "HX-Target": "evaluation-progress"}
    )
    assert poll.status_code == 286
    # The job's card says what the job did and links to the run.
    card = clients["reviewer"].get(reverse("benchmark:job_detail", args=[run.job_ids[0]]))
    card_text = card.content.decode()
    assert card.status_code == 200 and "3 of 3 items" in card_text
    assert reverse("review:evaluation_run", args=[run.pk]) in card_text
    # The same run again in replay mode, with no model server, gives the same results.
    eval_server.stop()
    with django_capture_on_commit_callbacks(execute=True):
        clients["reviewer"].post(
            url,
            {"base_url": eval_server.url, "model": MODEL, "items": "verified",
             "max_rounds": "5", "max_tool_calls": "5", "workers": "2", "replay": "on"},
        )  # fmt: skip
    replayed = EvaluationRun.objects.filter(project=eval_project, replay=True).get()
    assert {r.item_id: r.output for r in replayed.results.all()} == {
        r.item_id: r.output for r in run.results.all()
    }


def test_bad_settings_rerender_the_form_with_400(
    eval_project: Project, clients: dict[str, Client]
) -> None:
    url = reverse("review:evaluation", args=[eval_project.pk])
    response = clients["admin"].post(url, {"items": "verified", "max_rounds": "0", "workers": "1"})
    assert response.status_code == 400
    assert "Rounds at most" in response.content.decode()
    assert not EvaluationRun.objects.exists()


def test_annotators_may_not_evaluate(eval_project: Project, clients: dict[str, Client]) -> None:
    assert (
        clients["annotator"].get(reverse("review:evaluation", args=[eval_project.pk])).status_code
        == 403
    )
    assert (
        clients["annotator"].get(reverse("review:leaderboard", args=[eval_project.pk])).status_code
        == 403
    )
    assert (
        clients["outsider"].get(reverse("review:leaderboard", args=[eval_project.pk])).status_code
        == 404
    )


def test_the_leaderboard_shows_each_models_latest_run_with_intervals_and_changed_items(
    eval_project: Project, clients: dict[str, Client], django_assert_max_num_queries: Any
) -> None:
    _finished_run(eval_project, "old-model", [0.0, 0.0, 0.0])
    best = _finished_run(eval_project, "good-model", [1.0, 1.0, 0.0])
    _finished_run(eval_project, "bad-model", [0.0, 1.0, 0.0])
    newer = _finished_run(eval_project, "old-model", [1.0, 1.0, 1.0])
    # An item edited after the runs.
    ItemVersionFactory(item=Item.objects.get(project=eval_project, external_id="apple"), number=1)
    url = reverse("review:leaderboard", args=[eval_project.pk])
    with django_assert_max_num_queries(12):
        response = clients["reviewer"].get(url)
    text = response.content.decode()
    models = re.findall(r'data-model="([^"]+)"', text)
    assert models == ["old-model", "good-model", "bad-model"]  # by accuracy, latest run each
    assert f'href="{reverse("review:evaluation_run", args=[newer.pk])}"' in text
    assert f'href="{reverse("review:evaluation_run", args=[best.pk])}"' in text
    assert "66.7" in text  # good-model's accuracy as a percentage
    low, high = best.intervals["accuracy"]
    assert f"[{low:.1f}, {high:.1f}]" in text
    assert text.count('data-changed="1"') == 3
    # More runs, the same number of queries.
    for n in range(5):
        _finished_run(eval_project, f"more-{n}", [1.0, 0.0, 1.0])
    with django_assert_max_num_queries(12):
        assert clients["reviewer"].get(url).status_code == 200


def test_a_results_page_shows_output_scores_and_the_trace_with_images_and_tool_calls(
    eval_project: Project, eval_server: FakeModelServer, clients: dict[str, Client],
    django_assert_max_num_queries: Any,
) -> None:  # fmt: skip
    run, jobs = services.evaluation_run_create(project=eval_project, user=None)
    services.evaluation_run_execute(run=run, jobs=jobs)
    apple = Item.objects.get(project=eval_project, external_id="apple")
    url = reverse("review:evaluation_result", args=[run.pk, apple.pk])
    with django_assert_max_num_queries(10):
        response = clients["reviewer"].get(url)
    text = response.content.decode()
    assert response.status_code == 200
    assert "a fruit" in text and 'data-score="correct"' in text
    assert "<code>lookup</code>" in text and "apple" in text
    assert reverse("benchmark:item_detail", args=[eval_project.pk, apple.pk]) in text
    sha = run.results.get(item=apple).files["answer.txt"]
    file_url = reverse("review:evaluation_file", args=[run.pk, sha])
    assert file_url in text
    assert b"".join(clients["reviewer"].get(file_url).streaming_content) == b"a fruit"
    assert (
        clients["reviewer"]
        .get(reverse("review:evaluation_file", args=[run.pk, "0" * 64]))
        .status_code
        == 404
    )
    with django_assert_max_num_queries(12):
        run_page = clients["reviewer"].get(reverse("review:evaluation_run", args=[run.pk]))
    assert 'data-column="accuracy"' in run_page.content.decode()


def test_resume_after_a_failed_job_evaluates_only_what_is_left(
    eval_project: Project, eval_server: FakeModelServer, clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any, settings: Any,
) -> None:  # fmt: skip
    settings.CELERY_TASK_ALWAYS_EAGER = True
    run, jobs = services.evaluation_run_create(project=eval_project, user=None)
    jobs[0].status = "failed"
    jobs[0].save()
    apple = Item.objects.get(project=eval_project, external_id="apple")
    EvaluationResultFactory(run=run, item=apple, output="kept")
    with django_capture_on_commit_callbacks(execute=True):
        response = clients["reviewer"].post(reverse("review:evaluation_run_resume", args=[run.pk]))
    assert response.status_code == 302
    assert eval_server.count == 4
    assert run.results.get(item=apple).output == "kept"
    # Nothing is left: a second resume says so.
    again = clients["reviewer"].post(reverse("review:evaluation_run_resume", args=[run.pk]))
    assert again.status_code == 409
    assert "nothing to resume" in again.content.decode()


def test_a_judges_figures_of_a_models_answers_show_beside_its_row(
    eval_project: Project, clients: dict[str, Client], django_assert_max_num_queries: Any
) -> None:
    _finished_run(eval_project, "good-model", [1.0, 1.0, 0.0])
    _finished_run(eval_project, "bad-model", [0.0, 1.0, 0.0])
    judge = JudgeRunFactory(project=eval_project, judge="atp-mam")
    judge.job = JobFactory(
        kind="judge", project=eval_project, status="succeeded",
        result={"run_id": judge.pk, "summary": {"models": {"good-model": {"fs": 3.25, "sr": 50.0, "mi": 0.5}}}},
    )  # fmt: skip
    judge.save()
    url = reverse("review:leaderboard", args=[eval_project.pk])
    with django_assert_max_num_queries(12):
        text = clients["reviewer"].get(url).content.decode()
    assert 'data-judge-column="fs"' in text and 'data-judge-column="mi"' in text
    good = text[text.index('data-model="good-model"') :]
    assert re.search(r"data-judged>3\.25<", good.split("</tr>")[0])
    bad = text[text.index('data-model="bad-model"') :].split("</tr>")[0]
    assert "data-judged" not in bad


def test_the_evaluate_page_lists_runs_in_a_bounded_number_of_queries(
    eval_project: Project, clients: dict[str, Client], django_assert_max_num_queries: Any
) -> None:
    url = reverse("review:evaluation", args=[eval_project.pk])
    _finished_run(eval_project, "model-a", [1.0, 0.0, 1.0])
    with django_assert_max_num_queries(14) as few:
        clients["admin"].get(url)
    for n in range(6):
        _finished_run(eval_project, f"model-{n}", [1.0, 0.0, 1.0])
    with django_assert_max_num_queries(len(few.captured_queries)):
        text = clients["admin"].get(url).content.decode()
    assert text.count("data-run=") == 7
