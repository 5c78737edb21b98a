"""Agreement studies on a judgment task: the figures, as a Job for large tasks, and the raw
judgments for anyone to recompute."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import orjson

from annotation.judgment_tasks.models import Judgment, JudgmentTask, Outcome, Scheme
from benchmark import permissions
from benchmark.exceptions import NotFound
from benchmark.formats.csv_safe import csv_row
from benchmark.jobs import services as job_services
from benchmark.jobs.kinds import Progress
from benchmark.models import Job
from benchmark.typing import User
from review import job_names

if TYPE_CHECKING:
    from benchmark.metrics.agreement import Level

# Up to this many judgments the dashboard computes on the spot; beyond, it runs as a Job.
INLINE_LIMIT = 60_000
AGREEMENT_KIND = job_names.AGREEMENT_KIND

LEVELS: dict[Scheme, Level] = {
    Scheme.BINARY: "nominal",
    Scheme.NOMINAL: "nominal",
    Scheme.ORDINAL: "ordinal",
    Scheme.NUMBER: "interval",
    Scheme.TEXT: "nominal",
    # Several scores per judgment: the whole object as one label here; the human evaluation
    # results page has the agreement on each score at its own level.
    Scheme.SCORES: "nominal",
}


def task_rows(
    task: JudgmentTask,
) -> tuple[list[tuple[Any, str, Any]], dict[Any, Any], dict[Any, float]]:
    """A task's judgments as ``(unit key, username, label)`` rows, its settled outcomes
    ``{unit key: value}`` and the judgments' seconds ``{(unit key, username): seconds}``. The
    unit key is the item id, or ``(item id, unit)`` for a task with units; dicts and lists are
    JSON text (not the outcomes'), a text task's answers normalised as the consensus rule compares them."""

    def key(item_id: int, unit: str) -> Any:
        return (item_id, unit) if task.has_units else item_id

    rows = []
    times = {}
    for item_id, unit, username, value, seconds in Judgment.objects.filter(task=task).values_list(
        "item_id", "unit", "user__username", "value", "seconds"
    ):
        if isinstance(value, list | dict):
            value = orjson.dumps(value).decode()
        rows.append((key(item_id, unit), username, value))
        if seconds:
            times[(key(item_id, unit), username)] = seconds
    final = {
        key(item_id, unit): value
        for item_id, unit, value in Outcome.objects.filter(task=task)
        .exclude(verdict__in=("pending", "disputed"))
        .exclude(value=None)
        .values_list("item_id", "unit", "value")
    }
    if task.scheme == Scheme.TEXT:
        from annotation.judgment_tasks.consensus import normalize_answer

        rows = [(i, r, normalize_answer(v)) for i, r, v in rows]
        final = {i: normalize_answer(v) for i, v in final.items()}
    return rows, final, times


def agreement_compute(*, task: JudgmentTask, bootstrap: int = 1000) -> dict[str, Any]:
    """The full agreement report of a task: raters are users, items are items (for a task
    with units, the units: ``(item id, unit key)``)."""
    rows, final, times = task_rows(task)
    categories = None
    if task.scheme == Scheme.BINARY:
        categories = [0, 1]
    elif task.scheme in (Scheme.NOMINAL, Scheme.ORDINAL):
        categories = task.label_values
    level = LEVELS[Scheme(task.scheme)]
    from benchmark.metrics.agreement import agreement_report  # lazy: NumPy, ~0.1 s

    report = agreement_report(
        rows, level, categories=categories, final=final, times=times, bootstrap=bootstrap
    )
    report["task"] = {"id": task.pk, "name": task.name, "scheme": task.scheme}
    return report


def agreement_start(*, task: JudgmentTask, user: User) -> Job:
    """Compute a large task's agreement figures as a job (reviewers and admins)."""
    permissions.require(user=user, project=task.project, action="manage_studies")
    return job_services.job_start(
        kind=AGREEMENT_KIND, user=user, project=task.project, params={"task_id": task.pk}
    )


def agreement_job(*, job: Job, progress: Progress) -> dict[str, Any]:
    """The agreement kind's runner: the report of the job's judgment task."""
    task = JudgmentTask.objects.filter(pk=job.params.get("task_id")).first()
    if task is None:
        raise NotFound("the judgment task was deleted; nothing to compute")
    progress(progress=0, message="computing the figures")
    return agreement_compute(task=task)


def _fields(task: JudgmentTask) -> list[str]:
    """The export's columns; a task with units adds ``unit`` after ``item``."""
    fields = ["item", "annotator", "value", "reason", "comment", "relabel", "seconds", "created_at"]
    return [*fields[:1], "unit", *fields[1:]] if task.has_units else fields


def judgments_rows(*, task: JudgmentTask) -> Iterator[dict[str, Any]]:
    rows = (
        Judgment.objects.filter(task=task)
        .order_by("item__position", "item_id", "unit", "created_at")
        .values_list(
            "item__external_id", "unit", "user__username", "value", "reason", "comment",
            "relabel", "seconds", "created_at",
        )
    )  # fmt: skip
    for ext, unit, user, value, reason, comment, relabel, seconds, created in rows.iterator(2000):
        row = {"item": ext, "unit": unit} if task.has_units else {"item": ext}
        yield {
            **row,
            "annotator": user,
            "value": value,
            "reason": reason,
            "comment": comment,
            "relabel": relabel,
            "seconds": seconds,
            "created_at": created.isoformat(),
        }


def judgments_jsonl(*, task: JudgmentTask) -> Iterator[bytes]:
    for row in judgments_rows(task=task):
        yield orjson.dumps(row) + b"\n"


def judgments_csv(*, task: JudgmentTask) -> Iterator[str]:
    """The judgments as CSV, safe to open in a spreadsheet: cells that would start a formula
    are prefixed with a quote (``csv_cell``), and every data cell is quoted."""
    buffer = io.StringIO()
    fields = _fields(task)
    csv.writer(buffer).writerow(fields)
    writer = csv.DictWriter(buffer, fieldnames=fields, quoting=csv.QUOTE_ALL)
    for row in judgments_rows(task=task):
        row["value"] = (
            row["value"] if isinstance(row["value"], str) else orjson.dumps(row["value"]).decode()
        )
        row["relabel"] = orjson.dumps(row["relabel"]).decode() if row["relabel"] else ""
        writer.writerow(csv_row(row))
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()
