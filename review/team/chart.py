"""The throughput chart of the team page as SVG geometry: stacked bars, one bar per day (or per
week when the range is long), one layer per series. Pure code: the template draws the shapes
this answers, so the chart needs no plotting library and no inline style (strict CSP); each
layer's colour comes from its class (``series-<n>`` in static/css/team.css)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta

WIDTH, HEIGHT = 760, 220
LEFT, RIGHT, TOP, BOTTOM = 44, 8, 10, 26
#: Beyond this many days the bars are weeks (starting on Monday).
MAX_DAY_BARS = 120


@dataclass(frozen=True)
class Series:
    label: str
    counts: dict[date, int]


@dataclass
class Chart:
    """What templates/review/team/team.html (partial ``throughput-chart``) draws: each tick a
    grid line from ``axis_from`` to ``axis_to`` with its value at ``tick_label_x``; each bar a
    rectangle with its title; each label a date at ``label_y``."""

    width: int = WIDTH
    height: int = HEIGHT
    unit: str = "day"
    top: int = 0
    bars: list[dict] = field(default_factory=list)
    ticks: list[dict] = field(default_factory=list)
    labels: list[dict] = field(default_factory=list)
    legend: list[dict] = field(default_factory=list)
    axis_from: int = LEFT - 4
    axis_to: int = WIDTH - RIGHT
    tick_label_x: int = LEFT - 8
    label_y: int = HEIGHT - 8


def _nice(n: int) -> int:
    """The smallest of 1, 2, 5 x 10^k at least ``n`` (the top of the axis)."""
    step = 1
    while True:
        for m in (1, 2, 5):
            if m * step >= n:
                return m * step
        step *= 10


def _buckets(first: date, last: date) -> tuple[str, list[date]]:
    """The bars' start days: every day, or every Monday when the range is long."""
    if last < first:
        first, last = last, first
    unit, step = "day", 1
    if (last - first).days + 1 > MAX_DAY_BARS:
        unit, step = "week", 7
        first = first - timedelta(days=first.weekday())
    count = (last - first).days // step + 1
    return unit, [first + timedelta(days=i * step) for i in range(count)]


def _columns(unit: str, starts: list[date], series: list[Series]) -> list[list[int]]:
    """Per bar, the count of each series."""
    index = {d: i for i, d in enumerate(starts)}
    columns = [[0] * len(series) for _ in starts]
    for s, one in enumerate(series):
        for day, n in one.counts.items():
            start = day - timedelta(days=day.weekday()) if unit == "week" else day
            i = index.get(start)
            if i is not None:
                columns[i][s] += n
    return columns


def stacked_bars(*, first: date, last: date, series: list[Series]) -> Chart:
    """Bars from ``first`` to ``last`` (inclusive), each stacking the series' counts in order;
    days with nothing draw no bar. ``series`` counts are per day; long ranges add up weeks."""
    unit, starts = _buckets(first, last)
    columns = _columns(unit, starts, series)
    top = _nice(max((sum(c) for c in columns), default=0) or 1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / len(starts)
    bar_w = max(1.0, slot * 0.8)
    chart = Chart(unit=unit, top=top)
    for i, (start, column) in enumerate(zip(starts, columns, strict=True)):
        x = LEFT + i * slot + (slot - bar_w) / 2
        y: float = TOP + plot_h
        when = start.isoformat() if unit == "day" else f"week of {start.isoformat()}"
        for s, n in enumerate(column):
            if n:
                h = plot_h * n / top
                y -= h
                chart.bars.append(
                    {
                        "x": round(x, 1),
                        "y": round(y, 1),
                        "w": round(bar_w, 1),
                        "h": round(h, 1),
                        "series": s,
                        "title": f"{series[s].label} · {when}: {n}",
                    }
                )
    for value in (0, top // 2, top):
        chart.ticks.append({"y": round(TOP + plot_h - plot_h * value / top, 1), "value": value})
    every = max(1, round(len(starts) / 8))
    chart.labels = [
        {"x": round(LEFT + i * slot + slot / 2, 1), "text": start.strftime("%b %d")}
        for i, start in enumerate(starts)
        if i % every == 0
    ]
    chart.legend = [{"series": s, "label": one.label} for s, one in enumerate(series)]
    return chart
