"""The editor's pure model of an Agentic-MME task file: drafts, overlaying, validation messages
naming step and field, level warnings."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from annotation.trajectories import document as td

SHARED = Path(
    os.environ.get(
        "BENCHWRIGHT_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"
    )
)
TASKS = sorted((SHARED / "agentic-mme" / "json").glob("*.json"))
needs_data = pytest.mark.skipif(not TASKS, reason="shared sample data not found")


def _task(name: str = "0005") -> dict[str, Any]:
    return json.loads((SHARED / "agentic-mme" / "json" / f"{name}.json").read_text())


def _messages(applied: td.Applied) -> list[str]:
    return [str(e) for e in applied.errors]


@needs_data
@pytest.mark.parametrize("path", TASKS, ids=lambda p: p.stem)
def test_an_unchanged_draft_gives_back_the_same_document(path: Path) -> None:
    doc = json.loads(path.read_text())
    applied = td.apply_draft(doc, td.draft_from_document(doc))
    assert applied.errors == []
    assert applied.document == doc
    assert list(applied.document) == list(doc)  # key order too
    assert applied.image_changes == []


@needs_data
@pytest.mark.parametrize("path", TASKS, ids=lambda p: p.stem)
def test_the_samples_fit_their_levels(path: Path) -> None:
    assert td.level_warnings(json.loads(path.read_text())) == []


@pytest.mark.parametrize(
    ("prompt", "question", "instruction"),
    [
        ("What is it? Answer with one word.", "What is it?", "Answer with one word."),
        ("Count them.  Answer with a number.", "Count them.  Answer with a number.", ""),
        ("No instruction here?", "No instruction here?", ""),
        ("Answer with yes or no.", "Answer with yes or no.", ""),
    ],
)
def test_the_format_instruction_splits_off_and_joins_back(
    prompt: str, question: str, instruction: str
) -> None:
    assert td.split_prompt(prompt) == (question, instruction)
    assert td.join_prompt(*td.split_prompt(prompt)) == prompt


@needs_data
def test_edits_land_where_the_task_file_keeps_them() -> None:
    doc = _task("0005")
    draft = td.draft_from_document(doc)
    draft.format_instruction = "Answer with digits only."
    draft.tolerance = "0.5"
    draft.variants = "130 years\none hundred thirty"
    draft.steps[3].urls = "https://en.wikipedia.org/wiki/The_Starry_Night"
    draft.steps[0].question = "What title is on the plaque?"
    draft.reference_tool_calls = "5"
    applied = td.apply_draft(doc, draft)
    assert applied.errors == []
    new = applied.document
    assert new["input"]["prompt"].endswith("visit year? Answer with digits only.")
    assert new["golden_answer"]["tolerance"] == 0.5
    assert new["golden_answer"]["accepted_variants"] == ["130 years", "one hundred thirty"]
    c4 = new["process_evaluation"]["checkpoints"][3]
    assert c4["search_check"]["urls"] == ["https://en.wikipedia.org/wiki/The_Starry_Night"]
    assert c4["search_check"]["keywords"] == ["The Starry Night", "painted", "year"]
    assert new["process_evaluation"]["checkpoints"][0]["visual_check"] == {
        "question": "What title is on the plaque?",
        "expected_answer": "Starry Night",
    }
    assert new["process_evaluation"]["efficiency"]["reference_tool_calls"] == 5
    assert doc == _task("0005")  # the input is not changed


@needs_data
def test_moving_a_step_keeps_its_id_and_reorders_the_checkpoints() -> None:
    doc = _task("0004")
    draft = td.draft_edit(td.draft_from_document(doc), "down:0")
    new = td.apply_draft(doc, draft).document
    cps = new["process_evaluation"]["checkpoints"]
    assert [c["id"] for c in cps] == ["C2", "C1", "C3"]
    assert cps[1] == doc["process_evaluation"]["checkpoints"][0]


def test_adding_steps_gives_fresh_ids_and_a_search_tool() -> None:
    draft = td.Draft(steps=[td.StepDraft(id="C1"), td.StepDraft(id="C3")])
    draft = td.draft_edit(draft, "add:S")
    assert draft.steps[-1].id == "C4"
    assert draft.steps[-1].axis == "S"
    assert draft.steps[-1].tool == "google_search"
    assert td.draft_edit(draft, "up:0") == draft  # out of range: unchanged
    assert [s.id for s in td.draft_edit(draft, "remove:1").steps] == ["C1", "C4"]


@needs_data
def test_every_mistake_names_its_step_and_field() -> None:
    doc = _task("0006")
    draft = td.draft_from_document(doc)
    draft.expected = ""
    draft.steps[0].intent = " "
    draft.steps[1].args = '{"bbox_2d": [430, 408, 1200, 552]}'
    draft.steps[1].question = "What atomic number?"
    draft.steps[1].expected = ""
    draft.steps[2].urls = "ftp://example.org/file\nhttps://en.wikipedia.org/wiki/Copper"
    draft.steps[3].keywords = ""
    draft.steps[4].ans_match = "numeric"
    draft.steps[4].ans_target = "Cu"
    draft.orderings[1].sequence = "C3, C9"
    draft.max_tool_calls = "2"
    messages = _messages(td.apply_draft(doc, draft))
    assert "task · final answer: write the expected final answer" in messages
    assert "step 1 (C1) · intent: say in words what this step does" in messages
    assert any(m.startswith("step 2 (C2) · arguments: crop: bbox_2d") for m in messages)
    assert "step 2 (C2) · expected answer: a visual check needs its expected answer" in messages
    assert any(
        m.startswith("step 3 (C3) · reference URLs: 'ftp://example.org/file' must start with")
        for m in messages
    )
    assert "step 4 (C4) · keywords: a search step needs at least one keyword" in messages
    assert "step 5 (C5) · answer target: 'Cu' is not a number" in messages
    assert "ordering 2 (O2) · sequence: no step has the id C9" in messages
    assert "efficiency · max tool calls: 2 is below the reference tool calls (4)" in messages


@pytest.mark.parametrize(
    "url",
    ["javascript:alert(1)", "http://", "https://exa mple.org/", "example.org", "http://x/"],
)
def test_urls_must_be_http_with_a_host(url: str) -> None:
    assert td.url_problem(url) is not None


@pytest.mark.parametrize(
    "url", ["https://en.wikipedia.org/wiki/Copper", "http://localhost:8000/a?b=c#d"]
)
def test_good_urls_pass(url: str) -> None:
    assert td.url_problem(url) is None


@needs_data
def test_an_unknown_tool_is_refused_only_when_chosen() -> None:
    doc = _task("0001")
    draft = td.draft_from_document(doc)
    draft.steps[0].tool = "teleport"
    messages = _messages(td.apply_draft(doc, draft, tools=["crop", "google_search"]))
    assert messages == ["step 1 (C1) · tool: 'teleport' is not in the project's toolset"]


@needs_data
def test_level_warnings_follow_the_steps() -> None:
    doc = _task("0005")  # level 3: crop, crop, rotate, search
    level1 = copy.deepcopy(doc)
    level1["meta"]["level"] = 1
    warnings = td.level_warnings(level1)
    assert any("Level 1 uses no search" in w for w in warnings)
    assert any("Level 1 is one visual operation, but the steps use 3" in w for w in warnings)

    one_crop = _task("0001")
    one_crop["meta"]["level"] = 3
    assert any("only 1 tool call" in w for w in td.level_warnings(one_crop))
    one_crop["meta"]["level"] = 2
    assert any("one visual operation is Level 1" in w for w in td.level_warnings(one_crop))


def test_a_changed_crop_box_asks_for_a_new_image_and_moves_bbox_2d() -> None:
    sha = "a" * 64
    doc = {
        "task_id": "t",
        "meta": {"level": 1, "domain": "Life"},
        "input": {"prompt": "Q? Answer with a word.", "image": "images/a.png"},
        "golden_answer": {"value": "x", "match_type": "exact"},
        "process_evaluation": {
            "checkpoints": [
                {
                    "id": "C1",
                    "axis": "V",
                    "description": "Crop.",
                    "tools": ["crop"],
                    "code_check": {"verifier": "verify_crop_ast", "bbox_2d": [1, 2, 3, 4]},
                }
            ],
            "ordering_constraints": [],
            "efficiency": {"reference_tool_calls": 1},
        },
    }
    draft = td.draft_from_document(doc)
    shown = {
        "version": 1,
        "source_sha256": sha,
        "steps": [{"op": "crop", "params": {"bbox_2d": [1, 2, 3, 4]}}],
    }
    draft.steps[0].recipe = json.dumps(shown)
    same = td.apply_draft(doc, draft, prefill={"C1": shown})
    assert same.image_changes == [] and same.document == doc

    moved = dict(shown, steps=[{"op": "crop", "params": {"bbox_2d": [100, 200, 300.5, 400]}}])
    draft.steps[0].recipe = json.dumps(moved)
    draft.steps[0].box_px = "[10, 20, 30, 40]"
    applied = td.apply_draft(doc, draft, prefill={"C1": shown})
    assert applied.errors == []
    [change] = applied.image_changes
    assert change.box_px == [10, 20, 30, 40]
    code = applied.document["process_evaluation"]["checkpoints"][0]["code_check"]
    assert code == {"verifier": "verify_crop_ast", "bbox_2d": [100, 200, 300.5, 400]}

    draft.steps[0].recipe = '{"version": 1, "source_sha256": "nope", "steps": []}'
    assert any("image" in m for m in _messages(td.apply_draft(doc, draft)))


# --------------------------------------------------------------------------- the field table

_SAMPLE_TEXT = {
    "tool": "google_lens_search",
    "keywords": "first\nsecond",
    "urls": "https://example.org/a",
    "ans_match": "contains",
    "ans_tol": "0.25",
    "ans_target": "Willow",
}


def _table_doc() -> dict[str, Any]:
    return {
        "meta": {"level": 2, "domain": "Life"},
        "input": {"prompt": "What is it?"},
        "golden_answer": {"value": "x", "match_type": "exact"},
        "process_evaluation": {
            "checkpoints": [
                {"id": "C1", "axis": "V", "description": "Look.", "tools": ["crop"]},
                {
                    "id": "C2",
                    "axis": "S",
                    "description": "Search.",
                    "tools": ["google_search"],
                    "search_check": {"keywords": ["k"], "expected": "e"},
                },
            ],
            "efficiency": {"reference_tool_calls": 2},
        },
    }


@pytest.mark.parametrize("row", td.STEP_ROWS, ids=lambda row: row.field)
def test_each_step_field_lands_at_its_path_in_the_table_and_reads_back(row: td.Row) -> None:
    """Reading and writing a step field both go through its one row: the value typed lands at
    the row's path in the checkpoint, and reading the document gives the text back."""
    doc = _table_doc()
    draft = td.draft_from_document(doc)
    step = draft.steps[1] if row.path[0] == "search_check" else draft.steps[0]
    text = _SAMPLE_TEXT.get(row.field, "typed text")
    setattr(step, row.field, text)
    if row.path[0] == "answer_check":  # an answer check is its match, target and tolerance
        step.ans_match, step.ans_target = "contains", "Willow"
    if row.path[0] == "visual_check":  # a visual check is a question and its answer
        step.question, step.expected = step.question or "q", step.expected or "a"
    applied = td.apply_draft(doc, draft, tools=["google_lens_search"])
    assert applied.errors == []
    index = 1 if row.path[0] == "search_check" else 0
    cp = applied.document["process_evaluation"]["checkpoints"][index]
    stored = cp
    for key in row.path:
        stored = stored[key]
    assert stored == row.kind.parse(text, None)
    assert getattr(td.draft_from_document(applied.document).steps[index], row.field) == text


def test_every_step_field_is_in_the_table_or_has_its_own_handler() -> None:
    own_handler = {"id", "axis", "args", "check_op", "source", "recipe", "box_px", "clear_image"}
    in_table = {row.field for row in td.STEP_ROWS}
    assert in_table | own_handler == set(td.STEP_FIELDS)
    assert not in_table & own_handler
    assert {row.path[0] for row in td.STEP_ROWS if len(row.path) == 2} == {
        check.key for check in td.CHECKS
    }


def test_a_check_that_is_not_an_object_reads_as_empty_instead_of_failing() -> None:
    """An imported checkpoint whose search check is not an object used to stop the editor with
    a ValueError (a server error on every view of the item); now the check reads as empty and
    the annotator is asked for its fields."""
    doc = _table_doc()
    doc["process_evaluation"]["checkpoints"][1]["search_check"] = "see notes"
    draft = td.draft_from_document(doc)
    assert draft.steps[1].keywords == ""
    messages = _messages(td.apply_draft(doc, draft))
    assert "step 2 (C2) · keywords: a search step needs at least one keyword" in messages
    draft.steps[1].keywords, draft.steps[1].search_expected = "k", "e"
    applied = td.apply_draft(doc, draft)
    assert applied.errors == []
    assert applied.document["process_evaluation"]["checkpoints"][1]["search_check"] == {
        "keywords": ["k"],
        "expected": "e",
    }


def test_an_unchanged_field_keeps_its_stored_type_when_its_neighbour_changes() -> None:
    doc = _table_doc()
    doc["process_evaluation"]["checkpoints"][0]["visual_check"] = {
        "question": "How many?",
        "expected_answer": 5,
    }
    draft = td.draft_from_document(doc)
    draft.steps[0].question = "How many rings?"
    applied = td.apply_draft(doc, draft)
    assert applied.errors == []
    assert applied.document["process_evaluation"]["checkpoints"][0]["visual_check"] == {
        "question": "How many rings?",
        "expected_answer": 5,
    }
