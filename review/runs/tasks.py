"""The scoring job for uploaded agent runs and the job that rescores a stored upload. Each takes
the Job's id, does nothing when the job is not queued (a repeated delivery), and records its
outcome on the row."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery import shared_task

from benchmark.jobs import services as benchmark_services
from benchmark.models import Job
from review.runs import services as runs


def _score(job: Job, progress: Callable[..., None]) -> dict[str, Any]:
    run_set = runs.run_set_score(job=job, progress=progress)
    return {"run_set_id": run_set.pk, "runs": run_set.runs.count()}


@shared_task(acks_late=True)
def runs_score_task(job_id: int) -> None:
    benchmark_services.job_run(
        job_id=job_id,
        work=_score,
        what="scoring job",
        cleanup=lambda job: runs.run_upload_cleanup(job=job),
    )


@shared_task(acks_late=True)
def run_set_rescore_task(job_id: int) -> None:
    benchmark_services.job_run(
        job_id=job_id,
        work=lambda job, progress: runs.run_set_rescore(job=job, progress=progress),
        what="rescoring job",
    )
