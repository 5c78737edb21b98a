"""Tag review reads, scoped to the user: a response or version of another project answers 404."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db import NotSupportedError
from django.db.models import Count, F, Func, IntegerField, Max, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.shortcuts import get_object_or_404

from annotation.tag_review.models import ResponseVersion, TagDecision, TagDecisionKind
from benchmark import visibility
from benchmark.fields import NulTextField
from benchmark.models import (
    Item,
    ItemStatus,
    Origin,
    Project,
    Response,
    TaxonomyTerm,
    TermKind,
)
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
        "tool calls in each ground-truth answer (the tags benchmark.tags.parse finds, as the "
        "release statistics count them), averaged over the ground-truth answers of the "
        "verified queries. The answer is its latest saved version, or the "
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
    """ATP-Bench Tables 2 and 9 for the project's verified items, by the release statistics'
    rule (:func:`benchmark.datastats.atp_summary`), over three queries: ``{"categories":
    [{"category", "intents": [...], **row}], "intents": [{"category", "intent", **row}],
    "overall": row}``, each row with ``queries``, ``docs_per_q``, ``imgs_per_q``,
    ``tc_per_gt`` (``None`` when there is nothing to average) and ``answers``. An answer
    counts in its latest saved version. Categories follow the project's taxonomy order, then
    the alphabet; intents the alphabet."""
    from benchmark.datastats import atp_summary

    empty: dict[str, Any] = {"categories": [], "intents": [], "overall": _row(_zero())}
    # The images an answer's ``img_index`` counts over are the kind's (ATP-Bench's document
    # images, LLM-I's input images; a VQA query image is the question, not a document image).
    if not user.is_authenticated or not project.benchmark.offers.tag_answers:
        return empty
    scope = {"project": project, "project__memberships__user": user.pk}
    latest = ResponseVersion.objects.filter(response=OuterRef("pk")).order_by("-number")
    answers: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for item_id, text in (
        Response.objects.filter(
            origin=Origin.GROUND_TRUTH,
            item__status=ItemStatus.VERIFIED,
            **{f"item__{k}": v for k, v in scope.items()},
        )
        .annotate(
            latest=Coalesce(
                Subquery(latest.values("text")[:1]), F("text"), output_field=NulTextField()
            )
        )
        .order_by()
        .values_list("item_id", "latest")
    ):
        answers[item_id].append({"text": text, "origin": Origin.GROUND_TRUTH})
    records = [
        {
            "category": category,
            "intent": intent,
            # only the number of documents counts: their text stays in the database
            "documents": range(docs or 0),
            "image_refs": image_refs,
            "responses": answers.get(pk, []),
        }
        for pk, category, intent, docs, image_refs in Item.objects.filter(
            status=ItemStatus.VERIFIED, **scope
        )
        .annotate(docs=_JsonArrayLength(F("documents")))
        .order_by()
        .values_list("pk", "category", "intent", "docs", "image_refs")
    ]
    if not records:
        return empty
    order: list[str] = []
    if project.taxonomy_id is not None:
        order = list(
            TaxonomyTerm.objects.filter(
                taxonomy_id=project.taxonomy_id, kind=TermKind.CATEGORY, parent__isnull=True
            )
            .order_by("position", "name")
            .values_list("name", flat=True)
        )
    return atp_summary(
        records,
        syntax=project.tag_syntax,  # type: ignore[arg-type]
        image_role=project.benchmark.indexed_image_role,
        category_order=order,
    )
