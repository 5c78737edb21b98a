"""The scoring job for large uploads of model answers. It takes the Job's id, does nothing when
the job is not queued (a repeated delivery), records the figures (or the message naming the
bad file, line and field) on the row, and removes the uploaded files."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from benchmark import services as benchmark_services
from benchmark.exceptions import DomainError
from benchmark.models import Job
from review import answers

log = logging.getLogger(__name__)


@shared_task(acks_late=True)
def answers_score_task(job_id: int) -> None:
    if not benchmark_services.job_start(job_id=job_id):
        return
    job = Job.objects.get(pk=job_id)

    def tick(**fields: Any) -> None:
        benchmark_services.job_progress(job_id=job_id, **fields)

    try:
        result = answers.answers_score_job(job=job, progress=tick)
    except DomainError as exc:
        benchmark_services.job_finish(job_id=job_id, error=exc.message)
        return
    except Exception as exc:  # noqa: BLE001 - the job row must say what went wrong
        log.exception("answer scoring job %s failed", job_id)
        benchmark_services.job_finish(
            job_id=job_id, error=f"unexpected error: {exc.__class__.__name__}: {exc}"
        )
        return
    finally:
        answers.answers_upload_cleanup(job=job)
    benchmark_services.job_finish(job_id=job_id, result=result)
