"""What deriving a recipe may cost: at most 20 steps; a step may not make more than 40 MP nor
cost more (a denoise or Canny counts several times its pixels); a recipe may not cost more than
160 MP in all; all refused before any pixel work, naming the step and the limit. And a clock
that stops a derivation between steps.

The new names are reached through the module (``recipe.plan``...), so each test fails on its
own on code without limits instead of the whole file failing to import."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import time
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from benchmark.imaging import ops
from benchmark.imaging import recipe as recipes
from benchmark.imaging.recipe import Recipe, RecipeError, derive

SHA = "ab" * 32


def photo(size: tuple[int, int] = (640, 480)) -> Image.Image:
    rng = np.random.default_rng(3)
    return Image.fromarray(rng.integers(0, 255, (size[1], size[0], 3), dtype=np.uint8), "RGB")


def build(*steps: tuple[str, dict[str, Any]]) -> Recipe:
    return Recipe.build(SHA, [{"op": op, "params": params} for op, params in steps])


@pytest.fixture
def no_pixel_work(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Fails the test as soon as any operation runs (a refusal must come before the work)."""
    ran: list[str] = []

    def spy(image: Image.Image, op: str, params: Any = None) -> Image.Image:
        ran.append(op)
        raise AssertionError(f"{op} ran: the recipe should have been refused before any work")

    monkeypatch.setattr(ops, "apply", spy)
    return ran


# --------------------------------------------------------------------------- steps


def test_a_21_step_recipe_is_refused_naming_the_limit() -> None:
    steps = [{"op": "flip", "params": {}}] * 21
    with pytest.raises(RecipeError, match=r"^recipe: 21 steps, over the limit of 20 steps"):
        Recipe.build(SHA, steps)
    with pytest.raises(RecipeError, match="over the limit of 20 steps"):
        Recipe.from_dict({"version": 1, "source_sha256": SHA, "steps": steps})
    twenty = Recipe.build(SHA, steps[:20])
    assert len(twenty.steps) == recipes.MAX_STEPS == 20
    with pytest.raises(RecipeError, match="21 steps, over the limit of 20"):
        twenty.then("flip")


def test_a_recipe_built_around_the_parser_is_still_held_to_20_steps(
    no_pixel_work: list[str],
) -> None:
    recipe = Recipe(
        SHA, tuple(recipes.Step("flip", {"direction": "horizontal"}) for _ in range(25))
    )
    with pytest.raises(RecipeError, match="25 steps, over the limit of 20"):
        derive(photo((40, 30)), recipe)


# --------------------------------------------------------------------------- per step


def test_a_resize_to_10000_by_10000_is_refused_naming_the_step_before_any_work(
    no_pixel_work: list[str],
) -> None:
    recipe = build(
        ("crop", {"bbox_2d": [0, 0, 500, 500]}),
        ("flip", {}),
        ("resize", {"width": 10000, "height": 10000}),
        ("denoise", {"strength": 30}),
    )
    with pytest.raises(RecipeError) as caught:
        derive(photo(), recipe)
    assert str(caught.value) == (
        "step 3 (resize): the output would be 10000×10000 = 100 MP, over the 40 MP limit"
    )
    assert caught.value.step == 3
    assert no_pixel_work == []


def test_an_enlarging_crop_or_rotation_is_held_to_the_same_limit(
    no_pixel_work: list[str],
) -> None:
    zoom = build(
        ("resize", {"width": 4000, "height": 3000}),
        ("crop", {"bbox_2d": [0, 0, 1000, 1000], "zoom_scale": 5}),
    )
    with pytest.raises(RecipeError, match=r"^step 2 \(crop\): the output would be 20000×15000"):
        derive(photo(), zoom)
    turn = build(("resize", {"width": 6000, "height": 6000}), ("rotate", {"angle": 45}))
    with pytest.raises(
        RecipeError,
        match=r"^step 2 \(rotate\): the output would be 8486×8486 = 72 MP, over the 40 MP limit",
    ):
        derive(photo(), turn)


def test_a_strong_denoise_on_a_large_image_is_refused_but_allowed_on_a_small_one(
    no_pixel_work: list[str],
) -> None:
    # A 21×21 median filter takes about 10 s per megapixel: it counts 441 times its pixels.
    recipe = build(("denoise", {"strength": 30}))
    with pytest.raises(RecipeError) as caught:
        derive(photo((1000, 800)), recipe)
    assert str(caught.value) == (
        "step 1 (denoise): a 21×21 median filter (strength 30) counts 441 times its pixels, so "
        "it is limited to 0.091 MP per step; here it would work on 1000×800 = 0.8 MP. Crop or "
        "scale the image down first, or lower the strength"
    )
    canny = build(("edge_detect", {"method": "canny"}))
    with pytest.raises(
        RecipeError, match=r"^step 1 \(edge_detect\): Canny edge detection counts 10 times"
    ):
        recipes.plan(canny, (3000, 2000))
    assert [e.size for e in recipes.plan(recipe, (300, 300))] == [(300, 300)]
    assert [e.cost for e in recipes.plan(canny, (2000, 2000))] == [40_000_000]


# --------------------------------------------------------------------------- in total


def test_a_chain_under_the_per_step_cap_but_over_the_total_is_refused(
    no_pixel_work: list[str],
) -> None:
    # 30 MP per step is under the 40 MP step limit; the sixth step takes the recipe to 180 MP.
    recipe = build(*[("blur", {"radius": 2})] * 6)
    image = Image.new("RGB", (6000, 5000))
    with pytest.raises(RecipeError) as caught:
        derive(image, recipe)
    assert str(caught.value).startswith(
        "step 6 (blur): the steps up to this one would work through 180 MP, over the 160 MP "
        "limit for one recipe"
    )
    assert caught.value.step == 6
    assert no_pixel_work == []
    assert len(recipes.plan(build(*[("blur", {"radius": 2})] * 5), (6000, 5000))) == 5


def test_the_limits_follow_the_deployment_image_limit(no_pixel_work: list[str]) -> None:
    limits = recipes.Limits.for_image_pixels(10_000, seconds=None)
    assert (limits.step_pixels, limits.total_pixels) == (10_000, 40_000)
    with pytest.raises(RecipeError) as caught:
        derive(photo((100, 100)), build(*[("invert", {})] * 5), limits=limits)
    assert str(caught.value).startswith(
        "step 5 (invert): the steps up to this one would work through 0.05 MP, over the "
        "0.04 MP limit for one recipe"
    )
    with pytest.raises(RecipeError) as caught:
        derive(photo((100, 100)), build(("resize", {"width": 120})), limits=limits)
    assert str(caught.value) == (
        "step 1 (resize): the output would be 120×120 = 0.014 MP, over the 0.01 MP limit"
    )
    # A source over the limit (stored before the limit was lowered) may be cropped, not resized.
    with pytest.raises(RecipeError) as caught:
        derive(photo((120, 100)), build(("resize", {"scale": 0.5})), limits=limits)
    assert str(caught.value) == (
        "step 1 (resize): the image it reads is 120×100 = 0.012 MP, over the 0.01 MP limit. "
        "Crop it first"
    )
    cropped = recipes.plan(build(("crop", {"box": [0, 0, 100, 100]})), (120, 100), limits=limits)
    assert [e.size for e in cropped] == [(100, 100)]
    # Denoise counts 9 times its pixels even at strength 1; the message says why.
    wider = recipes.Limits(step_pixels=100_000, total_pixels=400_000, seconds=None)
    with pytest.raises(RecipeError) as caught:
        recipes.plan(build(*[("denoise", {"strength": 1})] * 5), (100, 100), limits=wider)
    assert str(caught.value) == (
        "step 5 (denoise): the steps up to this one would work through 0.45 MP, over the "
        "0.4 MP limit for one recipe (denoise and Canny edges count several times their "
        "pixels). Use fewer steps, or crop or scale the image down first"
    )


def test_the_re_derive_check_says_why_an_over_limit_recipe_cannot_be_derived(
    no_pixel_work: list[str],
) -> None:
    out = io.BytesIO()
    photo((64, 48)).save(out, format="PNG")
    data = out.getvalue()
    recipe = Recipe.build(
        hashlib.sha256(data).hexdigest(),
        [{"op": "resize", "params": {"width": 10000, "height": 10000}}],
    )
    result = recipes.check(data, recipe, "0" * 64)
    assert not result.ok
    assert result.reason == (
        "cannot re-derive: step 1 (resize): the output would be 10000×10000 = 100 MP, "
        "over the 40 MP limit"
    )


# --------------------------------------------------------------------------- legit recipes


def test_a_legit_recipe_is_planned_exactly_and_still_derives() -> None:
    steps: list[tuple[str, dict[str, Any]]] = [
        ("crop", {"bbox_2d": [100, 150, 700, 900], "zoom_scale": 1.5}),
        ("rotate", {"angle": 33}),
        ("enhance", {"brightness": 1.2, "contrast": 1.1}),
        ("denoise", {"strength": 10}),
        ("resize", {"scale": 0.5}),
        ("edge_detect", {"method": "canny"}),
    ]
    recipe = build(*steps)
    image = photo((320, 240))
    expected = image
    sizes = []
    for op, params in steps:
        expected = ops.apply(expected, op, params)
        sizes.append(expected.size)
    plan = recipes.plan(recipe, image.size)
    assert [e.size for e in plan] == sizes
    assert plan[3].factor == 49 and plan[5].factor == 10
    result = derive(image, recipe)
    assert result.tobytes() == expected.tobytes()
    # 20 steps, the most a recipe may have, are fine too.
    assert derive(image, build(*[("flip", {})] * 20)).size == image.size


@settings(max_examples=300, deadline=None)
@given(
    size=st.tuples(st.integers(1, 97), st.integers(1, 97)),
    step=st.one_of(
        st.tuples(
            st.just("rotate"),
            st.fixed_dictionaries(
                {
                    "angle": st.floats(-360, 360, allow_nan=False)
                    | st.sampled_from([90, -90, 180, 270, 45]),
                    "expand": st.booleans(),
                }
            ),
        ),
        st.tuples(
            st.just("crop"),
            st.builds(
                lambda a, b, c, d, z: {
                    "bbox_2d": [min(a, c), min(b, d), max(a, c) + 1, max(b, d) + 1],
                    "zoom_scale": z,
                },
                st.integers(0, 998),
                st.integers(0, 998),
                st.integers(0, 998),
                st.integers(0, 998),
                st.floats(0.5, 5),
            ),
        ),
        st.tuples(st.just("resize"), st.fixed_dictionaries({"scale": st.floats(0.01, 3)})),
        st.tuples(st.just("resize"), st.fixed_dictionaries({"width": st.integers(1, 150)})),
        st.tuples(st.just("resize"), st.fixed_dictionaries({"height": st.integers(1, 150)})),
        st.tuples(
            st.just("flip"),
            st.fixed_dictionaries({"direction": st.sampled_from(["h", "v", "both"])}),
        ),
        st.tuples(st.just("grayscale"), st.just({})),
    ),
)
def test_the_estimated_size_is_the_size_the_operation_makes(
    size: tuple[int, int], step: tuple[str, dict[str, Any]]
) -> None:
    op, params = step
    image = Image.new("RGB", size)
    try:
        made = ops.apply(image, op, params).size
    except ops.OpError as exc:
        with pytest.raises(ops.OpError) as caught:
            ops.estimate(op, params, size)
        assert str(caught.value) == str(exc)
        return
    assert ops.estimate(op, params, size).size == made


# --------------------------------------------------------------------------- the clock


def test_the_time_box_stops_a_slow_derivation_between_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[float] = []

    def slow_sharpen(image: Image.Image) -> Image.Image:
        calls.append(time.monotonic())
        time.sleep(0.03)
        return image.copy()

    monkeypatch.setitem(
        ops.OPS, "sharpen", dataclasses.replace(ops.OPS["sharpen"], run=slow_sharpen)
    )
    limits = recipes.Limits(seconds=0.01)
    recipe = build(("sharpen", {}), ("sharpen", {}), ("sharpen", {}))
    with pytest.raises(recipes.RecipeTimeout) as caught:
        derive(photo((40, 30)), recipe, limits=limits)
    assert isinstance(caught.value, RecipeError)
    assert len(calls) == 1  # stopped before the second step
    assert caught.value.step == 2
    assert str(caught.value).startswith(
        "the recipe took longer than the 0.01 s limit: stopped after step 1 (sharpen) of 3, "
    )
    # Without the clock, or with enough time, the same recipe runs to the end.
    calls.clear()
    derive(photo((40, 30)), recipe, limits=recipes.Limits(seconds=None))
    assert len(calls) == 3
