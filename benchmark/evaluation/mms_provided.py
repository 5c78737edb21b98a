"""m&m's tools that only a configured provider can answer (issue 24): object detection, image
segmentation, automatic speech recognition and the public APIs (date, year, math and trivia
facts, love calculator, location, movies, weather, Wikipedia), over one HTTP API. Pure
Python, no Django; the client is the one every HTTP tool provider shares
(:class:`benchmark.evaluation.http_tools.HttpToolProvider`: retries, backoff, Retry-After,
concurrency and requests-per-minute caps, redirects refused).

The API (Benchwright's own shape; a small service in front of the models and APIs m&m's used,
DETR, MaskFormer, Whisper, Numbers API, OpenStreetMap Nominatim, OMDb, 7Timer, Wikipedia, or a
recorded set of answers, implements it):

    POST <base_url>/<function>        function: the tool's name with "_" for spaces
    Authorization: Bearer <key>             (object_detection, get_weather, ...)
    Content-Type: application/json
    {"arguments": {...}, "files": {"<sha256 hex>": "<base64>"}}

    200 {"output": {...}, "files": {"<output name>": "<base64>"}, "error": ""}

``arguments`` are the plan step's arguments by m&m's names, with earlier steps' outputs put
in; an image or audio argument is ``"sha256:<hex>"`` and its bytes are in ``files`` under that
hex. ``output`` maps m&m's output names to JSON values (:data:`OUTPUTS`):

* ``object_detection`` ``{image}`` -> ``{"objects": [{"bbox": [x1, y1, x2, y2], "label"}]}``,
  boxes in pixels of the input image (m&m's DETR output, rounded to 2 places);
* ``image_segmentation`` ``{image}`` -> ``{"objects": [{"bbox", "label", "mask"}]}``, each
  ``mask`` rows of numbers from 0 to 1 (1 inside the object) of the image's height and width
  (m&m's MaskFormer panoptic output, resized to the image);
* ``automatic_speech_recognition`` ``{audio}`` -> ``{"text"}``;
* ``get_date_fact`` ``{date}``, ``get_year_fact`` ``{year}``, ``get_math_fact`` and
  ``get_trivia_fact`` ``{number}`` -> ``{"text", ...}`` (the Numbers API's JSON answer);
* ``love_calculator`` ``{first_name, second_name}`` -> ``{"number", "message"}``;
* ``get_location`` ``{city}`` -> ``{"lon", "lat", ...}`` (Nominatim's first result);
* ``search_movie`` ``{movie_title, movie_year}`` -> ``{"text"}`` (``Title: ...`` lines);
* ``get_weather`` ``{lon, lat}`` -> ``{"objects": [...]}`` (7Timer's ``dataseries``);
* ``wikipedia_simple_search`` ``{text}`` -> ``{"text"}`` (the best match's extract).

Detection and segmentation also give m&m's ``image`` output, the image they looked at: the
provider may send one in ``files`` under ``image``; without it, the input image is the output,
as in m&m's. The objects feed ``count``, ``select object``, ``tag``, ``image crop``,
``background blur``, ``color pop`` and ``emoji`` (``benchmark.evaluation.mms_tools``).

An answer whose ``output`` lacks one of these (or has the wrong type) is the provider's
failure, not the tool's answer: :class:`MmsToolError`, the item's run fails naming it and
nothing is recorded. An ``error`` is the tool's answer: the step fails with it, recorded.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Real
from typing import Any, ClassVar

from .base import EvaluationError, ToolResult
from .http_tools import HttpToolError, HttpToolProvider
from .mms_tools import PROVIDED_TOOLS


class MmsToolError(HttpToolError):
    """The m&m's tool provider could not be reached, failed, or answered the wrong shape."""


#: What each tool must answer: output name -> "text" | "number" | "scalar" (text or number)
#: | "objects" (a list of JSON objects) | "boxes" (objects with a bbox and a label).
OUTPUTS: dict[str, dict[str, str]] = {
    "object detection": {"objects": "boxes"},
    "image segmentation": {"objects": "boxes"},
    "automatic speech recognition": {"text": "text"},
    "get date fact": {"text": "text"},
    "get year fact": {"text": "text"},
    "get math fact": {"text": "text"},
    "get trivia fact": {"text": "text"},
    "love calculator": {"number": "number"},
    "get location": {"lon": "scalar", "lat": "scalar"},
    "search movie": {"text": "text"},
    "get weather": {"objects": "objects"},
    "wikipedia simple search": {"text": "text"},
}
#: Tools whose ``image`` output is the image they were given, unless the provider sends one.
IMAGE_PASSED_ON: tuple[str, ...] = ("object detection", "image segmentation")


def function_name(tool: str) -> str:
    """m&m's function name of a tool (``object detection`` -> ``object_detection``)."""
    return "_".join(tool.split())


def _number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _shape_error(kind: str, value: Any) -> str:
    """Why ``value`` is not of ``kind`` ("" when it is)."""
    if kind == "text":
        return "" if isinstance(value, str) else "must be text"
    if kind == "number":
        return "" if _number(value) else "must be a number"
    if kind == "scalar":
        return "" if isinstance(value, str) or _number(value) else "must be text or a number"
    if not isinstance(value, list) or not all(isinstance(o, Mapping) for o in value):
        return "must be a list of objects"
    if kind == "boxes":
        for index, obj in enumerate(value):
            box = obj.get("bbox")
            if not isinstance(box, list) or len(box) != 4 or not all(_number(v) for v in box):
                return f"object {index} needs a bbox [x1, y1, x2, y2] of numbers"
            if not isinstance(obj.get("label"), str):
                return f"object {index} needs a label (text)"
            mask = obj.get("mask")
            if mask is not None and not (
                isinstance(mask, list) and all(isinstance(row, list) for row in mask)
            ):
                return f"object {index}'s mask must be rows of numbers"
    return ""


@dataclass(frozen=True)
class MmsToolProvider(HttpToolProvider):
    """``Provider`` for m&m's :data:`~benchmark.evaluation.mms_tools.PROVIDED_TOOLS` over the
    HTTP API above (``offered``: all of them by default, or the ones the project's service
    implements)."""

    known: ClassVar[tuple[str, ...]] = PROVIDED_TOOLS
    what: ClassVar[str] = "m&m's tool provider"
    error_class: ClassVar[type[EvaluationError]] = MmsToolError
    #: The tool layer sends the bytes of the files the arguments name.
    takes_files: ClassVar[bool] = True

    offered: tuple[str, ...] = PROVIDED_TOOLS

    def path(self, name: str) -> str:
        return function_name(name)

    def body(
        self, name: str, arguments: Mapping[str, Any], files: Mapping[str, bytes]
    ) -> dict[str, Any]:
        named = {
            value[len("sha256:") :]
            for value in arguments.values()
            if isinstance(value, str) and value.startswith("sha256:")
        }
        return {
            "arguments": dict(arguments),
            "files": {
                digest: base64.b64encode(data).decode("ascii")
                for digest, data in files.items()
                if digest in named
            },
        }

    def finish(
        self,
        name: str,
        arguments: Mapping[str, Any],
        files: Mapping[str, bytes],
        result: ToolResult,
    ) -> ToolResult:
        if result.error:
            return ToolResult(output=None, error=result.error)
        output = result.output
        if not isinstance(output, Mapping):
            raise MmsToolError(f"{name}: the provider's output must be a JSON object")
        for key, kind in OUTPUTS[name].items():
            if key not in output:
                raise MmsToolError(f"{name}: the provider's output has no {key!r}")
            why = _shape_error(kind, output[key])
            if why:
                raise MmsToolError(f"{name}: the provider's {key!r} {why}")
        out = dict(output)
        if name in IMAGE_PASSED_ON and "image" not in result.files and "image" not in out:
            out["image"] = arguments.get("image")
        return ToolResult(output=out, files=dict(result.files))
