"""Running m&m's plans step by step (issue 24): pure code, no Django.

m&m's 33 tools fall in four groups, and each group runs in its own place:

* **image processing** (``image crop``, ``image crop left/right/top/bottom``, ``background
  blur``, ``color pop``, ``count``, ``tag``, ``select object``, ``emoji``) runs here, on
  Pillow images, in Benchwright's own code (:data:`LOCAL_TOOLS`). Nothing is recorded: the
  same inputs give the same pixels.
* **model tools** (text generation, summarization and classification, question answering,
  image captioning, OCR, visual question answering, image classification) run through an
  OpenAI-compatible model: :class:`ChatTools` is a provider built on a ``Chat`` callable.
* **image generation and editing** run through the rendering providers
  (``benchmark.rendering.providers``): :class:`RenderingTools`.
* **detection, segmentation, speech recognition and the public APIs** (date, year, math and
  trivia facts, love calculator, location, movies, weather, Wikipedia) run through whatever
  provider the project configures for them (the HTTP one is
  :class:`benchmark.evaluation.mms_provided.MmsToolProvider`), or answer from the record.

Every call outside this module goes through the run's ``ToolLayer``: recorded per item, and in
replay mode answered only from the record. A plan naming a tool that no provider offers here
runs when the record answers those calls, and is otherwise "not executable here"
(:meth:`Executor.unavailable`, :meth:`Executor.run`), never passed or failed.

Values between steps: an image (or audio file) is an :class:`Blob` held by its sha256; a
provider receives it as the argument value ``"sha256:<hex>"`` with the bytes in ``files``
(``ToolLayer.call(files=...)``; providers set ``takes_files = True``). A provider answers a
``ToolResult`` whose ``output`` maps output names to JSON values and whose ``files`` map
output names to bytes (``{"image": <png>}``). Detected objects are
``{"bbox": [x1, y1, x2, y2], "label": str}`` in pixels, optionally with ``"mask"`` (rows of
0/1, the image's size).
"""

from __future__ import annotations

import ast
import io
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from PIL import Image, ImageDraw, ImageFilter, ImageFont

from benchmark.evaluation.base import (
    Chat,
    EvalItem,
    EvaluationError,
    ToolLayer,
    ToolResult,
    ToolUnavailable,
    image_part,
    sha256,
)
from benchmark.imaging import ops
from benchmark.plans.parse import Step, normalize_tool_name
from benchmark.plans.verify import Toolset

#: Largest image a step may read or make (pixels).
MAX_PIXELS = 40_000_000

LOCAL_TOOLS: tuple[str, ...] = (
    "image crop",
    "image crop left",
    "image crop right",
    "image crop top",
    "image crop bottom",
    "background blur",
    "color pop",
    "count",
    "tag",
    "select object",
    "emoji",
)
MODEL_TOOLS: tuple[str, ...] = (
    "text generation",
    "text summarization",
    "text classification",
    "question answering",
    "image captioning",
    "optical character recognition",
    "visual question answering",
    "image classification",
)
RENDERING_TOOLS: tuple[str, ...] = ("image generation", "image editing")
#: Tools only a configured provider (or the record) can answer.
PROVIDED_TOOLS: tuple[str, ...] = (
    "object detection",
    "image segmentation",
    "automatic speech recognition",
    "get date fact",
    "get year fact",
    "get math fact",
    "get trivia fact",
    "love calculator",
    "get location",
    "search movie",
    "get weather",
    "wikipedia simple search",
)

#: What each m&m's tool does, for the planner's prompt when the toolset has no description
#: (Benchwright's own words; the built-in toolset carries none).
DESCRIPTIONS: dict[str, str] = {
    "text generation": "writes text that continues or answers the given text",
    "text summarization": "summarizes a long text",
    "text classification": "labels the sentiment of a text (POSITIVE or NEGATIVE)",
    "question answering": "answers a question from a given text",
    "image generation": "paints a new image from a text description",
    "image captioning": "describes an image in one sentence",
    "optical character recognition": "reads the text written in an image",
    "image classification": "names the main object of an image (an ImageNet class)",
    "image editing": "changes an image as a text prompt says",
    "object detection": "finds the objects in an image, each with a box and a label",
    "image segmentation": "finds the regions of an image, each with a mask, box and label",
    "automatic speech recognition": "transcribes the speech of an audio file",
    "visual question answering": "answers a question about an image",
    "image crop": "crops an image to an object's box",
    "image crop left": "keeps the left half of an image",
    "image crop right": "keeps the right half of an image",
    "image crop top": "keeps the top half of an image",
    "image crop bottom": "keeps the bottom half of an image",
    "background blur": "blurs everything in an image but one object",
    "color pop": "keeps one object in colour and turns the rest of the image grey",
    "count": "counts a list of objects",
    "tag": "draws each object's box and label on an image",
    "select object": "picks the object with a given name from a list of objects",
    "emoji": "covers an object in an image with an emoji",
    "get date fact": "a fact about a date (month and day)",
    "get year fact": "a fact about a year",
    "get math fact": "a mathematical fact about a number",
    "get trivia fact": "a trivia fact about a number",
    "love calculator": "how compatible two first names are, as a percentage",
    "get location": "the longitude and latitude of a city",
    "search movie": "a movie's details from its title and year",
    "get weather": "the weather forecast at a longitude and latitude",
    "wikipedia simple search": "the summary of the Wikipedia article that best matches a text",
}

_WHOLE_REF = re.compile(r"<node-(\d+)>\.(\w+)")
_ANY_REF = re.compile(r"<node-(\d+)>\.(\w+)")


class StepError(Exception):
    """A step failed (its message names the step and what went wrong)."""


@dataclass(frozen=True)
class Blob:
    """A file value (an image or audio) between steps, by content hash."""

    digest: str
    kind: str = "image"  # image | audio

    @property
    def ref(self) -> str:
        return f"sha256:{self.digest}"

    def __str__(self) -> str:
        return f"<{self.kind} {self.digest[:12]}>"


# --------------------------------------------------------------------------- images


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _rgb(data: bytes) -> Image.Image:
    try:
        return ops.load(data, max_pixels=MAX_PIXELS).convert("RGB")
    except ops.OpError as exc:
        raise StepError(str(exc)) from None


def _bbox(obj: Any, size: tuple[int, int]) -> tuple[float, float, float, float] | None:
    """An object's box in pixels; m&m's treats a box whose values are all below 1 as
    fractions of the image. None when the object has no usable box."""
    if not isinstance(obj, Mapping) or "bbox" not in obj:
        return None
    box = obj["bbox"]
    if isinstance(box, str):
        try:
            box = ast.literal_eval(box)
        except (ValueError, SyntaxError):
            return None
    if not isinstance(box, list | tuple) or len(box) != 4:
        return None
    try:
        x1, y1, x2, y2 = (float(v) for v in box)
    except (TypeError, ValueError):
        return None
    width, height = size
    if all(v < 1.0 for v in (x1, y1, x2, y2)):
        x1, x2, y1, y2 = x1 * width, x2 * width, y1 * height, y2 * height
    if not all(math.isfinite(v) for v in (x1, y1, x2, y2)):
        return None
    # Kept inside the image (m&m's lets Pillow pad a box that overflows with black).
    x1, x2 = sorted((min(max(x1, 0.0), width), min(max(x2, 0.0), width)))
    y1, y2 = sorted((min(max(y1, 0.0), height), min(max(y2, 0.0), height)))
    return x1, y1, x2, y2


def _mask(obj: Any, size: tuple[int, int]) -> Image.Image | None:
    """The object's region as an L mask (255 inside): its ``mask`` when it has one, else its
    box; None when it has neither."""
    if isinstance(obj, Mapping) and obj.get("mask") is not None:
        import numpy as np

        try:
            values = np.asarray(obj["mask"], dtype=float)
        except (TypeError, ValueError):
            raise StepError("the object's mask is not rows of numbers") from None
        if values.shape != (size[1], size[0]):
            raise StepError(
                f"the object's mask is {values.shape[1] if values.ndim == 2 else '?'}x"
                f"{values.shape[0]}; the image is {size[0]}x{size[1]}"
            )
        return Image.fromarray((np.clip(values, 0, 1) * 255).astype("uint8"), "L")
    box = _bbox(obj, size)
    if box is None:
        return None
    mask = Image.new("L", size, 0)
    ImageDraw.Draw(mask).rectangle(box, fill=255)
    return mask


def _crop(image: Image.Image, obj: Any) -> Image.Image:
    box = _bbox(obj, image.size)
    return image if box is None else image.crop(box)


def _half(image: Image.Image, side: str) -> Image.Image:
    # m&m's own boxes, the last row/column left out as upstream does.
    w, h = image.size
    boxes = {
        "left": (0, 0, w // 2, h - 1),
        "right": (w // 2, 0, w - 1, h - 1),
        "top": (0, 0, w - 1, h // 2),
        "bottom": (0, h // 2, w - 1, h - 1),
    }
    return image.crop(boxes[side])


def _background_blur(image: Image.Image, obj: Any) -> Image.Image:
    blurred = ops.blur(image, radius=2.0)
    mask = _mask(obj, image.size)
    if mask is None:
        return blurred
    mask = mask.filter(ImageFilter.GaussianBlur(radius=5))
    return Image.composite(image, blurred, mask)


def _color_pop(image: Image.Image, obj: Any) -> Image.Image:
    gray = ops.grayscale(image).convert("RGB")
    mask = _mask(obj, image.size)
    return gray if mask is None else Image.composite(image, gray, mask)


def _objects(value: Any, what: str) -> list[Mapping[str, Any]]:
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise StepError(f"{what} must be a list of objects, not the text {value!r}") from None
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list | tuple) or not all(isinstance(o, Mapping) for o in value):
        raise StepError(f"{what} must be a list of objects {{bbox, label}}")
    return list(value)


def _object(value: Any, what: str) -> Mapping[str, Any]:
    objects = _objects(value, what)
    return objects[0] if objects else {}


def _tag(image: Image.Image, objects: list[Mapping[str, Any]]) -> Image.Image:
    out = image.copy()
    draw = ImageDraw.Draw(out)
    font = ImageFont.load_default()
    width, height = out.size
    for obj in objects:
        box = _bbox(obj, out.size)
        if box is None:
            raise StepError("every object to tag needs a bbox [x1, y1, x2, y2]")
        draw.rectangle(box, outline="green", width=4)
        label = str(obj.get("label", ""))
        left, top, right, bottom = font.getbbox(label)
        tw, th = right - left, bottom - top
        x1, y1 = box[0], box[1]
        if x1 + tw > width:
            x1 -= tw
        if y1 + th > height:
            y1 -= th
        draw.rectangle((x1, y1 - th, x1 + tw, y1), fill="green")
        draw.text((x1, y1 - th), label, fill="white", font=font)
    return out


def _emoji(image: Image.Image, obj: Mapping[str, Any]) -> Image.Image:
    """A drawn smiley over the object, sized and placed as m&m's places its emoji (a square
    of side height/1.5 at the box's centre). m&m's draws the named emoji from AugLy's images
    and falls back to a smiling face; Benchwright ships no emoji images, so every name is drawn
    as that smiling face."""
    box = _bbox(obj, image.size)
    out = image.copy()
    if box is None:
        return out
    x1, y1, x2, y2 = box
    side = (y2 - y1) / 1.5
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    left, top = cx - side / 2, cy - side / 2
    draw = ImageDraw.Draw(out)
    draw.ellipse((left, top, left + side, top + side), fill=(255, 204, 0), outline=(0, 0, 0))
    eye = side / 10
    for ex in (left + side * 0.33, left + side * 0.67):
        draw.ellipse((ex - eye, top + side * 0.35 - eye, ex + eye, top + side * 0.35 + eye), fill=0)
    draw.arc(
        (left + side * 0.25, top + side * 0.4, left + side * 0.75, top + side * 0.8),
        20,
        160,
        fill=(0, 0, 0),
        width=max(1, int(side / 20)),
    )
    return out


def _select_object(objects: list[Mapping[str, Any]], name: str) -> Mapping[str, Any]:
    """The first object whose label contains the name, or shares a word with it (m&m's
    rule); ``{}`` when none does."""
    for obj in objects:
        label = str(obj.get("label", ""))
        if name in label or set(label.split()) & set(name.split()):
            return obj
    return {}


# --------------------------------------------------------------------------- providers


def _text(arguments: Mapping[str, Any], name: str) -> str:
    value = arguments.get(name)
    if value is None:
        raise StepError(f"the argument {name!r} is missing")
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _file(arguments: Mapping[str, Any], files: Mapping[str, bytes], name: str) -> tuple[str, bytes]:
    value = arguments.get(name)
    digest = (
        value[len("sha256:") :] if isinstance(value, str) and value.startswith("sha256:") else ""
    )
    if not digest or digest not in files:
        raise StepError(f"the argument {name!r} must be a file (sha256:<hex> with its bytes)")
    return digest, files[digest]


#: What each model tool asks the model (in our words), and which arguments are images.
MODEL_TOOL_PROMPTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "text generation": ("Continue or answer the following text.\n\n{text}", ()),
    "text summarization": ("Summarize the following text in a few sentences.\n\n{text}", ()),
    "text classification": (
        "Is the sentiment of the following text POSITIVE or NEGATIVE? Answer with the one "
        "word only.\n\n{text}",
        (),
    ),
    "question answering": (
        "Answer the question from the text, with a short span of the text.\n\n"
        "Text: {text}\n\nQuestion: {question}",
        (),
    ),
    "image captioning": ("Describe the image in one sentence.", ("image",)),
    "optical character recognition": (
        "Transcribe all the text visible in the image, and nothing else.",
        ("image",),
    ),
    "visual question answering": (
        "Answer the question about the image briefly.\n\nQuestion: {question}",
        ("image",),
    ),
    "image classification": (
        "Which ImageNet class best describes the main object of the image? Answer with the "
        "class name only.",
        ("image",),
    ),
}


class ChatTools:
    """m&m's model tools answered by a chat model (a ``Chat`` on an OpenAI-compatible
    endpoint). Each answers ``{"text": the model's reply}``."""

    takes_files = True

    def __init__(self, chat: Chat) -> None:
        self.chat = chat

    def tools(self) -> Iterable[str]:
        return MODEL_TOOLS

    def call(
        self, name: str, arguments: Mapping[str, Any], files: Mapping[str, bytes] | None = None
    ) -> ToolResult:
        spec = MODEL_TOOL_PROMPTS.get(normalize_tool_name(name))
        if spec is None:
            return ToolResult(output=None, error=f"{name} is not a model tool")
        template, image_args = spec
        files = files or {}
        try:
            fields = {key: _text(arguments, key) for key in re.findall(r"\{(\w+)\}", template)}
            images = dict(_file(arguments, files, key) for key in image_args)
        except StepError as exc:
            return ToolResult(output=None, error=str(exc))
        content: list[dict[str, Any]] = [{"type": "text", "text": template.format(**fields)}]
        content += [image_part(digest) for digest in images]
        reply = self.chat([{"role": "user", "content": content}], images=images)
        return ToolResult(output={"text": reply.text.strip()})


class RenderingTools:
    """``image generation`` and ``image editing`` through the rendering providers (a
    ``benchmark.rendering.providers.Providers``); each answers the image under ``image``."""

    takes_files = True

    def __init__(self, providers: Any) -> None:
        self.providers = providers

    def tools(self) -> Iterable[str]:
        names = []
        if getattr(self.providers, "generate", None) is not None:
            names.append("image generation")
        if getattr(self.providers, "edit", None) is not None:
            names.append("image editing")
        return names

    def call(
        self, name: str, arguments: Mapping[str, Any], files: Mapping[str, bytes] | None = None
    ) -> ToolResult:
        from benchmark.rendering.providers import ProviderError

        key = normalize_tool_name(name)
        try:
            if key == "image generation":
                found = self.providers.generate.generate(_text(arguments, "text"))
            elif key == "image editing":
                _, data = _file(arguments, files or {}, "image")
                found = self.providers.edit.edit(data, _text(arguments, "prompt"))
            else:
                return ToolResult(output=None, error=f"{name} is not an image generation tool")
        except StepError as exc:
            return ToolResult(output=None, error=str(exc))
        except ProviderError as exc:
            if exc.kind == "unavailable":
                raise ToolUnavailable(f"{name}: {exc.message}") from None
            if exc.retry:
                raise EvaluationError(f"{name}: {exc.message} (try again later)") from None
            return ToolResult(output=None, error=exc.message)
        return ToolResult(output={}, files={"image": found.data})


# --------------------------------------------------------------------------- execution


@dataclass
class StepRun:
    """One step as it ran: its outputs (files as ``<image ...>``) or its error."""

    id: int
    name: str
    ok: bool
    outputs: dict[str, Any] = field(default_factory=dict)
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "ok": self.ok,
            "outputs": self.outputs,
            "error": self.error,
        }


@dataclass
class Execution:
    """A plan's (or a step's) run: ``passed``, ``failed`` (``error`` names the step), or
    ``not_executable`` (``unavailable`` lists the tools no provider offers here)."""

    status: str
    steps: list[StepRun] = field(default_factory=list)
    error: str = ""
    unavailable: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "error": self.error,
            "unavailable": list(self.unavailable),
            "steps": [s.to_dict() for s in self.steps],
        }

    def observation(self) -> str:
        """What execution feedback tells the model."""
        if self.status == "passed":
            if not self.steps:
                return "Execution succeeded."
            last = self.steps[-1]
            return f"Execution succeeded. The output of step {last.id} is {_show(last.outputs)}."
        if self.status == "not_executable":
            return f"Execution is not available here for: {', '.join(self.unavailable)}."
        return f"Execution failed: {self.error}"


def _show(value: Any) -> str:
    if isinstance(value, Blob):
        return str(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k!r}: {_show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    text = repr(value)
    return text if len(text) <= 500 else text[:500] + "…"


def _plain(value: Any) -> Any:
    """A value as JSON for the output record (files by their reference)."""
    if isinstance(value, Blob):
        return value.ref
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


_AUDIO = (".flac", ".wav", ".mp3", ".ogg", ".m4a")


class Executor:
    """Runs a plan's steps for one item, keeping each step's outputs for the steps after it
    (step-by-step planning runs one step per turn on the same executor)."""

    def __init__(self, item: EvalItem, tools: ToolLayer, toolset: Toolset) -> None:
        self.item = item
        self.tools = tools
        self.toolset = toolset
        self.files: dict[str, bytes] = {}
        self.outputs: dict[int, dict[str, Any]] = {}
        self.tool_calls = 0
        self._inputs: dict[str, Blob] = {}
        self._request = str(item.record.get("user_request") or item.record.get("query") or "")
        for name, data in item.images.items():
            blob = self.keep(data, "audio" if name.lower().endswith(_AUDIO) else "image")
            self._inputs[name] = blob
            self._inputs.setdefault(name.rsplit("/", 1)[-1], blob)

    def keep(self, data: bytes, kind: str = "image") -> Blob:
        digest = sha256(data)
        self.files[digest] = data
        return Blob(digest, kind)

    def image(self, blob: Blob) -> Image.Image:
        return _rgb(self.files[blob.digest])

    # ---- what can run

    def runs_here(self, name: str) -> bool:
        key = normalize_tool_name(name)
        return key in LOCAL_TOOLS or self.tools.offers(name)

    def unavailable(self, steps: Iterable[Step]) -> list[str]:
        """The tools of the steps that cannot run here (known tools only: an unknown tool is
        the plan's error, not a missing provider)."""
        missing: list[str] = []
        for step in steps:
            tool = self.toolset.resolve(step.name)
            if tool is not None and not self.runs_here(tool) and tool not in missing:
                missing.append(tool)
        return missing

    # ---- running

    def run(self, steps: list[Step]) -> Execution:
        """Run the steps in order. A plan with tools no provider offers here (``missing``)
        still runs when the tool layer's record answers every call of theirs (a release's
        records, a run before); when one is not recorded, or a step fails before, the plan
        is ``not_executable``: it could not run whole here, so it neither passes nor fails."""
        missing = self.unavailable(steps)
        runs: list[StepRun] = []
        for step in steps:
            try:
                outputs = self.run_step(step)
            except ToolUnavailable as exc:
                return Execution("not_executable", runs, str(exc), missing or [step.name])
            except StepError as exc:
                error = f"step {step.id} ({step.name}): {exc}"
                if missing:
                    return Execution("not_executable", runs, error, missing)
                runs.append(StepRun(step.id, step.name, False, error=str(exc)))
                return Execution("failed", runs, error)
            runs.append(StepRun(step.id, step.name, True, outputs=_plain(outputs)))
        return Execution("passed", runs)

    def run_step(self, step: Step) -> dict[str, Any]:
        tool = self.toolset.resolve(step.name)
        if tool is None:
            raise StepError(f"{step.name!r} is not a tool of this toolset")
        inputs = self.toolset.inputs(tool)
        types = dict(zip(inputs, self.toolset.tools[tool].get("input_types", []), strict=False))
        unknown = [a for a in step.args if a not in inputs]
        if unknown:
            raise StepError(f"{tool} takes no argument {unknown[0]!r} (its inputs are {inputs})")
        missing = [a for a in inputs if a not in step.args]
        if missing:
            raise StepError(f"{tool} needs the argument {missing[0]!r} (its inputs are {inputs})")
        args = {
            name: self.resolve(value, name, types.get(name, ""))
            for name, value in step.args.items()
        }
        self.tool_calls += 1
        key = normalize_tool_name(tool)
        if key in LOCAL_TOOLS:
            try:
                outputs = self.run_local(key, args)
            except StepError:
                raise
            except (ValueError, TypeError, OSError, KeyError, AttributeError) as exc:
                raise StepError(f"{type(exc).__name__}: {exc}") from None
        else:
            outputs = self.run_provided(tool, args)
        self.outputs[step.id] = outputs
        return outputs

    def resolve(self, value: Any, arg: str, modality: str) -> Any:
        """An argument's value: ``<node-K>.key`` becomes that output (inside text, its text),
        an input file's name becomes the file; a file argument must end up a file."""
        if isinstance(value, str):
            whole = _WHOLE_REF.fullmatch(value.strip())
            if whole:
                value = self.output(int(whole.group(1)), whole.group(2), arg)
            elif "<node-" in value:
                value = _ANY_REF.sub(
                    lambda m: _show_text(self.output(int(m.group(1)), m.group(2), arg)), value
                )
            elif value in self._inputs:
                value = self._inputs[value]
        if modality in ("image", "audio") and not isinstance(value, Blob):
            if isinstance(value, str) and "." in value and value in self._request:
                # The task's own file (its request names it), not stored with the item here
                # (an import without its files, an audio input): the plan cannot run here.
                raise ToolUnavailable(f"the task's file {value!r} is not stored here")
            known = ", ".join(sorted(self.item.images)) or "none"
            raise StepError(
                f"the argument {arg!r} must be an {modality}: an input file name (this task's "
                f"files: {known}) or an earlier step's <node-K>.{modality}, not {value!r}"
            )
        return value

    def output(self, step_id: int, key: str, arg: str) -> Any:
        if step_id not in self.outputs:
            raise StepError(f"the argument {arg!r} refers to step {step_id}, which has not run")
        outputs = self.outputs[step_id]
        if key not in outputs:
            raise StepError(
                f"the argument {arg!r} refers to {key!r} of step {step_id}, whose outputs are "
                f"{sorted(outputs)}"
            )
        return outputs[key]

    def run_local(self, key: str, args: dict[str, Any]) -> dict[str, Any]:
        if key == "count":
            return {"number": len(_objects(args["objects"], "objects"))}
        if key == "select object":
            return {
                "object": _select_object(
                    _objects(args["objects"], "objects"), str(args["object_name"])
                )
            }
        image = self.image(args["image"])
        if key == "image crop":
            out = _crop(image, _object(args["object"], "object"))
        elif key.startswith("image crop "):
            out = _half(image, key.rsplit(" ", 1)[1])
        elif key == "background blur":
            out = _background_blur(image, _object(args["object"], "object"))
        elif key == "color pop":
            out = _color_pop(image, _object(args["object"], "object"))
        elif key == "tag":
            out = _tag(image, _objects(args["objects"], "objects"))
        else:  # emoji
            out = _emoji(image, _object(args["object"], "object"))
        if out.width < 1 or out.height < 1:
            raise StepError("the result is an empty image (check the box)")
        return {"image": self.keep(_png(out))}

    def run_provided(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        files = {v.digest: self.files[v.digest] for v in args.values() if isinstance(v, Blob)}
        arguments = {name: _plain(value) for name, value in args.items()}
        try:
            result = self.tools.call(self.item.id, tool, arguments, files=files)
        except ToolUnavailable:
            self.tool_calls -= 1  # nothing answered it: not a call made
            raise
        if result.error:
            raise StepError(result.error)
        outputs: dict[str, Any] = {}
        if isinstance(result.output, Mapping):
            outputs.update({str(k): self._unref(v) for k, v in result.output.items()})
        elif result.output is not None:
            outputs["text"] = result.output
        for name, data in result.files.items():
            outputs[name] = self.keep(data)
        return outputs

    def _unref(self, value: Any) -> Any:
        if isinstance(value, str) and value.startswith("sha256:") and value[7:] in self.files:
            return Blob(value[7:])
        return value


def _show_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Blob):
        return value.ref
    return json.dumps(_plain(value), ensure_ascii=False)
