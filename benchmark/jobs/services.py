"""The one job pipeline: a slow action is a Job row and a task that takes its id. Create, start (guarding on status), report progress (every report is the heartbeat), finish or fail, and sweep jobs whose worker stopped."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import (
    Any,
)

from django.conf import settings
from django.db import models
from django.utils import timezone

from benchmark.exceptions import (
    DomainError,
)
from benchmark.models import (
    Job,
    JobStatus,
    Project,
)
from benchmark.typing import User

log = logging.getLogger(__name__)


def job_create(
    *,
    kind: str,
    user: User | None = None,
    project: Project | None = None,
    params: dict[str, Any] | None = None,
    total: int = 0,
) -> Job:
    return Job.objects.create(
        kind=kind, created_by=user, project=project, params=params or {}, total=total
    )


def job_progress(
    *, job_id: int, progress: int, total: int | None = None, message: str = ""
) -> None:
    """Record progress; every report is also the job's heartbeat (``heartbeat_at``)."""
    fields: dict[str, Any] = {"progress": progress, "heartbeat_at": timezone.now()}
    if total is not None:
        fields["total"] = total
    if message:
        fields["message"] = message[:500]
    Job.objects.filter(pk=job_id).update(**fields)


def job_start(*, job_id: int) -> bool:
    """Mark a queued job running. False when it is not queued (a repeat delivery)."""
    now = timezone.now()
    return bool(
        Job.objects.filter(pk=job_id, status=JobStatus.QUEUED).update(
            status=JobStatus.RUNNING, started_at=now, heartbeat_at=now
        )
    )


#: The hard time limit (seconds) of the task behind a job kind, as its ``@shared_task`` sets
#: it (the task reads it from here); kinds not listed run under CELERY_TASK_TIME_LIMIT.
JOB_TIME_LIMITS: dict[str, int] = {"model_call": 31 * 60}


#: How much longer than its task's time limit a running job may stay silent before it counts
#: as lost; also how long a queued job may wait when tasks run in-process (no broker).
JOB_STALE_MARGIN = 5 * 60


#: How long a queued job may wait for a worker when a broker is configured.
JOB_QUEUED_LIMIT = 24 * 60 * 60


def job_time_limit(kind: str) -> int:
    """The hard time limit in seconds of the task that runs jobs of ``kind``."""
    return JOB_TIME_LIMITS.get(kind, int(settings.CELERY_TASK_TIME_LIMIT))


def job_soft_time_limit(kind: str) -> int:
    """A minute before the hard limit: the task gets SoftTimeLimitExceeded and records it."""
    return max(job_time_limit(kind) - 60, 1)


def _silent_since(cutoff: datetime) -> models.Q:
    """Jobs whose last sign of life (heartbeat, else start, else creation) is before
    ``cutoff``."""
    return (
        models.Q(heartbeat_at__lt=cutoff)
        | models.Q(heartbeat_at__isnull=True, started_at__lt=cutoff)
        | models.Q(heartbeat_at__isnull=True, started_at__isnull=True, created_at__lt=cutoff)
    )


def jobs_sweep(*, now: datetime | None = None) -> list[int]:
    """Mark failed every running job silent for longer than its task's time limit plus
    JOB_STALE_MARGIN (its worker died or was killed: a living task cannot outrun its limit),
    and every queued job no worker started in time. Returns the ids marked failed. Reads
    first and writes only when something is stale, so polling it costs one indexed query."""
    now = now or timezone.now()
    candidates = list(
        Job.objects.filter(status__in=[JobStatus.RUNNING, JobStatus.QUEUED]).values_list(
            "pk", "kind", "status", "heartbeat_at", "started_at", "created_at"
        )
    )
    eager = getattr(settings, "CELERY_TASK_ALWAYS_EAGER", False)
    queued_limit = JOB_STALE_MARGIN if eager else JOB_QUEUED_LIMIT
    swept: list[int] = []
    for pk, kind, status, heartbeat, started, created in candidates:
        last = heartbeat or started or created
        if status == JobStatus.RUNNING:
            limit = job_time_limit(kind) + JOB_STALE_MARGIN
            error = (
                "The worker stopped while running this job; retry. (No progress report for "
                f"{(now - last).total_seconds() / 60:.0f} minutes, longer than the task's "
                f"{job_time_limit(kind) // 60}-minute time limit.)"
            )
        else:
            limit = queued_limit
            error = (
                "No worker started this job; retry. (It waited "
                f"{(now - last).total_seconds() / 60:.0f} minutes; is the Celery worker running?)"
            )
        cutoff = now - timedelta(seconds=limit)
        if last >= cutoff:
            continue
        # Guarded on the state read: a job that reported or finished meanwhile is left alone.
        changed = (
            Job.objects.filter(pk=pk, status=status)
            .filter(_silent_since(cutoff))
            .update(
                status=JobStatus.FAILED,
                error=error,
                message="",
                result={"worker_lost": True},
                finished_at=now,
            )
        )
        if changed:
            swept.append(pk)
    return swept


def job_refresh(*, job: Job) -> Job:
    """For a polled job: sweep lost jobs first, so a job whose worker died answers failed
    instead of polling forever (no beat scheduler needed). Returns the job as stored now."""
    if job.done:
        return job
    if job.pk in jobs_sweep():
        job.refresh_from_db()
    return job


def job_finish(*, job_id: int, result: dict[str, Any] | None = None, error: str = "") -> None:
    job = Job.objects.get(pk=job_id)
    job.status = JobStatus.FAILED if error else JobStatus.SUCCEEDED
    job.error = error
    job.result = result or {}
    if not error and job.total:
        job.progress = job.total
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "error", "result", "progress", "finished_at"])


def job_run(
    *,
    job_id: int,
    work: Callable[[Job, Callable[..., None]], dict[str, Any]],
    what: str,
    cleanup: Callable[[Job], None] | None = None,
) -> None:
    """The body of a job's Celery task: nothing when the job is not queued (a repeated
    delivery); ``work(job, progress)`` returns the result to record, a DomainError becomes the
    job's message, anything else is logged and named on the row; ``cleanup`` runs either way."""
    if not job_start(job_id=job_id):
        return
    job = Job.objects.get(pk=job_id)

    def progress(**fields: Any) -> None:
        job_progress(job_id=job_id, **fields)

    try:
        result = work(job, progress)
    except DomainError as exc:
        job_finish(job_id=job_id, error=exc.message)
        return
    except Exception as exc:  # noqa: BLE001 - the job row must say what went wrong
        log.exception("%s %s failed", what, job_id)
        job_finish(job_id=job_id, error=f"unexpected error: {exc.__class__.__name__}: {exc}")
        return
    finally:
        if cleanup is not None:
            cleanup(job)
    job_finish(job_id=job_id, result=result)
