"""Agentic-MME's atomic image operations as pure functions on Pillow images.

The thirteen operations of the paper (App. B) plus ``enhance``, which the released toolbox
(``atomic_toolbox.py`` in ChoS3nE11ven/Agentic-MME) has and recorded trajectories use. Parameter
names, defaults and semantics follow the released tools, so a logged tool call can be replayed
with ``apply(image, event["tool_name"], params)``:

* ``crop``: ``bbox_2d`` is ``[x1, y1, x2, y2]`` on a 0-1000 scale relative to the image, (0, 0)
  top left; it becomes pixels by truncation, ``int(v / 1000 * size)``, as the released tool does.
  ``zoom_scale`` enlarges the crop with Lanczos, and, as in the released tool, only values above
  1 do anything. A pixel box ``box`` may be given instead of ``bbox_2d``.
* ``rotate``: degrees, positive is counter-clockwise (Pillow's convention), ``expand`` defaults
  to true; nearest-neighbour resampling and a black (or transparent) fill, as released.
* ``denoise`` is the released tool's fallback without OpenCV, a median filter of size
  ``2 * max(1, strength // 3) + 1``. ``edge_detect``'s ``canny`` and ``sobel`` are NumPy
  re-implementations of the OpenCV calls the released tool makes (``cv2.Canny(img, 100, 200)``,
  the 3x3 Sobel magnitude); on the sample images they match OpenCV 5 pixel for pixel.

Differences from the released tools, on purpose: bad parameters raise :class:`OpError` instead
of being clamped or silently replaced (a crop box outside the 0-1000 range, reversed or empty; an
unknown flip direction); ``enhance`` also takes ``color`` and needs at least one factor;
``resize`` keeps the aspect ratio when only ``width`` or ``height`` is given; ``grayscale`` and
``threshold`` return single-channel images (the released tools convert them back to RGB, which
holds the same pixel values).

Every operation accepts the modes ``normalize_mode`` produces (L, LA, RGB, RGBA); an alpha
channel is carried through untouched by the photometric operations. ``OPS`` describes each
operation's parameters so a UI can build its toolbar and forms from it.

:func:`estimate` says, without touching a pixel, what size an operation's result will have and
what it costs: the pixels it produces (for ``resize``, the larger of the image it reads and the
one it writes, since a Lanczos reduction reads every input pixel) times a cost factor, 1 for
most operations. Measured on the 2-CPU build machine (Pillow 13, ``tests/perf/
bench_recipe_limits.py``), the dearest plain operations (blur, sharpen, enhance, edges, an
enlarging resize) take 30-75 ms per megapixel; two are far dearer per pixel and count more:
``denoise``'s k×k median filter takes about 25-31 ms per megapixel per cell of its window (10.7
s per megapixel for strength 30's 21×21) and counts k² (441 for strength 30); ``edge_detect``'s
Canny takes about 0.15-0.37 s per megapixel and holds a dozen int64 arrays of the image's size
(about 100 bytes per pixel), and counts 10. Recipes (:mod:`benchmark.imaging.recipe`) cap each
step's and each recipe's cost with these figures before any pixel work.
"""

from __future__ import annotations

import io
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from PIL import Image, ImageEnhance, ImageFilter, ImageOps, UnidentifiedImageError

__all__ = [
    "BBOX_SCALE",
    "CANNY_COST",
    "MAX_OUTPUT_PIXELS",
    "OPS",
    "OpError",
    "OpSpec",
    "ParamSpec",
    "apply",
    "autocontrast",
    "bbox_to_pixels",
    "blur",
    "crop",
    "denoise",
    "edge_detect",
    "enhance",
    "equalize",
    "Estimate",
    "estimate",
    "flip",
    "grayscale",
    "invert",
    "load",
    "normalize_mode",
    "ops_schema",
    "pixels_to_bbox",
    "resize",
    "rotate",
    "sharpen",
    "threshold",
    "validate_params",
]

BBOX_SCALE = 1000
"""``bbox_2d`` coordinates run from 0 to this value across the image."""

MAX_OUTPUT_PIXELS = 100_000_000
"""No operation may produce an image larger than this (a zoomed crop or a resize could
otherwise allocate gigabytes)."""

CANNY_COST = 10
"""``edge_detect`` with ``canny`` counts this many times its pixels (see :func:`estimate`)."""

ParamType = Literal["number", "integer", "boolean", "string", "bbox", "box"]


class OpError(ValueError):
    """An operation was asked for with bad parameters, or cannot run on this image."""

    def __init__(self, message: str, *, op: str | None = None, param: str | None = None):
        super().__init__(message)
        self.op = op
        self.param = param


# --------------------------------------------------------------------------- schema


@dataclass(frozen=True)
class ParamSpec:
    """One parameter of an operation, enough for a UI to render a form field."""

    name: str
    type: ParamType
    description: str
    required: bool = False
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    choices: tuple[str, ...] = ()
    aliases: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "type": self.type,
            "description": self.description,
            "required": self.required,
            "default": list(self.default) if isinstance(self.default, tuple) else self.default,
        }
        if self.minimum is not None:
            out["minimum"] = self.minimum
            out["exclusive_minimum"] = self.exclusive_minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        if self.choices:
            out["choices"] = list(self.choices)
        return out


@dataclass(frozen=True)
class OpSpec:
    """An operation: its parameters, the function that runs it, and a cross-field check."""

    name: str
    label: str
    category: Literal["geometric", "color & contrast", "filtering"]
    description: str
    params: tuple[ParamSpec, ...]
    run: Callable[..., Image.Image]
    check: Callable[[dict[str, Any]], None] | None = None
    one_of: tuple[str, ...] = ()
    """Exactly one of these parameters must be given (crop: bbox_2d or box)."""
    any_of: tuple[str, ...] = ()
    """At least one of these parameters must be given (enhance's factors)."""
    geometric: bool = False
    in_paper: bool = True
    size: Callable[[tuple[int, int], dict[str, Any]], tuple[int, int]] | None = None
    """The result's size for an input size and validated parameters (None: the same size).
    Raises :class:`OpError` exactly where ``run`` would for a size problem (a crop box outside
    the image)."""
    cost: Callable[[dict[str, Any]], tuple[int, str]] | None = None
    """Cost per pixel relative to a plain operation and a phrase saying why (None: 1)."""

    def param(self, name: str) -> ParamSpec:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "category": self.category,
            "description": self.description,
            "params": [p.to_dict() for p in self.params],
            "one_of": list(self.one_of),
            "any_of": list(self.any_of),
            "geometric": self.geometric,
            "in_paper": self.in_paper,
        }


# --------------------------------------------------------------------------- coercion


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fmt(value: float) -> str:
    return f"{value:g}"


def _coerce(op: str, spec: ParamSpec, value: Any) -> Any:  # noqa: PLR0915
    """Check one value against its spec and return it in canonical form."""
    where = f"{op}: {spec.name}"

    def fail(message: str) -> OpError:
        return OpError(f"{where} {message}", op=op, param=spec.name)

    if spec.type in ("number", "integer"):
        if not _is_number(value):
            raise fail(f"must be a number, not {type(value).__name__} {value!r}")
        if not math.isfinite(value):
            raise fail(f"must be finite, not {value!r}")
        if spec.type == "integer":
            if isinstance(value, float) and not value.is_integer():
                raise fail(f"must be a whole number, not {value!r}")
            value = int(value)
        else:
            value = float(value)
        if spec.minimum is not None:
            low = spec.minimum
            if (value <= low) if spec.exclusive_minimum else (value < low):
                op_text = "greater than" if spec.exclusive_minimum else "at least"
                raise fail(f"must be {op_text} {_fmt(low)}, not {_fmt(value)}")
        if spec.maximum is not None and value > spec.maximum:
            raise fail(f"must be at most {_fmt(spec.maximum)}, not {_fmt(value)}")
        return value
    if spec.type == "boolean":
        if not isinstance(value, bool):
            raise fail(f"must be true or false, not {value!r}")
        return value
    if spec.type == "string":
        if not isinstance(value, str):
            raise fail(f"must be a string, not {type(value).__name__} {value!r}")
        key = value.strip().lower()
        key = spec.aliases.get(key, key)
        if spec.choices and key not in spec.choices:
            raise fail(f"must be one of {', '.join(spec.choices)}, not {value!r}")
        return key
    if spec.type in ("bbox", "box"):
        if not isinstance(value, list | tuple) or len(value) != 4:
            raise fail(f"must be a list of 4 numbers [x1, y1, x2, y2], not {value!r}")
        if not all(_is_number(v) and math.isfinite(v) for v in value):
            raise fail(f"must hold 4 finite numbers, not {value!r}")
        x1, y1, x2, y2 = value
        if spec.type == "bbox":
            if min(value) < 0 or max(value) > BBOX_SCALE:
                raise fail(
                    f"{list(value)} is outside the image: coordinates are on a 0-{BBOX_SCALE} scale"
                )
            coords: tuple[float | int, ...] = tuple(float(v) for v in value)
        else:
            if any(isinstance(v, float) and not v.is_integer() for v in value):
                raise fail(f"must hold whole pixel coordinates, not {value!r}")
            if min(value) < 0:
                raise fail(f"{list(value)} is outside the image: pixel coordinates start at 0")
            coords = tuple(int(v) for v in value)
        if not x1 < x2:
            raise fail(f"is empty or reversed: x1 ({_fmt(x1)}) must be less than x2 ({_fmt(x2)})")
        if not y1 < y2:
            raise fail(f"is empty or reversed: y1 ({_fmt(y1)}) must be less than y2 ({_fmt(y2)})")
        return coords
    raise AssertionError(f"unknown parameter type {spec.type}")  # pragma: no cover


def validate_params(op_name: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Check ``params`` for ``op_name`` without an image; return them complete and canonical:
    defaults filled in, numbers as float or int, strings lower-cased with aliases resolved,
    boxes as tuples. Raises :class:`OpError` naming the operation and the parameter."""
    spec = _spec(op_name)
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise OpError(
            f"{spec.name}: parameters must be an object, not {type(params).__name__}",
            op=spec.name,
        )
    known = {p.name for p in spec.params}
    for key in params:
        if key not in known:
            expected = ", ".join(sorted(known)) or "none"
            raise OpError(
                f"{spec.name}: unknown parameter {key!r} (expected: {expected})",
                op=spec.name,
                param=str(key),
            )
    out: dict[str, Any] = {}
    for p in spec.params:
        value = params.get(p.name)
        if value is None:
            if p.required:
                raise OpError(f"{spec.name}: {p.name} is required", op=spec.name, param=p.name)
            if p.default is not None:
                out[p.name] = p.default
            continue
        out[p.name] = _coerce(spec.name, p, value)
    if spec.one_of:
        given = [name for name in spec.one_of if name in out]
        if len(given) != 1:
            names = " or ".join(spec.one_of)
            problem = "not both" if given else "one is required"
            raise OpError(f"{spec.name}: give {names}, {problem}", op=spec.name)
    if spec.any_of and not any(name in out for name in spec.any_of):
        names = ", ".join(spec.any_of)
        raise OpError(f"{spec.name}: give at least one of {names}", op=spec.name)
    if spec.check is not None:
        spec.check(out)
    return out


def _spec(op_name: str) -> OpSpec:
    if not isinstance(op_name, str):
        raise OpError(f"operation name must be a string, not {type(op_name).__name__}")
    spec = OPS.get(op_name.strip().lower())
    if spec is None:
        raise OpError(f"unknown operation {op_name!r} (known: {', '.join(OPS)})", op=op_name)
    return spec


def apply(image: Image.Image, op_name: str, params: Mapping[str, Any] | None = None) -> Image.Image:
    """Run one operation: validate ``params``, then return a new image (``image`` is not
    changed)."""
    spec = _spec(op_name)
    values = validate_params(spec.name, params)
    if not isinstance(image, Image.Image):
        raise OpError(
            f"{spec.name}: expected a PIL image, not {type(image).__name__}", op=spec.name
        )
    result = spec.run(normalize_mode(image), **values)
    _check_output(spec.name, result.size)
    return result


def ops_schema() -> list[dict[str, Any]]:
    """Every operation's description and parameters, JSON-ready, in toolbar order."""
    return [spec.to_dict() for spec in OPS.values()]


def _check_nonempty(op: str, size: tuple[int, int]) -> None:
    width, height = size
    if width < 1 or height < 1:
        raise OpError(f"{op}: the result would be {width}x{height}, an empty image", op=op)


def _check_output(op: str, size: tuple[int, int]) -> None:
    _check_nonempty(op, size)
    width, height = size
    if width * height > MAX_OUTPUT_PIXELS:
        raise OpError(
            f"{op}: the result would be {width}x{height} = {width * height / 1e6:.0f} "
            f"megapixels; the limit is {MAX_OUTPUT_PIXELS / 1e6:.0f}",
            op=op,
        )


@dataclass(frozen=True)
class Estimate:
    """What one operation will produce and cost, known before it runs."""

    op: str
    size: tuple[int, int]
    """The result's width and height."""
    pixels: int
    """The pixels the operation works through: the result's, or for ``resize`` the larger of
    the input's and the result's."""
    factor: int
    """Cost per pixel relative to a plain operation (1; a k×k median filter k², Canny 10)."""
    why: str = ""
    """Why ``factor`` is above 1, for messages ("a 21×21 median filter (strength 30)")."""

    @property
    def cost(self) -> int:
        """``pixels * factor``: pixel-equivalents of a plain operation."""
        return self.pixels * self.factor


def estimate(op_name: str, params: Mapping[str, Any] | None, size: tuple[int, int]) -> Estimate:
    """The size and cost of ``apply(image, op_name, params)`` on an image of ``size``, without
    the image. Raises :class:`OpError` as :func:`apply` would for bad parameters, a crop box
    that does not fit ``size``, or an empty result (but not for :data:`MAX_OUTPUT_PIXELS`: the
    caller's own limits come first)."""
    spec = _spec(op_name)
    values = validate_params(spec.name, params)
    width, height = int(size[0]), int(size[1])
    out = spec.size((width, height), values) if spec.size is not None else (width, height)
    _check_nonempty(spec.name, out)
    pixels = out[0] * out[1]
    if spec.name == "resize":
        pixels = max(pixels, width * height)
    factor, why = spec.cost(values) if spec.cost is not None else (1, "")
    return Estimate(spec.name, out, pixels, factor, why)


# --------------------------------------------------------------------------- modes and loading


def normalize_mode(image: Image.Image) -> Image.Image:
    """The image in one of L, LA, RGB, RGBA (palette, bilevel, CMYK, 16-bit, ... converted)."""
    mode = image.mode
    if mode in ("L", "LA", "RGB", "RGBA"):
        return image
    if mode == "P" or mode == "PA":
        has_alpha = mode == "PA" or "transparency" in image.info
        return image.convert("RGBA" if has_alpha else "RGB")
    if mode == "1":
        return image.convert("L")
    if mode.startswith("I;16") or mode in ("I", "F"):
        return _wide_to_l(image)
    if mode in ("RGBa", "La"):
        return image.convert("RGBA" if mode == "RGBa" else "LA")
    return image.convert("RGB")


def _wide_to_l(image: Image.Image) -> Image.Image:
    import numpy as np

    values = np.asarray(image, dtype=np.float64)
    if image.mode.startswith("I;16"):
        values = values / 257.0  # 16-bit samples to 8 bits; I and F are clipped to 0-255
    return Image.fromarray(np.clip(values, 0, 255).astype(np.uint8), "L")


def load(data: bytes, *, max_pixels: int) -> Image.Image:
    """Decode image bytes, refusing more than ``max_pixels`` before decoding them, apply the
    EXIF orientation (so coordinates match what a viewer shows), and normalize the mode. Only
    the first frame of an animation is kept."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise OpError(f"load: expected bytes, not {type(data).__name__}")
    if max_pixels < 1:
        raise OpError("load: max_pixels must be positive")
    try:
        with warnings.catch_warnings():
            # Our own limit applies; Pillow's global warning threshold must not interfere.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(bytes(data))) as img:
                width, height = img.size
                if width * height > max_pixels:
                    raise OpError(
                        f"load: image is {width}x{height} = {width * height / 1e6:.1f} "
                        f"megapixels; the limit is {max_pixels / 1e6:.1f} megapixels"
                    )
                img.seek(0)
                img.load()
                oriented = ImageOps.exif_transpose(img)
                if oriented is None:  # pragma: no cover - only with in_place=True
                    oriented = img
                result = normalize_mode(oriented)
                if result is img:
                    result = img.copy()
    except OpError:
        raise
    except Image.DecompressionBombError as exc:
        raise OpError(f"load: image too large: {exc}") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError) as exc:
        raise OpError(f"load: not a readable image ({type(exc).__name__}: {exc})") from None
    result.info = {}
    return result


# --------------------------------------------------------------------------- coordinates


def bbox_to_pixels(bbox_2d: Sequence[float], size: tuple[int, int]) -> tuple[int, int, int, int]:
    """A 0-1000 box as a pixel box ``(left, top, right, bottom)``, by the released tool's rule:
    ``int(v / 1000 * side)``, i.e. truncation toward zero. Raises :class:`OpError` for a box
    outside the scale, reversed, or empty in pixels."""
    x1, y1, x2, y2 = _coerce("bbox", ParamSpec("bbox_2d", "bbox", ""), bbox_2d)
    width, height = size
    box = (
        int(x1 / BBOX_SCALE * width),
        int(y1 / BBOX_SCALE * height),
        int(x2 / BBOX_SCALE * width),
        int(y2 / BBOX_SCALE * height),
    )
    if box[2] <= box[0] or box[3] <= box[1]:
        raise OpError(
            f"crop: bbox_2d {list(bbox_2d)} covers no whole pixel of a {width}x{height} image "
            f"(pixel box {list(box)})",
            op="crop",
            param="bbox_2d",
        )
    return box


def pixels_to_bbox(
    box: Sequence[int], size: tuple[int, int], *, integer: bool = False
) -> tuple[float, float, float, float]:
    """A pixel box as 0-1000 coordinates. The floats returned convert back to exactly ``box``
    with :func:`bbox_to_pixels`. With ``integer=True`` they are rounded to whole numbers, as
    agents write them; when a side is longer than 1000 pixels that can move an edge by a pixel."""
    left, top, right, bottom = _coerce("bbox", ParamSpec("box", "box", ""), box)
    width, height = size
    if right > width or bottom > height:
        raise OpError(f"pixel box {list(box)} is outside the {width}x{height} image")
    out = (
        _to_scale(left, width),
        _to_scale(top, height),
        _to_scale(right, width),
        _to_scale(bottom, height),
    )
    if integer:
        return tuple(float(round(v)) for v in out)  # type: ignore[return-value]
    return out


def _to_scale(pixel: int, side: int) -> float:
    value = pixel * BBOX_SCALE / side
    # Float rounding can leave value / 1000 * side a hair below ``pixel``; nudge it up.
    while int(value / BBOX_SCALE * side) < pixel:
        value = math.nextafter(value, math.inf)
    return value


# --------------------------------------------------------------------------- operations


def _photometric(image: Image.Image, fn: Callable[[Image.Image], Image.Image]) -> Image.Image:
    """Apply ``fn`` to the colour channels only, keeping any alpha channel as it was."""
    if image.mode in ("RGBA", "LA"):
        base_mode = image.mode[:-1]
        alpha = image.getchannel("A")
        result = fn(image.convert(base_mode))
        if result.mode == "L":
            return Image.merge("LA", (result, alpha))
        return Image.merge("RGBA", (*result.convert("RGB").split(), alpha))
    return fn(image)


def _crop_box(
    size: tuple[int, int],
    bbox_2d: tuple[float, float, float, float] | None,
    box: tuple[int, int, int, int] | None,
) -> tuple[int, int, int, int]:
    width, height = size
    if box is not None:
        if box[2] > width or box[3] > height:
            raise OpError(
                f"crop: box {list(box)} is outside the {width}x{height} image",
                op="crop",
                param="box",
            )
        return box
    assert bbox_2d is not None
    return bbox_to_pixels(bbox_2d, size)


def _zoomed(size: tuple[int, int], zoom_scale: float) -> tuple[int, int]:
    return int(size[0] * zoom_scale), int(size[1] * zoom_scale)


def _crop_size(size: tuple[int, int], values: dict[str, Any]) -> tuple[int, int]:
    left, top, right, bottom = _crop_box(size, values.get("bbox_2d"), values.get("box"))
    cropped = (right - left, bottom - top)
    zoom_scale = values.get("zoom_scale", 1.0)
    return _zoomed(cropped, zoom_scale) if zoom_scale > 1.0 else cropped


def _crop(
    image: Image.Image,
    bbox_2d: tuple[float, float, float, float] | None = None,
    box: tuple[int, int, int, int] | None = None,
    zoom_scale: float = 1.0,
) -> Image.Image:
    result = image.crop(_crop_box(image.size, bbox_2d, box))
    if zoom_scale > 1.0:  # the released tool ignores zoom_scale <= 1
        new_size = _zoomed(result.size, zoom_scale)
        _check_output("crop", new_size)
        result = result.resize(new_size, Image.Resampling.LANCZOS)
    return result


def _rotated_size(size: tuple[int, int], angle: float, expand: bool) -> tuple[int, int]:
    """The size ``Image.rotate(angle, expand=expand)`` gives, by Pillow's own arithmetic
    (``Image.rotate`` in Pillow 13: exact quarter turns transpose; other angles take the
    bounding box of the corners under the rounded affine matrix)."""
    width, height = size
    angle = angle % 360.0
    if not expand or angle in (0, 180):
        return width, height
    if angle in (90, 270):
        return height, width
    rad = -math.radians(angle)
    cos, sin = round(math.cos(rad), 15), round(math.sin(rad), 15)
    cx, cy = width / 2, height / 2
    tx = cos * -cx + sin * -cy + cx
    ty = -sin * -cx + cos * -cy + cy
    corners = ((0, 0), (width, 0), (width, height), (0, height))
    xs = [cos * x + sin * y + tx for x, y in corners]
    ys = [-sin * x + cos * y + ty for x, y in corners]
    return (
        math.ceil(max(xs)) - math.floor(min(xs)),
        math.ceil(max(ys)) - math.floor(min(ys)),
    )


def _rotate_size(size: tuple[int, int], values: dict[str, Any]) -> tuple[int, int]:
    return _rotated_size(size, values["angle"], values.get("expand", True))


def _rotate(image: Image.Image, angle: float, expand: bool = True) -> Image.Image:
    _check_output("rotate", _rotated_size(image.size, angle, expand))
    return image.rotate(angle, expand=expand)


def _flip(image: Image.Image, direction: str = "horizontal") -> Image.Image:
    if direction == "horizontal":
        return image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    if direction == "vertical":
        return image.transpose(Image.Transpose.FLIP_TOP_BOTTOM)
    return image.transpose(Image.Transpose.ROTATE_180)  # both = left-right then top-bottom


def _resize_size(
    size: tuple[int, int], width: int | None, height: int | None, scale: float | None
) -> tuple[int, int]:
    w, h = size
    if scale is not None:
        return int(w * scale), int(h * scale)
    if width is not None and height is not None:
        return width, height
    if width is not None:
        return width, max(1, round(h * width / w))
    assert height is not None
    return max(1, round(w * height / h)), height


def _resize_size_of(size: tuple[int, int], values: dict[str, Any]) -> tuple[int, int]:
    return _resize_size(size, values.get("width"), values.get("height"), values.get("scale"))


def _resize(
    image: Image.Image,
    width: int | None = None,
    height: int | None = None,
    scale: float | None = None,
) -> Image.Image:
    new_size = _resize_size(image.size, width, height, scale)
    _check_output("resize", new_size)
    return image.resize(new_size, Image.Resampling.LANCZOS)


def _check_resize(values: dict[str, Any]) -> None:
    if "scale" in values and ("width" in values or "height" in values):
        raise OpError("resize: give scale, or width and/or height, not both", op="resize")
    if not any(k in values for k in ("scale", "width", "height")):
        raise OpError("resize: give scale, or width and/or height", op="resize")


def _enhance(
    image: Image.Image,
    brightness: float | None = None,
    contrast: float | None = None,
    sharpness: float | None = None,
    color: float | None = None,
) -> Image.Image:
    def run(img: Image.Image) -> Image.Image:
        # The released tool's order: brightness, contrast, sharpness; color comes last.
        if brightness is not None:
            img = ImageEnhance.Brightness(img).enhance(brightness)
        if contrast is not None:
            img = ImageEnhance.Contrast(img).enhance(contrast)
        if sharpness is not None:
            img = ImageEnhance.Sharpness(img).enhance(sharpness)
        if color is not None:
            img = ImageEnhance.Color(img).enhance(color)
        return img

    return _photometric(image, run)


def _grayscale(image: Image.Image) -> Image.Image:
    if image.mode in ("L", "LA"):
        return image.copy()
    return image.convert("LA" if image.mode == "RGBA" else "L")


def _autocontrast(image: Image.Image, cutoff: float = 0.0) -> Image.Image:
    return _photometric(image, lambda img: ImageOps.autocontrast(img, cutoff=cutoff))


def _blur(image: Image.Image, radius: float = 2.0) -> Image.Image:
    return _photometric(image, lambda img: img.filter(ImageFilter.GaussianBlur(radius=radius)))


def _sharpen(image: Image.Image) -> Image.Image:
    return _photometric(image, lambda img: img.filter(ImageFilter.SHARPEN))


def _median_size(strength: int) -> int:
    return 2 * max(1, strength // 3) + 1


def _denoise_cost(values: dict[str, Any]) -> tuple[int, str]:
    strength = values.get("strength", 10)
    size = _median_size(strength)
    return size * size, f"a {size}×{size} median filter (strength {strength})"


def _edge_detect_cost(values: dict[str, Any]) -> tuple[int, str]:
    if values.get("method", "canny") == "canny":
        return CANNY_COST, "Canny edge detection"
    return 1, ""


def _denoise(image: Image.Image, strength: int = 10) -> Image.Image:
    size = _median_size(strength)
    return _photometric(image, lambda img: img.filter(ImageFilter.MedianFilter(size=size)))


def _edge_detect(image: Image.Image, method: str = "canny") -> Image.Image:
    if method == "simple":
        # Per channel, as the released fallback does (colour edges on a colour image).
        return _photometric(image, lambda img: img.filter(ImageFilter.FIND_EDGES))
    import numpy as np

    gray = image.convert("L") if image.mode in ("L", "LA") else image.convert("RGB").convert("L")
    values = np.asarray(gray, dtype=np.int64)
    if method == "sobel":
        gx, gy = _sobel(values, border="reflect")  # cv2.Sobel's default, BORDER_REFLECT_101
        magnitude = np.sqrt((gx * gx + gy * gy).astype(np.float64))
        return Image.fromarray(np.clip(magnitude, 0, 255).astype(np.uint8), "L")
    gx, gy = _sobel(values, border="edge")  # cv2.Canny differentiates with BORDER_REPLICATE
    return Image.fromarray(_canny(gx, gy, low=100, high=200), "L")


def _sobel(values: Any, *, border: Literal["reflect", "edge"]) -> tuple[Any, Any]:
    """3x3 Sobel derivatives (x to the right, y down)."""
    import numpy as np

    p = np.pad(values, 1, mode=border)
    gx = (p[:-2, 2:] + 2 * p[1:-1, 2:] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[1:-1, :-2] + p[2:, :-2])
    gy = (p[2:, :-2] + 2 * p[2:, 1:-1] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[:-2, 1:-1] + p[:-2, 2:])
    return gx, gy


def _canny(gx: Any, gy: Any, *, low: int, high: int) -> Any:
    """``cv2.Canny(img, low, high)`` (aperture 3, L1 gradient): non-maximum suppression with
    OpenCV's fixed-point direction test and comparisons, then hysteresis, 8-connected."""
    import numpy as np
    from scipy import ndimage

    ax, ay = np.abs(gx), np.abs(gy)
    mag = ax + ay
    tg22x = ax * int(0.4142135623730950488016887242097 * (1 << 15))
    y = ay << 15
    horizontal = y < tg22x
    vertical = y > tg22x + (ax << 16)
    diagonal = ~(horizontal | vertical)
    same_sign = (gx * gy) > 0
    height, width = mag.shape
    padded = np.pad(mag, 1, mode="constant")

    def at(dy: int, dx: int) -> Any:
        return padded[1 + dy : 1 + dy + height, 1 + dx : 1 + dx + width]

    keep = horizontal & (mag > at(0, -1)) & (mag >= at(0, 1))
    keep |= vertical & (mag > at(-1, 0)) & (mag >= at(1, 0))
    # y points down, so same-sign gradients run along the main diagonal.
    keep |= diagonal & same_sign & (mag > at(-1, -1)) & (mag > at(1, 1))
    keep |= diagonal & ~same_sign & (mag > at(-1, 1)) & (mag > at(1, -1))
    candidates = keep & (mag > low)
    strong = candidates & (mag > high)
    labels, count = ndimage.label(candidates, structure=np.ones((3, 3), dtype=bool))
    connected = np.zeros(count + 1, dtype=bool)
    connected[np.unique(labels[strong])] = True
    connected[0] = False
    return np.where(connected[labels], 255, 0).astype(np.uint8)


def _invert(image: Image.Image) -> Image.Image:
    return _photometric(image, ImageOps.invert)


def _equalize(image: Image.Image) -> Image.Image:
    return _photometric(image, ImageOps.equalize)


def _threshold(image: Image.Image, value: int = 128, mode: str = "binary") -> Image.Image:
    if mode == "binary":
        lut = [255 if x > value else 0 for x in range(256)]
    elif mode == "binary_inv":
        lut = [0 if x > value else 255 for x in range(256)]
    elif mode == "trunc":
        lut = [value if x > value else x for x in range(256)]
    else:  # tozero
        lut = [x if x > value else 0 for x in range(256)]
    gray = image.convert("L") if image.mode in ("L", "LA") else image.convert("RGB").convert("L")
    result = gray.point(lut)
    if image.mode in ("RGBA", "LA"):
        return Image.merge("LA", (result, image.getchannel("A")))
    return result


# --------------------------------------------------------------------------- public wrappers
# Each validates its arguments exactly as ``apply`` does.


def _given(**kwargs: Any) -> dict[str, Any]:
    return {k: v for k, v in kwargs.items() if v is not None}


def crop(
    image: Image.Image,
    bbox_2d: Sequence[float] | None = None,
    *,
    box: Sequence[int] | None = None,
    zoom_scale: float = 1.0,
) -> Image.Image:
    """Crop a 0-1000 box (or a pixel ``box``), then enlarge by ``zoom_scale`` if it is above 1."""
    return apply(image, "crop", _given(bbox_2d=bbox_2d, box=box, zoom_scale=zoom_scale))


def rotate(image: Image.Image, angle: float, *, expand: bool = True) -> Image.Image:
    """Rotate by ``angle`` degrees counter-clockwise."""
    return apply(image, "rotate", {"angle": angle, "expand": expand})


def flip(image: Image.Image, direction: str = "horizontal") -> Image.Image:
    """Mirror left-right (horizontal), top-bottom (vertical) or both."""
    return apply(image, "flip", {"direction": direction})


def resize(
    image: Image.Image,
    *,
    width: int | None = None,
    height: int | None = None,
    scale: float | None = None,
) -> Image.Image:
    """Resize to ``width`` x ``height`` (one of them keeps the aspect ratio) or by ``scale``."""
    return apply(image, "resize", _given(width=width, height=height, scale=scale))


def enhance(
    image: Image.Image,
    *,
    brightness: float | None = None,
    contrast: float | None = None,
    sharpness: float | None = None,
    color: float | None = None,
) -> Image.Image:
    """Multiply brightness, contrast, sharpness and/or colour saturation (1.0 = unchanged)."""
    values = _given(brightness=brightness, contrast=contrast, sharpness=sharpness, color=color)
    return apply(image, "enhance", values)


def grayscale(image: Image.Image) -> Image.Image:
    """Single-channel luminance (L, or LA with alpha)."""
    return apply(image, "grayscale")


def autocontrast(image: Image.Image, *, cutoff: float = 0.0) -> Image.Image:
    """Stretch the tonal range, ignoring ``cutoff`` percent at each end."""
    return apply(image, "autocontrast", {"cutoff": cutoff})


def blur(image: Image.Image, *, radius: float = 2.0) -> Image.Image:
    """Gaussian blur."""
    return apply(image, "blur", {"radius": radius})


def sharpen(image: Image.Image) -> Image.Image:
    """Pillow's SHARPEN kernel."""
    return apply(image, "sharpen")


def denoise(image: Image.Image, *, strength: int = 10) -> Image.Image:
    """Median filter of size ``2 * max(1, strength // 3) + 1``."""
    return apply(image, "denoise", {"strength": strength})


def edge_detect(image: Image.Image, *, method: str = "canny") -> Image.Image:
    """Edge map (L): ``canny``, ``sobel`` magnitude or Pillow's ``simple`` FIND_EDGES."""
    return apply(image, "edge_detect", {"method": method})


def invert(image: Image.Image) -> Image.Image:
    """Negative."""
    return apply(image, "invert")


def equalize(image: Image.Image) -> Image.Image:
    """Histogram equalization."""
    return apply(image, "equalize")


def threshold(image: Image.Image, *, value: int = 128, mode: str = "binary") -> Image.Image:
    """Threshold the luminance at ``value`` (binary, binary_inv, trunc or tozero)."""
    return apply(image, "threshold", {"value": value, "mode": mode})


# --------------------------------------------------------------------------- registry


def _factor(name: str, description: str) -> ParamSpec:
    return ParamSpec(name, "number", description, minimum=0.0, maximum=10.0)


OPS: dict[str, OpSpec] = {
    spec.name: spec
    for spec in (
        OpSpec(
            "crop",
            "Crop",
            "geometric",
            "Cut out a region and optionally magnify it.",
            (
                ParamSpec(
                    "bbox_2d",
                    "bbox",
                    "[x1, y1, x2, y2] on the 0-1000 scale, (0, 0) at the top left.",
                ),
                ParamSpec(
                    "box", "box", "[left, top, right, bottom] in pixels, instead of bbox_2d."
                ),
                ParamSpec(
                    "zoom_scale",
                    "number",
                    "Magnification; values up to 1 leave the crop at its own size.",
                    default=1.0,
                    minimum=0.5,
                    maximum=5.0,
                ),
            ),
            _crop,
            one_of=("bbox_2d", "box"),
            geometric=True,
            size=_crop_size,
        ),
        OpSpec(
            "rotate",
            "Rotate",
            "geometric",
            "Turn the image; positive angles turn counter-clockwise.",
            (
                ParamSpec(
                    "angle", "number", "Degrees.", required=True, minimum=-360.0, maximum=360.0
                ),
                ParamSpec("expand", "boolean", "Grow the canvas to fit.", default=True),
            ),
            _rotate,
            geometric=True,
            size=_rotate_size,
        ),
        OpSpec(
            "flip",
            "Flip",
            "geometric",
            "Mirror the image.",
            (
                ParamSpec(
                    "direction",
                    "string",
                    "horizontal (left-right), vertical (top-bottom) or both.",
                    default="horizontal",
                    choices=("horizontal", "vertical", "both"),
                    aliases={
                        "h": "horizontal",
                        "lr": "horizontal",
                        "left_right": "horizontal",
                        "v": "vertical",
                        "tb": "vertical",
                        "top_bottom": "vertical",
                        "b": "both",
                        "hv": "both",
                    },
                ),
            ),
            _flip,
            geometric=True,
        ),
        OpSpec(
            "resize",
            "Resize",
            "geometric",
            "Scale the whole image (Lanczos).",
            (
                ParamSpec("width", "integer", "Target width in pixels.", minimum=1),
                ParamSpec("height", "integer", "Target height in pixels.", minimum=1),
                ParamSpec(
                    "scale",
                    "number",
                    "Scale factor, instead of width/height.",
                    minimum=0.0,
                    exclusive_minimum=True,
                    maximum=10.0,
                ),
            ),
            _resize,
            check=_check_resize,
            geometric=True,
            size=_resize_size_of,
        ),
        OpSpec(
            "enhance",
            "Enhance",
            "color & contrast",
            "Multiply brightness, contrast, sharpness and/or colour (1.0 = unchanged).",
            (
                _factor("brightness", "Brightness factor."),
                _factor("contrast", "Contrast factor."),
                _factor("sharpness", "Sharpness factor."),
                _factor("color", "Colour saturation factor."),
            ),
            _enhance,
            any_of=("brightness", "contrast", "sharpness", "color"),
            in_paper=False,
        ),
        OpSpec("grayscale", "Grayscale", "color & contrast", "Drop colour.", (), _grayscale),
        OpSpec(
            "autocontrast",
            "Autocontrast",
            "color & contrast",
            "Stretch the tonal range to full black-to-white.",
            (
                ParamSpec(
                    "cutoff",
                    "number",
                    "Percent of darkest and lightest pixels to ignore.",
                    default=0.0,
                    minimum=0.0,
                    maximum=49.0,
                ),
            ),
            _autocontrast,
        ),
        OpSpec("invert", "Invert", "color & contrast", "Negative.", (), _invert),
        OpSpec(
            "equalize", "Equalize", "color & contrast", "Equalize the histogram.", (), _equalize
        ),
        OpSpec(
            "threshold",
            "Threshold",
            "color & contrast",
            "Black and white at a cut-off of the luminance.",
            (
                ParamSpec(
                    "value", "integer", "Cut-off, 0-255.", default=128, minimum=0, maximum=255
                ),
                ParamSpec(
                    "mode",
                    "string",
                    "binary, binary_inv, trunc or tozero.",
                    default="binary",
                    choices=("binary", "binary_inv", "trunc", "tozero"),
                ),
            ),
            _threshold,
        ),
        OpSpec(
            "blur",
            "Blur",
            "filtering",
            "Gaussian blur.",
            (
                ParamSpec(
                    "radius",
                    "number",
                    "Blur radius in pixels.",
                    default=2.0,
                    minimum=0.0,
                    exclusive_minimum=True,
                    maximum=100.0,
                ),
            ),
            _blur,
        ),
        OpSpec("sharpen", "Sharpen", "filtering", "Sharpening filter.", (), _sharpen),
        OpSpec(
            "denoise",
            "Denoise",
            "filtering",
            "Median filter of size 2 * max(1, strength // 3) + 1.",
            (
                ParamSpec(
                    "strength", "integer", "Strength, 1-30.", default=10, minimum=1, maximum=30
                ),
            ),
            _denoise,
            cost=_denoise_cost,
        ),
        OpSpec(
            "edge_detect",
            "Edges",
            "filtering",
            "Edge map.",
            (
                ParamSpec(
                    "method",
                    "string",
                    "canny, sobel or simple.",
                    default="canny",
                    choices=("canny", "sobel", "simple"),
                ),
            ),
            _edge_detect,
            cost=_edge_detect_cost,
        ),
    )
}
