"""Tag review reads, scoped to the user: a response or version of another project answers 404."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db import NotSupportedError
from django.db.models import Count, F, Func, IntegerField, Max, OuterRef, Subquery, Sum, Value
from django.db.models.functions import Coalesce, Length, Replace
from django.shortcuts import get_object_or_404

from annotation.tag_review.models import ResponseVersion, TagDecision, TagDecisionKind
from benchmark import visibility
from benchmark.models import (
    Item,
    ItemStatus,
    Origin,
    Project,
    Response,
    TagSyntax,
    TaxonomyTerm,
    TermKind,
)
from benchmark.tags import tag_markers
from benchmark.typing import AnyUser


def response_get(*, user: AnyUser, project: Project, item_pk: int, pk: int) -> Response:
    """A response of an item of ``project`` (already scoped by ``project_get``), with its item
    (and its model masked when it is hidden from the user, as for a rater of a human
    evaluation: :func:`benchmark.visibility.responses_visible`)."""
    rows = Response.objects.none()
    if user.is_authenticated:
        rows = Response.objects.filter(
            item__project=project, item__project__memberships__user=user.pk, item_id=item_pk
        ).select_related("item")
    response = get_object_or_404(visibility.responses_visible(rows, user=user), pk=pk)
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


# --------------------------------------------------------------------------- dataset statistics
#
# ATP-Bench Tables 2 and 9, computed in the database (three queries whatever the number of
# items; no answer text leaves the database): per category and per intent, #Query, #Doc per Q,
# #Img per Q and #TC per GT over the project's verified items.


class _JsonFunc(Func):
    """A JSON function with SQL for SQLite and PostgreSQL only (``as_sqlite``,
    ``as_postgresql``); any other database is refused with a clear message."""

    output_field = IntegerField()

    def as_sql(
        self,
        compiler: Any,
        connection: Any,
        function: str | None = None,
        template: str | None = None,
        arg_joiner: str | None = None,
        **extra_context: Any,
    ) -> Any:
        raise NotSupportedError("dataset statistics need SQLite or PostgreSQL")


class _JsonArrayLength(_JsonFunc):
    """Elements of a JSON array column; 0 for anything that is not an array."""

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        sql, params = compiler.compile(self.source_expressions[0])
        return (
            f"(CASE WHEN json_type({sql}) = 'array' THEN json_array_length({sql}) ELSE 0 END)",
            (*params, *params),
        )

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        sql, params = compiler.compile(self.source_expressions[0])
        return (
            f"(CASE WHEN jsonb_typeof({sql}) = 'array' THEN jsonb_array_length({sql}) ELSE 0 END)",
            (*params, *params),
        )


class _JsonCountRole(_JsonFunc):
    """Objects in a JSON array column whose ``role`` is the given string."""

    def __init__(self, column: Any, role: str) -> None:
        super().__init__(column, Value(role))

    def _parts(self, compiler: Any) -> tuple[str, list[Any], str, list[Any]]:
        column, column_params = compiler.compile(self.source_expressions[0])
        role, role_params = compiler.compile(self.source_expressions[1])
        return column, list(column_params), role, list(role_params)

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        column, cp, role, rp = self._parts(compiler)
        sql = (
            f"(SELECT COUNT(*) FROM json_each(CASE WHEN json_type({column}) = 'array' "
            f"THEN {column} ELSE '[]' END) AS e WHERE e.type = 'object' "
            f"AND json_extract(e.value, '$.role') = {role})"
        )
        return sql, (*cp, *cp, *rp)

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        column, cp, role, rp = self._parts(compiler)
        sql = (
            f"(SELECT COUNT(*) FROM jsonb_array_elements(CASE WHEN jsonb_typeof({column}) = "
            f"'array' THEN {column} ELSE '[]'::jsonb END) AS e(v) "
            f"WHERE jsonb_typeof(e.v) = 'object' AND e.v ->> 'role' = {role})"
        )
        return sql, (*cp, *cp, *rp)


#: The images an answer's ``img_index`` counts over: ATP-Bench's document images, LLM-I's input
#: images. A VQA query image (role "query") is the user's question, not a document image.
INDEXED_IMAGE_ROLE = {TagSyntax.ATP: "document", TagSyntax.LLMI: "input"}

#: How the table is computed, shown under it.
DATASET_STATS_DEFINITIONS = (
    ("#Query", "verified items (a verified item is one query)."),
    (
        "#Doc per Q",
        "documents attached to the query (the entries of its doc list, each a text with its "
        "images, the paper's d_i = (T_i, I_i)), averaged over the queries.",
    ),
    (
        "#Img per Q",
        "the images of those documents (the paper's I_i; for LLM-I, the input images), which "
        "are what a Reference or Edit call's img_index counts over, averaged over the queries. "
        "The paper does not say whether a VQA query image counts; here it does not.",
    ),
    (
        "#TC per GT",
        "tool calls (opening tags) in each ground-truth answer, averaged over the ground-truth "
        "answers of the verified queries. The answer is its latest saved version, or the "
        "imported text when it was never saved.",
    ),
)


def _ratio(total: int, n: int) -> float | None:
    return total / n if n else None


def _row(values: dict[str, int]) -> dict[str, Any]:
    return {
        "queries": values["queries"],
        "docs_per_q": _ratio(values["docs"], values["queries"]),
        "imgs_per_q": _ratio(values["imgs"], values["queries"]),
        "tc_per_gt": _ratio(values["tc"], values["answers"]),
        "answers": values["answers"],
    }


def _zero() -> dict[str, int]:
    return {"queries": 0, "docs": 0, "imgs": 0, "answers": 0, "tc": 0}


def dataset_stats(*, user: AnyUser, project: Project) -> dict[str, Any]:
    """ATP-Bench Tables 2 and 9 for the project's verified items (three queries):
    ``{"categories": [{"category", "intents": [...], **row}], "intents": [{"category",
    "intent", **row}], "overall": row}``, each row with ``queries``, ``docs_per_q``,
    ``imgs_per_q``, ``tc_per_gt`` (``None`` when there is nothing to average) and ``answers``.
    Categories follow the project's taxonomy order, then the alphabet; intents the alphabet."""
    empty: dict[str, Any] = {"categories": [], "intents": [], "overall": _row(_zero())}
    if not user.is_authenticated or project.tag_syntax not in INDEXED_IMAGE_ROLE:
        return empty
    scope = {"project": project, "project__memberships__user": user.pk}
    items = (
        Item.objects.filter(status=ItemStatus.VERIFIED, **scope)
        .values("category", "intent")
        .annotate(
            queries=Count("id"),
            docs=Sum(_JsonArrayLength(F("documents"))),
            imgs=Sum(
                _JsonCountRole(F("image_refs"), INDEXED_IMAGE_ROLE[TagSyntax(project.tag_syntax)])
            ),
        )
        .order_by()
    )
    opening = tag_markers(project.tag_syntax)[0]  # type: ignore[arg-type]
    latest = ResponseVersion.objects.filter(response=OuterRef("pk")).order_by("-number")
    text = Coalesce(Subquery(latest.values("text")[:1]), F("text"))
    calls = (Length(text) - Length(Replace(text, Value(opening), Value("")))) / len(opening)
    answers = (
        Response.objects.filter(
            origin=Origin.GROUND_TRUTH,
            item__status=ItemStatus.VERIFIED,
            **{f"item__{k}": v for k, v in scope.items()},
        )
        .values("item__category", "item__intent")
        .annotate(answers=Count("id"), tc=Sum(calls))
        .order_by()
    )
    table: dict[tuple[str, str], dict[str, int]] = defaultdict(_zero)
    for group in items:
        cell = table[(group["category"], group["intent"])]
        cell.update(queries=group["queries"], docs=group["docs"] or 0, imgs=group["imgs"] or 0)
    for answered in answers:
        cell = table[(answered["item__category"], answered["item__intent"])]
        cell.update(answers=answered["answers"], tc=answered["tc"] or 0)
    if not table:
        return empty
    terms = TaxonomyTerm.objects.none()
    if project.taxonomy_id is not None:
        terms = TaxonomyTerm.objects.filter(
            taxonomy_id=project.taxonomy_id, kind=TermKind.CATEGORY, parent__isnull=True
        )
    order = {
        name: n
        for n, name in enumerate(terms.order_by("position", "name").values_list("name", flat=True))
    }

    def category_key(name: str) -> tuple[int, str]:
        return (order.get(name, len(order)), name.lower())

    per_category: dict[str, dict[str, int]] = defaultdict(_zero)
    intents_of: dict[str, list[str]] = defaultdict(list)
    overall = _zero()
    for (category, intent), values in table.items():
        for key, n in values.items():
            per_category[category][key] += n
            overall[key] += n
        intents_of[category].append(intent)
    categories = sorted(per_category, key=category_key)
    return {
        "categories": [
            {
                "category": c,
                "intents": sorted(intents_of[c], key=str.lower),
                **_row(per_category[c]),
            }
            for c in categories
        ],
        "intents": [
            {"category": c, "intent": i, **_row(table[(c, i)])}
            for c in categories
            for i in sorted(intents_of[c], key=str.lower)
        ],
        "overall": _row(overall),
    }
