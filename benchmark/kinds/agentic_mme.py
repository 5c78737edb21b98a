"""Agentic-MME: tasks with an expected answer and a reference trajectory of step-wise
checkpoints, one JSON file per task; agent runs are scored against it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchmark.kinds.base import BenchmarkKind, DefaultTask, Demo, Offers


def source_file(values: Mapping[str, Any], external_id: str) -> str:
    """Each task in its own file, named by its id."""
    return f"json/{external_id}.json" if external_id else "json/"


KIND = BenchmarkKind(
    name="agentic-mme",
    label="Agentic-MME",
    choice_label="Agentic-MME (agent trajectories)",
    project_kind="trajectory",
    tag_syntax="",
    toolset="agentic-mme",
    taxonomy="agentic-mme",
    format="benchmark.formats.agentic_mme",
    item_form_fields="benchmark.items.forms.agentic_mme_fields",
    item_checks="benchmark.items.services.clean_agentic_mme",
    stats_tables="benchmark.datastats.agentic_mme.agentic_mme_tables",
    query_label="Question",
    item_form_template="benchmark/items/form/agentic_mme.html",
    after_create="annotation:trajectory_edit",
    item_columns=("level", "modality"),
    offers=Offers(
        edit_trajectory=True,
        backward_drafting=True,
        score_runs=True,
        oracle_testing=True,
    ),
    default_task=DefaultTask(
        name="Solve blind",
        button=(
            "Agentic-MME blind-solving task (2 verifiers besides the author, answers compared "
            "with the author's answer and its variants, then a step audit)"
        ),
        settings={
            "question": "Solve the task without the reference: look at the images, answer in "
            "the requested format. Your answer is compared with the author's answer and its "
            "accepted variants; then audit the reference trajectory step by step.",
            "scheme": "text",
            "overlap": 2,
            "consensus": "author_plus_two",
            "updates_item_status": True,
            "author_may_judge": False,
        },
    ),
    demo=Demo(
        name="Agentic-MME demo",
        folder="agentic-mme",
        description=(
            "Four authored tasks at levels 1, 2 and 3 with step-wise checkpoints, and one "
            "recorded agent run (demo03) whose tool images were produced by the logged "
            "operations."
        ),
        runs=True,
    ),
    trajectories=True,
    image_index_key="image_index",
    record_image_fields={"input": "input.image"},
    id_width=4,
    source_file=source_file,
    one_file_per_item=True,
    query_has_format_instruction=True,
    evaluation="benchmark.evaluation.agentic_mme.PROTOCOL",
)
