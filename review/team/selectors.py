"""The team page of a project: per annotator and per judgment task, what was done, what is in
progress, the time spent and the agreement with the outcome, and the throughput over days.

The figures, as the page defines them:

* **Done**: the annotator's submitted judgments (one per item, or per unit for tasks with
  units) made in the date range.
* **In progress**: their active assignments whose lease has not expired (now, whatever the
  range).
* **Median time**: the median of ``Judgment.seconds`` over those judgments that have a time
  recorded (0 means none was).
* **Agreement with the outcome**: of the annotator's judgments whose item (or unit) has a
  *settled* outcome (accepted or rejected, by the consensus rule or decided by a reviewer,
  with a value; pending, disputed and discarded outcomes are left out), the share whose value
  equals the outcome's value. Values compare as the consensus does: free answers (``text``)
  by their normalized form, numbers by value (1 equals 1.0); for the ``scores`` scheme a
  judgment counts for the share of the outcome's fields it gives the same score (so the
  figure is an average credit). A median-rule outcome of an even number of ratings may be a
  half value no one gave.
* **Days** are UTC calendar days; "last N days" is today and the N-1 days before it.

Speed: the figures over judgments (counts, medians, agreement, days) are computed in a few
aggregate queries and kept in the cache under a fingerprint of the tasks' judgments and
outcomes (their number, newest id and newest change), so they are recomputed only when a
judgment is submitted or an outcome changes; what moves by the minute (leases in progress,
people active this week) is read on every request.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import orjson
from django.core.cache import cache
from django.db import connection
from django.db.models import Count, DateField, Func, OuterRef, Subquery
from django.utils import timezone

from annotation.judging.consensus import normalize_answer
from annotation.judging.models import (
    Assignment,
    AssignmentStatus,
    Judgment,
    JudgmentTask,
    Outcome,
    Scheme,
)
from benchmark import permissions
from benchmark.models import Project
from benchmark.typing import AnyUser, User
from review.team.chart import Chart, Series, stacked_bars

#: The chart draws this many annotators (the most judgments in the range) and "others".
CHART_PEOPLE = 8
#: The date ranges of the filter: ``None`` is all days.
RANGES = (7, 30, None)
SETTLED = ("accepted", "rejected")
CACHE_SECONDS = 600


class UTCDay(Func):
    """The UTC calendar day of a datetime column, computed by the database (SQLite keeps UTC
    datetimes as text, so the day is its first ten characters; no per-row Python function)."""

    template = "substr(%(expressions)s, 1, 10)"
    output_field = DateField()

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        template = "(%(expressions)s AT TIME ZONE 'UTC')::date"
        return self.as_sql(compiler, connection, template=template, **extra)


@dataclass
class Figures:
    done: int = 0
    in_progress: int = 0
    median_seconds: float | None = None
    #: Judgments whose outcome is settled, and their credit for agreeing with it.
    compared: int = 0
    agreeing: float = 0.0

    @property
    def agreement(self) -> float | None:
        return self.agreeing / self.compared if self.compared else None

    @property
    def cells(self) -> list[tuple[str, str]]:
        """The table's cells, as text (``data-`` name, value)."""
        return [
            ("done", str(self.done)),
            ("in-progress", str(self.in_progress)),
            ("median", self.median_text),
            ("agreement", self.agreement_text),
            ("compared", str(self.compared)),
        ]

    @property
    def median_text(self) -> str:
        return "—" if self.median_seconds is None else f"{self.median_seconds:.1f} s"

    @property
    def agreement_text(self) -> str:
        share = self.agreement
        return "—" if share is None else f"{100 * share:.1f}%"


@dataclass
class TaskFigures:
    task: JudgmentTask
    figures: Figures


@dataclass
class AnnotatorRow:
    user_id: int
    username: str
    total: Figures
    tasks: list[TaskFigures] = field(default_factory=list)


@dataclass
class TeamReport:
    tasks: list[JudgmentTask]
    task: JudgmentTask | None
    days: int | None
    since: date | None
    rows: list[AnnotatorRow]
    totals: Figures
    active_week: int
    chart: Chart
    cached: bool


def team_tasks(*, user: AnyUser, project: Project) -> list[JudgmentTask]:
    """The project's judgment tasks, for reviewers and admins."""
    permissions.require(user=user, project=project, action="review")
    return list(JudgmentTask.objects.filter(project=project).order_by("name", "pk"))


def range_start(days: int | None, *, now: datetime | None = None) -> datetime | None:
    """The start (UTC midnight) of the last ``days`` calendar days, today included."""
    if not days:
        return None
    today = (now or timezone.now()).astimezone(UTC).date()
    start = today - timedelta(days=days - 1)
    return datetime(start.year, start.month, start.day, tzinfo=UTC)


def team_report(
    *,
    user: AnyUser,
    project: Project,
    tasks: list[JudgmentTask],
    task: JudgmentTask | None = None,
    days: int | None = None,
    now: datetime | None = None,
) -> TeamReport:
    """The team page's figures for ``tasks`` (the project's, from :func:`team_tasks`), or for
    the one ``task``, over the last ``days`` days (all days when None)."""
    permissions.require(user=user, project=project, action="review")
    now = now or timezone.now()
    chosen = [task] if task else tasks
    ids = [t.pk for t in chosen]
    since = range_start(days, now=now)
    history, active_week, cached = _history(
        project=project, tasks=tasks, chosen=chosen, since=since, now=now
    )

    cells: dict[tuple[int, int], Figures] = {
        (t, u): Figures(done=f[0], median_seconds=f[1], compared=f[2], agreeing=f[3])
        for (t, u), f in history["cells"].items()
    }
    for task_id, user_id, n in (
        Assignment.objects.filter(
            task_id__in=ids, status=AssignmentStatus.ACTIVE, expires_at__gt=now
        )
        .values_list("task_id", "user_id")
        .annotate(n=Count("id"))
        .order_by()
    ):
        cells.setdefault((task_id, user_id), Figures()).in_progress = n
    user_ids = {u for _, u in cells}
    names = dict(User.objects.filter(pk__in=user_ids).values_list("pk", "username"))
    by_task = {t.pk: t for t in chosen}
    rows: dict[int, AnnotatorRow] = {}
    for (task_id, user_id), figures in sorted(cells.items()):
        row = rows.get(user_id)
        if row is None:
            done, median, compared, agreeing = history["users"].get(user_id, (0, None, 0, 0.0))
            row = rows[user_id] = AnnotatorRow(
                user_id=user_id,
                username=names.get(user_id, f"user {user_id}"),
                total=Figures(
                    done=done, median_seconds=median, compared=compared, agreeing=agreeing
                ),
            )
        row.total.in_progress += figures.in_progress
        row.tasks.append(TaskFigures(task=by_task[task_id], figures=figures))
    ordered = sorted(rows.values(), key=lambda r: (-r.total.done, r.username.lower()))
    for row in ordered:
        row.tasks.sort(key=lambda c: (c.task.name, c.task.pk))
    done, median, compared, agreeing = history["all"]
    totals = Figures(
        done=done,
        median_seconds=median,
        compared=compared,
        agreeing=agreeing,
        in_progress=sum(r.total.in_progress for r in ordered),
    )
    chart = _chart(history["days"], names, since=since, now=now)
    return TeamReport(
        tasks=tasks,
        task=task,
        days=days,
        since=since.date() if since else None,
        rows=ordered,
        totals=totals,
        active_week=active_week,
        chart=chart,
        cached=cached,
    )


# --------------------------------------------------------------------------- the figures


def _history(
    *,
    project: Project,
    tasks: list[JudgmentTask],
    chosen: list[JudgmentTask],
    since: datetime | None,
    now: datetime,
) -> tuple[dict[str, Any], int, bool]:
    """The figures over the ``chosen`` tasks' judgments since ``since``, and the number of
    people who judged any of the project's ``tasks`` in the last 7 days; from the cache when
    no judgment was submitted and no outcome changed since they were computed. Answers them
    and whether they came from the cache."""
    if not tasks:
        return {"cells": {}, "users": {}, "all": (0, None, 0, 0.0), "days": {}}, 0, False
    ids = [t.pk for t in tasks]
    # The newest judgment and the newest change of an outcome of each task (index seeks):
    # a submitted judgment or a decided outcome changes the stamp. (A judgment deleted with its
    # item does not; the figures then follow within CACHE_SECONDS.)
    stamp = ",".join(
        f"{pk}:{j and j.timestamp()}:{o and o.timestamp()}"
        for pk, j, o in JudgmentTask.objects.filter(pk__in=ids)
        .annotate(
            j=Subquery(
                Judgment.objects.filter(task=OuterRef("pk"))
                .order_by("-created_at")
                .values("created_at")[:1]
            ),
            o=Subquery(
                Outcome.objects.filter(task=OuterRef("pk"))
                .order_by("-updated_at")
                .values("updated_at")[:1]
            ),
        )
        .values_list("pk", "j", "o")
        .order_by("pk")
    )
    today = now.astimezone(UTC).date()
    scope = ",".join(str(t.pk) for t in chosen)
    key = f"team:{project.pk}:{today}:{stamp}:{scope}:{since.date() if since else 'all'}"
    week_key = f"team-week:{project.pk}:{today}:{stamp}"
    found = cache.get_many([key, week_key])
    if key in found and week_key in found:
        return found[key], found[week_key], True
    history = found.get(key) or _compute(tasks=chosen, since=since)
    week = found.get(week_key)
    if week is None:
        week = (
            Judgment.objects.filter(task_id__in=ids, created_at__gte=range_start(7, now=now))
            .values("user_id")
            .distinct()
            .count()
        )
    cache.set_many({key: history, week_key: week}, CACHE_SECONDS)
    return history, week, False


def _compute(*, tasks: list[JudgmentTask], since: datetime | None) -> dict[str, Any]:
    ids = [t.pk for t in tasks]
    judgments = Judgment.objects.filter(task_id__in=ids)
    if since is not None:
        judgments = judgments.filter(created_at__gte=since)
    # Counts and times: one pass over (task, user, seconds), medians in Python (exact, and the
    # same on every database).
    times: dict[tuple[int, int], list[float]] = defaultdict(list)
    done: dict[tuple[int, int], int] = defaultdict(int)
    sql, params = (
        judgments.order_by().values_list("task_id", "user_id", "seconds").query.sql_with_params()
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for task_id, user_id, seconds in cursor.fetchall():
            done[task_id, user_id] += 1
            if seconds:
                times[task_id, user_id].append(seconds)
    compared, agreeing = _agreement(tasks=tasks, since=since)

    def figures(keys: list[tuple[int, int]]) -> tuple[int, float | None, int, float]:
        seconds = [s for k in keys for s in times.get(k, ())]
        return (
            sum(done[k] for k in keys),
            statistics.median(seconds) if seconds else None,
            sum(compared.get(k, 0) for k in keys),
            sum(agreeing.get(k, 0.0) for k in keys),
        )

    by_user: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for key in done:
        by_user[key[1]].append(key)
    days: dict[int, dict[date, int]] = defaultdict(dict)
    for day, user_id, n in (
        judgments.annotate(day=UTCDay("created_at"))
        .values_list("day", "user_id")
        .annotate(n=Count("*"))
        .order_by()
    ):
        days[user_id][day] = n
    return {
        "cells": {key: figures([key]) for key in done},
        "users": {user_id: figures(keys) for user_id, keys in by_user.items()},
        "all": figures(list(done)),
        "days": dict(days),
    }


def _agreement(
    *, tasks: list[JudgmentTask], since: datetime | None
) -> tuple[dict[tuple[int, int], int], dict[tuple[int, int], float]]:
    """Per (task, user): the judgments whose outcome is settled, and their credit for agreeing
    with it. The database counts each distinct (judgment value, outcome value) pair; the
    comparison, which depends on the scheme, runs once per pair here."""
    schemes = {t.pk: t.scheme for t in tasks}
    q = connection.ops.quote_name
    j, o = q(Judgment._meta.db_table), q(Outcome._meta.db_table)
    ids = list(schemes)
    sql = (
        f"SELECT j.{q('task_id')}, j.{q('user_id')}, CAST(j.{q('value')} AS TEXT), "
        f"CAST(o.{q('value')} AS TEXT), COUNT(*) "
        f"FROM {o} o JOIN {j} j ON j.{q('task_id')} = o.{q('task_id')} "
        f"AND j.{q('item_id')} = o.{q('item_id')} AND j.{q('unit')} = o.{q('unit')} "
        f"WHERE o.{q('task_id')} IN ({', '.join(['%s'] * len(ids))}) "
        f"AND o.{q('verdict')} IN (%s, %s) AND o.{q('value')} IS NOT NULL"
    )
    params: list[Any] = [*ids, *SETTLED]
    if since is not None:
        sql += f" AND j.{q('created_at')} >= %s"
        params.append(connection.ops.adapt_datetimefield_value(since))
    sql += " GROUP BY 1, 2, 3, 4"
    compared: dict[tuple[int, int], int] = defaultdict(int)
    agreeing: dict[tuple[int, int], float] = defaultdict(float)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for task_id, user_id, given, outcome, n in cursor.fetchall():
            compared[task_id, user_id] += n
            agreeing[task_id, user_id] += n * value_credit(
                schemes[task_id], _json(given), _json(outcome)
            )
    return compared, agreeing


def _json(value: Any) -> Any:
    if not isinstance(value, str | bytes):
        return value
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:  # NaN and Infinity, which json.dumps writes
        return json.loads(value)


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    return bool(a == b)


def value_credit(scheme: str, given: Any, outcome: Any) -> float:
    """How much a judgment's value agrees with the settled outcome's: 1 or 0, or for the
    ``scores`` scheme the share of the outcome's fields given the same score."""
    if scheme == Scheme.TEXT:
        return float(normalize_answer(given) == normalize_answer(outcome))
    if scheme == Scheme.SCORES and isinstance(outcome, dict):
        if not outcome or not isinstance(given, dict):
            return 0.0
        same = sum(1 for k, v in outcome.items() if k in given and _equal(given[k], v))
        return same / len(outcome)
    return float(_equal(given, outcome))


def _chart(
    days: dict[int, dict[date, int]],
    names: dict[int, str],
    *,
    since: datetime | None,
    now: datetime,
) -> Chart:
    """Judgments per day: the annotators with the most in the range, then everyone else."""
    totals = sorted(
        ((sum(d.values()), names.get(u, f"user {u}"), u) for u, d in days.items()),
        key=lambda t: (-t[0], t[1].lower()),
    )
    series = [Series(label=name, counts=days[u]) for _, name, u in totals[:CHART_PEOPLE]]
    if len(totals) > CHART_PEOPLE:
        others: dict[date, int] = defaultdict(int)
        for _, _, u in totals[CHART_PEOPLE:]:
            for day, n in days[u].items():
                others[day] += n
        series.append(Series(label=f"{len(totals) - CHART_PEOPLE} others", counts=others))
    today = now.astimezone(UTC).date()
    first = since.date() if since else min((d for c in days.values() for d in c), default=today)
    return stacked_bars(first=first, last=today, series=series)
