"""python manage.py jobs_sweep

Marks failed every job whose worker is gone: a running job that has not reported progress for
longer than its kind's time limit plus a margin (``benchmark.jobs.kinds``,
``benchmark.jobs.services.JOB_STALE_MARGIN``), and a queued job no worker started in time, and
removes their uploaded files. The failed job says "the worker stopped while running this job;
retry" and the page offers a retry where one exists.
Every poll of a job's progress runs the same sweep, so this command is only needed for jobs
nobody is watching (run it from cron, or never). Prints one line per job it marked.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from benchmark.jobs import services
from benchmark.models import Job


class Command(BaseCommand):
    help = "Mark jobs whose worker stopped (no progress beyond the task's time limit) failed."
    requires_system_checks: list[str] = []

    def handle(self, *args: Any, **options: Any) -> None:
        swept = services.jobs_sweep()
        for job in Job.objects.filter(pk__in=swept).order_by("pk"):
            self.stdout.write(f"job #{job.pk} ({job.kind}): {job.error}")
        self.stdout.write(f"{len(swept)} job{'s' if len(swept) != 1 else ''} marked failed")
