"""ATP-Bench Tables 2 (per category) and 9 (per category and intent)."""

from __future__ import annotations

from collections import defaultdict
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


def _cells(values: dict[str, int]) -> list[Any]:
    return [
        values["queries"],
        ratio(values["docs"], values["queries"]),
        ratio(values["imgs"], values["queries"]),
        ratio(values["tc"], values["answers"]),
    ]


def _category_key(name: str) -> tuple[int, str]:
    order = {c: n for n, c in enumerate(PAPER_CATEGORIES)}
    return (order.get(name, len(order)), name.lower())


def ground_truth_answers(record: dict[str, Any]) -> list[str]:
    """The record's ground-truth answers: its responses, less any marked with another
    ``origin`` than ``ground_truth``."""
    return [
        str(r.get("text") or "")
        for r in record.get("responses") or []
        if r.get("origin", "ground_truth") == "ground_truth"
    ]


def atp_tables(
    records: list[dict[str, Any]], *, syntax: Syntax = "atp", image_role: str = "document"
) -> list[Table]:
    """Tables 2 and 9 over ``records``. LLM-I answers (``syntax="llmi"``) count their input
    images (``image_role="input"``) the same way."""
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
    categories = sorted(per_category, key=_category_key)
    definitions = {
        k: v.format(role=repr(image_role), syntax=syntax) for k, v in DEFINITIONS.items()
    }
    overall_row = ["Overall", "–", *_cells(overall)]
    table2 = Table(
        name="atp_table2",
        title="ATP-Bench Table 2: statistics per category",
        columns=list(COLUMNS_2),
        rows=[
            [c, ", ".join(sorted(intents_of[c], key=str.lower)), *_cells(per_category[c])]
            for c in categories
        ]
        + [overall_row],
        definitions=definitions,
    )
    table9 = Table(
        name="atp_table9",
        title="ATP-Bench Table 9: statistics per category and intent",
        columns=list(COLUMNS_2),
        rows=[
            [c, i, *_cells(cells[(c, i)])]
            for c in categories
            for i in sorted(intents_of[c], key=str.lower)
        ]
        + [overall_row],
        definitions=definitions,
    )
    return [table2, table9]
