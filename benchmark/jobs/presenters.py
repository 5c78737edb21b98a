"""What the one job card shows: the job, its kind, how far it is (with an estimate of the time
left), whether the viewer may cancel it and, once it is done, the context of the kind's result
fragment."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone

from benchmark.jobs.kinds import JobKind, job_kind
from benchmark.jobs.services import job_can_cancel
from benchmark.models import Job, JobStatus

_FALLBACK = JobKind(name="job", runner=lambda **_: {}, action="view", title="Job")

#: No estimate before the job has run this long (the first reports say little about the pace).
ETA_MIN_ELAPSED = 2


def job_eta_seconds(job: Job, *, now: datetime | None = None) -> int | None:
    """Seconds left at the pace so far (elapsed since the job started / progress x what is
    left), for a running job that counts toward a total; None before any progress, before
    ``ETA_MIN_ELAPSED`` seconds, and for a job asked to stop."""
    if job.status != JobStatus.RUNNING or not job.total or not job.started_at:
        return None
    if job.cancel_requested_at is not None or not 0 < job.progress < job.total:
        return None
    elapsed = ((now or timezone.now()) - job.started_at).total_seconds()
    if elapsed < ETA_MIN_ELAPSED:
        return None
    return int(elapsed / job.progress * (job.total - job.progress))


def eta_text(seconds: int | None) -> str:
    """``about 40 s left``, ``about 2 min left``, ``about 1 h 30 min left``; "" for None."""
    if seconds is None:
        return ""
    if seconds < 60:
        return f"about {seconds} s left"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"about {minutes} min left"
    hours, minutes = divmod(minutes, 60)
    return f"about {hours} h {minutes} min left" if minutes else f"about {hours} h left"


def job_eta_text(job: Job, *, now: datetime | None = None) -> str:
    return eta_text(job_eta_seconds(job, now=now))


def job_card_context(job: Job, *, user: Any = None) -> dict[str, Any]:
    """The card's context; ``user`` (the viewer) decides whether a Cancel button shows."""
    spec = job_kind(job.kind) or _FALLBACK
    context: dict[str, Any] = {
        "job": job,
        "kind": spec,
        "eta": job_eta_text(job),
        "can_cancel": (
            user is not None
            and not job.done
            and not job.cancelling
            and job_can_cancel(user=user, job=job)
        ),
    }
    if job.status == JobStatus.SUCCEEDED:
        context.update(spec.context(job=job))
    return context
