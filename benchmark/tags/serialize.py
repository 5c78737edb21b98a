"""Turn segments back into text, and edit single tags without touching anything else.

``serialize(parse(text, syntax)) == text`` for every string: segments keep their exact bytes.

Every edit takes a ``ParsedText`` and returns the new answer text (parse it again to keep
editing). An edit rewrites only the bytes of the tag it targets:

* ``replace_payload``, ``set_tool``, ``set_description``, ``set_params``, ``set_param``:
  only ``text[payload_start:payload_end]`` changes (the whitespace inside the markers is
  kept). On an unclosed tag the closing marker is added, so the tag becomes whole.
* ``remove_tag``: deletes ``text[start:end]``; with ``tidy=True`` also one whitespace run
  next to it, so no double blank line or double space is left behind.
* ``move_tag``: takes the tag (and one adjacent whitespace run, as ``tidy`` does) out and puts
  its unchanged bytes at the nearest paragraph boundary before/after it, adding the blank
  lines that make it a paragraph of its own. Nothing else changes.
* ``insert_tag``: adds a new tag at the paragraph boundary nearest to an offset.

A paragraph boundary is a blank line in the answer text (never inside another tag), or the
start or end of the answer.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from .model import NAME_KEY, ParsedText, Segment, Syntax, TextSegment, ToolCall
from .parse import tag_markers
from .payload import read_literal
from .validate import paragraph_sides

__all__ = [
    "TagEditError",
    "close_tag",
    "insert_tag",
    "make_payload",
    "move_tag",
    "remove_tag",
    "render_payload",
    "render_tag",
    "replace_payload",
    "serialize",
    "set_description",
    "set_param",
    "set_params",
    "set_tool",
]

Direction = Literal["before", "after"]
_HWS_NL = " \t\r\n"
_BREAK = re.compile(r"(?:[ \t\r]*\n){2,}")
_PARAGRAPH_SEP = "\n\n"


class TagEditError(ValueError):
    """An edit that cannot be made (no such tag, or a payload that was never read)."""


def serialize(segments: ParsedText | Iterable[Segment]) -> str:
    """Concatenate the segments' exact text."""
    if isinstance(segments, ParsedText):
        return "".join(segment.raw for segment in segments.segments)
    return "".join(segment.raw for segment in segments)


# --------------------------------------------------------------------------- payloads


def make_payload(
    syntax: Syntax, tool: str, description: str, params: Mapping[str, Any]
) -> dict[str, Any]:
    """A payload dict with the keys in the benchmark's order."""
    return {NAME_KEY[syntax]: tool, "description": description, "params": dict(params)}


def render_payload(payload: Mapping[str, Any], syntax: Syntax) -> str:
    """JSON for ATP-Bench (``", "``/``": "`` separators as in the data, non-ASCII kept),
    a Python dict literal for LLM-I (``repr``, which ``ast.literal_eval`` reads back)."""
    data = dict(payload)
    if syntax == "atp":
        try:
            return json.dumps(data, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TagEditError(f"payload is not valid JSON data: {exc}") from None
    text = repr(data)
    value, error = read_literal(text)
    if error is not None or value != data:
        raise TagEditError("payload is not made of Python literals (str, int, float, ...)")
    return text


def render_tag(payload: Mapping[str, Any] | str, syntax: Syntax) -> str:
    """A complete tag around a payload dict (rendered) or payload text (used as is)."""
    opening, closing = tag_markers(syntax)
    body = payload if isinstance(payload, str) else render_payload(payload, syntax)
    return f"{opening}{body}{closing}"


def _escape_markers(body: str, syntax: Syntax) -> str:
    """Keep tag markers that occur inside string values from being read as real tags."""
    opening, closing = tag_markers(syntax)
    if "<" not in body or (opening not in body and closing not in body):
        return body
    lt = "\\u003c" if syntax == "atp" else "\\x3c"
    return body.replace(opening, lt + opening[1:]).replace(closing, lt + closing[1:])


# --------------------------------------------------------------------------- tag edits


def _tool(parsed: ParsedText, tag: int) -> ToolCall:
    if not 0 <= tag < len(parsed.tools):
        raise TagEditError(f"no tag {tag}: the answer has {len(parsed.tools)} tags")
    return parsed.tools[tag]


def replace_payload(parsed: ParsedText, tag: int, payload: Mapping[str, Any] | str) -> str:
    """Replace tag ``tag``'s payload with a dict (rendered for the syntax) or raw text."""
    tool = _tool(parsed, tag)
    text = parsed.text
    if isinstance(payload, str):
        body = payload
    else:
        body = _escape_markers(render_payload(payload, parsed.syntax), parsed.syntax)
    head = text[: tool.payload_start] + body
    if tool.closed:
        return head + text[tool.payload_end :]
    _, closing = tag_markers(parsed.syntax)
    return head + text[tool.payload_end : tool.end] + closing + text[tool.end :]


def close_tag(parsed: ParsedText, tag: int) -> str:
    """Add the missing closing marker to an unclosed tag (a closed tag is left as it is)."""
    tool = _tool(parsed, tag)
    if tool.closed:
        return parsed.text
    return replace_payload(parsed, tag, tool.payload_text)


def _edit_data(parsed: ParsedText, tag: int) -> dict[str, Any]:
    tool = _tool(parsed, tag)
    if tool.data is None:
        raise TagEditError(
            f"tag {tag}'s payload could not be read; replace it with replace_payload()"
        )
    return copy.deepcopy(tool.data)


def set_tool(parsed: ParsedText, tag: int, tool_name: str) -> str:
    """Change the tool (``tool_name`` for ATP-Bench, ``source`` for LLM-I)."""
    data = _edit_data(parsed, tag)
    key = NAME_KEY[parsed.syntax]
    data = {key: tool_name, **{k: v for k, v in data.items() if k != key}}
    return replace_payload(parsed, tag, data)


def set_description(parsed: ParsedText, tag: int, description: str) -> str:
    data = _edit_data(parsed, tag)
    data["description"] = description
    return replace_payload(parsed, tag, data)


def set_params(parsed: ParsedText, tag: int, params: Mapping[str, Any]) -> str:
    """Replace the whole ``params`` object."""
    data = _edit_data(parsed, tag)
    data["params"] = dict(params)
    return replace_payload(parsed, tag, data)


def set_param(parsed: ParsedText, tag: int, name: str, value: Any) -> str:
    """Set one parameter, keeping the others."""
    data = _edit_data(parsed, tag)
    params = data.get("params")
    data["params"] = {**(params if isinstance(params, dict) else {}), name: value}
    return replace_payload(parsed, tag, data)


def _ws_len(text: str, *, trailing: bool) -> int:
    core = text.rstrip(_HWS_NL) if trailing else text.lstrip(_HWS_NL)
    return len(text) - len(core)


def _removal_span(parsed: ParsedText, tool: ToolCall) -> tuple[int, int]:
    """The tag plus the one whitespace run beside it that would be left over."""
    segments = parsed.segments
    k = tool.segment_pos
    prev = segments[k - 1] if k > 0 else None
    nxt = segments[k + 1] if k + 1 < len(segments) else None
    left = _ws_len(prev.text, trailing=True) if isinstance(prev, TextSegment) else 0
    right = _ws_len(nxt.text, trailing=False) if isinstance(nxt, TextSegment) else 0
    at_start = prev is None or (isinstance(prev, TextSegment) and k == 1 and left == len(prev.text))
    last = len(segments) - 1
    at_end = nxt is None or (
        isinstance(nxt, TextSegment) and k + 1 == last and right == len(nxt.text)
    )
    if at_start:
        return tool.start, tool.end + (0 if at_end else right)
    if at_end:
        return tool.start - left, tool.end
    if left and right:
        left_nl = parsed.text.count("\n", tool.start - left, tool.start)
        right_nl = parsed.text.count("\n", tool.end, tool.end + right)
        if right_nl <= left_nl:
            return tool.start, tool.end + right
        return tool.start - left, tool.end
    return tool.start, tool.end


def remove_tag(parsed: ParsedText, tag: int, *, tidy: bool = False) -> str:
    """Delete tag ``tag``. With ``tidy``, also drop the whitespace run on one side of it
    (the one with fewer line breaks), so "a <tag> b" becomes "a b" and a tag paragraph
    leaves a single blank line."""
    tool = _tool(parsed, tag)
    start, end = _removal_span(parsed, tool) if tidy else (tool.start, tool.end)
    return parsed.text[:start] + parsed.text[end:]


def _breaks(parsed: ParsedText) -> list[tuple[int, int]]:
    """Blank-line runs in the answer text as (first line break, end of run)."""
    out = []
    for segment in parsed.segments:
        if isinstance(segment, TextSegment) and "\n" in segment.text:
            for m in _BREAK.finditer(segment.text):
                first_nl = segment.text.index("\n", m.start())
                out.append((segment.start + first_nl, segment.start + m.end()))
    return out


def _separator_after(prefix: str) -> str:
    """What to put between ``prefix`` and a tag appended to it."""
    if not prefix:
        return ""
    tail = prefix[len(prefix.rstrip(_HWS_NL)) :]
    newlines = tail.count("\n")
    return "" if newlines >= 2 or prefix.strip(_HWS_NL) == "" else "\n" * (2 - newlines)


def _separator_before(suffix: str) -> str:
    """What to put between a tag and ``suffix`` when the tag goes in front of it."""
    if not suffix:
        return ""
    lead = suffix[: len(suffix) - len(suffix.lstrip(_HWS_NL))]
    newlines = lead.count("\n")
    return "" if newlines >= 2 or suffix.strip(_HWS_NL) == "" else "\n" * (2 - newlines)


def _place(text: str, raw: str, cut: tuple[int, int], p: int, kind: str) -> str:
    """Cut ``text[cut]`` out and insert ``raw`` at ``p`` (outside the cut) as a paragraph.
    ``kind`` is "break_after" (p is a blank run's first line break), "break_before" (p ends a
    blank run), "end" or "start"."""
    rs, re_ = cut
    if p >= re_:
        prefix, suffix = text[:rs] + text[re_:p], text[p:]
    else:
        prefix, suffix = text[:p], text[p:rs] + text[re_:]
    if kind == "break_after":
        insertion = _PARAGRAPH_SEP + raw
    elif kind == "break_before":
        insertion = raw + _PARAGRAPH_SEP
    elif kind == "end":
        insertion = _separator_after(prefix) + raw
    else:
        insertion = raw + _separator_before(suffix)
    return prefix + insertion + suffix


def move_tag(parsed: ParsedText, tag: int, direction: Direction = "after") -> str:
    """Move tag ``tag``, byte for byte, to the nearest paragraph boundary before or after
    it. A tag inside a paragraph goes to that paragraph's start ("before") or end ("after");
    a tag that already stands as its own paragraph moves past the neighbouring paragraph (or
    tag). Returns the text unchanged when there is no such boundary."""
    if direction not in ("before", "after"):
        raise TagEditError("direction must be 'before' or 'after'")
    tool = _tool(parsed, tag)
    text = parsed.text
    before, after = paragraph_sides(parsed)
    strict = before[tag][0] and after[tag][0]  # already a paragraph of its own
    rs, re_ = _removal_span(parsed, tool)
    breaks = [(s, e) for s, e in _breaks(parsed) if e <= rs or s >= re_]
    if direction == "after":
        for s, _ in breaks:
            if s >= re_ and (not strict or text[re_:s].strip()):
                return _place(text, tool.raw, (rs, re_), s, "break_after")
        if not strict or text[re_:].strip():
            return _place(text, tool.raw, (rs, re_), len(text), "end")
        return text
    for _, e in reversed(breaks):
        if e <= rs and (not strict or text[e:rs].strip()):
            return _place(text, tool.raw, (rs, re_), e, "break_before")
    if not strict or text[:rs].strip():
        return _place(text, tool.raw, (rs, re_), 0, "start")
    return text


def insert_tag(
    parsed: ParsedText,
    payload: Mapping[str, Any] | str,
    *,
    at: int,
    direction: Direction = "after",
) -> str:
    """Insert a new tag as its own paragraph at the first paragraph boundary at or after
    offset ``at`` ("after") or the last one at or before it ("before"). ``payload`` is a dict
    (see ``make_payload``) or raw payload text."""
    if direction not in ("before", "after"):
        raise TagEditError("direction must be 'before' or 'after'")
    text = parsed.text
    if isinstance(payload, str):
        raw = render_tag(payload, parsed.syntax)
    else:
        opening, closing = tag_markers(parsed.syntax)
        body = _escape_markers(render_payload(payload, parsed.syntax), parsed.syntax)
        raw = opening + body + closing
    breaks = _breaks(parsed)
    nowhere = (len(text) + 1, len(text) + 1)
    if direction == "after":
        for s, _ in breaks:
            if s >= at:
                return _place(text, raw, nowhere, s, "break_after")
        return _place(text, raw, nowhere, len(text), "end")
    for _, e in reversed(breaks):
        if e <= at:
            return _place(text, raw, nowhere, e, "break_before")
    return _place(text, raw, nowhere, 0, "start")
