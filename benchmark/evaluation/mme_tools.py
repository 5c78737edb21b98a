"""Agentic-MME's tools for a model under test: the function specs (App. B.2), the image
workspace the atomic operations run in, and the retrieval tools called through the tool layer.

**Images** are numbered as the released harness numbers them: the task's input images are 0,
1, ...; every artifact gets the next number and is saved as ``tool_images/transformed_image_N.png``
(N counts artifacts from 1, so with one input image, image N is ``transformed_image_N.png``).

**Atomic operations** run with :mod:`benchmark.imaging.ops` (the same code the reference-trajectory
editor uses), on the decoded image the call names (EXIF orientation applied, mode normalized).
Every artifact keeps its recipe (:mod:`benchmark.imaging.recipe`: the input image's sha256 and
the steps that lead to it) and the sha256 of its PNG, so ``recipe.check`` re-derives it from
the input. A step is checked against the recipe limits before any pixel work, so a model cannot
ask for a 100-megapixel median filter. The released toolbox also offers ``enhance`` (not among
the paper's thirteen); it is offered here too, since reference trajectories use it.

**Retrieval** (``google_search``, ``google_lens_search``, ``fetch_webpage``, ``download_image``)
goes through :class:`benchmark.evaluation.base.ToolLayer`, so every call is recorded per item and
a replay answers from the record. ``google_lens_search`` sends the image itself (its sha256 and
its PNG as base64), so the record is keyed by the pixels, not by an index that means another
image in another run. ``download_image`` adds the downloaded image to the workspace (at most
:data:`MAX_DOWNLOADS` per task, as released) as ``tool_images/downloaded_image_K.png``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from benchmark.imaging import ops
from benchmark.imaging import recipe as recipes

from .base import EvaluationError, ReplayMiss, ToolLayer, ToolUnavailable, sha256

IMAGE_TOOLS: tuple[str, ...] = tuple(ops.OPS)
RETRIEVAL_TOOLS = ("google_search", "google_lens_search", "fetch_webpage", "download_image")
TOOL_IMAGES_DIR = "tool_images"
MAX_DOWNLOADS = 5
MAX_INPUT_PIXELS = recipes.DEFAULT_MAX_PIXELS
#: Arguments of an image call that are not the operation's parameters.
NOT_PARAMS = ("image_index", "label")
#: The crop parameter the released interface does not offer (a pixel box).
HIDDEN_PARAMS = {"crop": ("box",)}


class ToolError(ValueError):
    """A tool call the model can correct: the message is its observation."""


# --------------------------------------------------------------------------- specs

_JSON_TYPES = {"number": "number", "integer": "integer", "boolean": "boolean", "string": "string"}


def _param_schema(spec: ops.ParamSpec) -> dict[str, Any]:
    if spec.type in ("bbox", "box"):
        out: dict[str, Any] = {
            "type": "array",
            "items": {"type": "number"},
            "minItems": 4,
            "maxItems": 4,
        }
    else:
        out = {"type": _JSON_TYPES[spec.type]}
    out["description"] = spec.description
    if spec.choices:
        out["enum"] = list(spec.choices)
    if spec.minimum is not None:
        out["exclusiveMinimum" if spec.exclusive_minimum else "minimum"] = spec.minimum
    if spec.maximum is not None:
        out["maximum"] = spec.maximum
    if spec.default is not None:
        out["default"] = spec.default
    return out


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]):
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


def image_tool_specs() -> list[dict[str, Any]]:
    """One OpenAI function per atomic operation, built from ``ops.OPS``: ``image_index``
    (which image to work on), the operation's parameters, and an optional ``label``."""
    specs = []
    for op in ops.OPS.values():
        hidden = HIDDEN_PARAMS.get(op.name, ())
        properties: dict[str, Any] = {
            "image_index": {
                "type": "integer",
                "minimum": 0,
                "description": "The image to work on: 0 is the input, 1, 2, ... the results.",
            }
        }
        required = ["image_index"]
        for param in op.params:
            if param.name in hidden:
                continue
            properties[param.name] = _param_schema(param)
            if param.required or (op.one_of and param.name in op.one_of):
                required.append(param.name)
        properties["label"] = {"type": "string", "description": "What this step is for."}
        specs.append(_function(op.name, op.description, properties, required))
    return specs


def retrieval_tool_specs() -> list[dict[str, Any]]:
    """The four retrieval tools, with the released interface's arguments."""
    return [
        _function(
            "google_search",
            "Search the web (Google). For facts, names, dates, specifications, prices.",
            {
                "query": {"type": "string", "description": "The search query."},
                "gl": {"type": "string", "description": "Country code, e.g. 'us'."},
                "hl": {"type": "string", "description": "Language code, e.g. 'en'."},
            },
            ["query"],
        ),
        _function(
            "google_lens_search",
            "Reverse image search (Google Lens) on one of the images: identifies objects, "
            "brands, logos, landmarks, products.",
            {
                "image_index": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "The image to search with (default 0, the input).",
                }
            },
            [],
        ),
        _function(
            "fetch_webpage",
            "Fetch a web page and read its text.",
            {
                "url": {"type": "string", "description": "The page's http(s) URL."},
                "max_chars": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "At most this many characters (default 12000).",
                },
            },
            ["url"],
        ),
        _function(
            "download_image",
            f"Download an image from a URL into the workspace as a new image (at most "
            f"{MAX_DOWNLOADS} per task).",
            {"url": {"type": "string", "description": "The image's http(s) URL."}},
            ["url"],
        ),
    ]


# --------------------------------------------------------------------------- the workspace


@dataclass
class WorkImage:
    """One image of a run: an input, an artifact of an operation, or a download."""

    index: int
    path: str
    """Its file in the run folder (``orig.png``, ``tool_images/transformed_image_1.png``);
    an input keeps its own bytes, so a JPEG input is ``orig.jpg``."""
    data: bytes
    label: str
    recipe: recipes.Recipe | None = None
    """For an artifact of the atomic operations: how to re-derive it."""
    source: str = ""
    """For a download: the URL; for a Gen-mode artifact: the code turn."""
    sha256: str = field(init=False)

    def __post_init__(self) -> None:
        self.sha256 = sha256(self.data)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.index,
            "path": self.path,
            "label": self.label,
            "sha256": self.sha256,
        }
        if self.recipe is not None:
            out["recipe"] = self.recipe.to_dict()
        if self.source:
            out["source"] = self.source
        return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def _suffix(data: bytes) -> str:
    """The file suffix for an input image's own bytes (kept as they are, so the folder's copy
    hashes to the recipe's source): .png unless the bytes say otherwise."""
    if data.startswith(b"\xff\xd8\xff"):
        return ".jpg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return ".gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return ".webp"
    return ".png"


class Workspace:
    """The images of one run, by index, with their bytes, hashes and recipes."""

    def __init__(self, inputs: Sequence[tuple[str, bytes]], *, max_pixels: int = MAX_INPUT_PIXELS):
        if not inputs:
            raise ToolError("the task has no image")
        self.max_pixels = max_pixels
        self.images: list[WorkImage] = []
        self.inputs = len(inputs)
        self.artifacts = 0
        self.downloads = 0
        self._decoded: dict[int, Image.Image] = {}
        for position, (name, data) in enumerate(inputs):
            stem = "orig" if len(inputs) == 1 else f"orig_{position}"
            path = stem + _suffix(bytes(data))
            label = "original input image" + (f" {position + 1}" if len(inputs) > 1 else "")
            image = WorkImage(position, path, bytes(data), label, source=name)
            image.recipe = recipes.Recipe.build(image.sha256)
            self.images.append(image)

    def image(self, index: Any) -> WorkImage:
        if isinstance(index, bool) or not isinstance(index, int):
            if isinstance(index, float) and index.is_integer():
                index = int(index)
            else:
                raise ToolError(f"image_index must be a whole number, not {index!r}")
        if not 0 <= index < len(self.images):
            raise ToolError(
                f"image_index {index} does not exist: the images are 0-{len(self.images) - 1}"
            )
        return self.images[index]

    def decoded(self, index: int) -> Image.Image:
        if index not in self._decoded:
            try:
                self._decoded[index] = ops.load(self.images[index].data, max_pixels=self.max_pixels)
            except ops.OpError as exc:
                raise ToolError(f"image {index} cannot be read: {exc}") from None
        return self._decoded[index]

    def add(
        self,
        data: bytes,
        label: str,
        *,
        name: str = "",
        recipe: recipes.Recipe | None = None,
        source: str = "",
        decoded: Image.Image | None = None,
    ) -> WorkImage:
        """A new image at the next index; ``name`` defaults to the next transformed_image."""
        if not name:
            self.artifacts += 1
            name = f"transformed_image_{self.artifacts}.png"
        image = WorkImage(
            len(self.images), f"{TOOL_IMAGES_DIR}/{name}", data, label, recipe, source
        )
        self.images.append(image)
        if decoded is not None:
            self._decoded[image.index] = decoded
        return image

    def apply(self, op_name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Run one atomic operation; the event output in the released shape (plus the
        artifact's sha256 and recipe). Raises ToolError with the model's observation."""
        source = self.image(arguments.get("image_index", 0))
        params = {k: v for k, v in arguments.items() if k not in NOT_PARAMS}
        hidden = set(HIDDEN_PARAMS.get(op_name, ())) & set(params)
        if hidden:
            raise ToolError(f"{op_name}: unknown parameter {sorted(hidden)[0]!r}")
        label = str(arguments.get("label") or "")
        try:
            values = ops.validate_params(op_name, params)
            step = recipes.Recipe.build(source.sha256, [{"op": op_name, "params": values}])
            image = self.decoded(source.index)
            recipes.plan(step, image.size)
            result = ops.apply(image, op_name, values)
        except (ops.OpError, recipes.RecipeError) as exc:
            raise ToolError(str(exc)) from None
        data = recipes.render_bytes(result)
        recipe = self._chain(source, step)
        artifact = self.add(
            data,
            label or f"{op_name} of image {source.index}",
            recipe=recipe,
            decoded=ops.normalize_mode(result),
        )
        out: dict[str, Any] = {
            "ok": "true",
            "op": op_name,
            "source_image_index": source.index,
            "new_image_index": artifact.index,
            "output_path": artifact.path,
        }
        if op_name == "crop" and "bbox_2d" in values:
            out["bbox_normalized"] = _jsonable(values["bbox_2d"])
            out["bbox_absolute"] = list(ops.bbox_to_pixels(values["bbox_2d"], image.size))
        out.update({k: _jsonable(v) for k, v in values.items() if k != "bbox_2d"})
        out.update(label=label, size=list(result.size), sha256=artifact.sha256)
        out["recipe"] = recipe.to_dict()
        return out

    @staticmethod
    def _chain(source: WorkImage, step: recipes.Recipe) -> recipes.Recipe:
        """The artifact's recipe from the input image when the source has one (and the chain
        is within the recipe step limit), else from the source artifact itself."""
        if source.recipe is not None:
            try:
                return source.recipe.then(step.steps[0].op, step.steps[0].params)
            except recipes.RecipeError:
                pass
        return step

    def files(self) -> dict[str, bytes]:
        return {image.path: image.data for image in self.images}

    def index_list(self) -> list[dict[str, Any]]:
        """``image_index.json``: every image with its path, label, hash and recipe."""
        return [image.to_dict() for image in self.images]


# --------------------------------------------------------------------------- retrieval


def model_text(output: Any) -> str:
    """What the model reads of a retrieval result, as released: the compact ``context``, else
    the page ``text``, else ``Error: ...``, else the JSON."""
    if isinstance(output, Mapping):
        for key in ("context", "text"):
            if isinstance(output.get(key), str):
                return str(output[key])
        if output.get("error"):
            return f"Error: {output['error']}"
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False, default=str)


def retrieval_request(
    workspace: Workspace, name: str, arguments: Mapping[str, Any]
) -> dict[str, Any]:
    """The arguments sent through the tool layer for a retrieval call (checked; raises
    ToolError with the model's observation)."""
    if name == "google_search":
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolError("google_search needs a non-empty 'query'")
        request = {"query": query.strip()}
        for key in ("gl", "hl"):
            if isinstance(arguments.get(key), str) and arguments[key].strip():
                request[key] = arguments[key].strip()
        return request
    if name == "google_lens_search":
        image = workspace.image(arguments.get("image_index", 0))
        return {
            "image_sha256": image.sha256,
            "image_base64": base64.b64encode(image.data).decode("ascii"),
        }
    url = arguments.get("url")
    if not isinstance(url, str) or not url.strip().lower().startswith(("http://", "https://")):
        raise ToolError(f"{name} needs an http(s) 'url', not {url!r}")
    if name == "fetch_webpage":
        max_chars = arguments.get("max_chars", 12000)
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
            raise ToolError(
                f"fetch_webpage: max_chars must be a whole number >= 1, not {max_chars!r}"
            )
        return {"url": url.strip(), "max_chars": max_chars}
    if workspace.downloads >= MAX_DOWNLOADS:
        raise ToolError(f"download limit reached: at most {MAX_DOWNLOADS} images per task")
    return {"url": url.strip()}


def take_download(workspace: Workspace, url: str, files: Mapping[str, bytes]) -> dict[str, Any]:
    """Add a downloaded image to the workspace; the event output."""
    data = next(iter(files.values()), b"")
    try:
        decoded = ops.load(bytes(data), max_pixels=workspace.max_pixels)
    except ops.OpError as exc:
        raise ToolError(f"download_image: {url} is not a usable image ({exc})") from None
    workspace.downloads += 1
    png = recipes.render_bytes(decoded)
    image = workspace.add(
        png,
        f"downloaded from {url[:80]}",
        name=f"downloaded_image_{workspace.downloads}.png",
        source=url,
        decoded=decoded,
    )
    return {
        "ok": True,
        "url": url,
        "new_image_index": image.index,
        "output_path": image.path,
        "size": list(decoded.size),
        "sha256": image.sha256,
    }


def call_retrieval(
    tools: ToolLayer,
    item: str,
    workspace: Workspace,
    name: str,
    arguments: Mapping[str, Any],
) -> tuple[dict[str, Any] | Any, WorkImage | None]:
    """One retrieval call through the tool layer: ``(event output, new image or None)``.
    ``ToolUnavailable`` and a provider's error become an error output the model reads;
    ``ReplayMiss`` is raised (the run cannot go on without the record)."""
    request = retrieval_request(workspace, name, arguments)
    try:
        result = tools.call(item, name, request)
    except ReplayMiss:
        raise
    except ToolUnavailable as exc:
        return {"ok": False, "error": str(exc), "not_available": True}, None
    except EvaluationError as exc:  # the provider could not answer (network, server error)
        return {"ok": False, "error": f"{name} failed: {exc}"}, None
    if result.error:
        return {"ok": False, "error": result.error}, None
    if name != "download_image":
        return result.output, None
    if not result.files:
        raise ToolError(f"download_image: the provider returned no image for {request['url']}")
    out = take_download(workspace, request["url"], result.files)
    return out, workspace.images[out["new_image_index"]]
