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
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from PIL import Image

from benchmark.imaging import ops

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "PNG_COMPRESS_LEVEL",
    "RECIPE_VERSION",
    "Recipe",
    "RecipeError",
    "Step",
    "Verification",
    "artifact_sha256",
    "check",
    "derive",
    "pixel_sha256",
    "recipe_hash",
    "render_bytes",
    "sha256_hex",
    "verify",
]

RECIPE_VERSION = 1
PNG_COMPRESS_LEVEL = 6
DEFAULT_MAX_PIXELS = 50_000_000
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


class RecipeError(ValueError):
    """A recipe is malformed, or one of its steps cannot run. ``step`` is 1-based (None for
    problems with the recipe as a whole)."""

    def __init__(self, message: str, *, step: int | None = None):
        super().__init__(message)
        self.step = step


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
        normalized: list[Step] = []
        for number, raw in enumerate(steps, start=1):
            normalized.append(_normalize_step(number, raw))
        return cls(source, tuple(normalized))

    def then(self, op: str, params: Mapping[str, Any] | None = None) -> Recipe:
        """This recipe with one more step (validated)."""
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


def derive(source_image: Image.Image, recipe: Recipe) -> Image.Image:
    """Apply the recipe's steps in order. Raises :class:`RecipeError` naming the step that
    failed (e.g. a pixel box outside the image it received)."""
    image = ops.normalize_mode(source_image)
    for number, step in enumerate(recipe.steps, start=1):
        try:
            image = ops.apply(image, step.op, step.params)
        except ops.OpError as exc:
            raise RecipeError(f"step {number} ({step.op}): {exc}", step=number) from None
    return image


def _canonical_image(image: Image.Image) -> Image.Image:
    """A fresh image with no ``info`` (so nothing but pixels reaches the encoder)."""
    image = ops.normalize_mode(image)
    return Image.frombytes(image.mode, image.size, image.tobytes())


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
class Verification:
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
) -> Verification:
    """Re-derive the artifact from ``source_bytes`` and compare with ``artifact_sha256``
    (:func:`artifact_sha256` when ``kind="png"``, :func:`pixel_sha256` when ``"pixels"``).
    Says why when it does not match."""
    expected = str(artifact_sha256).lower()
    source_sha = sha256_hex(bytes(source_bytes))
    if source_sha != recipe.source_sha256:
        return Verification(
            False, f"source bytes hash to {source_sha}, the recipe names {recipe.source_sha256}"
        )
    try:
        image = ops.load(source_bytes, max_pixels=max_pixels)
        result = derive(image, recipe)
    except (ops.OpError, RecipeError) as exc:
        return Verification(False, f"cannot re-derive: {exc}")
    actual = pixel_sha256(result) if kind == "pixels" else sha256_hex(render_bytes(result))
    if hmac.compare_digest(actual, expected):
        return Verification(True, "re-derived artifact matches", actual)
    return Verification(
        False, f"re-derived artifact hashes to {actual}, expected {expected}", actual
    )


def verify(
    source_bytes: bytes,
    recipe: Recipe,
    artifact_sha256: str,
    *,
    kind: Literal["png", "pixels"] = "png",
    max_pixels: int = DEFAULT_MAX_PIXELS,
) -> bool:
    """True when re-deriving the recipe from ``source_bytes`` gives ``artifact_sha256``."""
    return check(source_bytes, recipe, artifact_sha256, kind=kind, max_pixels=max_pixels).ok
