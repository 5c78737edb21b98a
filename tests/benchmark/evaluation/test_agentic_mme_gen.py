"""Agentic-MME Gen mode: the model's code runs in Benchwright's sandbox with the task's images,
and what it saves comes back as transformed_image_N.png (skipped where the sandbox cannot run,
as the sandbox's own tests are)."""

from __future__ import annotations

import io
import json
import random
from typing import Any

import pytest
from PIL import Image, ImageEnhance

from benchmark.evaluation.agentic_mme import AgenticMmeProtocol
from benchmark.evaluation.base import EvalItem, EvalSettings, Status, ToolLayer
from benchmark.evaluation.mme_gen import traced_ops
from benchmark.sandbox import SandboxResult, run_code
from benchmark.sandbox.result import SandboxLimits
from tests.benchmark.evaluation.mme_scripted import (
    DEMO,
    ScriptedChat,
    answer,
    call,
    item,
    task,
    tools,
)
from tests.required import missing

FIXED = AgenticMmeProtocol(now=lambda: "2026-01-01T00:00:00Z")
GEN = EvalSettings(mode="gen")

BRIGHTEN = """<think>Too dark: brighten it.</think>
<code>
import os
from PIL import Image, ImageEnhance
img = Image.open(os.environ['ORIGINAL_IMAGE_PATH']).convert('RGB')
img = ImageEnhance.Brightness(img).enhance(2.8)
img.save(os.path.join(os.environ['PROCESSED_IMAGE_SAVE_PATH'], 'transformed_image_1.png'))
print('size', img.size)
</code>"""

CROP = """<code>
```python
import os
from PIL import Image
out = os.environ['PROCESSED_IMAGE_SAVE_PATH']
img = Image.open(os.path.join(out, 'transformed_image_1.png'))
w, h = img.size
part = img.crop((w // 4, h // 4, w // 2, h // 2))
part.save(os.path.join(out, 'transformed_image_2.png'))
```
</code>"""


@pytest.fixture(scope="module", autouse=True)
def _sandbox_available() -> None:
    result = run_code("print('ready')", limits=SandboxLimits(wall_seconds=20))
    if result.kind == "unavailable":
        missing(f"the sandbox is unavailable here: {result.reason}")


def run(script: list[Any], **kw: Any) -> Any:
    chat = ScriptedChat(script)
    outcome = FIXED.run_item(
        kw.get("the_item") or item("demo03"),
        settings=GEN,
        chat=chat,
        tools=ToolLayer(),
        truth=task("demo03"),
    )
    return outcome, chat


def test_code_runs_in_the_sandbox_and_its_images_come_back_as_transformed_images() -> None:
    outcome, chat = run([answer(BRIGHTEN), answer(CROP), answer("<answer>1.072</answer>")])
    assert outcome.status == Status.OK, outcome.error
    source = Image.open(DEMO / "images/image_demo03.png").convert("RGB")
    brightened = ImageEnhance.Brightness(source).enhance(2.8)
    first = Image.open(io.BytesIO(outcome.files["tool_images/transformed_image_1.png"]))
    assert first.tobytes() == brightened.tobytes()
    w, h = brightened.size
    second = Image.open(io.BytesIO(outcome.files["tool_images/transformed_image_2.png"]))
    assert second.tobytes() == brightened.crop((w // 4, h // 4, w // 2, h // 2)).tobytes()
    # The model saw its output and the new image, named, in the next round.
    shown = chat.requests[1].messages[-1]["content"]
    assert shown[1]["text"] == "[Image 1: transformed_image_1.png]"
    assert "[Code output]\nsize (960, 720)" in shown[-1]["text"]
    assert chat.requests[1].tools == [
        "google_search",
        "google_lens_search",
        "fetch_webpage",
        "download_image",
    ]
    events = json.loads(outcome.files["tool_use_list.json"])
    assert [(e["tool_name"], e["raw_tool_name"], e["output"]["ok"]) for e in events] == [
        ("enhance", "python_image_processing", "true"),
        ("crop", "python_image_processing", "true"),
        ("run_visual_processing_code", "script_exec", "true"),
        ("run_visual_processing_code", "script_exec", "true"),
    ]
    assert events[1]["output"]["output_path"] == "tool_images/transformed_image_2.png"
    assert [e["index"] for e in events] == [0, 1, 2, 3]
    meta = json.loads(outcome.files["run_meta.json"])
    assert (meta["mode"], meta["effective_tool_calls"]) == ("general_rollout", 2)
    assert outcome.scores["calls"] == 2 and outcome.scores["acc"] is True


def test_a_code_error_is_an_observation_and_what_was_saved_before_it_is_kept() -> None:
    failing = CROP.replace("part.save(", "part.save(").replace(
        "```\n</code>", "raise ValueError('boom')\n```\n</code>"
    )
    outcome, chat = run([answer(BRIGHTEN), answer(failing), answer("<answer>1.072</answer>")])
    said = chat.requests[2].messages[-1]["content"][-1]["text"]
    assert said.startswith("[Code error]") and "ValueError: boom" in said
    assert "tool_images/transformed_image_2.png" in outcome.files
    events = json.loads(outcome.files["tool_use_list.json"])
    assert events[-1]["output"]["ok"] == "false"


def test_search_tools_still_work_by_function_calling_and_code_with_an_answer_is_not_final() -> None:
    outcome, chat = run(
        [
            tools(
                call("google_search", {"query": "EUR rate"}), text=BRIGHTEN + "<answer>1.0</answer>"
            ),
            answer("<answer>1.072</answer>"),
        ]
    )
    assert outcome.output["answer"] == "1.072"
    assert "tool_images/transformed_image_1.png" in outcome.files
    said = [m["content"] for m in chat.requests[1].messages if m["role"] == "tool"]
    assert said == ["Error: google_search is not available here (no provider is configured)"]


def test_images_too_large_for_the_program_limit_are_refused_with_a_reason() -> None:
    noise = Image.frombytes("RGB", (800, 800), random.Random(0).randbytes(800 * 800 * 3))
    data = io.BytesIO()
    noise.save(data, "PNG")
    big = EvalItem("demo03", task("demo03"), {"images/image_demo03.png": data.getvalue()})

    def no_sandbox(program: str) -> SandboxResult:
        raise AssertionError("the block must not run")

    protocol = AgenticMmeProtocol(runner=no_sandbox)
    chat = ScriptedChat([answer(BRIGHTEN), answer("<answer>x</answer>")])
    outcome = protocol.run_item(big, settings=GEN, chat=chat, tools=ToolLayer())
    said = chat.requests[1].messages[-1]["content"][-1]["text"]
    assert said.startswith("[Code error]\nthe task's images and earlier results")
    assert "1 MB program limit" in said
    assert outcome.status == Status.OK


def test_the_tracer_names_the_operations_and_the_files_they_were_saved_to() -> None:
    code = """
from PIL import Image, ImageOps, ImageFilter
import cv2
img = Image.open('a.png')
g = ImageOps.grayscale(img)
b = img.filter(ImageFilter.GaussianBlur(2))
r = img.rotate(90, expand=True)
r.save(f"{out}/transformed_image_{n}.png")
e = cv2.Canny(arr, 100, 200)
cv2.imwrite(os.path.join(out, 'transformed_image_3.png'), e)
"""
    assert traced_ops(code) == [
        {"op": "grayscale", "line": 5, "save": "transformed_image_{}.png"},
        {"op": "blur", "line": 6, "save": "transformed_image_{}.png"},
        {"op": "rotate", "line": 7, "save": "transformed_image_{}.png"},
        {"op": "edge_detect", "line": 9, "save": "transformed_image_3.png"},
    ]
    assert traced_ops("def (:") == []


def test_a_block_gets_the_inputs_and_the_earlier_results_it_may_read() -> None:
    from benchmark.evaluation.mme_gen import needed_images
    from benchmark.evaluation.mme_tools import Workspace

    picture = io.BytesIO()
    Image.new("RGB", (8, 8)).save(picture, "PNG")
    workspace = Workspace([("in.png", picture.getvalue())])
    for n in (1, 2, 3):
        workspace.add(picture.getvalue(), f"result {n}")

    def names(code: str) -> list[str]:
        return [image.path for image in needed_images(code, workspace)]

    assert names("img = Image.open(os.environ['ORIGINAL_IMAGE_PATH'])") == ["orig.png"]
    assert names("open(p + '/transformed_image_2.png')") == [
        "orig.png",
        "tool_images/transformed_image_2.png",
    ]
    everything = ["orig.png"] + [f"tool_images/transformed_image_{n}.png" for n in (1, 2, 3)]
    assert names("for i in range(3): open(f'transformed_image_{i}.png')") == everything
    assert names("print(os.listdir(out))") == everything


def test_an_image_saved_under_another_name_is_named_to_the_model() -> None:
    code = BRIGHTEN.replace("'transformed_image_1.png'", "'brighter.png'")
    outcome, chat = run([answer(code), answer("<answer>1.072</answer>")])
    said = chat.requests[1].messages[-1]["content"][-1]["text"]
    assert "[brighter.png is not named transformed_image_N.png; it is not shown]" in said
    assert not any(name.startswith("tool_images/") for name in outcome.files)
