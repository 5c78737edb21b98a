"""An annotator's own pace in a project, for their "My work" panel on the judging page: items
done today and in the last 7 days, their streak of days with work, and their median seconds
per item (items per hour) over the last 30 days. Days are UTC days, as on the team page
(``Judgment.day``). Two queries, three when a time was recorded."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.db.models import Count
from django.utils import timezone

from annotation.judgment_tasks.models import Judgment
from benchmark.models import Project
from benchmark.typing import AnyUser

#: The median is over this many last days.
PACE_DAYS = 30


@dataclass(frozen=True)
class Pace:
    today: int
    week: int
    total: int
    #: consecutive days with at least one judgment, up to today (or yesterday, when today has
    #: none yet: the streak is still alive)
    streak: int
    streak_alive_today: bool
    median_seconds: float | None
    timed: int

    @property
    def items_per_hour(self) -> float | None:
        return 3600 / self.median_seconds if self.median_seconds else None


def _streak(days: set[date], today: date) -> tuple[int, bool]:
    day = today if today in days else today - timedelta(days=1)
    n = 0
    while day in days:
        n += 1
        day -= timedelta(days=1)
    return n, today in days


def annotator_pace(*, user: AnyUser, project: Project, now: datetime | None = None) -> Pace | None:
    """``user``'s own figures over the project's judgment tasks; None for someone who has
    not judged in it yet (or is not logged in)."""
    if not user.is_authenticated:
        return None
    now = now or timezone.now()
    today = now.astimezone(UTC).date()
    # Their own judgments, gold judgments among them as any other (annotation.judgment_tasks.gold).
    mine = Judgment.with_gold.filter(user=user.pk, task__project=project)
    per_day = dict(mine.values_list("day").annotate(n=Count("id")).order_by())
    if not per_day:
        return None
    counts = {
        (d if isinstance(d, date) else date.fromisoformat(str(d))): n for d, n in per_day.items()
    }
    days = set(counts)
    week_start = today - timedelta(days=6)
    streak, alive = _streak(days, today)
    since = datetime(today.year, today.month, today.day, tzinfo=UTC) - timedelta(days=PACE_DAYS - 1)
    timed_rows = mine.filter(created_at__gte=since, seconds__gt=0)
    timed = timed_rows.count()
    median = None
    if timed:
        middle = list(
            timed_rows.order_by("seconds").values_list("seconds", flat=True)[
                (timed - 1) // 2 : timed // 2 + 1
            ]
        )
        median = sum(middle) / len(middle)
    return Pace(
        today=counts.get(today, 0),
        week=sum(n for d, n in counts.items() if d >= week_start),
        total=sum(counts.values()),
        streak=streak,
        streak_alive_today=alive,
        median_seconds=median,
        timed=timed,
    )
