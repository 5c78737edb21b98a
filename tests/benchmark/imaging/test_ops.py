"""The atomic image operations: sizes, orientation, the sample crop, and parameter errors."""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np
import pytest
from PIL import Image

from benchmark.imaging import ops
from benchmark.imaging.ops import OpError
from tests.shared_data import SHARED_DATA, needs_data

DATA = SHARED_DATA / "agentic-mme"
needs_mme = needs_data("agentic-mme")

RED = (255, 0, 0)


def marked(width: int = 40, height: int = 20, mode: str = "RGB") -> Image.Image:
    """A grey image with one red pixel at the top-left corner."""
    fill: Any = (128, 128, 128) if mode == "RGB" else (128, 128, 128, 255)
    img = Image.new(mode, (width, height), fill)
    img.putpixel((0, 0), RED if mode == "RGB" else (*RED, 255))
    return img


def red_at(img: Image.Image) -> list[tuple[int, int]]:
    a = np.asarray(img.convert("RGB"))
    ys, xs = np.nonzero((a == RED).all(axis=-1))
    return list(zip(xs.tolist(), ys.tolist(), strict=True))


def gradient(width: int = 64, height: int = 48) -> Image.Image:
    x = np.linspace(0, 255, width, dtype=np.float64)[None, :].repeat(height, 0)
    y = np.linspace(0, 255, height, dtype=np.float64)[:, None].repeat(width, 1)
    rgb = np.stack([x, y, (x + y) / 2], axis=-1).astype(np.uint8)
    return Image.fromarray(rgb, "RGB")


# --------------------------------------------------------------------------- registry


def test_registry_has_the_papers_thirteen_ops_plus_enhance() -> None:
    assert len(ops.OPS) == 14
    assert [n for n, s in ops.OPS.items() if not s.in_paper] == ["enhance"]
    assert set(ops.OPS) == {
        "crop", "rotate", "flip", "resize", "enhance", "grayscale", "autocontrast",
        "invert", "equalize", "threshold", "blur", "sharpen", "denoise", "edge_detect",
    }  # fmt: skip


def test_schema_is_json_ready_and_describes_parameters() -> None:
    schema = ops.ops_schema()
    json.dumps(schema)  # serializable
    crop = next(s for s in schema if s["name"] == "crop")
    params = {p["name"]: p for p in crop["params"]}
    assert params["bbox_2d"]["type"] == "bbox"
    assert params["zoom_scale"] == {
        "name": "zoom_scale",
        "type": "number",
        "description": params["zoom_scale"]["description"],
        "required": False,
        "default": 1.0,
        "minimum": 0.5,
        "exclusive_minimum": False,
        "maximum": 5.0,
    }
    assert crop["one_of"] == ["bbox_2d", "box"] and crop["geometric"]
    rotate = next(s for s in schema if s["name"] == "rotate")
    assert {p["name"]: p["required"] for p in rotate["params"]} == {"angle": True, "expand": False}
    flip = next(s for s in schema if s["name"] == "flip")
    assert flip["params"][0]["choices"] == ["horizontal", "vertical", "both"]


def test_validate_params_fills_defaults_and_canonicalizes() -> None:
    assert ops.validate_params("crop", {"bbox_2d": [1, 2, 3, 4]}) == {
        "bbox_2d": (1.0, 2.0, 3.0, 4.0),
        "zoom_scale": 1.0,
    }
    assert ops.validate_params("FLIP", {"direction": "LR"}) == {"direction": "horizontal"}
    assert ops.validate_params("threshold", {"value": 100.0}) == {"value": 100, "mode": "binary"}
    assert ops.validate_params("sharpen", None) == {}


# --------------------------------------------------------------------------- geometry


def test_crop_bbox_uses_the_released_truncation_rule() -> None:
    img = gradient(1200, 800)
    # 769/1000*1200 = 922.8 -> 922; 452/1000*800 = 361.6 -> 361 (int truncation).
    assert ops.bbox_to_pixels([769, 403, 850, 452], img.size) == (922, 322, 1020, 361)
    out = ops.crop(img, [769, 403, 850, 452])
    assert out.size == (98, 39)
    assert np.array_equal(np.asarray(out), np.asarray(img)[322:361, 922:1020])


def test_crop_zoom_and_pixel_box() -> None:
    img = gradient(100, 50)
    assert ops.crop(img, [0, 0, 500, 500], zoom_scale=3).size == (150, 75)
    assert ops.crop(img, [0, 0, 500, 500], zoom_scale=0.5).size == (50, 25)  # <= 1: no-op
    out = ops.crop(img, box=[10, 5, 30, 25])
    assert out.size == (20, 20)
    assert np.array_equal(np.asarray(out), np.asarray(img)[5:25, 10:30])


def test_bbox_pixel_round_trip() -> None:
    for size in [(1200, 800), (333, 777), (4000, 3000), (7, 5)]:
        w, h = size
        for box in [(0, 0, w, h), (1, 2, w - 1, h - 1), (w // 3, h // 3, w // 2 + 1, h // 2 + 1)]:
            bbox = ops.pixels_to_bbox(box, size)
            assert all(0 <= v <= 1000 for v in bbox)
            assert ops.bbox_to_pixels(bbox, size) == box
    assert ops.pixels_to_bbox((922, 322, 1020, 361), (1200, 800), integer=True) == (
        768.0,
        402.0,
        850.0,
        451.0,
    )


@needs_mme
def test_crop_of_sample_image_contains_the_street_sign() -> None:
    img = ops.load((DATA / "images/image_0001.png").read_bytes(), max_pixels=10_000_000)
    sign_blue = (np.asarray(img) == (28, 78, 160)).all(axis=-1)
    ys, xs = np.nonzero(sign_blue)
    assert sign_blue.sum() > 500  # the sign is there, and small
    left, top, right, bottom = ops.bbox_to_pixels([769, 403, 850, 452], img.size)
    assert left <= xs.min() and xs.max() < right and top <= ys.min() and ys.max() < bottom
    out = ops.crop(img, [769, 403, 850, 452])
    assert (np.asarray(out) == (28, 78, 160)).all(axis=-1).sum() == sign_blue.sum()
    assert ops.crop(img, [769, 403, 850, 452], zoom_scale=3).size == (294, 117)


@pytest.mark.parametrize(
    ("angle", "size", "red"),
    [
        (90, (20, 40), (0, 39)),  # counter-clockwise: the top-left corner goes to bottom-left
        (-90, (20, 40), (19, 0)),  # clockwise: top-left goes to top-right
        (180, (40, 20), (39, 19)),
        (270, (20, 40), (19, 0)),
        (360, (40, 20), (0, 0)),
    ],
)
def test_rotate_is_counter_clockwise_and_expands(
    angle: float, size: tuple[int, int], red: tuple[int, int]
) -> None:
    out = ops.rotate(marked(40, 20), angle)
    assert out.size == size
    assert red_at(out) == [red]


def test_rotate_without_expand_and_odd_angles() -> None:
    assert ops.rotate(marked(40, 20), 90, expand=False).size == (40, 20)
    out = ops.rotate(marked(40, 20), 30)
    assert out.size[0] > 40 and out.size[1] > 20
    assert out.getpixel((0, 0)) == (0, 0, 0)  # black fill, as released
    rgba = ops.rotate(marked(40, 20, "RGBA"), 30)
    assert rgba.mode == "RGBA" and rgba.getpixel((0, 0))[3] == 0  # transparent fill


@pytest.mark.parametrize(
    ("direction", "red"),
    [("horizontal", (39, 0)), ("vertical", (0, 19)), ("both", (39, 19)), ("h", (39, 0))],
)
def test_flip_directions(direction: str, red: tuple[int, int]) -> None:
    out = ops.flip(marked(40, 20), direction)
    assert out.size == (40, 20)
    assert red_at(out) == [red]


def test_resize_forms() -> None:
    img = gradient(100, 50)
    assert ops.resize(img, scale=0.5).size == (50, 25)
    assert ops.resize(img, width=30, height=10).size == (30, 10)
    assert ops.resize(img, width=40).size == (40, 20)  # aspect kept
    assert ops.resize(img, height=10).size == (20, 10)


# --------------------------------------------------------------------------- photometric


def test_enhance_brightens_and_keeps_size() -> None:
    dark = Image.new("RGB", (10, 10), (20, 20, 20))
    out = ops.enhance(dark, brightness=2.5)
    assert out.size == (10, 10) and out.getpixel((0, 0)) == (50, 50, 50)
    color = ops.enhance(Image.new("RGB", (4, 4), (100, 50, 50)), color=0.0)
    r, g, b = color.getpixel((0, 0))
    assert r == g == b  # saturation removed


def test_alpha_survives_photometric_ops() -> None:
    img = Image.new("RGBA", (6, 6), (30, 60, 90, 77))
    for name, params in [
        ("enhance", {"brightness": 2.0}),
        ("autocontrast", {}),
        ("blur", {"radius": 1}),
        ("sharpen", {}),
        ("denoise", {"strength": 3}),
        ("invert", {}),
        ("equalize", {}),
        ("edge_detect", {"method": "simple"}),
    ]:
        out = ops.apply(img, name, params)
        assert out.mode == "RGBA" and out.getchannel("A").getextrema() == (77, 77), name
    assert ops.grayscale(img).mode == "LA"
    assert ops.threshold(img).mode == "LA"


def test_grayscale_invert_threshold_values() -> None:
    img = Image.new("RGB", (3, 1))
    for x, v in enumerate((10, 128, 200)):
        img.putpixel((x, 0), (v, v, v))
    gray = ops.grayscale(img)
    assert gray.mode == "L" and [gray.getpixel((x, 0)) for x in range(3)] == [10, 128, 200]
    inv = ops.invert(img)
    assert [inv.getpixel((x, 0))[0] for x in range(3)] == [245, 127, 55]
    modes = {"binary": [0, 0, 255], "binary_inv": [255, 255, 0], "trunc": [10, 128, 128]}
    modes["tozero"] = [0, 0, 200]
    for mode, expected in modes.items():
        out = ops.threshold(img, value=128, mode=mode)
        assert [out.getpixel((x, 0)) for x in range(3)] == expected, mode


def test_autocontrast_and_equalize_stretch_a_dark_image() -> None:
    # Pillow's equalize leaves images of under 256 pixels alone, so use 64x64.
    dark = Image.fromarray(np.linspace(12, 33, 4096).astype(np.uint8).reshape(64, 64), "L")
    for out in (ops.autocontrast(dark), ops.equalize(dark)):
        low, high = out.getextrema()
        assert low <= 10 and high >= 240


def test_blur_sharpen_denoise_edges() -> None:
    img = gradient()
    noisy = np.asarray(img).copy()
    noisy[::7, ::5] = 255
    speckled = Image.fromarray(noisy)
    smooth = np.asarray(ops.denoise(speckled, strength=3)).astype(int)
    assert (
        np.abs(smooth - np.asarray(img).astype(int)).mean()
        < np.abs(noisy.astype(int) - np.asarray(img).astype(int)).mean()
    )
    assert ops.blur(img, radius=3).size == img.size
    assert ops.sharpen(img).size == img.size
    square = Image.new("L", (40, 40), 0)
    square.paste(255, (10, 10, 30, 30))
    for method in ("canny", "sobel", "simple"):
        edges = np.asarray(ops.edge_detect(square, method=method))
        assert edges[20, 20] == 0 and edges[0, 0] == 0, method  # flat areas have no edges
        assert edges[20, 9:11].max() > 0 or edges[20, 10:12].max() > 0, method  # the border does
    canny = np.asarray(ops.edge_detect(square))
    assert set(np.unique(canny)) <= {0, 255}


def test_modes_are_normalized() -> None:
    pal = Image.new("P", (4, 4))
    assert ops.apply(pal, "invert").mode == "RGB"
    assert ops.apply(Image.new("1", (4, 4)), "invert").mode == "L"
    wide = Image.fromarray(np.array([[0, 65535]], dtype=np.uint16))
    assert ops.normalize_mode(wide).mode == "L"
    assert ops.normalize_mode(wide).getpixel((1, 0)) == 255


def test_apply_does_not_change_its_input() -> None:
    img = marked()
    before = img.tobytes()
    ops.apply(img, "flip", {})
    ops.apply(img, "enhance", {"brightness": 3})
    assert img.tobytes() == before


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("op", "params", "message"),
    [
        ("crop", {"bbox_2d": [0, 0, 1200, 500]}, "outside the image"),
        ("crop", {"bbox_2d": [-5, 0, 100, 100]}, "outside the image"),
        ("crop", {"bbox_2d": [500, 0, 500, 100]}, "empty or reversed"),
        ("crop", {"bbox_2d": [600, 0, 500, 100]}, "x1 (600) must be less than x2 (500)"),
        ("crop", {"bbox_2d": [0, 0, 100]}, "list of 4 numbers"),
        ("crop", {"bbox_2d": "0,0,1,1"}, "list of 4 numbers"),
        ("crop", {"bbox_2d": [0, 0, "a", 1]}, "4 finite numbers"),
        ("crop", {}, "bbox_2d or box, one is required"),
        ("crop", {"bbox_2d": [0, 0, 1, 1], "box": [0, 0, 1, 1]}, "not both"),
        ("crop", {"bbox_2d": [0, 0, 10, 10], "zoom_scale": 9}, "at most 5"),
        ("crop", {"box": [0, 0, 1.5, 2]}, "whole pixel"),
        ("rotate", {}, "angle is required"),
        ("rotate", {"angle": "90"}, "must be a number"),
        ("rotate", {"angle": True}, "must be a number"),
        ("rotate", {"angle": float("nan")}, "finite"),
        ("rotate", {"angle": 90, "expand": "yes"}, "true or false"),
        ("flip", {"direction": "diagonal"}, "must be one of horizontal, vertical, both"),
        ("resize", {}, "give scale, or width"),
        ("resize", {"scale": 2, "width": 10}, "not both"),
        ("resize", {"scale": 0}, "greater than 0"),
        ("resize", {"width": 0}, "at least 1"),
        ("enhance", {}, "at least one of brightness"),
        ("enhance", {"brightness": -1}, "at least 0"),
        ("threshold", {"value": 300}, "at most 255"),
        ("threshold", {"value": 12.5}, "whole number"),
        ("denoise", {"strength": 0}, "at least 1"),
        ("edge_detect", {"method": "laplace"}, "canny, sobel, simple"),
        ("blur", {"radius": 0}, "greater than 0"),
        ("sharpen", {"amount": 2}, "unknown parameter 'amount'"),
        ("sharpen", [1, 2], "parameters must be an object"),
        ("warp", {}, "unknown operation 'warp'"),
    ],
)
def test_bad_parameters_raise_op_error(op: str, params: Any, message: str) -> None:
    with pytest.raises(OpError) as info:
        ops.apply(gradient(), op, params)
    assert message in str(info.value)


def test_errors_that_need_the_image() -> None:
    img = gradient(100, 50)
    with pytest.raises(OpError, match="covers no whole pixel"):
        ops.crop(img, [500, 500, 504, 504])  # 0.4 px wide on a 100 px image
    with pytest.raises(OpError, match="outside the 100x50 image"):
        ops.crop(img, box=[0, 0, 101, 50])
    with pytest.raises(OpError, match="empty image"):
        ops.resize(img, scale=0.001)
    with pytest.raises(OpError, match="megapixels; the limit"):
        ops.resize(img, width=20000, height=20000)
    with pytest.raises(OpError, match="expected a PIL image"):
        ops.apply("not an image", "invert")  # type: ignore[arg-type]


def test_op_error_names_op_and_param() -> None:
    with pytest.raises(OpError) as info:
        ops.apply(gradient(), "crop", {"bbox_2d": [0, 0, 2000, 10]})
    assert info.value.op == "crop" and info.value.param == "bbox_2d"
    assert isinstance(info.value, ValueError)


# --------------------------------------------------------------------------- loading


def encode(img: Image.Image, fmt: str = "PNG", **kwargs: Any) -> bytes:
    out = io.BytesIO()
    img.save(out, format=fmt, **kwargs)
    return out.getvalue()


def test_load_applies_exif_orientation() -> None:
    img = Image.new("RGB", (40, 20), (128, 128, 128))
    img.paste(RED, (0, 0, 6, 6))  # a block, so JPEG keeps it
    exif = Image.Exif()
    exif[0x0112] = 6  # stored sideways: rotate 90 degrees clockwise to display
    loaded = ops.load(encode(img, "JPEG", exif=exif, quality=100), max_pixels=10_000)
    assert loaded.size == (20, 40)
    a = np.asarray(loaded).astype(int)
    ys, xs = np.nonzero((a[:, :, 0] > 200) & (a[:, :, 1] < 80))
    assert xs.mean() > 15 and ys.mean() < 5  # top-left corner is now top-right
    assert loaded.info == {}


def test_load_refuses_bombs_and_junk() -> None:
    big = encode(Image.new("L", (3000, 3000)))
    with pytest.raises(OpError, match="9.0 megapixels; the limit is 1.0"):
        ops.load(big, max_pixels=1_000_000)
    assert ops.load(big, max_pixels=10_000_000).size == (3000, 3000)
    with pytest.raises(OpError, match="not a readable image"):
        ops.load(b"definitely not a png", max_pixels=1_000)
    with pytest.raises(OpError, match="expected bytes"):
        ops.load("path.png", max_pixels=1_000)  # type: ignore[arg-type]


def test_load_normalizes_palette_images() -> None:
    pal = Image.new("P", (5, 5))
    assert ops.load(encode(pal), max_pixels=100).mode == "RGB"
