"""LLMI-Bench counts (LLM-I App. C): prompts, modality, criteria and image-number constraints."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from benchmark.tags import parse_image_num

from .table import Table, ratio

CONSTRAINT_ROWS = (
    ("none", "Image number -1 (no image allowed)"),
    ("any", "Image number 0 (unconstrained)"),
    ("exact", "Image number n (exactly n)"),
    ("at_least_one", "Image number Inf (at least one)"),
    ("", "Image number not stated"),
)


def constraint_kind(constraints: dict[str, Any]) -> tuple[str, int | None]:
    """``(kind, n)``: kind ``none``, ``any``, ``exact`` (with its n), ``at_least_one``, or
    ``""`` when the record states none (or one that cannot be read)."""
    count = constraints.get("image_count")
    if isinstance(count, dict) and count.get("kind"):
        n = count.get("n")
        return str(count["kind"]), n if isinstance(n, int) else None
    if "image_num" not in constraints:
        return "", None
    try:
        value = parse_image_num(constraints["image_num"])
    except ValueError:
        return "", None
    if value == -1:
        return "none", None
    if value == 0:
        return "any", None
    if value == math.inf:
        return "at_least_one", None
    return "exact", int(value)


def llmi_tables(records: list[dict[str, Any]]) -> list[Table]:
    multimodal = sum(1 for r in records if r.get("image_refs"))
    criteria = [len(r.get("rubric") or []) for r in records]
    constraints = [constraint_kind(r.get("constraints") or {}) for r in records]
    kinds = Counter(kind for kind, _ in constraints)
    exact = Counter(n for kind, n in constraints if kind == "exact" and n is not None)
    exact_text = ", ".join(f"n={n}: {c}" for n, c in sorted(exact.items()))
    rows: list[list[Any]] = [
        ["Prompts", len(records)],
        ["Text-only prompts", len(records) - multimodal],
        ["Multimodal prompts", multimodal],
        ["Criteria per prompt (mean)", ratio(sum(criteria), len(criteria))],
        ["Criteria per prompt (min-max)", f"{min(criteria)}-{max(criteria)}" if criteria else ""],
    ]
    for kind, label in CONSTRAINT_ROWS:
        value: Any = kinds.get(kind, 0)
        if kind == "exact" and exact_text:
            value = f"{value} ({exact_text})"
        rows.append([label, value])
    return [
        Table(
            name="llmi_counts",
            title="LLMI-Bench counts",
            columns=["Item", "Number"],
            rows=rows,
            definitions={
                "Prompts": "items given (an item is one prompt).",
                "Text-only prompts": "items with no input image.",
                "Multimodal prompts": "items with at least one input image (image reference).",
                "Criteria per prompt": "rubric criteria of each item (App. C: ten per prompt), "
                "mean and range over the items.",
                "Image number": "the item's image-number constraint (LLM-I §2.2.1: -1 none "
                "allowed, 0 unconstrained, n exactly n, Inf or 99 at least one), read from "
                "constraints image_count or image_num; 'not stated' when the record gives none "
                "(benchmark rows keep the count in the prompt text only). 'exactly n' lists the "
                "items per n.",
            },
        )
    ]
