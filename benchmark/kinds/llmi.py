"""LLM-I / LLMI-Bench: prompts with ten rubric criteria and an image-number constraint,
answered with ``<imgen>{dict}</imgen>`` tags; rows numbered within their file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchmark.kinds.base import BenchmarkKind, Demo, Offers


def source_file(values: Mapping[str, Any], external_id: str) -> str:
    """Training rows (with an image count) in train_sample.json; prompts by modality."""
    if (values.get("constraints") or {}).get("image_count"):
        return "train_sample.json"
    return "mm_input.json" if values.get("modality") == "image" else "text_only.json"


KIND = BenchmarkKind(
    name="llmi",
    label="LLM-I / LLMI-Bench",
    choice_label="LLM-I / LLMI-Bench (interleaved answers, <imgen> tags)",
    project_kind="interleaved",
    tag_syntax="llmi",
    toolset="llmi",
    taxonomy="llmi",
    format="benchmark.formats.llmi",
    item_form_fields="benchmark.items.forms.llmi_fields",
    item_checks="benchmark.items.services.clean_llmi",
    stats_tables="benchmark.datastats.llmi.llmi_tables",
    query_label="Prompt",
    item_form_template="benchmark/items/form/llmi.html",
    item_columns=("category", "modality"),
    offers=Offers(
        draft_answer=True,
        draft_rubric=True,
        tag_answers=True,
        score_answers=True,
        judge_answers=True,
        render_answers=True,
    ),
    demo=Demo(
        name="LLM-I demo",
        folder="llmi",
        description=(
            "Authored LLMI-Bench-style prompts with ten rubric criteria each, model answers "
            "with <imgen> tags and judge scores, and verl-style training rows covering every "
            "image-number constraint (-1, 0, n and 99)."
        ),
    ),
    answer_text=True,
    answer_tag_form=(
        "<imgen>{'source': '<tool>', 'description': '<what the image shows>', "
        "'params': {...}}</imgen>"
    ),
    image_count_rule=True,
    ids_by_row=True,
    source_file=source_file,
    evaluation="benchmark.evaluation.llmi.PROTOCOL",
)
