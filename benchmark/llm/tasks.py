"""The model-call task. It takes a Job id and is guarded on the job's status (see
``model_call_run``), so a repeated delivery calls nothing twice. Listed in CELERY_IMPORTS."""

from __future__ import annotations

from celery import shared_task

from benchmark.jobs.services import job_soft_time_limit, job_time_limit
from benchmark.llm import services


@shared_task(
    acks_late=True,
    time_limit=job_time_limit(services.MODEL_CALL_KIND),
    soft_time_limit=job_soft_time_limit(services.MODEL_CALL_KIND),
)
def model_call_task(job_id: int) -> None:
    services.model_call_run(job_id=job_id)
