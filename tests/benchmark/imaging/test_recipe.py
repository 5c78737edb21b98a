"""Recipes: derivation, deterministic PNG bytes, hashing, verification and JSON validation."""

from __future__ import annotations

import hashlib
import io
import json

import numpy as np
import pytest
from PIL import Image, PngImagePlugin

from benchmark.imaging import ops
from benchmark.imaging.recipe import (
    Recipe,
    RecipeError,
    Step,
    artifact_sha256,
    check,
    derive,
    pixel_sha256,
    recipe_hash,
    render_bytes,
    verify,
)
from tests.shared_data import SHARED_DATA, needs_data

DATA = SHARED_DATA / "agentic-mme"
needs_mme = needs_data("agentic-mme")


def source_bytes() -> bytes:
    rng = np.random.default_rng(7)
    img = Image.fromarray(rng.integers(0, 255, (60, 80, 3), dtype=np.uint8), "RGB")
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


SRC = source_bytes()
SRC_SHA = hashlib.sha256(SRC).hexdigest()
STEPS = [
    {"op": "enhance", "params": {"brightness": 1.5}},
    {"op": "crop", "params": {"bbox_2d": [100, 200, 600, 900], "zoom_scale": 2}},
    {"op": "rotate", "params": {"angle": 90}},
]


def recipe() -> Recipe:
    return Recipe.build(SRC_SHA, STEPS)


def test_build_normalizes_params() -> None:
    r = recipe()
    assert r.steps[1] == Step("crop", {"bbox_2d": (100.0, 200.0, 600.0, 900.0), "zoom_scale": 2.0})
    assert r.steps[2].params == {"angle": 90.0, "expand": True}
    # Writing a default explicitly, or an int for a float, is the same recipe.
    same = Recipe.build(
        SRC_SHA.upper(),
        [
            {"op": "Enhance", "params": {"brightness": 1.5}},
            {"op": "crop", "params": {"bbox_2d": [100, 200, 600, 900], "zoom_scale": 2.0}},
            {"op": "rotate", "params": {"angle": 90, "expand": True}},
        ],
    )
    assert same == r and recipe_hash(same) == recipe_hash(r)


def test_derive_applies_steps_in_order() -> None:
    source = ops.load(SRC, max_pixels=10_000)
    out = derive(source, recipe())
    by_hand = ops.rotate(
        ops.crop(ops.enhance(source, brightness=1.5), [100, 200, 600, 900], zoom_scale=2), 90
    )
    assert np.array_equal(np.asarray(out), np.asarray(by_hand))
    assert out.size == (84, 80)  # crop 40x42 zoomed to 80x84, then turned


def test_render_bytes_is_deterministic_and_metadata_free() -> None:
    source = ops.load(SRC, max_pixels=10_000)
    a = render_bytes(derive(source, recipe()))
    b = render_bytes(derive(ops.load(SRC, max_pixels=10_000), recipe()))
    assert a == b
    # Metadata on the image does not reach the bytes.
    tagged = derive(source, recipe())
    tagged.info.update({"dpi": (300, 300), "icc_profile": b"x" * 20, "Software": "me"})
    assert render_bytes(tagged) == a
    assert set(chunk_types(a)) == {"IHDR", "IDAT", "IEND"}
    # A PNG with text chunks still renders to the canonical bytes.
    info = PngImagePlugin.PngInfo()
    info.add_text("Creation Time", "2026-04-20T09:14:07Z")
    out = io.BytesIO()
    tagged.save(out, format="PNG", pnginfo=info)
    with Image.open(io.BytesIO(out.getvalue())) as reread:
        assert render_bytes(reread) == a
    assert Image.open(io.BytesIO(a)).size == tagged.size


def chunk_types(png: bytes) -> list[str]:
    pos, types = 8, []
    while pos < len(png):
        length = int.from_bytes(png[pos : pos + 4], "big")
        types.append(png[pos + 4 : pos + 8].decode("ascii"))
        pos += 12 + length
    return types


def test_palette_and_rgb_with_same_pixels_render_the_same() -> None:
    rgb = Image.new("RGB", (5, 5), (10, 200, 30))
    pal = rgb.quantize(colors=4)
    assert pal.mode == "P" and pal.convert("RGB").tobytes() == rgb.tobytes()
    assert render_bytes(pal) == render_bytes(rgb)
    assert pixel_sha256(pal) == pixel_sha256(rgb)


def test_verify_true_and_false() -> None:
    r = recipe()
    artifact = derive(ops.load(SRC, max_pixels=10_000), r)
    digest = artifact_sha256(artifact)
    assert verify(SRC, r, digest)
    assert verify(SRC, r, digest.upper())
    assert verify(SRC, r, pixel_sha256(artifact), kind="pixels")
    # A different artifact, a different recipe, different source bytes: all False.
    assert not verify(SRC, r, "0" * 64)
    assert not verify(SRC, r.then("flip", {"direction": "vertical"}), digest)
    assert not verify(SRC + b"\0", r, digest)
    other = Recipe.build(SRC_SHA, [{"op": "crop", "params": {"bbox_2d": [0, 0, 500, 500]}}])
    assert not verify(SRC, other, digest)
    result = check(SRC + b"\0", r, digest)
    assert not result.ok and "the recipe names" in result.reason


def test_verify_false_when_a_step_cannot_run_on_the_image() -> None:
    r = Recipe.build(SRC_SHA, [{"op": "crop", "params": {"box": [0, 0, 500, 500]}}])
    result = check(SRC, r, "0" * 64)
    assert not result.ok
    assert "step 1 (crop)" in result.reason and "outside the 80x60 image" in result.reason
    with pytest.raises(RecipeError) as info:
        derive(ops.load(SRC, max_pixels=10_000), r)
    assert info.value.step == 1


def test_verify_refuses_oversized_sources() -> None:
    r = Recipe.build(SRC_SHA, [])
    result = check(SRC, r, "0" * 64, max_pixels=100)
    assert not result.ok and "megapixels" in result.reason


def test_json_round_trip_and_hash() -> None:
    r = recipe()
    text = r.to_json()
    assert json.loads(text) == {
        "source_sha256": SRC_SHA,
        "steps": [
            {"op": "enhance", "params": {"brightness": 1.5}},
            {"op": "crop", "params": {"bbox_2d": [100.0, 200.0, 600.0, 900.0], "zoom_scale": 2.0}},
            {"op": "rotate", "params": {"angle": 90.0, "expand": True}},
        ],
        "version": 1,
    }
    assert " " not in text  # canonical: compact, sorted keys
    assert Recipe.from_json(text) == r
    assert Recipe.from_json(r.to_json(indent=2)) == r
    assert recipe_hash(r) == hashlib.sha256(text.encode()).hexdigest()
    assert recipe_hash(r) != recipe_hash(r.then("invert"))
    assert recipe_hash(r) != recipe_hash(Recipe.build("a" * 64, STEPS))


@pytest.mark.parametrize(
    ("data", "message", "step"),
    [
        ("[]", "recipe must be an object", None),
        ("{", "not valid JSON", None),
        ('{"steps": []}', "source_sha256 is required", None),
        ('{"source_sha256": "abc", "steps": []}', "64 hex characters", None),
        ('{"source_sha256": "' + "a" * 64 + '", "version": 2}', "unsupported version 2", None),
        ('{"source_sha256": "' + "a" * 64 + '", "steps": {}}', "steps must be a list", None),
        ('{"source_sha256": "' + "a" * 64 + '", "extra": 1}', "unknown field(s) extra", None),
        (
            '{"source_sha256": "' + "a" * 64 + '", "steps": [{"op": "invert"}, '
            '{"op": "crop", "params": {"bbox_2d": [600, 0, 500, 10]}}]}',
            "step 2 (crop): crop: bbox_2d is empty or reversed",
            2,
        ),
        (
            '{"source_sha256": "' + "a" * 64 + '", "steps": [{"op": "blurr", "params": {}}]}',
            "step 1 (blurr): unknown operation 'blurr'",
            1,
        ),
        (
            '{"source_sha256": "' + "a" * 64 + '", "steps": [{"params": {}}]}',
            "step 1: op must be a non-empty string",
            1,
        ),
        (
            '{"source_sha256": "' + "a" * 64 + '", "steps": [{"op": "flip", "param": {}}]}',
            "step 1: unknown field(s) param",
            1,
        ),
        (
            '{"source_sha256": "' + "a" * 64 + '", "steps": ["flip"]}',
            "step 1: must be an object with op and params",
            1,
        ),
        (
            '{"source_sha256": "' + "a" * 64 + '", "steps": [{"op": "invert"}, {"op": "invert"}, '
            '{"op": "rotate", "params": {"angle": "left"}}]}',
            "step 3 (rotate): rotate: angle must be a number",
            3,
        ),
    ],
)
def test_json_validation_errors_name_the_step(data: str, message: str, step: int | None) -> None:
    with pytest.raises(RecipeError) as info:
        Recipe.from_json(data)
    assert message in str(info.value)
    assert info.value.step == step


@needs_mme
def test_sample_crop_recipe_is_reproducible() -> None:
    data = (DATA / "images/image_0001.png").read_bytes()
    r = Recipe.build(
        hashlib.sha256(data).hexdigest(),
        [{"op": "crop", "params": {"bbox_2d": [769, 403, 850, 452], "zoom_scale": 3}}],
    )
    artifact = derive(ops.load(data, max_pixels=10_000_000), r)
    assert artifact.size == (294, 117)
    digest = artifact_sha256(artifact)
    assert verify(data, r, digest)
    assert verify(data, Recipe.from_json(r.to_json()), digest)


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L", "LA", "P", "1"])
def test_render_bytes_are_the_png_of_the_pixels_alone_as_they_always_were(mode: str) -> None:
    """Artifacts are keyed by these bytes (records, replays, releases): they are the PNG of a
    fresh image holding only the pixels (the raw-bytes round trip they were first made with),
    whatever ``info`` the image carries."""
    from PIL import ImageDraw

    from benchmark.imaging import recipe

    base = Image.new("RGB", (97, 61), (30, 140, 200))
    ImageDraw.Draw(base).rectangle([10, 5, 60, 40], fill=(250, 20, 90))
    image = base.convert(mode)
    image.info.update(dpi=(300, 300), icc_profile=b"not a profile", exif=b"Exif\x00\x00")
    pixels = ops.normalize_mode(image)
    fresh = Image.frombytes(pixels.mode, pixels.size, pixels.tobytes())
    expected = io.BytesIO()
    fresh.save(expected, format="PNG", compress_level=recipe.PNG_COMPRESS_LEVEL, optimize=False)
    assert recipe.render_bytes(image) == expected.getvalue()
    assert image.info["icc_profile"] == b"not a profile"  # the caller's image is untouched
