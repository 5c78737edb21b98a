"""The one job pipeline. A slow action is a Job row and one Celery task that takes its id:

    job_start (create the row, place the uploads, enqueue after commit)
    -> job_run in the worker (claim it, guarded on status; the kind's runner with a progress
       callback whose every report is the heartbeat; finish with the result, or fail with a
       domain error's message or a generic one for an unexpected error, logged with its
       traceback; remove the job's upload folder)

Uploaded files are placed in a local folder; on object storage (``benchmark.storage``) the
pipeline uploads that folder to <area>/<job id>/ in the storage when the job starts, and the
worker that runs the job downloads it into its own local folder first (rewriting the paths in
the job's params when its MEDIA_ROOT differs), so any worker machine can run any job. The
storage copy is removed with the local folder when the job ends.
    -> jobs_sweep (on every poll, and from cron): a job whose worker died is failed and its
       upload folder removed.

What differs per kind (runner, who may see it, time limit, upload area, result fragment) is
declared once in ``benchmark.jobs.kinds``.

Cancelling (``job_cancel``): a queued job is failed at once ("Cancelled by ...", its result
``{"cancelled": true}``) and ``job_claim`` never starts it; a running job gets a cancel request
on its row, and its next progress report raises :class:`JobCancelled` in the runner, which
``job_run`` records the same way (after cleaning up). A cancelled job is a failed job, so every
page that shows a failed job's message shows who cancelled it; ``Job.cancelled`` tells them
apart."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import (
    Any,
)

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections, models, transaction
from django.db.models.sql.subqueries import UpdateQuery
from django.utils import timezone

from benchmark import permissions
from benchmark.exceptions import (
    Conflict,
    DomainError,
    Forbidden,
)
from benchmark.formats import FormatError
from benchmark.jobs.kinds import JobKind, job_kind
from benchmark.jobs.uploads import upload_folder, upload_folder_remove
from benchmark.models import (
    Job,
    JobStatus,
    Project,
)
from benchmark.storage import (
    storage_delete_prefix,
    storage_get_tree,
    storage_is_local,
    storage_put_tree,
)
from benchmark.typing import User

log = logging.getLogger(__name__)

#: ``uploads(folder)``: place the uploaded files under the job's (not yet existing) folder
#: with the helpers of ``benchmark.jobs.uploads`` and return the params saying where they are.
Placement = Callable[[Path], dict[str, Any]]


def job_create(
    *,
    kind: str,
    user: User | None = None,
    project: Project | None = None,
    params: dict[str, Any] | None = None,
    total: int = 0,
    message: str = "",
) -> Job:
    """The bare row, nothing enqueued (``job_start`` is the pipeline's way in)."""
    return Job.objects.create(
        kind=kind,
        created_by=user,
        project=project,
        params=params or {},
        total=total,
        message=message,
    )


def job_start(
    *,
    kind: str,
    user: User | None,
    project: Project | None = None,
    params: dict[str, Any] | None = None,
    uploads: Placement | None = None,
    total: int = 0,
) -> Job:
    """Start a job of a registered kind: create its row ("queued"), let ``uploads`` place the
    uploaded files in the job's folder (MEDIA_ROOT/<the kind's upload area>/<job id>/), and
    enqueue the one job task when the current transaction commits (at once outside one).

    Placement runs in whatever transaction the caller holds (none is opened here, so a large
    upload is unpacked outside any transaction when the caller holds none). If it raises,
    the folder and the row are removed and the error propagates (a ValidationFailed naming
    the bad file is the user's message)."""
    spec = job_kind(kind)
    if spec is None:
        raise ValueError(f"no job kind {kind!r} is registered")
    job = job_create(
        kind=kind, user=user, project=project, params=params, total=total, message="queued"
    )
    if uploads is not None:
        if not spec.upload_area:
            raise ValueError(f"jobs of kind {kind!r} take no uploads (no upload area)")
        folder = upload_folder(spec.upload_area, job.pk)
        try:
            placed = uploads(folder)
            if not storage_is_local():  # object storage: any worker machine reads them there
                storage_put_tree(folder, _upload_prefix(spec, job.pk))
                upload_folder_remove(folder=str(folder), area=spec.upload_area)
                placed = {**placed, UPLOAD_ROOT: str(folder)}
        except BaseException:
            job_cleanup(job=job)
            job.delete()
            raise
        job.params = {**job.params, **placed}
        job.save(update_fields=["params"])
    job_id = job.pk
    transaction.on_commit(lambda: _enqueue(job_id, spec))
    return job


def _enqueue(job_id: int, spec: JobKind) -> None:
    # Celery loads here (with the task module), not at start-up.
    from benchmark.jobs.tasks import job_task  # the task module imports this one

    limit = spec.limit()
    job_task.apply_async((job_id,), time_limit=limit, soft_time_limit=max(limit - 60, 1))


def _progress_fields(progress: int, total: int | None = None, message: str = "") -> dict[str, Any]:
    fields: dict[str, Any] = {"progress": progress, "heartbeat_at": timezone.now()}
    if total is not None:
        fields["total"] = total
    if message:
        fields["message"] = message[:500]
    return fields


def job_progress(
    *, job_id: int, progress: int, total: int | None = None, message: str = ""
) -> None:
    """Record progress; every report is also the job's heartbeat (``heartbeat_at``)."""
    Job.objects.filter(pk=job_id).update(**_progress_fields(progress, total, message))


class JobCancelled(Exception):  # noqa: N818 - reads as what happened, like SoftTimeLimitExceeded
    """Raised by the progress callback when someone asked to cancel the job: the runner stops
    where it is (``finally`` blocks and transactions unwind as for any error) and ``job_run``
    records the job as cancelled. Runners must not swallow it."""

    def __init__(self, job_id: int) -> None:
        self.job_id = job_id
        super().__init__(f"job #{job_id} was cancelled")


class JobProgress:
    """The progress callback a runner gets: ``progress(progress=n, total=..., message=...)``.
    It raises :class:`JobCancelled` when a cancel was requested (the report is written only
    while none is: the same single UPDATE, so checking costs no extra query).

    Progress must be readable by the polling request while the runner is still writing. Outside
    a transaction every report commits at once. Inside one (an import writes all or nothing in
    one transaction), a report written on the runner's connection would stay invisible until
    the end, so on PostgreSQL (and any database that takes concurrent writers) it goes through
    a second, autocommit connection to the same database, opened on the first such report and
    closed with ``close()``. (When that connection cannot see the row, because the job was
    created in the very transaction that is running, as in tests, the report falls back to
    the runner's connection.)

    SQLite allows one writer at a time: a second connection would wait for the import's write
    lock and fail with "database is locked". There a report inside a transaction is written in
    that transaction and shows when it commits: the import (one pass, in one transaction) shows
    "writing" until its write commits. A worker cannot outlive its time limit, so the missing
    heartbeats during the write never make the sweep fail a living job."""

    def __init__(self, job_id: int) -> None:
        self.job_id = job_id
        self._side: Any = None

    def __call__(self, *, progress: int, total: int | None = None, message: str = "") -> None:
        fields = _progress_fields(progress, total, message)
        aside = connection.in_atomic_block and connection.vendor != "sqlite"
        if aside and self._write_aside(fields):
            return
        written = Job.objects.filter(self._live()).update(**fields)
        # No row written: the job is gone, or it has a cancel request.
        if not written and self._cancel_requested():
            raise JobCancelled(self.job_id)

    def _cancel_requested(self) -> bool:
        return Job.objects.filter(pk=self.job_id, cancel_requested_at__isnull=False).exists()

    def _live(self) -> models.Q:
        return models.Q(pk=self.job_id, cancel_requested_at__isnull=True)

    def _write_aside(self, fields: dict[str, Any]) -> bool:
        if self._side is None:
            self._side = connections.create_connection(DEFAULT_DB_ALIAS)
        query = UpdateQuery(Job)
        query.add_update_values(fields)
        query.add_q(self._live())
        sql, params = query.get_compiler(connection=self._side).as_sql()
        with self._side.cursor() as cursor:
            cursor.execute(sql, params)
            return bool(cursor.rowcount)

    def close(self) -> None:
        if self._side is not None:
            self._side.close()
            self._side = None


def job_claim(*, job_id: int) -> bool:
    """Mark a queued job running. False when it is not queued (a repeat delivery)."""
    now = timezone.now()
    return bool(
        Job.objects.filter(pk=job_id, status=JobStatus.QUEUED).update(
            status=JobStatus.RUNNING, started_at=now, heartbeat_at=now
        )
    )


def job_time_limit(kind: str) -> int:
    """The hard time limit in seconds of the task that runs jobs of ``kind``."""
    spec = job_kind(kind)
    return spec.limit() if spec is not None else int(settings.CELERY_TASK_TIME_LIMIT)


def job_soft_time_limit(kind: str) -> int:
    """A minute before the hard limit: the task gets SoftTimeLimitExceeded and records it."""
    return max(job_time_limit(kind) - 60, 1)


#: The params key holding the local folder the uploads were placed in, when they were moved
#: to object storage (the worker downloads them and rewrites paths below it).
UPLOAD_ROOT = "upload_root"


def _upload_prefix(spec: JobKind, job_id: int) -> str:
    return f"{spec.upload_area}/{job_id}"


def _rewrite(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str) and (value == old or value.startswith(old + "/")):
        return new + value[len(old) :]
    if isinstance(value, list):
        return [_rewrite(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _rewrite(v, old, new) for k, v in value.items()}
    return value


def job_uploads_fetch(*, job: Job) -> None:
    """On object storage, download the job's uploads into this machine's job folder and point
    the params' paths at it (in memory: the row keeps what the web process wrote)."""
    spec = job_kind(job.kind)
    old = job.params.get(UPLOAD_ROOT)
    if spec is None or not spec.upload_area or not old or storage_is_local():
        return
    local = upload_folder(spec.upload_area, job.pk)
    upload_folder_remove(folder=str(local), area=spec.upload_area)
    storage_get_tree(_upload_prefix(spec, job.pk), local)
    job.params = _rewrite(job.params, str(old), str(local))


def job_cleanup(*, job: Job) -> None:
    """Remove the job's upload folder (and its copy on object storage), if its kind takes
    uploads (idempotent)."""
    spec = job_kind(job.kind)
    if spec is not None and spec.upload_area:
        upload_folder_remove(
            folder=str(upload_folder(spec.upload_area, job.pk)), area=spec.upload_area
        )
        if not storage_is_local():
            storage_delete_prefix(_upload_prefix(spec, job.pk))


#: How much longer than its task's time limit a running job may stay silent before it counts
#: as lost; also how long a queued job may wait when tasks run in-process (no broker).
JOB_STALE_MARGIN = 5 * 60


#: How long a queued job may wait for a worker when a broker is configured.
JOB_QUEUED_LIMIT = 24 * 60 * 60


def _silent_since(cutoff: datetime) -> models.Q:
    """Jobs whose last sign of life (heartbeat, else start, else creation) is before
    ``cutoff``."""
    return (
        models.Q(heartbeat_at__lt=cutoff)
        | models.Q(heartbeat_at__isnull=True, started_at__lt=cutoff)
        | models.Q(heartbeat_at__isnull=True, started_at__isnull=True, created_at__lt=cutoff)
    )


#: The params key counting how many times the sweep queued a lost job again.
RETAKEN = "retaken"


def _running_limit(kind: str) -> int:
    """Seconds a running job of ``kind`` may stay silent before it counts as lost."""
    spec = job_kind(kind)
    if spec is not None and spec.silent_limit:
        return int(spec.silent_limit)
    return job_time_limit(kind) + JOB_STALE_MARGIN


def _lost_text(kind: str, silent: float) -> str:
    spec = job_kind(kind)
    if spec is not None and spec.silent_limit:
        why = f"longer than the {int(spec.silent_limit) // 60} minutes its runner may stay silent"
    else:
        why = f"longer than the task's {job_time_limit(kind) // 60}-minute time limit"
    return (
        "The worker stopped while running this job; retry. (No progress report for "
        f"{silent / 60:.0f} minutes, {why}.)"
    )


def jobs_sweep(*, now: datetime | None = None) -> list[int]:
    """Deal with every running job silent for longer than its kind allows (``_running_limit``:
    its worker died or was killed) and every queued job no worker started in time. A lost
    job of a kind that declares ``retakes`` is queued again for any worker to take (its
    runner picks up where it stopped), up to that many times; every other one is marked
    failed and its upload folder removed (nobody will read it now). Returns the ids of the
    jobs changed (failed or queued again). Reads first and writes only when something is
    stale, so polling it costs one indexed query."""
    now = now or timezone.now()
    candidates = list(
        Job.objects.filter(status__in=[JobStatus.RUNNING, JobStatus.QUEUED]).values_list(
            "pk", "kind", "status", "heartbeat_at", "started_at", "created_at"
        )
    )
    eager = getattr(settings, "CELERY_TASK_ALWAYS_EAGER", False)
    queued_limit = JOB_STALE_MARGIN if eager else JOB_QUEUED_LIMIT
    swept: list[int] = []
    for pk, kind, status, heartbeat, started, created in candidates:
        last = heartbeat or started or created
        silent = (now - last).total_seconds()
        if status == JobStatus.RUNNING:
            limit = _running_limit(kind)
            error = _lost_text(kind, silent)
        else:
            limit = queued_limit
            error = (
                "No worker started this job; retry. (It waited "
                f"{silent / 60:.0f} minutes; is the Celery worker running?)"
            )
        cutoff = now - timedelta(seconds=limit)
        if last >= cutoff:
            continue
        if status == JobStatus.RUNNING:
            taken, error = _retake(pk, kind, cutoff, now, error)
            if taken is not None:  # queued again (True), or it turned out alive (False)
                if taken:
                    swept.append(pk)
                continue
        # Guarded on the state read: a job that reported or finished meanwhile is left alone.
        changed = (
            Job.objects.filter(pk=pk, status=status)
            .filter(_silent_since(cutoff))
            .update(
                status=JobStatus.FAILED,
                error=error,
                message="",
                result={"worker_lost": True},
                finished_at=now,
            )
        )
        if changed:
            swept.append(pk)
            job_cleanup(job=Job(pk=pk, kind=kind))
    return swept


def _retake(
    pk: int, kind: str, cutoff: datetime, now: datetime, error: str
) -> tuple[bool | None, str]:
    """Queue the lost running job ``pk`` again when its kind takes lost jobs again and it has
    retakes left (not when someone asked to cancel it): (True, ""); (False, "") when it
    reported or finished meanwhile. Else (None, the message to fail it with: ``error``,
    saying so when its retakes are used up)."""
    spec = job_kind(kind)
    if spec is None or spec.retakes <= 0:
        return None, error
    row = Job.objects.filter(pk=pk).values("params", "cancel_requested_at").first()
    if row is None or row["cancel_requested_at"] is not None:
        return None, error
    params = dict(row["params"] or {})
    taken = int(params.get(RETAKEN) or 0)
    if taken >= spec.retakes:
        return None, (
            f"{error} It was taken again {taken} time{'s' if taken != 1 else ''} after its "
            "worker stopped, the most its kind allows; what it finished is kept."
        )
    changed = (
        Job.objects.filter(pk=pk, status=JobStatus.RUNNING, cancel_requested_at__isnull=True)
        .filter(_silent_since(cutoff))
        .update(
            status=JobStatus.QUEUED,
            params={**params, RETAKEN: taken + 1},
            heartbeat_at=now,
            message=(f"queued again: its worker stopped (retake {taken + 1} of {spec.retakes})")[
                :500
            ],
        )
    )
    if not changed:  # it reported or finished meanwhile: alive after all
        return False, ""
    log.warning("job %s (%s): worker lost; queued again (%s of %s)", pk, kind, taken + 1,
                spec.retakes)  # fmt: skip
    transaction.on_commit(lambda: _enqueue(pk, spec))
    return True, ""


def job_refresh(*, job: Job) -> Job:
    """For a polled job: sweep lost jobs first, so a job whose worker died answers failed
    instead of polling forever (no beat scheduler needed). Returns the job as stored now."""
    if job.done:
        return job
    if job.pk in jobs_sweep():
        job.refresh_from_db()
    return job


def job_finish(*, job_id: int, result: dict[str, Any] | None = None, error: str = "") -> None:
    job = Job.objects.get(pk=job_id)
    job.status = JobStatus.FAILED if error else JobStatus.SUCCEEDED
    job.error = error
    job.result = result or {}
    if not error and job.total:
        job.progress = job.total
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "error", "result", "progress", "finished_at"])


def job_can_cancel(*, user: Any, job: Job) -> bool:
    """Whether ``user`` may cancel ``job`` (one they may see, the caller checked that): the
    user who started it, or a reviewer or admin of its project. Says nothing of its state."""
    if not getattr(user, "is_authenticated", False):
        return False
    if job.created_by_id is not None and job.created_by_id == user.pk:
        return True
    project = job.project
    return project is not None and permissions.can(user=user, project=project, action="watch_jobs")


def _cancelled_text(user: Any, *, queued: bool) -> str:
    who = user.get_username() if user is not None else "someone"
    return f"Cancelled by {who}" + (" before it started." if queued else ".")


def job_cancel(*, job: Job, user: User) -> Job:
    """Cancel a job the user may see (the caller looked it up through
    ``benchmark.jobs.selectors.job_get``). A queued job is failed at once and never runs; a
    running job is asked to stop and stops at its next progress report (``JobCancelled``);
    asking again changes nothing. Forbidden unless the user started the job or reviews its
    project; Conflict when the job has already ended. Returns the job as stored now."""
    if not job_can_cancel(user=user, job=job):
        raise Forbidden(
            "only the user who started this job, or a reviewer of its project, may cancel it"
        )
    now = timezone.now()
    # A queued job: failed before any worker claims it (job_claim wants "queued").
    stopped = Job.objects.filter(pk=job.pk, status=JobStatus.QUEUED).update(
        status=JobStatus.FAILED,
        error=_cancelled_text(user, queued=True),
        message="",
        result={"cancelled": True, "cancelled_by": user.get_username()},
        cancel_requested_at=now,
        cancel_requested_by=user,
        finished_at=now,
    )
    if stopped:
        job_cleanup(job=job)
    else:
        # A running job (or one a worker claimed meanwhile): ask it to stop.
        Job.objects.filter(
            pk=job.pk, status=JobStatus.RUNNING, cancel_requested_at__isnull=True
        ).update(cancel_requested_at=now, cancel_requested_by=user)
    job.refresh_from_db()
    if job.done and not job.cancelled:
        raise Conflict(f"job #{job.pk} has already {job.status}; there is nothing to cancel")
    return job


class _NotRaised(Exception):
    """Stands for Celery's soft time limit where Celery is not loaded (nothing raises it)."""


def _soft_time_limit() -> type[BaseException]:
    """Celery's SoftTimeLimitExceeded in a worker (which has Celery loaded already); in a
    process that never loaded Celery (the command line) nothing can raise it, and importing
    Celery only to name it would cost a tenth of a second."""
    module = sys.modules.get("celery.exceptions")
    if module is None:
        return _NotRaised
    return module.SoftTimeLimitExceeded  # type: ignore[no-any-return]


def job_run(*, job_id: int) -> None:
    """The body of the one job task. Nothing when the job is not queued (a repeated delivery,
    or a job the sweep failed). Otherwise the kind's runner gets the job and a progress
    callback; what it returns is the job's result. A DomainError (or a format reader's
    FormatError) is the user's message; a time limit says so; anything else is logged with
    its traceback and the job gets a generic message naming the job. The upload folder is
    removed before the job is marked done, so a finished job never leaves files behind."""
    soft_time_limit = _soft_time_limit()
    if not job_claim(job_id=job_id):
        return
    job = Job.objects.select_related("project", "created_by").get(pk=job_id)
    spec = job_kind(job.kind)
    progress = JobProgress(job_id)
    result: dict[str, Any] | None = {}
    error = ""
    try:
        if spec is None:
            raise DomainError(f"no runner is registered for jobs of kind {job.kind!r}")
        job_uploads_fetch(job=job)
        result = spec.run(job=job, progress=progress)
    except JobCancelled:
        who = Job.objects.select_related("cancel_requested_by").get(pk=job_id).cancel_requested_by
        error = _cancelled_text(who, queued=False)
        result = {"cancelled": True, "cancelled_by": who.get_username() if who else None}
    except DomainError as exc:
        error, result = exc.message or exc.__class__.__name__, None
    except FormatError as exc:
        error, result = str(exc), None
    except soft_time_limit:
        result = None
        minutes = job_time_limit(job.kind) // 60
        error = (
            f"The job ran into its {minutes}-minute time limit and was stopped; nothing more "
            "was done. Retry with less data, or run it from the command line."
        )
    except Exception as exc:  # noqa: BLE001 - the job row must say that it failed
        log.exception("job %s (%s) failed", job_id, job.kind)
        result = None
        error = (
            f"unexpected error ({exc.__class__.__name__}) in job #{job_id}; the server log has "
            "the details. Retry, and tell an administrator if it happens again."
        )
    finally:
        progress.close()
        job_cleanup(job=job)
    job_finish(job_id=job_id, result=result, error=error)
