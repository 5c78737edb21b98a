"""The oracle conversation builder (Agentic-MME §2.4), pure: which images go where, the search
findings, what is masked and left out, the images the task file defines, and the clear error
when a step's observation is missing. Plus ``ChatRequest.parts`` (interleaved content)."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest

from benchmark.imaging.recipe import Recipe
from benchmark.llm.cache import request_key
from benchmark.llm.client import ChatRequest, ImageInput
from review.oracle import conversation as oc
from tests.factories import png_bytes

IN = "a" * 64
CROP = "b" * 64
ROT = "c" * 64
ANSWER = "130"


def task(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "task_id": "0005",
        "input": {
            "prompt": "How many years passed between the painting and the visit? "
            "Answer with an integer."
        },
        "golden_answer": {"value": ANSWER, "match_type": "numeric", "accepted_variants": ["130y"]},
        "process_evaluation": {
            "checkpoints": [
                {
                    "id": "C1",
                    "axis": "V",
                    "description": "Crop the plaque next to the frame.",
                    "tools": ["crop"],
                    "code_check": {
                        "verifier": "verify_crop_ast",
                        "image_index": 0,
                        "bbox_2d": [715, 460, 852, 545],
                    },
                    "visual_check": {"question": "Which title?", "expected_answer": "SECRETQ"},
                    "reference_image": {"sha256": CROP, "recipe": None, "box_px": None},
                },
                {
                    "id": "C2",
                    "axis": "S",
                    "description": "Search when the painting was made (expected to find: 1889).",
                    "tools": ["google_search"],
                    "search_check": {
                        "keywords": ["Starry Night", "year painted"],
                        "expected": "1889",
                        "urls": ["https://en.wikipedia.org/wiki/The_Starry_Night"],
                    },
                },
                {
                    "id": "C3",
                    "axis": "V",
                    "description": "Rotate the ticket crop.",
                    "tools": ["rotate"],
                    "code_check": {"verifier": "verify_rotate_ast", "angle": -90},
                    "reference_image": {"sha256": ROT},
                },
                {
                    "id": "C4",
                    "axis": "V",
                    "description": "Subtract: the answer is 130 years.",
                    "tools": [],
                    "answer_check": {"match_type": "numeric", "target": "SECRETA"},
                },
            ]
        },
    }
    doc.update(over)
    return doc


def texts(conv: oc.Conversation) -> str:
    return "\n".join(p.text for p in conv.parts if isinstance(p, oc.Text))


def test_images_in_order_with_search_findings_between() -> None:
    conv = oc.build(task(), input_shas=[IN])
    kinds = [
        ("img", p.sha256, p.index) if isinstance(p, oc.Picture) else ("text", p.text)
        for p in conv.parts
    ]
    pictures = [k for k in kinds if k[0] == "img"]
    assert pictures == [("img", IN, 0), ("img", CROP, 1), ("img", ROT, 2)]
    # The order: question, input image, step 1 with its crop, step 2's finding, step 3 with
    # its image, step 4's words, the final ask.
    flat = [k[1] if k[0] == "text" else k[1][:4] for k in kinds]
    i_question = next(i for i, t in enumerate(flat) if t.startswith("Question:"))
    i_in = flat.index(IN[:4])
    i_step1 = next(i for i, t in enumerate(flat) if t.startswith("Step 1:"))
    i_crop = flat.index(CROP[:4])
    i_found = next(i for i, t in enumerate(flat) if "Found: 1889" in t)
    i_rot = flat.index(ROT[:4])
    i_step4 = next(i for i, t in enumerate(flat) if t.startswith("Step 4:"))
    i_final = len(flat) - 1
    assert i_question < i_in < i_step1 < i_crop < i_found < i_rot < i_step4 < i_final
    search = flat[i_found]
    assert "Searched for: Starry Night; year painted" in search
    assert "Sources: https://en.wikipedia.org/wiki/The_Starry_Night" in search
    assert flat[i_crop - 1] == "Result: Image 1"
    assert 'Tool: crop {"bbox_2d": [715, 460, 852, 545], "image_index": 0}' in flat[i_step1]
    final = flat[i_final]
    assert final.startswith("Now answer the question: How many years passed")
    assert "Answer with an integer." in final and "<answer></answer>" in final
    assert conv.notes == []


def test_the_answer_and_the_checks_are_not_given() -> None:
    conv = oc.build(task(), input_shas=[IN])
    words = texts(conv) + conv.system
    assert "SECRETQ" not in words and "Which title?" not in words  # the visual check
    assert "SECRETA" not in words  # the answer check
    assert "the answer is [masked] years" in words  # the final answer, masked
    assert " 130" not in words
    # An observation is given as recorded, even when it is the answer.
    doc = task()
    doc["process_evaluation"]["checkpoints"][1]["search_check"]["expected"] = ANSWER
    assert "Found: 130" in texts(oc.build(doc, input_shas=[IN]))


def test_masking_is_whole_word_and_skips_one_letter_answers() -> None:
    pattern = oc.masker(["130", "Old Town", "A"])
    assert pattern is not None
    assert pattern.sub("#", "1300 years, 130 years, old town.") == "1300 years, # years, #."
    assert oc.masker(["A", " "]) is None


def test_messages_keep_images_as_sha256_references() -> None:
    messages = oc.build(task(), input_shas=[IN]).messages()
    assert messages[0] == {"role": "system", "content": oc.SYSTEM}
    images = [p for p in messages[1]["content"] if p["type"] == "image"]
    assert images == [
        {"type": "image", "sha256": IN, "index": 0},
        {"type": "image", "sha256": CROP, "index": 1},
        {"type": "image", "sha256": ROT, "index": 2},
    ]
    assert "base64" not in str(messages)


def unstored(doc: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    for cp in doc["process_evaluation"]["checkpoints"]:
        cp.pop("reference_image", None)
    return doc


def test_images_the_task_file_defines_are_planned_as_recipes() -> None:
    plan = oc.image_plan(unstored(task()), [IN])
    assert [(p.step_id, p.index, p.op, p.problem) for p in plan] == [
        ("C1", 1, "crop", ""),
        ("C3", 2, "rotate", ""),
    ]
    crop = Recipe.build(IN).then("crop", {"bbox_2d": [715, 460, 852, 545]})
    assert plan[0].recipe == crop.to_dict()
    # No image_index: the rotate works on the latest image, the crop.
    assert plan[1].recipe == crop.then("rotate", {"angle": -90}).to_dict()
    assert all(p.derived for p in plan)
    conv = oc.build(unstored(task()), input_shas=[IN], images={"C1": CROP, "C3": ROT})
    assert [p.sha256 for p in conv.parts if isinstance(p, oc.Picture)] == [IN, CROP, ROT]
    assert len(conv.notes) == 2 and "derived from the task file" in conv.notes[0]


def test_a_stored_image_is_preferred_and_its_recipe_continues_the_chain() -> None:
    doc = unstored(task())
    recipe = Recipe.build(IN).then("crop", {"bbox_2d": [0, 0, 500, 500]}).to_dict()
    doc["process_evaluation"]["checkpoints"][0]["reference_image"] = {
        "sha256": CROP,
        "recipe": recipe,
    }
    plan = oc.image_plan(doc, [IN])
    assert plan[0].sha256 == CROP and not plan[0].derived
    assert plan[1].recipe == Recipe.from_dict(recipe).then("rotate", {"angle": -90}).to_dict()


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"tools": ["enhance"], "code_check": {"verifier": "verify_enhance_ast"}}, "no arguments"),
        ({"code_check": {"image_index": 7, "bbox_2d": [0, 0, 10, 10]}}, "names no earlier"),
        ({"code_check": {"bbox_2d": [900, 0, 100, 10]}}, "do not make one"),
    ],
)
def test_undefined_images_are_named_with_the_fix(change: dict[str, Any], problem: str) -> None:
    doc = unstored(task())
    doc["process_evaluation"]["checkpoints"][0].update(change)
    plan = oc.image_plan(doc, [IN])
    assert problem in plan[0].problem and plan[0].recipe is None
    assert "trajectory editor" in plan[0].problem
    # The rotate after it works on an unknown image: also undefined.
    assert "is not known" in plan[1].problem
    with pytest.raises(oc.OracleInputError) as err:
        oc.build(doc, input_shas=[IN])
    assert len(err.value.problems) == 2
    assert err.value.problems[0].startswith("step 1 (C1)")
    assert err.value.problems[1].startswith("step 3 (C3)")


def test_search_step_without_a_finding_and_other_bad_tasks() -> None:
    doc = task()
    cp = doc["process_evaluation"]["checkpoints"][1]
    cp["search_check"].pop("expected")
    cp["description"] = "Search the year."
    with pytest.raises(oc.OracleInputError, match=r"step 2 \(C2\): the reference records no"):
        oc.build(doc, input_shas=[IN])
    with pytest.raises(oc.OracleInputError, match="no input image"):
        oc.build(task(), input_shas=[])
    with pytest.raises(oc.OracleInputError, match="has no steps"):
        oc.build(task(process_evaluation={}), input_shas=[IN])
    # The finding may come from the description, as the released search judge reads it.
    doc = task()
    doc["process_evaluation"]["checkpoints"][1]["search_check"].pop("expected")
    assert "Found: 1889" in texts(oc.build(doc, input_shas=[IN]))


def test_two_input_images_are_numbered_before_the_steps() -> None:
    doc = unstored(task())
    doc["process_evaluation"]["checkpoints"][0]["code_check"]["image_index"] = 1
    plan = oc.image_plan(doc, [IN, CROP])
    assert [p.index for p in plan] == [2, 3]
    assert plan[0].recipe is not None and plan[0].recipe["source_sha256"] == CROP


# --------------------------------------------------------------------------- ChatRequest.parts


def image(seed: int) -> ImageInput:
    data = png_bytes(seed)
    return ImageInput(sha256=hashlib.sha256(data).hexdigest(), data=data)


def test_a_request_without_parts_keys_as_before() -> None:
    img = image(1)
    request = ChatRequest(prompt="What is it?", images=(img,), system="Be brief.")
    old = [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is it?"},
                {"type": "image", "sha256": img.sha256},
            ],
        },
    ]
    assert request.key("m", endpoint="http://x/v1") == request_key(
        model="m", messages=old, params={}, endpoint="http://x/v1"
    )
    plain = ChatRequest(prompt="Hi")
    assert plain.key_messages() == [{"role": "user", "content": "Hi"}]


def test_parts_interleave_text_and_images_in_one_user_turn() -> None:
    a, b = image(1), image(2)
    request = ChatRequest(prompt="Question", images=(a,), parts=("Step 1", b, "Answer now"))
    content = request.wire_messages()[0]["content"]
    assert [p["type"] for p in content] == ["text", "image_url", "text", "image_url", "text"]
    assert content[2]["text"] == "Step 1" and content[4]["text"] == "Answer now"
    assert content[3]["image_url"]["url"].startswith("data:image/png;base64,")
    keyed = request.key_messages()[0]["content"]
    assert keyed[3] == {"type": "image", "sha256": b.sha256}
    assert request.all_images == (a, b)
    moved = ChatRequest(prompt="Question", images=(a,), parts=(b, "Step 1", "Answer now"))
    assert moved.key("m") != request.key("m")
