"""Tag review reads, scoped to the user: a response or version of another project answers 404."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import Count, Max
from django.shortcuts import get_object_or_404

from annotation.models import ResponseVersion, TagDecision, TagDecisionKind
from benchmark.models import Project, Response
from benchmark.typing import AnyUser


def response_get(*, user: AnyUser, project: Project, item_pk: int, pk: int) -> Response:
    """A response of an item of ``project`` (already scoped by ``project_get``), with its item."""
    rows = Response.objects.none()
    if user.is_authenticated:
        rows = Response.objects.filter(
            item__project=project, item__project__memberships__user=user.pk, item_id=item_pk
        ).select_related("item")
    response = get_object_or_404(rows, pk=pk)
    response.item.project = project  # reuse the project (and its role cache)
    return response


def current_number(*, response: Response) -> int:
    """The newest version number; 1 (the imported text) when nothing was saved yet."""
    latest = ResponseVersion.objects.filter(response=response).aggregate(n=Max("number"))["n"]
    return latest or 1


def version_list(*, user: AnyUser, response: Response) -> list[ResponseVersion]:
    """Every version, newest first, with authors and decisions (three queries). Before the
    first save, a stand-in version 1 holds the imported text."""
    rows = list(
        ResponseVersion.objects.filter(response=response)
        .select_related("author")
        .prefetch_related("decisions")
        .order_by("-number")
    )
    if not rows:
        rows = [_imported(response)]
    return rows


def _imported(response: Response) -> ResponseVersion:
    version = ResponseVersion(response=response, number=1, text=response.text, note="imported")
    version.created_at = response.created_at
    return version


def version_get(
    *, user: AnyUser, response: Response, number: int
) -> tuple[ResponseVersion, ResponseVersion | None]:
    """Version ``number`` and the one before it (``None`` for version 1)."""
    rows = {
        v.number: v
        for v in ResponseVersion.objects.filter(response=response, number__in=[number, number - 1])
        .select_related("author")
        .prefetch_related("decisions")
    }
    if number == 1 and 1 not in rows:
        return _imported(response), None
    if number not in rows:
        return get_object_or_404(ResponseVersion.objects.none(), number=number), None
    return rows[number], rows.get(number - 1)


def decision_stats(*, user: AnyUser, project: Project) -> dict[str, Any]:
    """Decisions per tool over every saved version in the project (one query):
    ``{"kinds": [...], "rows": [{"tool", "cells": [count per kind], "n"}], "total"}``."""
    kinds = list(TagDecisionKind.values)
    counts: list[Any] = []
    if user.is_authenticated:
        counts = list(
            TagDecision.objects.filter(
                version__response__item__project=project,
                version__response__item__project__memberships__user=user.pk,
            )
            .values("tool", "decision")
            .annotate(n=Count("id"))
            .order_by()
        )
    table: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(kinds, 0))
    for row in counts:
        table[(row["tool"] or "(none)").lower()][row["decision"]] += row["n"]
    rows: list[dict[str, Any]] = [
        {"tool": tool, "cells": [values[k] for k in kinds], "n": sum(values.values())}
        for tool, values in sorted(table.items())
    ]
    total = {
        "cells": [sum(r["cells"][i] for r in rows) for i in range(len(kinds))],
        "n": sum(r["n"] for r in rows),
    }
    return {"rows": rows, "kinds": kinds, "total": total}
