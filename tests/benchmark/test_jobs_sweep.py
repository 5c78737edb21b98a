"""Jobs that never hang: a running job whose worker died (no progress report for longer than its
task's time limit) answers failed with a retry, on the poll and from `manage.py jobs_sweep`; a
fresh job and a finished job are left alone."""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from benchmark.jobs import services
from benchmark.models import Job, JobStatus, Project
from tests.factories import JobFactory

pytestmark = pytest.mark.django_db

LOST = "The worker stopped while running this job; retry."


def running_job(project: Project, *, kind: str = "import", silent: timedelta, **extra: Any) -> Job:
    """A job marked running by a worker that last reported ``silent`` ago."""
    job = JobFactory(kind=kind, project=project, **extra)
    assert services.job_claim(job_id=job.pk)
    then = timezone.now() - silent
    Job.objects.filter(pk=job.pk).update(started_at=then, heartbeat_at=then, created_at=then)
    job.refresh_from_db()
    return job


def poll(client: Client, url: str, target: str) -> Any:
    return client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET=target)


def test_a_stale_running_job_answers_failed_on_poll(
    project: Project, clients: dict[str, Client]
) -> None:
    job = running_job(project, silent=timedelta(hours=2))
    response = poll(clients["admin"], f"/jobs/{job.pk}/", f"job-{job.pk}")  # imports: admins
    html = response.content.decode()
    assert response.status_code == 286  # the browser stops polling
    assert LOST in html and "data-worker-lost" in html
    assert f"/projects/{project.pk}/datasets/import/" in html  # upload again: the import's retry
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.worker_lost and job.finished_at is not None


def test_a_fresh_running_job_keeps_polling(project: Project, clients: dict[str, Client]) -> None:
    job = running_job(project, silent=timedelta(minutes=10))
    response = poll(clients["admin"], f"/jobs/{job.pk}/", f"job-{job.pk}")  # imports: admins
    assert response.status_code == 200
    assert 'hx-trigger="every 1s"' in response.content.decode()
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING and job.error == ""


def test_progress_is_a_heartbeat(project: Project) -> None:
    job = running_job(project, silent=timedelta(hours=2))
    services.job_progress(job_id=job.pk, progress=0, message="still here")
    assert services.jobs_sweep() == []
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    assert job.heartbeat_at is not None and timezone.now() - job.heartbeat_at < timedelta(minutes=1)


def test_the_limit_is_the_kinds_time_limit_plus_a_margin(project: Project) -> None:
    # A model call may run 31 minutes, an import an hour: 40 silent minutes lose only the call.
    call = running_job(project, kind="model_call", silent=timedelta(minutes=40))
    imp = running_job(project, kind="import", silent=timedelta(minutes=40))
    assert services.job_time_limit("model_call") == 31 * 60
    assert services.jobs_sweep() == [call.pk]
    imp.refresh_from_db()
    assert imp.status == JobStatus.RUNNING


def test_the_command_sweeps_and_leaves_fresh_and_finished_jobs(project: Project) -> None:
    stale = running_job(project, silent=timedelta(hours=3))
    fresh = running_job(project, silent=timedelta(seconds=5))
    old = timezone.now() - timedelta(days=3)
    done = JobFactory(project=project, status=JobStatus.SUCCEEDED, result={"items_created": 4})
    failed = JobFactory(project=project, status=JobStatus.FAILED, error="bad record 3")
    Job.objects.filter(pk__in=[done.pk, failed.pk]).update(
        created_at=old, started_at=old, finished_at=old
    )
    out = io.StringIO()
    call_command("jobs_sweep", stdout=out)
    assert f"job #{stale.pk} (import): {LOST}" in out.getvalue()
    assert "1 job marked failed" in out.getvalue()
    stale.refresh_from_db()
    fresh.refresh_from_db()
    done.refresh_from_db()
    failed.refresh_from_db()
    assert stale.status == JobStatus.FAILED and "no progress report for" in stale.error.lower()
    assert fresh.status == JobStatus.RUNNING
    assert (done.status, done.result, done.finished_at) == (
        JobStatus.SUCCEEDED,
        {"items_created": 4},
        old,
    )
    assert (failed.status, failed.error, failed.worker_lost) == (
        JobStatus.FAILED,
        "bad record 3",
        False,
    )
    out = io.StringIO()
    call_command("jobs_sweep", stdout=out)  # nothing left to do
    assert "0 jobs marked failed" in out.getvalue()


def test_a_queued_job_nobody_started_fails_when_tasks_run_in_process(
    project: Project, settings: Any
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    job = JobFactory(project=project)
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(minutes=30))
    queued_now = JobFactory(project=project)
    assert services.jobs_sweep() == [job.pk]
    job.refresh_from_db()
    assert "No worker started this job; retry." in job.error
    # With a broker, a busy queue may hold a job for hours.
    settings.CELERY_TASK_ALWAYS_EAGER = False
    Job.objects.filter(pk=queued_now.pk).update(created_at=timezone.now() - timedelta(hours=2))
    assert services.jobs_sweep() == []


def test_a_stale_model_call_offers_retry(project: Project, clients: dict[str, Client]) -> None:
    job = running_job(project, kind="model_call", silent=timedelta(hours=1), total=1)
    response = poll(clients["annotator"], f"/jobs/{job.pk}/", f"job-{job.pk}")
    html = response.content.decode()
    assert response.status_code == 286
    assert LOST in html
    assert f'action="/llm/jobs/{job.pk}/retry/"' in html


def test_the_api_poll_sweeps_too(project: Project, clients: dict[str, Client]) -> None:
    job = running_job(project, silent=timedelta(hours=2))
    data = clients["admin"].get(f"/api/jobs/{job.pk}/").json()
    assert data["status"] == "failed" and LOST in data["error"]


def test_a_job_that_finishes_after_the_sweep_keeps_its_result(project: Project) -> None:
    job = running_job(project, silent=timedelta(hours=2))
    assert services.jobs_sweep() == [job.pk]
    services.job_finish(job_id=job.pk, result={"items_created": 1})
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and not job.worker_lost
