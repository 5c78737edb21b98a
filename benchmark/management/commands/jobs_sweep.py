"""python manage.py jobs_sweep

Marks failed every job whose worker is gone: a running job that has not reported progress for
longer than its kind allows (its time limit plus a margin, ``benchmark.jobs.services.
JOB_STALE_MARGIN``, or the kind's ``silent_limit``: ``benchmark.jobs.kinds``), and a queued
job no worker started in time, and removes their uploaded files. The failed job says "the
worker stopped while running this job; retry" and the page offers a retry where one exists.
A lost job of a kind that declares ``retakes`` (an evaluation's chunk) is queued again
instead, for any worker to take, until its retakes are used up.
Every poll of a job's progress runs the same sweep, so this command is only needed for jobs
nobody is watching (run it from cron, or never). Prints one line per job it marked.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from benchmark.jobs import services
from benchmark.models import Job, JobStatus


class Command(BaseCommand):
    help = (
        "Mark jobs whose worker stopped (no progress for longer than their kind allows) "
        "failed, or queue them again where their kind takes lost jobs again."
    )
    requires_system_checks: list[str] = []

    def handle(self, *args: Any, **options: Any) -> None:
        swept = services.jobs_sweep()
        failed = 0
        for job in Job.objects.filter(pk__in=swept).order_by("pk"):
            if job.status == JobStatus.FAILED:
                failed += 1
                self.stdout.write(f"job #{job.pk} ({job.kind}): {job.error}")
            else:
                self.stdout.write(f"job #{job.pk} ({job.kind}): {job.message}")
        self.stdout.write(f"{failed} job{'s' if failed != 1 else ''} marked failed")
        if len(swept) > failed:
            again = len(swept) - failed
            self.stdout.write(f"{again} job{'s' if again != 1 else ''} queued again")
