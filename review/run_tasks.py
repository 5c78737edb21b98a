"""The scoring job for uploaded agent runs and the job that rescores a stored upload. Each takes
the Job's id, does nothing when the job is not queued (a repeated delivery), and records its
outcome on the row."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from benchmark import services as benchmark_services
from benchmark.exceptions import DomainError
from benchmark.models import Job
from review import runs

log = logging.getLogger(__name__)


@shared_task(acks_late=True)
def runs_score_task(job_id: int) -> None:
    if not benchmark_services.job_start(job_id=job_id):
        return
    job = Job.objects.get(pk=job_id)

    def tick(**fields: Any) -> None:
        benchmark_services.job_progress(job_id=job_id, **fields)

    try:
        run_set = runs.run_set_score(job=job, progress=tick)
    except DomainError as exc:
        benchmark_services.job_finish(job_id=job_id, error=exc.message)
        return
    except Exception as exc:  # noqa: BLE001 - the job row must say what went wrong
        log.exception("scoring job %s failed", job_id)
        benchmark_services.job_finish(
            job_id=job_id, error=f"unexpected error: {exc.__class__.__name__}: {exc}"
        )
        return
    finally:
        runs.run_upload_cleanup(job=job)
    benchmark_services.job_finish(
        job_id=job_id, result={"run_set_id": run_set.pk, "runs": run_set.runs.count()}
    )


@shared_task(acks_late=True)
def run_set_rescore_task(job_id: int) -> None:
    if not benchmark_services.job_start(job_id=job_id):
        return
    job = Job.objects.get(pk=job_id)

    def tick(**fields: Any) -> None:
        benchmark_services.job_progress(job_id=job_id, **fields)

    try:
        result = runs.run_set_rescore(job=job, progress=tick)
    except DomainError as exc:
        benchmark_services.job_finish(job_id=job_id, error=exc.message)
        return
    except Exception as exc:  # noqa: BLE001 - the job row must say what went wrong
        log.exception("rescoring job %s failed", job_id)
        benchmark_services.job_finish(
            job_id=job_id, error=f"unexpected error: {exc.__class__.__name__}: {exc}"
        )
        return
    benchmark_services.job_finish(job_id=job_id, result=result)
