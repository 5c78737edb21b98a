"""The scoring job for large uploads of model answers. It takes the Job's id, does nothing when
the job is not queued (a repeated delivery), records the figures (or the message naming the
bad file, line and field) on the row, and removes the uploaded files."""

from __future__ import annotations

from celery import shared_task

from benchmark.jobs import services as benchmark_services
from review.answers import services as answers


@shared_task(acks_late=True)
def answers_score_task(job_id: int) -> None:
    benchmark_services.job_run(
        job_id=job_id,
        work=lambda job, progress: answers.answers_score_job(job=job, progress=progress),
        what="answer scoring job",
        cleanup=lambda job: answers.answers_upload_cleanup(job=job),
    )
