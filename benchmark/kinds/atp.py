"""ATP-Bench: queries with documents and one ground-truth interleaved answer with
``<tool>{json}</tool>`` tags, verified by people (query verification)."""

from __future__ import annotations

from benchmark.kinds.base import BenchmarkKind, DefaultTask, Demo, Offers

KIND = BenchmarkKind(
    name="atp",
    label="ATP-Bench",
    choice_label="ATP-Bench (interleaved answers, <tool> tags)",
    project_kind="interleaved",
    tag_syntax="atp",
    toolset="atp",
    taxonomy="atp",
    format="benchmark.formats.atp",
    item_form_fields="benchmark.items.forms.atp_fields",
    item_checks="benchmark.items.services.clean_atp",
    stats_tables="benchmark.datastats.atp.atp_tables",
    query_label="Query",
    item_form_template="benchmark/items/form/atp.html",
    item_columns=("category", "intent", "modality"),
    offers=Offers(
        draft_queries=True,
        draft_answer=True,
        tag_answers=True,
        score_answers=True,
        judge_answers=True,
        render_answers=True,
    ),
    default_task=DefaultTask(
        name="Query verification",
        button="ATP-Bench query-verification task",
        settings={
            "question": "Keep this query? Remove it if it is ambiguous or unnatural, not "
            "grounded in its image (VQA), or not visual-critical; fix its category and intent.",
            "scheme": "nominal",
            "labels": [
                {"value": "keep", "label": "Keep", "accept": True},
                {
                    "value": "remove_ambiguous",
                    "label": "Remove: ambiguous or unnatural",
                    "accept": False,
                },
                {
                    "value": "remove_not_grounded",
                    "label": "Remove: not grounded in the image",
                    "accept": False,
                },
                {
                    "value": "remove_not_visual",
                    "label": "Remove: not visual-critical",
                    "accept": False,
                },
            ],
            "relabel_fields": ["category", "intent"],
            "overlap": 3,
            "consensus": "majority",
        },
    ),
    demo=Demo(
        name="ATP-Bench demo",
        folder="atp",
        description=(
            "Eight authored queries with documents and ground-truth interleaved answers, one "
            "per ATP-Bench category. Three answers are flawed on purpose: atp_demo_02 has a "
            "tool tag in the middle of a sentence, a redundant Search call and a malformed "
            "payload; atp_demo_04 a malformed payload; atp_demo_06 an img_index past the last "
            "document image."
        ),
    ),
    answer_text=True,
    answer_tag_form=(
        '<tool>{"tool_name": "<Tool>", "description": "<what the image shows>", '
        '"params": {...}}</tool>'
    ),
    indexed_images_arg="image_count",
    answer_in_item=True,
    image_roles=("document", "query"),
    indexed_image_role="document",
    record_image_fields={"query": "image_query", "document": "images"},
    id_prefix="new_",
    id_width=4,
    default_file="data.jsonl",
    query_image_matches_modality=True,
    task_categories=("visual-question-answering", "text-generation"),
    evaluation="benchmark.evaluation.atp.PROTOCOL",
)
