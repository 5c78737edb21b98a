"""The job-kind registry: what the one job pipeline needs to know about each kind of job.

A kind declares its runner (``runner(job=..., progress=...)`` returns the result dict to record;
a DomainError it raises is the message the user reads), the project action a user needs to see
a job of the kind (``benchmark.permissions.ACTIONS``), whether the user who started it sees it
whatever their role, an optional narrower scope (a hook, e.g. model calls: only on items the
user may view), its time limit, the folder area its uploads go to and the template fragment
that shows its outcome in the job card.

Apps register their kinds in ``AppConfig.ready()``, so ``benchmark`` never imports the apps
that build on it; callables may be given as dotted paths, imported on first use (a runner's
module often imports heavy code or the services that start the job).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils.module_loading import import_string

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from benchmark.models import Job
    from benchmark.typing import AnyUser

#: ``progress(progress=n, total=None, message="")``: record progress (and the heartbeat).
Progress = Callable[..., None]
Runner = Callable[..., dict[str, Any]]
#: ``scope(user=..., jobs=...)``: the jobs of this kind the user may see, narrowed further.
Scope = Callable[..., "QuerySet[Job]"]
#: ``context(job=...)``: extra template context for the kind's result fragment.
Context = Callable[..., dict[str, Any]]


def _resolve(value: Any) -> Any:
    return import_string(value) if isinstance(value, str) else value


@dataclass(frozen=True)
class JobKind:
    name: str
    #: ``runner(job=..., progress=...) -> dict``; a callable or its dotted path.
    runner: Runner | str
    #: The project action a user needs to see the job (``benchmark.permissions.ACTIONS``).
    action: str
    #: The user who started the job sees it too, whatever their role now.
    starter_sees: bool = False
    #: Narrows the visible jobs further (a callable or dotted path, see ``Scope``).
    scope: Scope | str | None = None
    #: The hard time limit in seconds; None means CELERY_TASK_TIME_LIMIT.
    time_limit: int | None = None
    #: Uploads go to MEDIA_ROOT/<upload_area>/<job id>/ and are removed when the job ends.
    upload_area: str = ""
    #: The fragment the job card includes once the job is done (succeeded or failed).
    result_template: str = "partials/job_result.html"
    #: Extra context for that fragment (a callable or dotted path, see ``Context``).
    result_context: Context | str | None = None
    #: The card's title ("Import job #12") and what ``progress`` counts ("records").
    title: str = ""
    unit: str = ""
    #: An htmx event the poll triggers when a job of this kind is done (pages listen to it).
    done_event: str = ""
    #: A running job whose worker died (silent for ``silent_limit``) is queued again, for any
    #: worker to take, up to this many times before the sweep fails it; its runner must pick
    #: up where the lost run stopped (0: the job fails at once, as most kinds do).
    retakes: int = 0
    #: Seconds without a progress report after which a running job counts as lost; its
    #: runner reports at least this often, also while it waits. None: the time limit plus
    #: ``benchmark.jobs.services.JOB_STALE_MARGIN`` (a living task cannot outrun its limit).
    silent_limit: int | None = None

    def run(self, *, job: Job, progress: Progress) -> dict[str, Any]:
        result = _resolve(self.runner)(job=job, progress=progress)
        return dict(result or {})

    def limit(self) -> int:
        return int(self.time_limit or settings.CELERY_TASK_TIME_LIMIT)

    def narrow(self, *, user: AnyUser, jobs: QuerySet[Job]) -> QuerySet[Job]:
        return jobs if self.scope is None else _resolve(self.scope)(user=user, jobs=jobs)

    def context(self, *, job: Job) -> dict[str, Any]:
        if self.result_context is None:
            return {}
        return dict(_resolve(self.result_context)(job=job))

    @property
    def label(self) -> str:
        return self.title or self.name.replace("_", " ").capitalize()


_KINDS: dict[str, JobKind] = {}


def job_kind_register(kind: JobKind) -> JobKind:
    """Register (or replace, for a reloaded app) a kind of job."""
    from benchmark.permissions import ACTIONS

    if kind.action not in ACTIONS:
        raise ValueError(f"job kind {kind.name!r}: unknown action {kind.action!r}")
    _KINDS[kind.name] = kind
    return kind


def job_kind(name: str) -> JobKind | None:
    """The registered kind of that name, or None (a job of an unknown kind: only the user who
    started it sees it, and no worker runs it)."""
    return _KINDS.get(name)


def job_kinds() -> list[JobKind]:
    return list(_KINDS.values())
