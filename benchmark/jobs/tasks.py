"""The one job task: every kind of job runs through it (``benchmark.jobs.services.job_run``).

It takes the Job's id, is guarded on the job's status (a repeated delivery does nothing) and
records its outcome on the row, hence ``acks_late``. The time limits are set per job when it
is enqueued (``job_start``), from the kind's limit. Listed in CELERY_IMPORTS."""

from __future__ import annotations

from celery import shared_task

import benchmark.celery  # noqa: F401 - the project's app is the current one before the task binds
from benchmark.jobs import services


@shared_task(acks_late=True, name="benchmark.jobs.run")
def job_task(job_id: int) -> None:
    services.job_run(job_id=job_id)
