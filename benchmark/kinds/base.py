"""What a benchmark kind is: one frozen object declaring everything that differs between
benchmarks (ATP-Bench, LLM-I, Agentic-MME, m&m's). Views, selectors, services and templates
ask ``project.benchmark`` (a ``BenchmarkKind``) and never compare a kind, format or tag-syntax
name; a fifth benchmark is a new module in this package and its templates
(docs/howto/new-benchmark-kind.md).

Code that lives in another layer (item cleaning in ``benchmark.items``, statistics tables in
``benchmark.datastats``) is named by dotted path and imported on first use, so this package
imports nothing but ``benchmark.models`` and stays below every feature that asks it.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from types import ModuleType
from typing import Any


@cache
def resolve(path: str) -> Any:
    """The object a dotted path names (``package.module.name``)."""
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Offers:
    """The features and links a benchmark's project offers (its buttons and pages)."""

    #: Model-in-the-loop drafting: candidate queries for the project (ATP-Bench).
    draft_queries: bool = False
    #: An item's ground-truth answer drafted by a model (interleaved answers).
    draft_answer: bool = False
    #: An item's ten rubric criteria drafted by a model (LLM-I).
    draft_rubric: bool = False
    #: An item's plan drafted by a model (m&m's).
    draft_plan: bool = False
    #: The plan editor on an item (m&m's).
    edit_plan: bool = False
    #: Audio inputs on items: the item page's player and "Attach audio" (m&m's speech).
    audio_inputs: bool = False
    #: The reference trajectory editor on an item (Agentic-MME).
    edit_trajectory: bool = False
    #: Backward drafting of a task from its trajectory (Agentic-MME).
    backward_drafting: bool = False
    #: Tag-syntax answers: the tag editor, the tag review and the tag statistics.
    tag_answers: bool = False
    #: Scoring model answers with the tag metrics.
    score_answers: bool = False
    #: Model judges that rate answers, and those that rate plans.
    judge_answers: bool = False
    judge_plans: bool = False
    #: Rendering answers' tool calls into images.
    render_answers: bool = False
    #: Scoring plan predictions (m&m's metrics).
    score_plans: bool = False
    #: Scoring agent runs, and oracle testing of the tools (Agentic-MME).
    score_runs: bool = False
    oracle_testing: bool = False
    #: Releasing the tool-balanced subset (m&m's).
    balanced_subset: bool = False

    @property
    def judge_settings(self) -> bool:
        """The judge settings page: whenever a model judge applies."""
        return self.judge_answers or self.judge_plans


@dataclass(frozen=True)
class DefaultTask:
    """The judgment task a benchmark prescribes, added by "Add the ... task" (and the demo).
    ``settings`` are ``JudgmentTask`` field values (plain strings for its choices)."""

    name: str
    button: str
    settings: Mapping[str, Any]


@dataclass(frozen=True)
class Demo:
    """The kind's demo project: its dataset in ``review/demo/<folder>/`` (its own layout)."""

    name: str
    folder: str
    description: str
    #: Whether the folder holds recorded agent runs that the demo scores once.
    runs: bool = False


@dataclass(frozen=True)
class BenchmarkKind:
    #: The project's ``data_format`` (the registry key): at most 20 characters.
    name: str
    #: What the benchmark is called, and the longer choice on the new-project form.
    label: str
    choice_label: str
    #: ``ProjectKind`` (what an item holds: interleaved answers, plans or trajectories) and
    #: ``TagSyntax`` (interleaved answers only) the project is created with.
    project_kind: str
    tag_syntax: str
    #: The built-in toolset and taxonomy a new project starts from (``benchmark.builtin``);
    #: None: the project's creator chooses one.
    toolset: str | None
    taxonomy: str | None
    #: The format reader and writer (``benchmark.formats.<module>``; see its docstring).
    format: str
    #: The item form: a function ``(post, files, data) -> None`` adding the kind's fields
    #: from the POST to ``data``, and the service's checks ``(cleaner, images by role)``.
    item_form_fields: str
    item_checks: str
    #: Statistics tables: ``(records, *, tool_kinds) -> list[Table]``.
    stats_tables: str
    #: The item form: what its query is called, and the template of the kind's own fields.
    query_label: str
    item_form_template: str
    #: The item page's blocks for what its items hold, in order; each shows only when the
    #: item has some (answers, plans, trajectories: whatever was imported or attached).
    item_templates: tuple[str, ...] = (
        "benchmark/items/answers.html",
        "benchmark/items/plans.html",
        "benchmark/items/trajectories.html",
    )
    #: The page a new item opens on (a URL name taking project and item ids); None: the form.
    after_create: str | None = None
    offers: Offers = field(default_factory=Offers)
    #: The item fields the project page's list and filters show, among "category", "intent",
    #: "level" and "modality" (a column empty for the whole list is left out as well).
    item_columns: tuple[str, ...] = ("category", "intent", "level", "modality")
    #: The judgment task the benchmark prescribes; None: none.
    default_task: DefaultTask | None = None
    demo: Demo | None = None
    #: What an item holds besides its fields: a ground-truth answer text (its key, or stored
    #: as the item's ``gt`` field), plans, trajectories.
    answer_text: bool = False
    answer_in_item: bool = False
    plans: bool = False
    trajectories: bool = False
    #: An item's images: the roles (the default first), where an answer's image index points
    #: (``img_index`` counts ``indexed_image_role``), and where records name them by role.
    image_roles: tuple[str, ...] = ("input",)
    image_index_key: str = "img_index"
    indexed_image_role: str = "input"
    record_image_fields: Mapping[str, str] = field(default_factory=dict)
    #: Item ids and files: new ids as ``<prefix><number zero-padded to width>``, or numbered
    #: by row of their file (``<stem>#<row>``); ``source_file(values, external_id)`` is the
    #: file an item belongs in (None: the newest item's file, else ``default_file``);
    #: ``one_file_per_item`` when every item has its own file.
    id_prefix: str = ""
    id_width: int = 1
    ids_by_row: bool = False
    source_file: Callable[[Mapping[str, Any], str], str] | None = None
    default_file: str = "tasks.json"
    one_file_per_item: bool = False
    #: Tagged answers: a tool call's form (what a drafting model is told to write), and the
    #: ``benchmark.tags.validate`` argument that counts the images ``img_index`` points into.
    answer_tag_form: str = ""
    indexed_images_arg: str = "input_images"
    #: Answers get the image-number rule reward R_rule when scored (LLM-I).
    image_count_rule: bool = False
    #: A query image makes the item an image query, and an image query needs one (ATP-Bench).
    query_image_matches_modality: bool = False
    #: The query field holds the format instruction after the question (Agentic-MME).
    query_has_format_instruction: bool = False
    #: The protocol that runs a model under test on the kind's items and scores what it
    #: produced (``benchmark.evaluation.<module>.PROTOCOL``, see ``benchmark.evaluation.base``);
    #: None: models cannot be evaluated on the kind yet.
    evaluation: str | None = None
    #: Hugging Face dataset card categories of a release.
    task_categories: tuple[str, ...] = ("text-generation",)

    @property
    def format_module(self) -> ModuleType:
        return importlib.import_module(self.format)

    @property
    def source_file_from_fields(self) -> bool:
        """Whether each item's file follows from its own fields (not one file for all)."""
        return self.source_file is not None

    def stats(
        self, records: list[dict[str, Any]], *, tool_kinds: Mapping[str, str] | None = None
    ) -> list[Any]:
        """The kind's statistics tables over ``records`` (``tool_kinds``: m&m's tools'
        toolset categories, for a table function that takes them)."""
        tables = resolve(self.stats_tables)
        if "tool_kinds" in inspect.signature(tables).parameters:
            return tables(records, tool_kinds=tool_kinds)
        return tables(records)
