"""ATP-Bench Tables 2 (per category) and 9 (per category and intent)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from benchmark.tags import Syntax, parse

from .table import Table, ratio

#: Table 9's category order; other categories follow alphabetically.
PAPER_CATEGORIES = (
    "Academic",
    "Manual",
    "Recipe",
    "Fashion",
    "Renovation",
    "Product",
    "Travel",
    "Encyclopedia",
)

COLUMNS_2 = ["Category", "Intent", "#Query", "#Doc per Q", "#Img per Q", "#TC per GT"]

DEFINITIONS = {
    "Category": "the item's category; categories in the paper's order, then alphabetically. "
    "Overall covers every item given.",
    "Intent": "Table 2: the category's intents, alphabetically; Table 9: one row per intent.",
    "#Query": "items (an item is one query).",
    "#Doc per Q": "documents attached to the query (the entries of its doc list, each a text "
    "with its images, the paper's d_i = (T_i, I_i)), averaged over the queries.",
    "#Img per Q": "the images of those documents (image references with role {role}; the "
    "paper's I_i), which are what a Reference or Edit call's img_index counts over, averaged "
    "over the queries. The paper does not say whether a VQA query image counts; here it does "
    "not.",
    "#TC per GT": "tool calls in each ground-truth answer (the tags benchmark.tags.parse finds "
    "in the {syntax} syntax), averaged over the ground-truth answers of the queries; empty "
    "when there is none.",
}


def _zero() -> dict[str, int]:
    return {"queries": 0, "docs": 0, "imgs": 0, "answers": 0, "tc": 0}


def ground_truth_answers(record: dict[str, Any]) -> list[str]:
    """The record's ground-truth answers: its responses, less any marked with another
    ``origin`` than ``ground_truth``."""
    return [
        str(r.get("text") or "")
        for r in record.get("responses") or []
        if r.get("origin", "ground_truth") == "ground_truth"
    ]


def _row(values: dict[str, int]) -> dict[str, Any]:
    return {
        "queries": values["queries"],
        "docs_per_q": ratio(values["docs"], values["queries"]),
        "imgs_per_q": ratio(values["imgs"], values["queries"]),
        "tc_per_gt": ratio(values["tc"], values["answers"]),
        "answers": values["answers"],
    }


def atp_summary(
    records: Iterable[dict[str, Any]],
    *,
    syntax: Syntax = "atp",
    image_role: str = "document",
    category_order: Sequence[str] = PAPER_CATEGORIES,
) -> dict[str, Any]:
    """The figures of Tables 2 and 9 over ``records`` (the one rule for them: the release
    tables and the statistics page both use it): ``{"categories": [{"category", "intents",
    **row}], "intents": [{"category", "intent", **row}], "overall": row}``, each row with
    ``queries``, ``docs_per_q``, ``imgs_per_q``, ``tc_per_gt`` (``None`` when there is
    nothing to average) and ``answers``. Categories follow ``category_order``, then the
    alphabet; intents the alphabet. Only ``len`` of a record's ``documents`` is used."""
    cells: dict[tuple[str, str], dict[str, int]] = defaultdict(_zero)
    for record in records:
        cell = cells[(str(record.get("category") or ""), str(record.get("intent") or ""))]
        cell["queries"] += 1
        cell["docs"] += len(record.get("documents") or [])
        cell["imgs"] += sum(
            1 for ref in record.get("image_refs") or [] if ref.get("role") == image_role
        )
        for text in ground_truth_answers(record):
            cell["answers"] += 1
            cell["tc"] += len(parse(text, syntax).tools)
    per_category: dict[str, dict[str, int]] = defaultdict(_zero)
    intents_of: dict[str, list[str]] = defaultdict(list)
    overall = _zero()
    for (category, intent), values in cells.items():
        for key, n in values.items():
            per_category[category][key] += n
            overall[key] += n
        intents_of[category].append(intent)
    order = {c: n for n, c in enumerate(category_order)}
    categories = sorted(per_category, key=lambda name: (order.get(name, len(order)), name.lower()))
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
            {"category": c, "intent": i, **_row(cells[(c, i)])}
            for c in categories
            for i in sorted(intents_of[c], key=str.lower)
        ],
        "overall": _row(overall),
    }


def _cells(row: dict[str, Any]) -> list[Any]:
    return [row["queries"], row["docs_per_q"], row["imgs_per_q"], row["tc_per_gt"]]


def atp_tables(
    records: list[dict[str, Any]], *, syntax: Syntax = "atp", image_role: str = "document"
) -> list[Table]:
    """Tables 2 and 9 over ``records`` (:func:`atp_summary`). LLM-I answers
    (``syntax="llmi"``) count their input images (``image_role="input"``) the same way."""
    summary = atp_summary(records, syntax=syntax, image_role=image_role)
    definitions = {
        k: v.format(role=repr(image_role), syntax=syntax) for k, v in DEFINITIONS.items()
    }
    overall_row = ["Overall", "–", *_cells(summary["overall"])]
    table2 = Table(
        name="atp_table2",
        title="ATP-Bench Table 2: statistics per category",
        columns=list(COLUMNS_2),
        rows=[[r["category"], ", ".join(r["intents"]), *_cells(r)] for r in summary["categories"]]
        + [overall_row],
        definitions=definitions,
    )
    table9 = Table(
        name="atp_table9",
        title="ATP-Bench Table 9: statistics per category and intent",
        columns=list(COLUMNS_2),
        rows=[[r["category"], r["intent"], *_cells(r)] for r in summary["intents"]] + [overall_row],
        definitions=definitions,
    )
    return [table2, table9]
