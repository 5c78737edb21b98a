"""A run started from the page is split into small chunk jobs (``EVALUATION_CHUNK_ITEMS``)
that several Celery workers share; its progress stays one figure over all of them, a lost
chunk is taken again and a resumed run evaluates only its unfinished items, in chunks of the
same size. A command-line run keeps its large chunks (its processes split it)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from benchmark.jobs import services as job_services
from benchmark.models import Job, JobStatus, Project
from review.evaluation import selectors, services
from review.evaluation.models import EvaluationCall, EvaluationResult, ToolCallRecord
from review.job_names import EVALUATE_SILENT_LIMIT
from tests.llm_server import FakeModelServer

pytestmark = pytest.mark.django_db


def _done(run: Any) -> list[str]:
    return sorted(
        EvaluationResult.objects.filter(run=run).values_list("item__external_id", flat=True)
    )


def test_a_run_from_the_page_is_split_into_chunks_of_the_setting(
    eval_project: Project, settings: Any
) -> None:
    settings.EVALUATION_CHUNK_ITEMS = 2
    run, jobs = services.evaluation_run_create(project=eval_project, user=None, enqueue=True)
    ids = [int(pk) for pk in run.item_versions]
    assert [j.params["items"] for j in jobs] == [ids[:2], ids[2:]]
    assert [(j.params["chunk"], j.params["chunks"], j.total) for j in jobs] == [
        (1, 2, 2),
        (2, 2, 1),
    ]
    assert run.job_ids == [j.pk for j in jobs]
    settings.EVALUATION_CHUNK_ITEMS = 1
    run, jobs = services.evaluation_run_create(project=eval_project, user=None, enqueue=True)
    assert [j.total for j in jobs] == [1, 1, 1]


def test_the_default_chunk_is_small_and_the_command_line_keeps_one_job(
    eval_project: Project,
) -> None:
    assert services.chunk_size(True) == 50
    assert services.chunk_size(False) == services.CHUNK_ITEMS
    _, jobs = services.evaluation_run_create(project=eval_project, user=None)
    assert len(jobs) == 1 and "items" not in jobs[0].params


def test_chunks_share_one_progress_bar_a_lost_chunk_is_retaken_and_resume_skips_done_items(
    eval_project: Project,
    eval_server: FakeModelServer,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    settings.EVALUATION_CHUNK_ITEMS = 1
    run, jobs = services.evaluation_run_create(project=eval_project, user=None, enqueue=True)
    assert len(jobs) == 3
    services.evaluation_run_execute(run=run, jobs=jobs[:1])
    progress = selectors.run_progress(run=run)
    assert (progress.done, progress.total, progress.running) == (1, 3, True)
    assert len(progress.jobs) == 3
    # The second chunk's worker died after its item's result was lost: the sweep queues it
    # again and a worker (here: this process) evaluates it without repeating the first.
    services.evaluation_run_execute(run=run, jobs=jobs[1:2])
    second = jobs[1]
    for model in (EvaluationResult, EvaluationCall, ToolCallRecord):
        model.objects.filter(item_id=second.params["items"][0]).delete()
    then = timezone.now() - timedelta(seconds=EVALUATE_SILENT_LIMIT + 60)
    Job.objects.filter(pk=second.pk).update(
        status=JobStatus.RUNNING, finished_at=None, started_at=then, heartbeat_at=then
    )
    asked = eval_server.count
    with django_capture_on_commit_callbacks(execute=True):
        assert job_services.jobs_sweep() == [second.pk]
    assert eval_server.count - asked == 2  # one item: its lookup and its answer
    assert len(_done(run)) == 2
    # The third chunk is cancelled before it runs; resume takes only its item, from the page.
    Job.objects.filter(pk=jobs[2].pk).update(status=JobStatus.FAILED, finished_at=timezone.now())
    resumed = services.evaluation_run_resume(run=run, user=None, enqueue=True)
    assert [j.total for j in resumed] == [1]
    asked = eval_server.count
    services.evaluation_run_execute(run=run, jobs=resumed)
    assert eval_server.count - asked == 2
    assert _done(run) == ["apple", "kiwi", "pear"]
    run.refresh_from_db()
    assert run.finished_at is not None and run.summary["items"] == 3
    progress = selectors.run_progress(run=run)
    assert (progress.done, progress.total, progress.running) == (3, 3, False)


def test_finished_items_are_stored_while_another_item_still_runs(
    eval_project: Project, eval_server: FakeModelServer, monkeypatch: Any
) -> None:
    """The progress bar moves as items finish: an item done while another takes long is
    stored (and counted) at the next progress report, not when the long one ends."""
    from concurrent.futures import Future

    from benchmark.evaluation.base import Outcome
    from benchmark.models import Item
    from review.evaluation.chat import ItemCalls
    from review.evaluation.records import ItemTools

    monkeypatch.setattr(services, "HEARTBEAT_SECONDS", 0.01)
    monkeypatch.setattr(services, "PROGRESS_SECONDS", 0.01)
    run, jobs = services.evaluation_run_create(project=eval_project, user=None)
    reports: list[dict[str, Any]] = []
    runner = services._Runner(run=run, job=jobs[0], progress=lambda **kw: reports.append(kw))
    runner.counts.total = 3
    apple = Item.objects.get(project=eval_project, external_id="apple")
    outcome = Outcome(item="apple", status="ok", output="a fruit", scores={"correct": 1.0})
    runner.pending = [((apple.pk, ItemCalls(), ItemTools()), outcome, 5, {})]
    never: Future[Any] = Future()  # pear, still with the model
    inflight = {never: (2, ItemCalls(), ItemTools())}
    runner.collect(inflight)  # pear does not finish: back after the (patched) heartbeat
    assert _done(run) == ["apple"]
    assert runner.pending == [] and list(inflight) == [never]
    assert reports[-1]["message"].startswith("1 of 3 items")
    progress = selectors.run_progress(run=run)
    assert (progress.done, progress.total) == (1, 3)
