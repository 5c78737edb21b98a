"""What the one job card shows: the job, its kind, how far it is (with an estimate of the time
left) and, once it is done, the context of the kind's result fragment."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from benchmark.jobs.kinds import JobKind, job_kind
from benchmark.models import Job, JobStatus

_FALLBACK = JobKind(name="job", runner=lambda **_: {}, action="view", title="Job")


def job_eta_seconds(job: Job) -> int | None:
    """Seconds left at the pace so far, for a running job that counts toward a total."""
    if job.status != JobStatus.RUNNING or not job.total or not job.started_at:
        return None
    if not 0 < job.progress < job.total:
        return None
    elapsed = (timezone.now() - job.started_at).total_seconds()
    if elapsed < 2:
        return None
    return int(elapsed / job.progress * (job.total - job.progress))


def job_eta_text(job: Job) -> str:
    seconds = job_eta_seconds(job)
    if seconds is None:
        return ""
    if seconds < 60:
        return f"about {seconds} s left"
    return f"about {round(seconds / 60)} min left"


def job_card_context(job: Job) -> dict[str, Any]:
    spec = job_kind(job.kind) or _FALLBACK
    context: dict[str, Any] = {"job": job, "kind": spec, "eta": job_eta_text(job)}
    if job.status == JobStatus.SUCCEEDED:
        context.update(spec.context(job=job))
    return context
