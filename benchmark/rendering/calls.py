"""What each tool call of an answer asks for, and what became of it. Pure Python (no Django).

``plan_calls(parsed, documents=..., inputs=...)`` reads every tag of a parsed answer once and
returns one :class:`CallPlan` per tag, in order. A plan either already holds its
:class:`CallResult` (a malformed call, an unknown tool, an index out of range, a payload over
the limits, a Reference, which only shows a document image) or says what has to be executed:
the tool, its parameters and, for an edit, which image it edits (:class:`Source`).

Image indices follow the tag validator (``benchmark.tags.validate``):

* ATP-Bench: Reference and Edit index the item's **document** images, ``0 .. n - 1``.
* LLM-I: an edit indexes the **input** images, then the images of earlier closed tags in the
  answer, so tag k may name ``0 .. inputs + k - 1``; an index past the inputs edits the image
  an earlier tag produced (and fails when that tag produced none).

Statuses: ``rendered`` (the call's image is shown), ``placeholder`` (the tool was not executed
because nothing is configured to execute it; the card shows what it asked for) and ``failed``
(a labelled card says why). ``reason`` is one of :data:`REASONS`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from benchmark.tags import ParsedText, ToolCall
from benchmark.tags.model import MALFORMED_PAYLOAD, NESTED_TAG, UNCLOSED_TAG

__all__ = [
    "EXECUTORS",
    "LABELS",
    "REASONS",
    "STATUSES",
    "CallPlan",
    "CallResult",
    "Limits",
    "Source",
    "Task",
    "clean_code",
    "plan_calls",
]

RENDERED = "rendered"
PLACEHOLDER = "placeholder"
FAILED = "failed"
STATUSES: tuple[str, ...] = (RENDERED, PLACEHOLDER, FAILED)

# Why a call is not rendered (stable strings: stored, compared, shown as data-reason).
MALFORMED = "malformed"
UNKNOWN_TOOL = "unknown_tool"
NOT_CONFIGURED = "not_configured"
NOT_AVAILABLE = "not_available"
OUT_OF_RANGE = "out_of_range"
MISSING_IMAGE = "missing_image"
ERROR = "error"
TIMEOUT = "timeout"
LIMIT = "limit"
REASONS: tuple[str, ...] = (
    MALFORMED,
    UNKNOWN_TOOL,
    NOT_CONFIGURED,
    NOT_AVAILABLE,
    OUT_OF_RANGE,
    MISSING_IMAGE,
    ERROR,
    TIMEOUT,
    LIMIT,
)
#: The card's label for each reason.
LABELS: dict[str, str] = {
    MALFORMED: "Malformed call",
    UNKNOWN_TOOL: "Tool not configured",
    NOT_CONFIGURED: "Not executed",
    NOT_AVAILABLE: "Not executed",
    OUT_OF_RANGE: "Image index out of range",
    MISSING_IMAGE: "Image not stored",
    ERROR: "Execution error",
    TIMEOUT: "Timed out",
    LIMIT: "Over the limits",
}

#: The tools the renderer executes, per syntax (tool names match case-insensitively).
EXECUTORS: dict[str, tuple[str, ...]] = {
    "atp": ("reference", "diffusion", "search", "code", "edit"),
    "llmi": ("search", "diffusion", "code", "edit"),
}
#: The parameter each tool needs, with its type.
_NEEDS: dict[str, tuple[tuple[str, type], ...]] = {
    "reference": (("img_index", int),),
    "edit": (("img_index", int), ("prompt", str)),
    "diffusion": (("prompt", str),),
    "search": (("query", str),),
    "code": (("code", str),),
}


@dataclass(frozen=True)
class Limits:
    """What one answer may ask of the renderer; beyond it a call fails with a card saying so."""

    #: Tool calls executed per answer; later calls fail ("limit").
    max_calls: int = 50
    max_code_chars: int = 100_000
    max_prompt_chars: int = 4_000
    max_query_chars: int = 500
    #: A longer answer is not rendered at all (the rendering records why).
    max_text_chars: int = 1_000_000


@dataclass(frozen=True)
class CallResult:
    """What became of one tool call. ``image`` is the sha256 of the image the call produced
    (or showed, for Reference); ``shown`` an image shown under a placeholder card (the source
    image of an edit that was not executed). ``provider`` names what produced the image
    (``document``, ``sandbox``, ``images:<model>@<url>``, ``search:<url>``...). ``retry``
    marks a failure that may pass another time (a provider's network error or 5xx): it is not
    cached, and rendering the answer again tries the call again."""

    status: str
    reason: str = ""
    message: str = ""
    #: The tool (lower case as written; "" when the call names none).
    tool: str = ""
    image: str | None = None
    shown: str | None = None
    provider: str = ""
    cached: bool = False
    retry: bool = False
    detail: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CallResult:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class Source:
    """The image an edit starts from: a document or input image by index, or the image an
    earlier tag of the answer produced (``kind="tag"``, ``index`` = that tag's index)."""

    kind: Literal["document", "input", "tag"]
    index: int
    sha256: str | None = None


@dataclass(frozen=True)
class CallPlan:
    index: int
    #: The canonical tool ("reference", "code"...), or "" when the call names none usable.
    tool: str
    #: The tool as written, for cards ("Reference").
    label: str
    description: str
    #: What the executor needs: prompt, query, code (fences stripped), img_index.
    params: dict[str, Any]
    source: Source | None = None
    #: Decided without executing anything; None: the call must be executed.
    result: CallResult | None = None


@dataclass(frozen=True)
class Task:
    """One execution: the same task (same key) is executed once and its result cached."""

    tool: str
    params: tuple[tuple[str, Any], ...]
    provider: str
    input_sha256: str = ""

    @property
    def key(self) -> str:
        """sha256 of the canonical payload, the provider and the input image."""
        blob = json.dumps(
            {
                "tool": self.tool,
                "params": dict(self.params),
                "provider": self.provider,
                "input": self.input_sha256,
            },
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
        )
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def param(self, name: str) -> Any:
        return dict(self.params).get(name)


_FENCE = re.compile(r"\A```[ \t]*(?:python3?|py)?[ \t]*\n?(.*?)\n?```[ \t]*\Z", re.S | re.I)


def clean_code(code: str) -> str:
    """The program without the Markdown fence a model may wrap it in (as LLM-I's
    ``sanitize_code`` strips it) and without surrounding blank space."""
    text = code.strip()
    m = _FENCE.match(text)
    return (m.group(1) if m else text).strip("\n")


def _failed(reason: str, message: str, **kw: Any) -> CallResult:
    return CallResult(status=FAILED, reason=reason, message=message, **kw)


def _parse_problem(tool: ToolCall) -> str | None:
    for finding in tool.findings:
        if finding.code in (MALFORMED_PAYLOAD, UNCLOSED_TAG, NESTED_TAG):
            return finding.message
    if tool.payload is None:
        return f"tag {tool.index}: the payload could not be read"
    if not tool.closed:
        return f"tag {tool.index} is never closed"
    return None


def _compile_problem(code: str) -> str | None:
    try:
        compile(code, "<code>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        where = f" (line {exc.lineno})" if exc.lineno else ""
        return f"the program is not valid Python{where}: {exc.msg}"
    except (ValueError, RecursionError, MemoryError) as exc:
        return f"the program is not valid Python: {str(exc)[:200] or type(exc).__name__}"
    return None


def _short(value: Any, n: int = 80) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= n else text[: n - 1] + "…"


class _Planner:
    def __init__(
        self,
        parsed: ParsedText,
        documents: Sequence[str | None],
        inputs: Sequence[str | None],
        limits: Limits,
    ) -> None:
        self.syntax = parsed.syntax
        self.documents = list(documents)
        self.inputs = list(inputs)
        self.limits = limits
        self.closed_tags: list[int] = []  # LLM-I: indices of closed tags so far, in order

    def plan(self, tool: ToolCall) -> CallPlan:
        plan = self._plan(tool)
        if self.syntax == "llmi" and tool.closed:
            self.closed_tags.append(tool.index)
        return plan

    def _plan(self, tool: ToolCall) -> CallPlan:
        label = tool.tool_name or ""

        def make(
            name: str,
            params: dict[str, Any],
            result: CallResult | None = None,
            source: Source | None = None,
        ) -> CallPlan:
            return CallPlan(
                index=tool.index,
                tool=name,
                label=label,
                description=tool.description or "",
                params=params,
                source=source,
                result=result,
            )

        problem = _parse_problem(tool)
        if problem is not None:
            return make("", {}, _failed(MALFORMED, problem))
        if not label.strip():
            message = f"tag {tool.index}: no tool named ({tool.name_key!r} is missing or not text)"
            return make("", {}, _failed(MALFORMED, message))
        name = label.strip().lower()
        known = EXECUTORS[self.syntax]
        if name not in known:
            message = f"no tool {_short(label)!r} can be executed here (tools: {', '.join(known)})"
            return make("", {}, _failed(UNKNOWN_TOOL, message))
        raw = tool.params
        if raw is None:
            return make(
                name, {}, _failed(MALFORMED, f"{label}: 'params' is missing or not an object")
            )
        params: dict[str, Any] = {}
        for pname, ptype in _NEEDS[name]:
            value = raw.get(pname)
            ok = isinstance(value, ptype) and not isinstance(value, bool)
            if not ok or (isinstance(value, str) and not value.strip()):
                what = "is missing" if pname not in raw else f"must be a non-empty {ptype.__name__}"
                return make(name, {}, _failed(MALFORMED, f"{label} needs {pname!r}, which {what}"))
            params[pname] = value
        if tool.index >= self.limits.max_calls:
            message = (
                f"an answer may have at most {self.limits.max_calls} tool calls rendered; "
                f"this is call {tool.index + 1}"
            )
            return make(name, params, _failed(LIMIT, message))
        too_long = self._too_long(params)
        if too_long:
            return make(name, params, _failed(LIMIT, too_long))
        if name == "code":
            params["code"] = clean_code(params["code"])
            problem = _compile_problem(params["code"])
            return make(name, params, _failed(ERROR, problem) if problem else None)
        if name in ("reference", "edit"):
            source = self._source(params["img_index"])
            if isinstance(source, CallResult):
                return make(name, params, source)
            if name == "reference":
                result = CallResult(status=RENDERED, image=source.sha256, provider="document")
                return make(name, params, result, source)
            return make(name, params, None, source)
        return make(name, params)

    def _too_long(self, params: dict[str, Any]) -> str:
        limits = {
            "code": self.limits.max_code_chars,
            "prompt": self.limits.max_prompt_chars,
            "query": self.limits.max_query_chars,
        }
        for pname, limit in limits.items():
            value = params.get(pname)
            if isinstance(value, str) and len(value) > limit:
                return f"{pname} is {len(value):,} characters; the renderer takes at most {limit:,}"
        return ""

    def _source(self, index: int) -> Source | CallResult:
        if self.syntax == "atp":
            n = len(self.documents)
            if not 0 <= index < n:
                valid = f"0-{n - 1}" if n else "none: the item has no document images"
                return _failed(
                    OUT_OF_RANGE,
                    f"img_index {index} is out of range: the item has {n} document image"
                    f"{'s' if n != 1 else ''} (valid: {valid})",
                )
            sha = self.documents[index]
            if not sha:
                return _failed(MISSING_IMAGE, f"document image {index} is not stored")
            return Source("document", index, sha)
        n_in = len(self.inputs)
        available = n_in + len(self.closed_tags)
        if not 0 <= index < available:
            valid = f"0-{available - 1}" if available else "none: no image exists yet"
            return _failed(
                OUT_OF_RANGE,
                f"img_index {index} is out of range: {available} image"
                f"{'s' if available != 1 else ''} exist at this point ({n_in} input + "
                f"{len(self.closed_tags)} from earlier tags; valid: {valid})",
            )
        if index < n_in:
            sha = self.inputs[index]
            if not sha:
                return _failed(MISSING_IMAGE, f"input image {index} is not stored")
            return Source("input", index, sha)
        return Source("tag", self.closed_tags[index - n_in])


def plan_calls(
    parsed: ParsedText,
    *,
    documents: Sequence[str | None] = (),
    inputs: Sequence[str | None] = (),
    limits: Limits | None = None,
) -> list[CallPlan]:
    """One plan per tag of ``parsed``, in order (see the module docstring). ``documents`` and
    ``inputs`` are the sha256 of the item's document and input images in ``img_index``
    order (None for an image that is not stored)."""
    planner = _Planner(parsed, documents, inputs, limits or Limits())
    return [planner.plan(tool) for tool in parsed.tools]
