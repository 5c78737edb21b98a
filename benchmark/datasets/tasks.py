"""Celery tasks. Each takes a Job id, guards on the job's status, and records its outcome on
the row, so a repeated delivery does nothing twice."""

from __future__ import annotations

import logging
from pathlib import Path

from celery import shared_task

from benchmark.datasets import services as dataset_services
from benchmark.exceptions import DomainError
from benchmark.formats import FormatError, get_format
from benchmark.jobs import services as job_services
from benchmark.jobs import uploads as job_uploads
from benchmark.models import Job, Project

log = logging.getLogger(__name__)


@shared_task(acks_late=True)
def dataset_import_task(job_id: int) -> None:
    if not job_services.job_start(job_id=job_id):
        return
    job = Job.objects.get(pk=job_id)
    try:
        _import(job)
    finally:
        _remove_upload(job)


def _remove_upload(job: Job) -> None:
    """An uploaded file is only needed until its import has run."""
    job_uploads.upload_folder_remove(
        folder=job.params.get("cleanup"), area=dataset_services.IMPORT_AREA
    )


def _import(job: Job) -> None:
    job_id = job.pk
    try:
        project = Project.objects.get(pk=job.params["project_id"])
        path = Path(job.params["path"])
        fmt = get_format(project.data_format)
        # First pass reads and checks every record outside the write transaction, so the
        # browser sees progress; the second pass writes all or nothing.
        total = 0
        for total, _ in enumerate(fmt.read(path), start=1):
            if total % 500 == 0:
                job_services.job_progress(job_id=job_id, progress=total, message="checking records")
        job_services.job_progress(job_id=job_id, progress=0, total=total, message="writing")
        result = dataset_services.dataset_import(
            project=project,
            path=path,
            progress=lambda n: job_services.job_progress(job_id=job_id, progress=min(n, total)),
        )
    except (FormatError, DomainError) as exc:
        job_services.job_finish(job_id=job_id, error=str(exc))
        return
    except Exception as exc:  # noqa: BLE001 - the job row must say what went wrong
        log.exception("import job %s failed", job_id)
        job_services.job_finish(job_id=job_id, error=f"unexpected error: {exc.__class__.__name__}")
        return
    job_services.job_finish(job_id=job_id, result=result.as_dict())
