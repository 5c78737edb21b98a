"""The team table's rows as markup, made in Python: a 100-annotator table has some 300 rows
and 1,500 cells, and the template engine would spend most of the page's time on them. Names
are escaped; the figures are numbers and dashes this package formats."""

from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from review.team.selectors import Figures, TeamReport


def figures_cells(figures: Figures) -> str:
    return "".join(f'<td class="num" data-{name}>{value}</td>' for name, value in figures.cells)


def team_rows(report: TeamReport) -> list[SafeString]:
    """Per annotator a row (the task, or "all tasks" and then one row per task)."""
    out = []
    for row in report.rows:
        name = escape(row.username)
        several = len(row.tasks) > 1
        task = "all tasks" if several else escape(row.tasks[0].task.name)
        html = [
            f'<tr class="team-person" data-annotator="{name}"><td>{name}</td><td>{task}</td>'
            f"{figures_cells(row.total)}</tr>"
        ]
        if several:
            html.extend(
                f'<tr class="team-task" data-annotator="{name}" data-task="{c.task.pk}"><td></td>'
                f"<td>{escape(c.task.name)}</td>{figures_cells(c.figures)}</tr>"
                for c in row.tasks
            )
        out.append(mark_safe("".join(html)))  # noqa: S308 - names escaped, figures ours
    return out
