"""Recipes: how an artifact image was made from a source image, so anyone can re-derive it.

A :class:`Recipe` is the source image's SHA-256 plus an ordered list of steps ``{op, params}``
(operations from :mod:`benchmark.imaging.ops`). Steps are stored *normalized*: defaults filled
in, numbers canonical. So a recipe keeps meaning the same thing if a default changes later, and
two recipes that do the same thing hash the same.

* :func:`derive` applies the steps to a source image.
* :func:`render_bytes` encodes an image as PNG deterministically: the same pixels give the same
  bytes (fixed zlib level, no optimizer pass, no metadata chunks: no timestamps, text, ICC, EXIF
  or DPI). The artifact hash is the SHA-256 of those bytes. zlib output is stable for one
  zlib build; :func:`pixel_sha256` hashes the decoded pixels instead, independent of the encoder.
* :func:`verify` re-derives the artifact from the source bytes and compares hashes.

The JSON form is ``{"version": 1, "source_sha256": "<64 hex>", "steps": [{"op": "crop",
"params": {...}}, ...]}``. Coordinates in a step refer to the image that step receives, and the
source is read with EXIF orientation applied (:func:`benchmark.imaging.ops.load`), i.e. as a
viewer shows it.

Limits: deriving must not cost minutes of CPU, since any project member can send a recipe.

* At most :data:`MAX_STEPS` (20) steps; the parser refuses more.
* :func:`plan` works out, from the source's size and the parameters alone, each step's result
  size and cost (:func:`benchmark.imaging.ops.estimate`: the pixels it produces times a factor,
  1 for most operations, k² for denoise's k×k median filter, 10 for Canny edges). Before any
  pixel work, :func:`derive` refuses a recipe with a step whose result is larger than
  :attr:`Limits.step_pixels` (by default 40 MP, the upload limit ``MAX_IMAGE_PIXELS``: a step
  may not make an image nobody could upload), or whose cost is over that same figure, or whose
  steps together cost more than :attr:`Limits.total_pixels` (by default 4 × 40 = 160 MP). The
  message names the step, its operation and the limit.
* The clock: :func:`derive` stops with :class:`RecipeTimeout` when, before a step, more than
  :attr:`Limits.seconds` (10 s by default) have passed since it began.

Why between-step checks rather than a subprocess with a timeout: Pillow's and NumPy's C loops
cannot be interrupted from another thread in CPython, so a hard stop needs a process. Forking a
web or Celery worker (threads, database connections, a large heap) is unsafe, and spawning a
fresh interpreter costs the imports of Pillow and NumPy on every preview plus shipping up to
hundreds of megabytes of pixels through a pipe each way. The cost caps make a hard stop
unnecessary: they bound every single step, so the between-step clock overshoots by at most one
step. Measured with ``tests/perf/bench_recipe_limits.py`` on the 2-CPU build machine (while
other work kept it busy), the slowest step the default limits allow takes about 3 s: a blur,
sharpen or four-factor enhance of 40 MP, 2.5-3 s at best and up to 4 s; a denoise at its cap
(0.09 MP at strength 30, 0.8 MP at the default strength 10) takes 1-3 s, a Canny at its 4 MP
cap 0.5 s. The 160 MP budget is 5-12 s of the dearest plain operations, so the clock is the
backstop on a slow or busy machine, and a derivation ends by 10 s plus one step. Decoding the
source and encoding the result are bounded by the same pixel limits, not by the clock (a 40 MP
PNG of noise, the worst case, takes about 6 s to encode).
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from PIL import Image

from benchmark.imaging import ops

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_PIXELS",
    "MAX_STEPS",
    "PNG_COMPRESS_LEVEL",
    "RECIPE_VERSION",
    "Limits",
    "Recipe",
    "RecipeError",
    "RecipeTimeout",
    "Step",
    "RederiveCheck",
    "artifact_sha256",
    "check",
    "derive",
    "pixel_sha256",
    "plan",
    "recipe_hash",
    "render_bytes",
    "sha256_hex",
    "verify",
]

RECIPE_VERSION = 1
PNG_COMPRESS_LEVEL = 6
DEFAULT_MAX_PIXELS = 50_000_000
MAX_STEPS = 20
"""The most steps a recipe may have (the paper's trajectories use a handful)."""
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


class RecipeError(ValueError):
    """A recipe is malformed, or one of its steps cannot run. ``step`` is 1-based (None for
    problems with the recipe as a whole)."""

    def __init__(self, message: str, *, step: int | None = None):
        super().__init__(message)
        self.step = step


class RecipeTimeout(RecipeError):
    """Deriving took longer than :attr:`Limits.seconds`; ``step`` is the step not run."""


@dataclass(frozen=True)
class Limits:
    """What one derivation may cost (see the module docstring)."""

    step_pixels: int = 40_000_000
    """No step may produce more pixels than this, nor cost more pixel-equivalents."""
    total_pixels: int = 160_000_000
    """All steps together may not cost more pixel-equivalents than this."""
    seconds: float | None = 10.0
    """Stop before the next step once this much time has passed (None: no clock)."""

    @classmethod
    def for_image_pixels(cls, max_image_pixels: int, *, seconds: float | None = 10.0) -> Limits:
        """The limits for a deployment whose uploads may have ``max_image_pixels``: a step
        may make an image that large, a recipe four times that."""
        return cls(int(max_image_pixels), 4 * int(max_image_pixels), seconds)


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class Step:
    op: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "params": _jsonable(dict(self.params))}


@dataclass(frozen=True)
class Recipe:
    source_sha256: str
    steps: tuple[Step, ...] = ()

    @classmethod
    def build(cls, source_sha256: str, steps: Iterable[Step | Mapping[str, Any]] = ()) -> Recipe:
        """A validated, normalized recipe. Steps may be :class:`Step` objects or
        ``{"op": ..., "params": {...}}`` mappings."""
        source = _check_sha(source_sha256)
        steps = list(steps)
        _check_count(len(steps))
        normalized: list[Step] = []
        for number, raw in enumerate(steps, start=1):
            normalized.append(_normalize_step(number, raw))
        return cls(source, tuple(normalized))

    def then(self, op: str, params: Mapping[str, Any] | None = None) -> Recipe:
        """This recipe with one more step (validated)."""
        _check_count(len(self.steps) + 1)
        step = _normalize_step(len(self.steps) + 1, {"op": op, "params": dict(params or {})})
        return Recipe(self.source_sha256, (*self.steps, step))

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": RECIPE_VERSION,
            "source_sha256": self.source_sha256,
            "steps": [step.to_dict() for step in self.steps],
        }

    def to_json(self, *, indent: int | None = None) -> str:
        if indent is None:
            return _canonical_json(self.to_dict())
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True, allow_nan=False)

    @classmethod
    def from_dict(cls, data: Any) -> Recipe:
        if not isinstance(data, Mapping):
            raise RecipeError(f"recipe must be an object, not {type(data).__name__}")
        unknown = set(data) - {"version", "source_sha256", "steps"}
        if unknown:
            raise RecipeError(f"recipe: unknown field(s) {', '.join(sorted(map(str, unknown)))}")
        version = data.get("version", RECIPE_VERSION)
        if version != RECIPE_VERSION or isinstance(version, bool):
            raise RecipeError(
                f"recipe: unsupported version {version!r} (expected {RECIPE_VERSION})"
            )
        if "source_sha256" not in data:
            raise RecipeError("recipe: source_sha256 is required")
        steps = data.get("steps", [])
        if not isinstance(steps, list):
            raise RecipeError(f"recipe: steps must be a list, not {type(steps).__name__}")
        return cls.build(data["source_sha256"], steps)

    @classmethod
    def from_json(cls, text: str | bytes) -> Recipe:
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise RecipeError(f"recipe: not valid JSON ({exc})") from None
        return cls.from_dict(data)


def _check_count(count: int) -> None:
    if count > MAX_STEPS:
        raise RecipeError(f"recipe: {count} steps, over the limit of {MAX_STEPS} steps per recipe")


def _check_sha(value: Any) -> str:
    if not isinstance(value, str) or not _SHA256_RE.match(value.lower()):
        raise RecipeError(f"recipe: source_sha256 must be 64 hex characters, not {value!r}")
    return value.lower()


def _normalize_step(number: int, raw: Step | Mapping[str, Any]) -> Step:
    op: Any
    params: Any
    if isinstance(raw, Step):
        op, params = raw.op, raw.params
    elif isinstance(raw, Mapping):
        unknown = set(raw) - {"op", "params"}
        if unknown:
            names = ", ".join(sorted(map(str, unknown)))
            raise RecipeError(f"step {number}: unknown field(s) {names}", step=number)
        op = raw.get("op")
        params = raw.get("params", {})
    else:
        raise RecipeError(
            f"step {number}: must be an object with op and params, not {type(raw).__name__}",
            step=number,
        )
    if not isinstance(op, str) or not op.strip():
        raise RecipeError(f"step {number}: op must be a non-empty string, not {op!r}", step=number)
    if params is None:
        params = {}
    try:
        values = ops.validate_params(op, params)
    except ops.OpError as exc:
        raise RecipeError(f"step {number} ({op}): {exc}", step=number) from None
    return Step(op.strip().lower(), values)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _canonical_json(data: Any) -> str:
    return json.dumps(
        _jsonable(data), sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def recipe_hash(recipe: Recipe) -> str:
    """SHA-256 of the recipe's canonical JSON (sorted keys, no spaces, normalized params).
    It covers the source hash too: the same steps on another image are another recipe."""
    return sha256_hex(_canonical_json(recipe.to_dict()).encode("ascii"))


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- deriving


def _mp(pixels: float) -> str:
    """Megapixels, with as many decimals as small figures need."""
    value = pixels / 1e6
    if value >= 10:
        return f"{value:.0f}"
    if value >= 1:
        return f"{value:.1f}".removesuffix(".0")
    return f"{value:.2g}"


def _estimate(
    number: int,
    step: Step,
    size: tuple[int, int],
    limits: Limits,
    spent: int,
    weighted: bool,
) -> ops.Estimate:
    """Step ``number``'s estimate on an image of ``size``, after steps that cost ``spent``
    pixel-equivalents (``weighted``: some counted more than their pixels). Raises
    :class:`RecipeError` naming the step when it breaks a limit or does not fit the image."""
    where = f"step {number} ({step.op})"
    try:
        estimate = ops.estimate(step.op, step.params, size)
    except ops.OpError as exc:
        raise RecipeError(f"{where}: {exc}", step=number) from None
    width, height = estimate.size
    if width * height > limits.step_pixels:
        raise RecipeError(
            f"{where}: the output would be {width}×{height} = {_mp(width * height)} MP, "
            f"over the {_mp(limits.step_pixels)} MP limit",
            step=number,
        )
    if estimate.cost > limits.step_pixels and estimate.factor == 1:
        # Only a resize reads more than it writes: the image it receives is over the limit.
        raise RecipeError(
            f"{where}: the image it reads is {size[0]}×{size[1]} = {_mp(estimate.pixels)} MP, "
            f"over the {_mp(limits.step_pixels)} MP limit. Crop it first",
            step=number,
        )
    if estimate.cost > limits.step_pixels:
        allowed = limits.step_pixels // estimate.factor
        raise RecipeError(
            f"{where}: {estimate.why} counts {estimate.factor} times its pixels, so it is "
            f"limited to {_mp(allowed)} MP per step; here it would work on {width}×{height} = "
            f"{_mp(estimate.pixels)} MP. Crop or scale the image down first"
            + (", or lower the strength" if step.op == "denoise" else ""),
            step=number,
        )
    if spent + estimate.cost > limits.total_pixels:
        note = ""
        if weighted or estimate.factor > 1:
            note = " (denoise and Canny edges count several times their pixels)"
        raise RecipeError(
            f"{where}: the steps up to this one would work through "
            f"{_mp(spent + estimate.cost)} MP, over the {_mp(limits.total_pixels)} MP limit "
            f"for one recipe{note}. Use fewer steps, or crop or scale the image down first",
            step=number,
        )
    return estimate


def plan(
    recipe: Recipe, size: tuple[int, int], *, limits: Limits = DEFAULT_LIMITS
) -> list[ops.Estimate]:
    """Each step's result size and cost on a source of ``size``, worked out from the
    parameters alone. Raises :class:`RecipeError` naming the first step over a limit (or whose
    parameters do not fit the image it receives, e.g. a crop box outside it)."""
    _check_count(len(recipe.steps))
    estimates: list[ops.Estimate] = []
    for number, step in enumerate(recipe.steps, start=1):
        spent = sum(e.cost for e in estimates)
        weighted = any(e.factor > 1 for e in estimates)
        estimate = _estimate(number, step, size, limits, spent, weighted)
        estimates.append(estimate)
        size = estimate.size
    return estimates


def derive(
    source_image: Image.Image, recipe: Recipe, *, limits: Limits = DEFAULT_LIMITS
) -> Image.Image:
    """Apply the recipe's steps in order. Raises :class:`RecipeError` naming the step that
    failed (e.g. a pixel box outside the image it received) or that is over ``limits``; steps
    over the pixel limits are refused before any step runs (:func:`plan`), and
    :class:`RecipeTimeout` stops the derivation before a step once ``limits.seconds`` have
    passed."""
    image = ops.normalize_mode(source_image)
    plan(recipe, image.size, limits=limits)
    started = time.monotonic()
    done: list[ops.Estimate] = []
    for number, step in enumerate(recipe.steps, start=1):
        elapsed = time.monotonic() - started
        if number > 1 and limits.seconds is not None and elapsed > limits.seconds:
            last = recipe.steps[number - 2].op
            raise RecipeTimeout(
                f"the recipe took longer than the {limits.seconds:g} s limit: stopped after "
                f"step {number - 1} ({last}) of {len(recipe.steps)}, {elapsed:.1f} s in. Use "
                "fewer or cheaper steps, or crop or scale the image down first",
                step=number,
            )
        # The plan said so already; checked again on the image the step really receives.
        spent = sum(e.cost for e in done)
        weighted = any(e.factor > 1 for e in done)
        done.append(_estimate(number, step, image.size, limits, spent, weighted))
        try:
            image = ops.apply(image, step.op, step.params)
        except ops.OpError as exc:
            raise RecipeError(f"step {number} ({step.op}): {exc}", step=number) from None
    return image


def _canonical_image(image: Image.Image) -> Image.Image:
    """A copy of the pixels with no ``info`` (so nothing but pixels reaches the encoder): a
    memory copy, not a round trip through raw bytes (``tobytes``/``frombytes``, ~0.7 ms a
    640x480 image more), and the same PNG bytes."""
    clean = ops.normalize_mode(image).copy()
    clean.info = {}
    return clean


def render_bytes(image: Image.Image) -> bytes:
    """PNG bytes that depend only on the pixels and mode (L, LA, RGB or RGBA)."""
    clean = _canonical_image(image)
    out = io.BytesIO()
    clean.save(out, format="PNG", compress_level=PNG_COMPRESS_LEVEL, optimize=False)
    return out.getvalue()


def artifact_sha256(image: Image.Image) -> str:
    """SHA-256 of :func:`render_bytes`: the artifact hash a recipe is checked against."""
    return sha256_hex(render_bytes(image))


def pixel_sha256(image: Image.Image) -> str:
    """SHA-256 of mode, size and raw pixels; unaffected by the PNG encoder."""
    clean = ops.normalize_mode(image)
    header = f"{clean.mode}:{clean.width}x{clean.height}:".encode("ascii")
    return sha256_hex(header + clean.tobytes())


# --------------------------------------------------------------------------- verifying


@dataclass(frozen=True)
class RederiveCheck:
    ok: bool
    reason: str
    actual_sha256: str | None = None


def check(
    source_bytes: bytes,
    recipe: Recipe,
    artifact_sha256: str,
    *,
    kind: Literal["png", "pixels"] = "png",
    max_pixels: int = DEFAULT_MAX_PIXELS,
    limits: Limits = DEFAULT_LIMITS,
) -> RederiveCheck:
    """Re-derive the artifact from ``source_bytes`` and compare with ``artifact_sha256``
    (:func:`artifact_sha256` when ``kind="png"``, :func:`pixel_sha256` when ``"pixels"``).
    Says why when it does not match (also when deriving is over ``limits``)."""
    expected = str(artifact_sha256).lower()
    source_sha = sha256_hex(bytes(source_bytes))
    if source_sha != recipe.source_sha256:
        return RederiveCheck(
            False, f"source bytes hash to {source_sha}, the recipe names {recipe.source_sha256}"
        )
    try:
        image = ops.load(source_bytes, max_pixels=max_pixels)
        result = derive(image, recipe, limits=limits)
    except (ops.OpError, RecipeError) as exc:
        return RederiveCheck(False, f"cannot re-derive: {exc}")
    actual = pixel_sha256(result) if kind == "pixels" else sha256_hex(render_bytes(result))
    if hmac.compare_digest(actual, expected):
        return RederiveCheck(True, "re-derived artifact matches", actual)
    return RederiveCheck(
        False, f"re-derived artifact hashes to {actual}, expected {expected}", actual
    )


def verify(
    source_bytes: bytes,
    recipe: Recipe,
    artifact_sha256: str,
    *,
    kind: Literal["png", "pixels"] = "png",
    max_pixels: int = DEFAULT_MAX_PIXELS,
    limits: Limits = DEFAULT_LIMITS,
) -> bool:
    """True when re-deriving the recipe from ``source_bytes`` gives ``artifact_sha256``."""
    return check(
        source_bytes, recipe, artifact_sha256, kind=kind, max_pixels=max_pixels, limits=limits
    ).ok
