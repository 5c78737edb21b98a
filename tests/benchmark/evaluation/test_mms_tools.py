"""m&m's image-processing tools run in Benchwright's own code: the pixels they produce, and
their errors named by step and argument; image generation through the rendering providers."""

from __future__ import annotations

import io
from typing import Any

import pytest
from PIL import Image

from benchmark.evaluation.base import EvalItem, EvaluationError, ToolLayer, ToolUnavailable
from benchmark.evaluation.mms import builtin_toolset
from benchmark.evaluation.mms_tools import Blob, Executor, RenderingTools
from benchmark.plans.parse import parse_json_plan
from benchmark.rendering.providers import Found, ProviderError, Providers

RED, BLUE = (220, 20, 20), (20, 20, 220)


def picture() -> bytes:
    """40x20: left half red, right half blue, with a white 4x4 square at (30, 8)."""
    image = Image.new("RGB", (40, 20), RED)
    image.paste(BLUE, (20, 0, 40, 20))
    image.paste((255, 255, 255), (30, 8, 34, 12))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def executor(layer: ToolLayer | None = None) -> Executor:
    item = EvalItem("1", {"user_request": "..."}, {"in.png": picture()})
    return Executor(item, layer or ToolLayer(), builtin_toolset())


def run(steps: list[dict[str, Any]], ex: Executor | None = None) -> tuple[Executor, Any]:
    ex = ex or executor()
    return ex, ex.run(parse_json_plan(steps).steps)


def colors(image: Image.Image) -> set[tuple[int, ...]]:
    return {color for _, color in image.getcolors(maxcolors=1 << 16) or []}


def image_of(ex: Executor, step: int, key: str = "image") -> Image.Image:
    value = ex.outputs[step][key]
    assert isinstance(value, Blob)
    return Image.open(io.BytesIO(ex.files[value.digest])).convert("RGB")


def test_crop_halves_follow_m_and_ms_boxes() -> None:
    ex, result = run(
        [
            {"id": 0, "name": "image crop left", "args": {"image": "in.png"}},
            {"id": 1, "name": "image crop right", "args": {"image": "in.png"}},
            {"id": 2, "name": "image crop bottom", "args": {"image": "in.png"}},
        ]
    )
    assert result.passed
    left, right, bottom = image_of(ex, 0), image_of(ex, 1), image_of(ex, 2)
    assert left.size == (20, 19) and colors(left) == {RED}
    assert right.size == (19, 19) and right.getpixel((0, 0)) == BLUE
    assert bottom.size == (39, 9)


def test_crop_to_an_object_box_in_pixels_or_fractions() -> None:
    ex, result = run(
        [
            {
                "id": 0,
                "name": "image crop",
                "args": {"image": "in.png", "object": {"bbox": [30, 8, 34, 12]}},
            },
            {
                "id": 1,
                "name": "image crop",
                "args": {"image": "in.png", "object": {"bbox": [0.5, 0.0, 0.75, 0.5]}},
            },
        ]
    )
    assert result.passed
    square = image_of(ex, 0)
    assert square.size == (4, 4) and colors(square) == {(255, 255, 255)}
    assert image_of(ex, 1).size == (10, 10)


def test_color_pop_keeps_the_object_in_colour_and_greys_the_rest() -> None:
    ex, result = run(
        [
            {
                "id": 0,
                "name": "color pop",
                "args": {"image": "in.png", "object": {"bbox": [0, 0, 10, 10], "label": "cup"}},
            },
        ]
    )
    assert result.passed
    out = image_of(ex, 0)
    assert out.getpixel((2, 2)) == RED
    r, g, b = out.getpixel((30, 2))
    assert r == g == b  # grey outside the object


def test_background_blur_keeps_the_object_sharp_and_blurs_the_background() -> None:
    big = Image.new("RGB", (200, 100), RED)
    big.paste(BLUE, (100, 0, 200, 100))
    data = io.BytesIO()
    big.save(data, "PNG")
    item = EvalItem("1", {}, {"big.png": data.getvalue()})
    ex = Executor(item, ToolLayer(), builtin_toolset())
    obj = {"bbox": [60, 20, 140, 80], "label": "dog"}
    result = ex.run(
        parse_json_plan(
            [{"id": 0, "name": "background blur", "args": {"image": "big.png", "object": obj}}]
        ).steps
    )
    assert result.passed
    out = image_of(ex, 0)
    # Inside the object the red/blue border stays sharp; outside it is blurred.
    assert (out.getpixel((99, 50)), out.getpixel((100, 50))) == (RED, BLUE)
    assert out.getpixel((99, 2)) not in (RED, BLUE)


def test_detected_objects_are_counted_selected_tagged_and_covered_by_an_emoji() -> None:
    objects = [
        {"bbox": [2, 2, 12, 14], "label": "red cup"},
        {"bbox": [24, 4, 36, 16], "label": "dog"},
    ]
    ex, result = run(
        [
            {"id": 0, "name": "count", "args": {"objects": objects}},
            {"id": 1, "name": "select object", "args": {"objects": objects, "object_name": "dog"}},
            {"id": 2, "name": "tag", "args": {"image": "in.png", "objects": objects}},
            {
                "id": 3,
                "name": "emoji",
                "args": {"image": "in.png", "object": "<node-1>.object", "emoji": "grinning"},
            },
        ]
    )
    assert result.passed, result.error
    assert ex.outputs[0] == {"number": 2}
    assert ex.outputs[1] == {"object": objects[1]}
    tagged = image_of(ex, 2)
    assert tagged.getpixel((2, 8)) == (0, 128, 0)  # the box outline is green
    covered = image_of(ex, 3)
    assert covered.getpixel((30, 10)) == (255, 204, 0)  # the smiley's face at the dog's centre
    assert covered.getpixel((5, 5)) == RED  # the rest untouched


def test_a_wrong_argument_is_a_failed_step_named_with_its_argument() -> None:
    ex, result = run([{"id": 0, "name": "image crop left", "args": {"image": "nope.png"}}])
    assert result.status == "failed"
    assert result.error.startswith(
        "step 0 (image crop left): the argument 'image' must be an image"
    )
    assert "in.png" in result.error


def test_a_reference_to_an_output_a_step_does_not_have_fails_naming_it() -> None:
    ex, result = run(
        [
            {"id": 0, "name": "count", "args": {"objects": []}},
            {"id": 1, "name": "image crop left", "args": {"image": "<node-0>.image"}},
        ]
    )
    assert result.status == "failed"
    assert "'image' of step 0, whose outputs are ['number']" in result.error


def test_tools_without_a_provider_make_the_plan_not_executable() -> None:
    ex, result = run(
        [
            {"id": 0, "name": "object detection", "args": {"image": "in.png"}},
            {"id": 1, "name": "get weather", "args": {"lon": "1", "lat": "2"}},
        ]
    )
    assert result.status == "not_executable"
    assert result.unavailable == ["object detection", "get weather"]
    assert ex.tool_calls == 0


class Generator:
    name = "fake"

    def __init__(self, fail: ProviderError | None = None) -> None:
        self.fail = fail
        self.prompts: list[str] = []

    def generate(self, prompt: str) -> Found:
        self.prompts.append(prompt)
        if self.fail:
            raise self.fail
        return Found(picture())


def test_image_generation_runs_through_the_rendering_provider() -> None:
    generator = Generator()
    layer = ToolLayer([RenderingTools(Providers(generate=generator))])
    ex, result = run(
        [
            {"id": 0, "name": "image generation", "args": {"text": "a flag"}},
            {"id": 1, "name": "image crop left", "args": {"image": "<node-0>.image"}},
        ],
        executor(layer),
    )
    assert result.passed
    assert generator.prompts == ["a flag"]
    assert colors(image_of(ex, 1)) == {RED}
    # Image editing has no provider here.
    assert not layer.offers("image editing")


def test_rendering_provider_failures() -> None:
    tools = RenderingTools(Providers(generate=Generator(ProviderError("bad prompt"))))
    assert tools.call("image generation", {"text": "x"}).error == "bad prompt"
    down = RenderingTools(
        Providers(generate=Generator(ProviderError("no GPU", kind="unavailable")))
    )
    with pytest.raises(ToolUnavailable):
        down.call("image generation", {"text": "x"})
    busy = RenderingTools(Providers(generate=Generator(ProviderError("429", retry=True))))
    with pytest.raises(EvaluationError, match="try again"):
        busy.call("image generation", {"text": "x"})
