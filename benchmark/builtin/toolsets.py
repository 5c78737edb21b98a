"""The four built-in toolsets: ATP-Bench, LLM-I, Agentic-MME and m&m's.

``toolsets_ensure()`` creates whatever is missing and leaves everything else alone, so admins
may edit the built-in tools (descriptions, parameters, categories) and re-running the seed
never undoes their work.

Parameter types use one small vocabulary: ``int``, ``float``, ``str``, ``bool`` and
``list[float]`` for the tag- and function-calling toolsets; m&m's parameters carry the
modality name from its tool metadata (``text``, ``image``, ``audio``, ``integer``, ``object``,
``list[dict]``), because that is what its tool graph is built from.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from django.db import transaction

from benchmark.models import Tool, ToolEdge, Toolset

DATA_DIR = Path(__file__).resolve().parent / "data"

ToolSpec = dict[str, Any]


def _param(name: str, type_: str, description: str, *, required: bool = True) -> dict[str, Any]:
    return {"name": name, "type": type_, "required": required, "description": description}


# --------------------------------------------------------------------------- ATP-Bench

ATP_DESCRIPTION = (
    "ATP-Bench's toolkit (paper §3). An answer embeds calls as "
    '<tool>{"tool_name": ..., "description": ..., "params": {...}}</tool>, and each call '
    "stands for one image in the rendered answer. img_index counts from 0 over the query's "
    "document images in order (the record's `images` list)."
)

ATP_TOOLS: list[ToolSpec] = [
    {
        "name": "Reference",
        "category": "in-context image",
        "description": (
            "Shows one image that came with the documents, unchanged, as evidence for the "
            "paragraph it follows. Use it whenever a document image already shows what the "
            "reader needs. It cannot change, crop or annotate the picture (that is Edit), and "
            "it cannot show anything the documents do not contain (that is Search or "
            "Diffusion). The index must point at an existing document image."
        ),
        "parameters": [
            _param("img_index", "int", "0-based index into the document images."),
        ],
        "input_types": ["image"],
        "output_names": ["image"],
        "output_types": ["image"],
    },
    {
        "name": "Diffusion",
        "category": "generated image",
        "description": (
            "Paints a new image from a detailed prompt: concept illustrations, artistic "
            "renderings, imagined results or scenes that no document shows. Its pictures are "
            "invented, so it must not stand in for evidence about a specific real person, "
            "product or place (use Search), for exact numbers (use Code), or for a change to "
            "a given image (use Edit)."
        ),
        "parameters": [
            _param("prompt", "str", "A specific description of the picture to generate."),
        ],
        "input_types": ["text"],
        "output_names": ["image"],
        "output_types": ["image"],
    },
    {
        "name": "Search",
        "category": "retrieved image",
        "description": (
            "Fetches an existing real-world photo through a web image search, to ground the "
            "answer in how a real entity, place or product actually looks. Results depend on "
            "the search engine, so the query should name the thing precisely. It cannot "
            "return a particular document image (use Reference), picture something that does "
            "not exist (use Diffusion) or chart data (use Code)."
        ),
        "parameters": [
            _param("query", "str", "A short, targeted image-search query."),
        ],
        "input_types": ["text"],
        "output_names": ["image"],
        "output_types": ["image"],
    },
    {
        "name": "Code",
        "category": "programmatic image",
        "description": (
            "Renders a chart, plot or diagram by running code, for data-driven visuals whose "
            "values must be exact and traceable to the text. It is the wrong tool for photos "
            "or illustrations. The paper says the call carries a diagram type and a "
            "specification of the data, but the real parameter names were never published; "
            "this toolset assumes a single `code` parameter. Admins can rename or split it "
            "when the real schema is known."
        ),
        "parameters": [
            _param(
                "code",
                "str",
                "Plotting code that draws the figure (parameter name assumed, not published).",
            ),
        ],
        "input_types": ["text"],
        "output_names": ["image"],
        "output_types": ["image"],
        "extra": {"unverified": ["parameter names"]},
    },
    {
        "name": "Edit",
        "category": "edited image",
        "description": (
            "Changes one document image locally: adds labels or arrows, highlights or circles "
            "a region, or makes a small described change, leaving the rest of the picture as "
            "it was. It needs a document image to start from; it cannot create an image from "
            "nothing (use Diffusion) or edit a picture from the web."
        ),
        "parameters": [
            _param("img_index", "int", "0-based index of the document image to edit."),
            _param("prompt", "str", "What to change, add or highlight."),
        ],
        "input_types": ["image", "text"],
        "output_names": ["image"],
        "output_types": ["image"],
    },
]

# --------------------------------------------------------------------------- LLM-I

LLMI_DESCRIPTION = (
    "LLM-I's four tools (paper §2.1.3). An answer embeds "
    '<imgen>{"source": ..., "description": ..., "params": {...}}</imgen>; models usually '
    "write the payload as a Python dict literal. For edit, img_index counts from 0 over the "
    "input images first, then the images produced by earlier tags in the same answer."
)

LLMI_TOOLS: list[ToolSpec] = [
    {
        "name": "search",
        "category": "retrieved image",
        "description": (
            "Online image search for real, specific things: landmarks, people, products, "
            "events. Gives authentic pictures but only of what exists and can be found; it "
            "does not draw, plot or edit."
        ),
        "parameters": [_param("query", "str", "A concise web image-search string.")],
        "input_types": ["text"],
        "output_names": ["image"],
        "output_types": ["image"],
    },
    {
        "name": "diffusion",
        "category": "generated image",
        "description": (
            "Text-to-image generation for new, imaginary or abstract scenes and compositions "
            "that do not exist. Not a source of facts, and not precise with numbers or text "
            "inside the picture."
        ),
        "parameters": [_param("prompt", "str", "A descriptive prompt for the image model.")],
        "input_types": ["text"],
        "output_names": ["image"],
        "output_types": ["image"],
    },
    {
        "name": "code",
        "category": "programmatic image",
        "description": (
            "Runs Python in a sandbox to draw charts, graphs and plots from structured data. "
            "The values come out exact; it is not meant for photos or illustrations."
        ),
        "parameters": [_param("code", "str", "Python code that draws the figure.")],
        "input_types": ["text"],
        "output_names": ["image"],
        "output_types": ["image"],
    },
    {
        "name": "edit",
        "category": "edited image",
        "description": (
            "Modifies an image that already exists in the conversation: an input image or "
            "one produced by an earlier tag. It cannot refer to a later image or create one "
            "from nothing."
        ),
        "parameters": [
            _param(
                "img_index",
                "int",
                "0-based index over input images, then images from earlier tags.",
            ),
            _param("prompt", "str", "An instruction describing the edit."),
        ],
        "input_types": ["image", "text"],
        "output_names": ["image"],
        "output_types": ["image"],
    },
]

# --------------------------------------------------------------------------- Agentic-MME

AGENTIC_MME_DESCRIPTION = (
    "Agentic-MME's atomic image operations (Visual Expansion) and open-web retrieval tools "
    "(Knowledge Expansion), paper App. B and the released toolbox. Image 0 is the input; "
    "every image operation appends one new image and reports its new_image_index. "
    "bbox_2d is [x1, y1, x2, y2] on a 0-1000 scale, (0, 0) at the top left. The paper lists "
    "13 image operations; the released toolbox adds `enhance` (brightness, contrast, "
    "sharpness), which recorded trajectories use, so it is included here."
)

_IMAGE_INDEX = _param(
    "image_index", "int", "Image to work on: 0 is the input, 1, 2, ... earlier results."
)
_LABEL = _param("label", "str", "A note on what the step is for.", required=False)


def _image_op(
    name: str, category: str, description: str, *params: dict[str, Any], **extra: Any
) -> ToolSpec:
    return {
        "name": name,
        "category": category,
        "description": description,
        "parameters": [_IMAGE_INDEX, *params, _LABEL],
        "input_types": ["image"],
        "output_names": ["new_image_index"],
        "output_types": ["image"],
        "extra": {"axis": "V", **extra},
    }


def _optional(name: str, type_: str, description: str) -> dict[str, Any]:
    return _param(name, type_, description, required=False)


AGENTIC_MME_TOOLS: list[ToolSpec] = [
    _image_op(
        "crop",
        "geometric",
        "Cuts out a region and optionally magnifies it, to read small text or inspect a "
        "detail. It only surfaces what the pixels hold: enlarging does not add resolution.",
        _param("bbox_2d", "list[float]", "[x1, y1, x2, y2] on the 0-1000 scale."),
        _optional("zoom_scale", "float", "Magnification of the crop, 0.5 to 5 (default 1)."),
    ),
    _image_op(
        "rotate",
        "geometric",
        "Turns the image by an angle in degrees, counter-clockwise for positive values, to "
        "straighten sideways or upside-down content.",
        _param("angle", "float", "Degrees; positive turns counter-clockwise."),
        _optional("expand", "bool", "Grow the canvas to fit the rotated image (default true)."),
    ),
    _image_op(
        "flip",
        "geometric",
        "Mirrors the image, e.g. to undo a reflection so mirrored text reads normally.",
        _optional("direction", "str", "horizontal (default), vertical or both."),
        choices={"direction": ["horizontal", "vertical", "both"]},
    ),
    _image_op(
        "resize",
        "geometric",
        "Scales the whole image to a size or by a factor. It changes no content and cannot "
        "restore detail that was never captured.",
        _optional("width", "int", "Target width in pixels."),
        _optional("height", "int", "Target height in pixels."),
        _optional("scale", "float", "Scale factor, used when width and height are not given."),
    ),
    _image_op(
        "enhance",
        "color & contrast",
        "Multiplies brightness, contrast and/or sharpness (1.0 leaves a property unchanged), "
        "to lift dark or washed-out images. Not in the paper's list; part of the released "
        "toolbox.",
        _optional("brightness", "float", "Brightness factor."),
        _optional("contrast", "float", "Contrast factor."),
        _optional("sharpness", "float", "Sharpness factor."),
        in_paper=False,
    ),
    _image_op(
        "grayscale",
        "color & contrast",
        "Drops colour, which can make faint shapes or text stand out; colour cues are lost.",
    ),
    _image_op(
        "autocontrast",
        "color & contrast",
        "Stretches the tonal range to full black-to-white, a quick fix for low-contrast or "
        "dim images.",
        _optional("cutoff", "float", "Percent of darkest and lightest pixels to ignore."),
    ),
    _image_op(
        "invert",
        "color & contrast",
        "Produces the negative, e.g. for light text on a dark ground or film negatives.",
    ),
    _image_op(
        "equalize",
        "color & contrast",
        "Equalizes the histogram so tones spread evenly, revealing detail in flat regions.",
    ),
    _image_op(
        "threshold",
        "color & contrast",
        "Turns the image black and white at a cut-off, isolating ink from paper or marks "
        "from background.",
        _optional("value", "int", "Cut-off, 0-255 (default 128)."),
        _optional("mode", "str", "binary (default), binary_inv, trunc or tozero."),
        choices={"mode": ["binary", "binary_inv", "trunc", "tozero"]},
    ),
    _image_op(
        "blur",
        "filtering",
        "Gaussian blur; suppresses fine texture or noise so large structures show, at the "
        "cost of detail.",
        _optional("radius", "int", "Blur radius (default 2)."),
    ),
    _image_op(
        "sharpen",
        "filtering",
        "Applies a sharpening filter to crisp up edges; it cannot recover detail that blur "
        "or low resolution destroyed.",
    ),
    _image_op(
        "denoise",
        "filtering",
        "Removes sensor or compression noise while keeping edges.",
        _optional("strength", "int", "Strength from 1 to 30 (default 10)."),
    ),
    _image_op(
        "edge_detect",
        "filtering",
        "Draws the image's edges only, to expose outlines, periodic structure or hidden shapes.",
        _optional("method", "str", "canny (default), sobel or simple."),
        choices={"method": ["canny", "sobel", "simple"]},
    ),
    {
        "name": "google_search",
        "category": "retrieval",
        "description": (
            "Web text search that returns the top results with titles, links and snippets, "
            "for facts the image cannot show. It finds pages, not answers: a checkpoint "
            "passes only when the results actually contain the expected fact."
        ),
        "parameters": [
            _param("query", "str", "The search query."),
            _optional("gl", "str", "Country code for the search (default us)."),
            _optional("hl", "str", "Language code (default en)."),
        ],
        "input_types": ["text"],
        "output_names": ["context"],
        "output_types": ["text"],
        "extra": {"axis": "S"},
    },
    {
        "name": "google_lens_search",
        "category": "retrieval",
        "description": (
            "Reverse image search: finds pages and matches for a local image (the input or "
            "a processed result), to identify logos, products, landmarks or artworks."
        ),
        "parameters": [
            _optional("image_ref", "str", "current (latest processed image) or original."),
            _optional("image_path", "str", "A file name such as transformed_image_1.png."),
        ],
        "input_types": ["image"],
        "output_names": ["context"],
        "output_types": ["text"],
        "extra": {"axis": "S", "choices": {"image_ref": ["current", "original"]}},
    },
    {
        "name": "fetch_webpage",
        "category": "retrieval",
        "description": (
            "Reads a web page as clean text, to check details a search snippet only hints at."
        ),
        "parameters": [
            _param("url", "str", "An http(s) URL."),
            _optional("max_chars", "int", "Maximum characters returned (default 12000)."),
        ],
        "input_types": ["text"],
        "output_names": ["text"],
        "output_types": ["text"],
        "extra": {"axis": "S"},
    },
    {
        "name": "download_image",
        "category": "retrieval",
        "description": (
            "Brings an image from a URL into the workspace as a new image that the visual "
            "operations can use. Capped per task; documented but switched off in the public "
            "atomic-mode prompt."
        ),
        "parameters": [_param("url", "str", "A direct image URL.")],
        "input_types": ["text"],
        "output_names": ["new_image_index"],
        "output_types": ["image"],
        "extra": {"axis": "S", "disabled_in_public_prompt": True},
    },
]

# --------------------------------------------------------------------------- m&m's

MMS_DESCRIPTION = (
    "m&m's 33 tools (ML models, image processing, public APIs) and its 149-edge tool graph: "
    "an edge means the source tool's output can feed the target tool. Plans call tools by "
    "name with named arguments; <node-N>.key refers to an earlier step's output. Taken from "
    "RAIVNLab/mnms @ 8903795 (constants.py TOOL_METADATA and tool_graph.pkl)."
)


@cache
def mms_tool_metadata() -> list[dict[str, Any]]:
    """m&m's TOOL_METADATA as shipped in ``data/tool_metadata.json`` (names, categories,
    input and output argument names with their modalities, and next_tools)."""
    return json.loads((DATA_DIR / "tool_metadata.json").read_text(encoding="utf-8"))


@cache
def mms_tool_graph() -> dict[str, Any]:
    """m&m's tool graph as ``{nodes: [...], edges: [[source, target], ...]}``."""
    return json.loads((DATA_DIR / "tool_graph.json").read_text(encoding="utf-8"))


def _mms_tool_specs() -> list[ToolSpec]:
    specs = []
    for meta in mms_tool_metadata():
        inp, out = meta["input"], meta["output"]
        specs.append(
            {
                "name": meta["name"],
                "category": meta["category"],
                "description": "",
                "parameters": [
                    _param(arg, modality, "")
                    for arg, modality in zip(inp["arg_name"], inp["modality"], strict=True)
                ],
                "input_types": list(inp["modality"]),
                "output_names": list(out["arg_name"]),
                "output_types": list(out["modality"]),
                "extra": {"next_tools": list(meta.get("next_tools", []))},
            }
        )
    return specs


# --------------------------------------------------------------------------- ensure


def builtin_toolset_specs() -> dict[str, tuple[str, list[ToolSpec]]]:
    """Toolset name -> (description, tool specs), in display order."""
    return {
        "atp": (ATP_DESCRIPTION, ATP_TOOLS),
        "llmi": (LLMI_DESCRIPTION, LLMI_TOOLS),
        "agentic-mme": (AGENTIC_MME_DESCRIPTION, AGENTIC_MME_TOOLS),
        "mms": (MMS_DESCRIPTION, _mms_tool_specs()),
    }


def _ensure_tools(toolset: Toolset, specs: list[ToolSpec]) -> dict[str, Tool]:
    existing = {tool.name: tool for tool in toolset.tools.all()}
    for position, spec in enumerate(specs):
        if spec["name"] in existing:
            continue
        tool = Tool(
            toolset=toolset,
            name=spec["name"],
            category=spec.get("category", ""),
            description=spec.get("description", ""),
            parameters=spec.get("parameters", []),
            input_types=spec.get("input_types", []),
            output_names=spec.get("output_names", []),
            output_types=spec.get("output_types", []),
            extra=spec.get("extra", {}),
            position=position,
        )
        tool.full_clean()
        tool.save()
        existing[tool.name] = tool
    return existing


def _ensure_mms_edges(toolset: Toolset, tools: dict[str, Tool]) -> None:
    present = set(toolset.edges.values_list("source__name", "target__name"))
    missing = []
    for source, target in mms_tool_graph()["edges"]:
        if (source, target) in present:
            continue
        if source not in tools or target not in tools:
            # An admin renamed or removed the tool; do not bring it back through an edge.
            continue
        missing.append(ToolEdge(toolset=toolset, source=tools[source], target=tools[target]))
    ToolEdge.objects.bulk_create(missing, ignore_conflicts=True)


@transaction.atomic
def toolsets_ensure() -> dict[str, Toolset]:
    """Create the built-in toolsets, and any of their tools and (m&m's) edges that are
    missing. Existing rows are never changed, so admins' edits survive a re-run."""
    result: dict[str, Toolset] = {}
    for name, (description, specs) in builtin_toolset_specs().items():
        toolset, _ = Toolset.objects.get_or_create(
            name=name, defaults={"description": description, "builtin": True}
        )
        tools = _ensure_tools(toolset, specs)
        if name == "mms":
            _ensure_mms_edges(toolset, tools)
        result[name] = toolset
    return result
