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
* **Where the time goes** (per task, that is per judging screen): the judgments with a time
  recorded, their mean seconds per item and the hours they add up to, the slowest screen
  first, so the team sees which step to make faster. Read by the same grouped query.

Speed: everything is computed on every request (no cache), from indexes alone, in a number
of queries that does not grow with the annotators: one grouped read of the judgments per
(task, annotator, day) gives the counts, the throughput and the agreement, because each
judgment stores its credit (``Judgment.agrees``, written by the services that write outcomes,
``annotation.judgment_tasks.services.judgment_agreement_sync``) and its UTC day (``Judgment.day``, a
column the database derives); one more query reads each median at its rank from an index
ordered by time.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import Count
from django.utils import timezone

from annotation.judgment_tasks.models import (
    Assignment,
    AssignmentStatus,
    Judgment,
    JudgmentTask,
)
from benchmark import permissions
from benchmark.models import Project
from benchmark.typing import AnyUser, User
from review.team.chart import Chart, Series, stacked_bars

#: The chart draws this many annotators (the most judgments in the range) and "others".
CHART_PEOPLE = 8
#: The date ranges of the filter: ``None`` is all days.
RANGES = (7, 30, None)


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

    @property
    def several(self) -> bool:
        """Whether the row stands for several tasks (shown as "all tasks", then one per task)."""
        return len(self.tasks) > 1


@dataclass
class ScreenTime:
    """The time spent on one task's judging screen in the range."""

    task: JudgmentTask
    timed: int
    seconds: float
    #: this screen's share of all the time recorded in the range
    share: float

    @property
    def mean_seconds(self) -> float:
        return self.seconds / self.timed if self.timed else 0.0

    @property
    def hours(self) -> float:
        return self.seconds / 3600

    @property
    def items_per_hour(self) -> float | None:
        return 3600 / self.mean_seconds if self.mean_seconds else None

    @property
    def screen(self) -> str:
        """What the screen asks, in words: what one judgment is about and its answer scheme."""
        return f"{self.task.get_unit_kind_display()} · {self.task.get_scheme_display()}"


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
    screens: list[ScreenTime] = field(default_factory=list)


def team_tasks(*, user: AnyUser, project: Project) -> list[JudgmentTask]:
    """The project's judgment tasks, for reviewers and admins."""
    permissions.require(user=user, project=project, action="manage_studies")
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
    permissions.require(user=user, project=project, action="manage_studies")
    now = now or timezone.now()
    chosen = [task] if task else tasks
    ids = [t.pk for t in chosen]
    since = range_start(days, now=now)
    history, active_week = _history(
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
    spent = history.get("task_time", {})
    all_seconds = sum(s for _, s in spent.values()) or 0.0
    screens = sorted(
        (
            ScreenTime(
                task=by_task[t],
                timed=n,
                seconds=s,
                share=s / all_seconds if all_seconds else 0.0,
            )
            for t, (n, s) in spent.items()
            if n and t in by_task
        ),
        key=lambda st: (-st.mean_seconds, st.task.name),
    )
    return TeamReport(
        tasks=tasks,
        task=task,
        days=days,
        since=since.date() if since else None,
        rows=ordered,
        totals=totals,
        active_week=active_week,
        chart=chart,
        screens=screens,
    )


# --------------------------------------------------------------------------- the figures


def _history(
    *,
    project: Project,
    tasks: list[JudgmentTask],
    chosen: list[JudgmentTask],
    since: datetime | None,
    now: datetime,
) -> tuple[dict[str, Any], int]:
    """The figures over the ``chosen`` tasks' judgments since ``since``, and the number of
    people who judged any of the project's ``tasks`` in the last 7 days. Computed on every
    request, in three queries whatever the number of annotators (see :func:`_compute`)."""
    if not tasks:
        return {"cells": {}, "users": {}, "all": (0, None, 0, 0.0), "days": {}}, 0
    history = _compute(tasks=chosen, since=since)
    week_start = range_start(7, now=now)
    assert week_start is not None
    if len(chosen) == len(tasks) and (since is None or since <= week_start):
        # Every range holds the last 7 days: the days counted say who judged in them.
        first = week_start.date()
        week = sum(1 for d in history["days"].values() if any(day >= first for day in d))
    else:
        week = (
            Judgment.objects.filter(task_id__in=[t.pk for t in tasks], created_at__gte=week_start)
            .values("user_id")
            .distinct()
            .count()
        )
    return history, week


Cell = tuple[int, int]
#: What a median is of: a (task, annotator) cell, an annotator (all tasks), or "all".
Scope = Cell | int | str


def _compute(*, tasks: list[JudgmentTask], since: datetime | None) -> dict[str, Any]:
    """Per (task, annotator) and per day, from the index ``judgment_team_day_idx`` alone: the
    judgments, those with a time, those compared with a settled outcome and their credit
    (``Judgment.agrees``, kept by the services that write outcomes); then the medians."""
    ids = [t.pk for t in tasks]
    done: dict[Cell, int] = defaultdict(int)
    timed: dict[Cell, int] = defaultdict(int)
    compared: dict[Cell, int] = defaultdict(int)
    agreeing: dict[Cell, float] = defaultdict(float)
    task_time: dict[int, list[float]] = defaultdict(lambda: [0, 0.0])
    days: dict[int, dict[date, int]] = defaultdict(lambda: defaultdict(int))
    q = connection.ops.quote_name
    task, user, day_column = q("task_id"), q("user_id"), q("day")
    seconds, agrees, created = q("seconds"), q("agrees"), q("created_at")
    # Grouped in the index's order (no sort); SQLite's driver would parse each row's day
    # (a date column), so it is read as text there and parsed once per day below.
    sql = (
        f"SELECT {task}, {user}, "
        + (f"CAST({day_column} AS TEXT)" if connection.vendor == "sqlite" else day_column)
        + f", COUNT(*), COUNT(CASE WHEN {seconds} > 0 THEN 1 END), COUNT({agrees}), "
        f"SUM({agrees}), SUM(CASE WHEN {seconds} > 0 THEN {seconds} END) "
        f"FROM {q(Judgment._meta.db_table)} "
        f"WHERE {task} IN ({', '.join(['%s'] * len(ids))})"
    )
    params: list[Any] = list(ids)
    if since is not None:
        sql += f" AND {created} >= %s"
        params.append(connection.ops.adapt_datetimefield_value(since))
    sql += f" GROUP BY {task}, {user}, {day_column}"
    with connection.cursor() as cursor:  # no per-row converters: a day is read once
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    as_date: dict[Any, date] = {}
    for task_id, user_id, day, n, n_timed, n_compared, credit, spent in rows:
        key = (task_id, user_id)
        task_time[task_id][0] += n_timed
        task_time[task_id][1] += spent or 0.0
        done[key] += n
        timed[key] += n_timed
        compared[key] += n_compared
        agreeing[key] += credit or 0.0
        if day not in as_date:
            as_date[day] = day if isinstance(day, date) else date.fromisoformat(day)
        days[user_id][as_date[day]] += n
    medians = _medians(ids=ids, since=since, timed=timed)
    by_user: dict[int, list[Cell]] = defaultdict(list)
    for key in done:
        by_user[key[1]].append(key)

    def figures(keys: list[Cell], median: float | None) -> tuple[int, float | None, int, float]:
        return (
            sum(done[k] for k in keys),
            median,
            sum(compared[k] for k in keys),
            sum(agreeing[k] for k in keys),
        )

    return {
        "cells": {key: figures([key], medians.get(key)) for key in done},
        "users": {u: figures(keys, medians.get(u)) for u, keys in by_user.items()},
        "all": figures(list(done), medians.get("all")),
        "days": {u: dict(d) for u, d in days.items()},
        "task_time": {t: (int(n), float(s)) for t, (n, s) in task_time.items()},
    }


def _medians(
    *, ids: list[int], since: datetime | None, timed: dict[Cell, int]
) -> dict[Scope, float]:
    """The exact median of the times recorded (``seconds`` > 0) per (task, annotator), per
    annotator and over all, in one query: each is the mean of the values at the middle ranks,
    and each value is read at its rank from an index ordered by time (``judgment_user_secs_idx``
    and ``judgment_task_secs_idx``; the tasks' ranks merge in order), so nothing is sorted and
    no time is fetched but those. ``timed``: the number of times recorded per cell."""
    users: dict[int, int] = defaultdict(int)
    for (_, user_id), n in timed.items():
        users[user_id] += n
    counts: dict[Scope, int] = {u: n for u, n in users.items() if n}
    if len(ids) > 1:
        counts.update({cell: n for cell, n in timed.items() if n})
    counts["all"] = sum(users.values())
    if not counts["all"]:
        return {}
    keys = list(counts)
    if connection.vendor == "postgresql":
        sql, params = _middles_sql_postgresql(ids=ids, since=since, keys=keys, counts=counts)
    else:
        subqueries = _middle_subqueries(ids=ids, since=since, counts=counts)
        sql = "VALUES " + ", ".join(f"({i}, {subqueries[key][0]})" for i, key in enumerate(keys))
        params = [p for key in keys for p in subqueries[key][1]]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        middle = {keys[i]: value for i, value in cursor.fetchall()}
    # The middle value, or the sum of the two middle values (as statistics.median adds them).
    out: dict[Scope, float] = {
        scope: middle[scope] if n % 2 else middle[scope] / 2 for scope, n in counts.items()
    }
    if len(ids) == 1:  # one task: an annotator's cell holds all their judgments
        out.update({(ids[0], u): out[u] for u in users if u in out})
    return out


class _Times:
    """The SQL reading the judgments' recorded times (of the tasks ``ids``, since ``since``)
    that match a condition."""

    def __init__(self, *, ids: list[int], since: datetime | None) -> None:
        q = connection.ops.quote_name
        self.table, self.seconds = q(Judgment._meta.db_table), q("seconds")
        self.task, self.user = q("task_id"), q("user_id")
        self.after = f" AND {q('created_at')} >= %s" if since is not None else ""
        self.stamp = [connection.ops.adapt_datetimefield_value(since)] if since is not None else []
        self.ids = ids
        self.in_tasks = f"{self.task} IN ({', '.join(['%s'] * len(ids))})"

    def __call__(self, where: str, params: list[Any]) -> tuple[str, list[Any]]:
        sql = f"SELECT {self.seconds} FROM {self.table} WHERE {where} AND {self.seconds} > 0"
        return sql + self.after, [*params, *self.stamp]

    def merged(self) -> tuple[str, list[Any]]:
        """All the tasks' times, each task's in time order (the database merges them)."""
        parts = [self(f"{self.task} = %s", [pk]) for pk in self.ids]
        return " UNION ALL ".join(sql for sql, _ in parts), [p for _, ps in parts for p in ps]

    def middle(self, sql: str, limit: str = "%s", offset: str = "%s") -> str:
        """The time at the middle rank, or the sum of the two at the middle ranks."""
        return f"(SELECT SUM(m.{self.seconds}) FROM ({sql} ORDER BY 1 LIMIT {limit} OFFSET {offset}) m)"


def _middles_sql_postgresql(
    *, ids: list[int], since: datetime | None, keys: list[Scope], counts: dict[Scope, int]
) -> tuple[str, list[Any]]:
    """PostgreSQL: one correlated subquery per kind of scope over a list of (key, annotator,
    ranks) rows, planned once (literal subqueries, as on SQLite, would be planned once per
    annotator). PostgreSQL does not merge the tasks' time-ordered index reads, so the times of
    all lie between the least lower middle and the greatest upper middle of the annotators'
    (no more than half of anyone's times lie outside theirs): only those are sorted, and the
    rank is counted from the times below them."""
    times = _Times(ids=ids, since=since)
    users = [(i, k) for i, k in enumerate(keys) if isinstance(k, int)]
    cells = [(i, k) for i, k in enumerate(keys) if isinstance(k, tuple)]
    user_sql, user_params = times(f"{times.user} = v.u AND {times.in_tasks}", list(ids))
    rows = ", ".join(["(%s, %s, %s, %s, %s)"] * len(users))
    sql = (
        f"WITH u AS (SELECT v.i, v.even, ({user_sql} ORDER BY 1 LIMIT 1 OFFSET v.lo) AS lo, "
        f"({user_sql} ORDER BY 1 LIMIT 1 OFFSET v.hi) AS hi "
        f"FROM (VALUES {rows}) v(i, u, even, lo, hi)), "
        "b AS (SELECT MIN(lo) AS l, MAX(hi) AS h FROM u) "
    )
    params: list[Any] = [*user_params, *user_params]
    for i, user_id in users:
        n = counts[user_id]
        params += [i, user_id, n % 2 == 0, (n - 1) // 2, n // 2]
    if cells:
        cell_sql, cell_params = times(f"{times.user} = v.u AND {times.task} = v.t", [])
        rows = ", ".join(["(%s, %s, %s, %s, %s)"] * len(cells))
        sql += (
            f"SELECT v.i, {times.middle(cell_sql, 'v.lim', 'v.off')} "
            f"FROM (VALUES {rows}) v(i, u, t, lim, off) UNION ALL "
        )
        params += cell_params
        for i, (task_id, user_id) in cells:
            n = counts[task_id, user_id]
            params += [i, user_id, task_id, 2 - n % 2, (n - 1) // 2]
    sql += "SELECT u.i, CASE WHEN u.even THEN u.lo + u.hi ELSE u.lo END FROM u UNION ALL "
    s = times.seconds
    inside, inside_params = times(
        f"{times.in_tasks} AND {s} >= (SELECT l FROM b) AND {s} <= (SELECT h FROM b)", list(ids)
    )
    below, below_params = times(f"{times.in_tasks} AND {s} < (SELECT l FROM b)", list(ids))
    below = below.replace(f"SELECT {s} FROM", "SELECT COUNT(*) FROM", 1)
    n = counts["all"]
    sql += f"SELECT {keys.index('all')}, " + times.middle(inside, "%s", f"(%s - ({below}))")
    params += [*inside_params, 2 - n % 2, (n - 1) // 2, *below_params]
    return sql, params


def _middle_subqueries(
    *, ids: list[int], since: datetime | None, counts: dict[Scope, int]
) -> dict[Scope, tuple[str, list[Any]]]:
    """Per scope a scalar subquery reading the time at the middle rank, or the sum of the
    times at the two middle ranks (an even number of times), and its parameters."""
    times = _Times(ids=ids, since=since)
    task, user, in_tasks = times.task, times.user, times.in_tasks
    out: dict[Scope, tuple[str, list[Any]]] = {}
    for scope, n in counts.items():
        if scope == "all":
            sql, params = times.merged()
        elif isinstance(scope, tuple):
            sql, params = times(f"{user} = %s AND {task} = %s", [scope[1], scope[0]])
        else:
            sql, params = times(f"{user} = %s AND {in_tasks}", [scope, *ids])
        out[scope] = (times.middle(sql), [*params, 2 - n % 2, (n - 1) // 2])
    return out


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
