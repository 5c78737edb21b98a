"""A chunk whose worker dies is taken again: the job pipeline's sweep queues a lost
"evaluate" job again (its heartbeat older than the kind's silent limit), any worker runs it,
and the items the run finished are not evaluated again; after the kind's retakes it fails
with a message saying so, and Resume still takes it. The runner keeps its heartbeat while
items take long."""

from __future__ import annotations

import io
import threading
from concurrent.futures import Future
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from benchmark.jobs import services as job_services
from benchmark.models import Job, JobStatus, Project
from review.evaluation import services
from review.evaluation.chat import ItemCalls
from review.evaluation.models import (
    EvaluationCall,
    EvaluationResult,
    EvaluationRun,
    ToolCallRecord,
)
from review.evaluation.records import ItemTools
from review.job_names import EVALUATE_RETAKES, EVALUATE_SILENT_LIMIT
from tests import evaluation_protocol
from tests.llm_server import FakeModelServer

pytestmark = pytest.mark.django_db


def _lost_chunk(project: Project, *, silent: timedelta) -> tuple[EvaluationRun, Job, Job]:
    """A run in two chunks ([apple, pear], [kiwi]) whose first chunk's worker finished apple
    and died: the job is running, its last heartbeat ``silent`` ago, apple has its result
    and pear has none (nor its model calls and tool records, stored with the result)."""
    run, jobs = services.evaluation_run_create(project=project, user=None, chunk_items=2)
    services.evaluation_run_execute(run=run, jobs=jobs[:1])
    for model in (EvaluationResult, EvaluationCall, ToolCallRecord):
        model.objects.filter(item__project=project, item__external_id="pear").delete()
    then = timezone.now() - silent
    Job.objects.filter(pk=jobs[0].pk).update(
        status=JobStatus.RUNNING, finished_at=None, result={}, started_at=then, heartbeat_at=then
    )
    return run, jobs[0], jobs[1]


def _items(run: EvaluationRun) -> dict[str, str]:
    return {
        r.item.external_id: r.output
        for r in EvaluationResult.objects.filter(run=run).select_related("item")
    }


def test_a_lost_chunk_is_taken_again_without_repeating_finished_items(
    eval_project: Project,
    eval_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    run, lost, _ = _lost_chunk(eval_project, silent=timedelta(seconds=EVALUATE_SILENT_LIMIT + 60))
    apple_before = EvaluationResult.objects.get(run=run, item__external_id="apple")
    asked = eval_server.count
    provider = evaluation_protocol.LOOKUP_PROVIDER
    provider.answers["pear"] = "a pear, asked again"  # a repeated lookup would show
    looked_up = provider.calls
    with django_capture_on_commit_callbacks(execute=True) as enqueued:
        assert job_services.jobs_sweep() == [lost.pk]
    assert len(enqueued) == 1  # queued again for any worker (here: run in-process)
    lost.refresh_from_db()
    assert lost.status == JobStatus.SUCCEEDED, lost.error
    assert lost.params["retaken"] == 1
    # Only pear was evaluated again: its two model calls, its one lookup.
    assert eval_server.count - asked == 2
    assert provider.calls - looked_up == 1
    assert _items(run) == {"apple": "a fruit", "pear": "a pear, asked again"}
    apple = EvaluationResult.objects.get(run=run, item__external_id="apple")
    assert (apple.pk, apple.created_at) == (apple_before.pk, apple_before.created_at)


def test_the_sweep_queues_it_for_a_worker_and_says_so(
    eval_project: Project, eval_server: FakeModelServer
) -> None:
    run, lost, waiting = _lost_chunk(eval_project, silent=timedelta(minutes=15))
    out = io.StringIO()
    call_command("jobs_sweep", stdout=out)
    lost.refresh_from_db()
    assert lost.status == JobStatus.QUEUED and lost.error == ""
    assert lost.message == f"queued again: its worker stopped (retake 1 of {EVALUATE_RETAKES})"
    assert f"job #{lost.pk} (evaluate): queued again" in out.getvalue()
    assert "0 jobs marked failed" in out.getvalue() and "1 job queued again" in out.getvalue()
    # A worker takes it: the run finishes with the other chunk.
    services.evaluation_run_execute(run=run, jobs=[lost, waiting])
    assert run.finished_at is not None and set(_items(run)) == {"apple", "pear", "kiwi"}
    # Swept again right away, nothing happens: it reported since.
    assert job_services.jobs_sweep() == []


def test_a_chunk_silent_for_less_than_the_limit_is_left_running(
    eval_project: Project, eval_server: FakeModelServer
) -> None:
    _, lost, _ = _lost_chunk(eval_project, silent=timedelta(seconds=EVALUATE_SILENT_LIMIT - 60))
    assert job_services.jobs_sweep() == []
    lost.refresh_from_db()
    assert lost.status == JobStatus.RUNNING


def test_after_its_retakes_the_chunk_fails_saying_so_and_resume_takes_it(
    eval_project: Project, eval_server: FakeModelServer
) -> None:
    run, lost, waiting = _lost_chunk(eval_project, silent=timedelta(hours=1))
    Job.objects.filter(pk=lost.pk).update(params={**lost.params, "retaken": EVALUATE_RETAKES})
    assert job_services.jobs_sweep() == [lost.pk]
    lost.refresh_from_db()
    assert lost.status == JobStatus.FAILED and lost.worker_lost
    assert lost.error.startswith("The worker stopped while running this job; retry.")
    assert (
        f"It was taken again {EVALUATE_RETAKES} times after its worker stopped, the most its "
        "kind allows; what it finished is kept." in lost.error
    )
    assert "longer than the 10 minutes its runner may stay silent" in lost.error
    services.evaluation_run_execute(run=run, jobs=[waiting])
    jobs = services.evaluation_run_resume(run=run, user=None)
    assert [j.params.get("items") for j in jobs] == [None]  # one job: pear alone
    assert jobs[0].total == 1
    services.evaluation_run_execute(run=run, jobs=jobs)
    assert run.finished_at is not None and set(_items(run)) == {"apple", "pear", "kiwi"}


def test_a_chunk_someone_asked_to_cancel_is_not_taken_again(
    eval_project: Project, eval_server: FakeModelServer
) -> None:
    _, lost, _ = _lost_chunk(eval_project, silent=timedelta(hours=1))
    Job.objects.filter(pk=lost.pk).update(cancel_requested_at=timezone.now())
    assert job_services.jobs_sweep() == [lost.pk]
    lost.refresh_from_db()
    assert lost.status == JobStatus.FAILED and "retake" not in lost.error


def test_other_kinds_still_fail_at_their_time_limit(project: Project) -> None:
    from tests.factories import JobFactory

    job = JobFactory(kind="import", project=project)
    assert job_services.job_claim(job_id=job.pk)
    then = timezone.now() - timedelta(seconds=EVALUATE_SILENT_LIMIT + 60)
    Job.objects.filter(pk=job.pk).update(started_at=then, heartbeat_at=then)
    assert job_services.jobs_sweep() == []  # an import may run silent for its whole limit
    Job.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(days=1))
    assert job_services.jobs_sweep() == [job.pk]
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and "retake" not in job.error


def test_the_runner_reports_while_no_item_finishes(
    eval_project: Project, eval_server: FakeModelServer, monkeypatch: Any
) -> None:
    monkeypatch.setattr(services, "HEARTBEAT_SECONDS", 0.01)
    run, jobs = services.evaluation_run_create(project=eval_project, user=None)
    reports: list[dict[str, Any]] = []
    runner = services._Runner(run=run, job=jobs[0], progress=lambda **kw: reports.append(kw))
    runner.counts.total = 3
    never: Future[Any] = Future()  # an item that takes long
    inflight = {never: (1, ItemCalls(), ItemTools())}
    # In a thread of its own, so a runner that waited for the item would fail, not hang.
    waiting = threading.Thread(
        target=lambda: [runner.collect(inflight) for _ in range(2)], daemon=True
    )
    waiting.start()
    waiting.join(timeout=5)
    assert not waiting.is_alive(), "the runner waits for the item without reporting"
    assert [r["message"] for r in reports] == [
        "0 of 3 items · 0 tool calls · 0 tokens · cost unknown"
    ] * 2
    assert list(inflight) == [never] and runner.pending == []  # still waiting for it
