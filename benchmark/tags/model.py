"""Data types shared by the tag parser, validator and serializer.

Positions are offsets into the answer as a Python ``str`` (code points, not bytes), and every
span is half-open: ``text[start:end]``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, overload

Syntax = Literal["atp", "llmi"]
SYNTAXES: tuple[Syntax, ...] = ("atp", "llmi")

# The tag name and the payload key that names the tool, per syntax.
TAG_NAME: dict[str, str] = {"atp": "tool", "llmi": "imgen"}
NAME_KEY: dict[str, str] = {"atp": "tool_name", "llmi": "source"}
TOP_LEVEL_KEYS: tuple[str, str, str] = ("name", "description", "params")

# ----------------------------------------------------------------------------- finding codes

MALFORMED_PAYLOAD = "malformed_payload"
UNCLOSED_TAG = "unclosed_tag"
NESTED_TAG = "nested_tag"
ORPHAN_CLOSE_TAG = "orphan_close_tag"
FALLBACK_PARSE = "fallback_parse"
UNKNOWN_TOOL = "unknown_tool"
MISSING_PARAM = "missing_param"
UNKNOWN_PARAM = "unknown_param"
BAD_PARAM_TYPE = "bad_param_type"
IMG_INDEX_OUT_OF_RANGE = "img_index_out_of_range"
REFERENCE_REUSED = "reference_reused"
MID_SENTENCE = "mid_sentence"
FIGURE_PHRASE = "figure_phrase"
EMPTY_PROMPT = "empty_prompt"
CODE_SYNTAX = "code_syntax"
IMAGE_COUNT_CONSTRAINT = "image_count_constraint"

#: Every code the package can emit. The strings are stable: store and compare them freely.
CODES: tuple[str, ...] = (
    MALFORMED_PAYLOAD,
    UNCLOSED_TAG,
    NESTED_TAG,
    ORPHAN_CLOSE_TAG,
    FALLBACK_PARSE,
    UNKNOWN_TOOL,
    MISSING_PARAM,
    UNKNOWN_PARAM,
    BAD_PARAM_TYPE,
    IMG_INDEX_OUT_OF_RANGE,
    REFERENCE_REUSED,
    MID_SENTENCE,
    FIGURE_PHRASE,
    EMPTY_PROMPT,
    CODE_SYNTAX,
    IMAGE_COUNT_CONSTRAINT,
)

#: What each code means in a person's words, for the screens (the code stays in the data).
CODE_LABELS: dict[str, str] = {
    MALFORMED_PAYLOAD: "Unreadable tool call",
    UNCLOSED_TAG: "Tag not closed",
    NESTED_TAG: "Tag inside a tag",
    ORPHAN_CLOSE_TAG: "Closing tag without an opening one",
    FALLBACK_PARSE: "Read leniently",
    UNKNOWN_TOOL: "Unknown tool",
    MISSING_PARAM: "Missing parameter",
    UNKNOWN_PARAM: "Unknown parameter",
    BAD_PARAM_TYPE: "Parameter of the wrong type",
    IMG_INDEX_OUT_OF_RANGE: "No such input image",
    REFERENCE_REUSED: "Input image used twice",
    MID_SENTENCE: "Image in mid-sentence",
    FIGURE_PHRASE: "Refers to a figure",
    EMPTY_PROMPT: "Empty prompt",
    CODE_SYNTAX: "Code does not parse",
    IMAGE_COUNT_CONSTRAINT: "Image count",
}

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES: tuple[str, ...] = (ERROR, WARNING, INFO)


@dataclass(slots=True)
class Finding:
    """One problem (or note) about an answer.

    ``tag`` is the 0-based index of the tool call it concerns (in ``ParsedText.tools``), or
    ``None`` for findings about the answer as a whole or about text outside any tag.
    ``score`` is set only on ``image_count_constraint`` findings (LLM-I's R_rule).
    """

    code: str
    message: str
    start: int
    end: int
    tag: int | None = None
    severity: str = ERROR
    score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "message": self.message,
            "start": self.start,
            "end": self.end,
            "tag": self.tag,
            "severity": self.severity,
        }
        if self.score is not None:
            out["score"] = self.score
        return out


@dataclass(slots=True)
class TextSegment:
    """Answer text between tool calls (possibly empty of anything but whitespace)."""

    kind: ClassVar[str] = "text"
    start: int
    end: int
    text: str

    @property
    def raw(self) -> str:
        return self.text


@dataclass(slots=True)
class ToolCall:
    """One ``<tool>…</tool>`` / ``<imgen>…</imgen>`` tag.

    ``raw`` is the tag's exact text, ``text[start:end]``. It runs from the opening marker
    through the closing marker; for an unclosed tag it ends where the parser decided the tag
    stops (see ``parse``), and ``closed`` is False.

    ``payload_start:payload_end`` is the payload without the whitespace just inside the
    markers. ``payload`` is the parsed dict, or ``None`` when the payload is malformed.
    ``recovered`` is a best-effort reading of a malformed payload (e.g. with a trailing comma
    dropped); it lets the validator still check the parameters, but the tag keeps its
    ``malformed_payload`` finding. ``via_fallback`` is True when an LLM-I payload could only be
    read with the code-source regex that LLM-I itself uses.
    """

    kind: ClassVar[str] = "tool"
    index: int
    syntax: Syntax
    start: int
    end: int
    raw: str
    open_end: int
    close_start: int
    payload_start: int
    payload_end: int
    closed: bool
    segment_pos: int
    payload: dict[str, Any] | None = None
    recovered: dict[str, Any] | None = None
    via_fallback: bool = False
    findings: list[Finding] = field(default_factory=list)

    @property
    def payload_text(self) -> str:
        return self.raw[self.payload_start - self.start : self.payload_end - self.start]

    @property
    def data(self) -> dict[str, Any] | None:
        """The payload if it parsed, else the recovered reading, else ``None``."""
        return self.payload if self.payload is not None else self.recovered

    @property
    def name_key(self) -> str:
        return NAME_KEY[self.syntax]

    @property
    def tool_name(self) -> str | None:
        """The tool as written (``tool_name`` for ATP, ``source`` for LLM-I), if a string."""
        data = self.data
        value = data.get(self.name_key) if data is not None else None
        return value if isinstance(value, str) else None

    @property
    def description(self) -> str | None:
        data = self.data
        value = data.get("description") if data is not None else None
        return value if isinstance(value, str) else None

    @property
    def params(self) -> dict[str, Any] | None:
        data = self.data
        value = data.get("params") if data is not None else None
        return value if isinstance(value, dict) else None


Segment = TextSegment | ToolCall


@dataclass(slots=True)
class ParsedText(Sequence[Segment]):
    """The result of ``parse``: the answer cut into ordered, gap-free segments.

    It behaves as a sequence of segments; ``tools`` lists only the tool calls, in order, so
    ``tools[i].index == i``. ``findings`` holds every parse finding (also attached to the
    tags they concern).
    """

    text: str
    syntax: Syntax
    segments: tuple[Segment, ...]
    tools: tuple[ToolCall, ...]
    findings: list[Finding]

    @overload
    def __getitem__(self, index: int) -> Segment: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Segment]: ...

    def __getitem__(self, index: int | slice) -> Segment | Sequence[Segment]:
        return self.segments[index]

    def __len__(self) -> int:
        return len(self.segments)

    def __iter__(self) -> Iterator[Segment]:
        return iter(self.segments)
