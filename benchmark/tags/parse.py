"""Cut an answer into text and tool-call segments.

``parse(text, syntax)`` never raises on any string. Problems become findings:

* ``malformed_payload``: the payload is not a JSON object (ATP-Bench) or a Python dict
  literal (LLM-I). Position: the character where the reader stopped.
* ``fallback_parse`` (info): an LLM-I payload that ``ast.literal_eval`` rejects but LLM-I's
  code-source regex accepts, so the real pipeline would still run it.
* ``unclosed_tag``: an opening marker with no closing marker before the next opening marker
  or the end of the answer.
* ``nested_tag``: an opening marker inside another tag, recognised as ``<tool>A <tool>B</tool>
  C</tool>``; the outer tag's finding spans both.
* ``orphan_close_tag``: a closing marker with no open tag.

Tags are found with one compiled regex over the exact markers (``<tool>``/``</tool>`` or
``<imgen>``/``</imgen>``, case-sensitive, as the benchmarks' own parsers read them). Where an
unclosed tag stops: when its payload starts with ``{``, right after the matching ``}`` (braces
inside quoted strings are skipped); otherwise at the first blank line, or at the next opening
marker, or at the end of the answer, whichever comes first. Everything after it is text
again, so one missing ``</tool>`` does not swallow the rest of the answer.

The segments cover the text exactly, without gaps or overlaps, so ``serialize(parse(t)) ==
t`` for every ``t``.
"""

from __future__ import annotations

import re

from .model import (
    FALLBACK_PARSE,
    INFO,
    MALFORMED_PAYLOAD,
    NESTED_TAG,
    ORPHAN_CLOSE_TAG,
    SYNTAXES,
    TAG_NAME,
    UNCLOSED_TAG,
    Finding,
    ParsedText,
    Segment,
    Syntax,
    TextSegment,
    ToolCall,
)
from .payload import read_code_fallback, read_json_object, read_literal, recover

__all__ = ["parse", "tag_markers"]

_TAG_RE: dict[str, re.Pattern[str]] = {
    syntax: re.compile(rf"<(/?){TAG_NAME[syntax]}>") for syntax in SYNTAXES
}
_WS_CHARS = " \t\n\r\f\v"
_LEAD_WS = re.compile(r"[ \t\n\r\f\v]*")
_BREAK = re.compile(r"(?:[ \t\r]*\n){2,}")
_BRACE_SCAN = re.compile(r"""[{}]|'(?:[^'\\\n]|\\[\s\S])*'|"(?:[^"\\\n]|\\[\s\S])*\"""")


def tag_markers(syntax: Syntax) -> tuple[str, str]:
    """The opening and closing markers of a syntax, e.g. ``("<tool>", "</tool>")``."""
    name = TAG_NAME[syntax]
    return f"<{name}>", f"</{name}>"


def _unclosed_end(text: str, open_end: int, bound: int) -> int:
    j = _LEAD_WS.match(text, open_end, bound)
    first = j.end() if j else open_end
    if first < bound and text[first] == "{":
        depth = 0
        for m in _BRACE_SCAN.finditer(text, first, bound):
            c = m.group()
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return m.end()
    blank = _BREAK.search(text, open_end, bound)
    return blank.start() if blank else bound


class _Parser:
    __slots__ = ("text", "syntax", "segments", "tools", "findings", "cursor")

    def __init__(self, text: str, syntax: Syntax) -> None:
        self.text = text
        self.syntax: Syntax = syntax
        self.segments: list[Segment] = []
        self.tools: list[ToolCall] = []
        self.findings: list[Finding] = []
        self.cursor = 0

    def text_until(self, pos: int) -> None:
        if pos > self.cursor:
            self.segments.append(TextSegment(self.cursor, pos, self.text[self.cursor : pos]))
            self.cursor = pos

    def add_tool(self, start: int, open_end: int, close_start: int, end: int) -> ToolCall:
        self.text_until(start)
        text = self.text
        closed = close_start < end
        inner = text[open_end:close_start]
        body = inner.strip(_WS_CHARS)
        if body:
            payload_start = open_end + (len(inner) - len(inner.lstrip(_WS_CHARS)))
            payload_end = payload_start + len(body)
        else:
            payload_start = payload_end = open_end
        tool = ToolCall(
            len(self.tools),
            self.syntax,
            start,
            end,
            text[start:end],
            open_end,
            close_start,
            payload_start,
            payload_end,
            closed,
            len(self.segments),
        )
        self.segments.append(tool)
        self.tools.append(tool)
        self.cursor = end
        self.read_payload(tool, body)
        return tool

    def add_finding(self, tool: ToolCall | None, finding: Finding) -> None:
        self.findings.append(finding)
        if tool is not None:
            tool.findings.append(finding)

    def read_payload(self, tool: ToolCall, body: str) -> None:
        if not body:
            self.add_finding(
                tool,
                Finding(
                    MALFORMED_PAYLOAD,
                    f"tag {tool.index} has an empty payload",
                    tool.start,
                    tool.end,
                    tool.index,
                ),
            )
            return
        if self.syntax == "atp":
            value, error = read_json_object(body)
        else:
            value, error = read_literal(body)
        if error is None and isinstance(value, dict):
            tool.payload = value
            return
        if self.syntax == "llmi":
            fallback = read_code_fallback(body)
            if fallback is not None:
                tool.payload = fallback
                tool.via_fallback = True
                why = error.message if error is not None else "not a dict"
                self.add_finding(
                    tool,
                    Finding(
                        FALLBACK_PARSE,
                        f"tag {tool.index}: ast.literal_eval rejects the payload ({why}); it was "
                        "read with LLM-I's code-source regex fallback, as the LLM-I pipeline "
                        "would read it",
                        tool.payload_start,
                        tool.payload_end,
                        tool.index,
                        severity=INFO,
                    ),
                )
                return
        if error is not None:
            where = tool.payload_start + min(error.pos, len(body))
            end = min(where + 1, tool.payload_end)
            message = (
                f"tag {tool.index}: payload is {error.message} (at payload offset {error.pos})"
            )
        else:
            where, end = tool.payload_start, tool.payload_end
            kind = "JSON value" if self.syntax == "atp" else "Python literal"
            message = (
                f"tag {tool.index}: payload is a {kind} of type {type(value).__name__}, "
                "not an object/dict"
            )
        if end <= where:
            where, end = max(tool.start, min(where, tool.end) - 1), min(where, tool.end)
        tool.recovered = recover(body, self.syntax)
        if tool.recovered is not None:
            message += "; the parameters were still checked on a lenient reading"
        self.add_finding(tool, Finding(MALFORMED_PAYLOAD, message, where, end, tool.index))

    def run(self) -> ParsedText:
        text = self.text
        open_marker, close_marker = tag_markers(self.syntax)
        pending: re.Match[str] | None = None
        cut_outer: ToolCall | None = None  # a tag cut short by the pending tag's opening
        nested_outer: ToolCall | None = None  # set right after a tag that was opened inside one
        for m in _TAG_RE[self.syntax].finditer(text):
            if m.group(1):  # closing marker
                if pending is None:
                    if nested_outer is not None:
                        self.mark_nested(nested_outer, m)
                    else:
                        self.add_finding(
                            None,
                            Finding(
                                ORPHAN_CLOSE_TAG,
                                f"{close_marker} without a matching {open_marker}",
                                m.start(),
                                m.end(),
                                None,
                            ),
                        )
                    nested_outer = None
                    continue
                self.add_tool(pending.start(), pending.end(), m.start(), m.end())
                nested_outer, cut_outer, pending = cut_outer, None, None
                continue
            nested_outer = None
            if pending is not None:
                end = _unclosed_end(text, pending.end(), m.start())
                outer = self.add_unclosed(pending, end, "the next " + open_marker)
                cut_outer = outer if end == m.start() else None
            pending = m
        if pending is not None:
            self.add_unclosed(pending, _unclosed_end(text, pending.end(), len(text)), "the end")
        self.text_until(len(text))
        return ParsedText(
            text=text,
            syntax=self.syntax,
            segments=tuple(self.segments),
            tools=tuple(self.tools),
            findings=self.findings,
        )

    def add_unclosed(self, opening: re.Match[str], end: int, before: str) -> ToolCall:
        tool = self.add_tool(opening.start(), opening.end(), end, end)
        _, close_marker = tag_markers(self.syntax)
        self.add_finding(
            tool,
            Finding(
                UNCLOSED_TAG,
                f"tag {tool.index} is never closed: no {close_marker} before {before} of the "
                "answer",
                tool.start,
                tool.end,
                tool.index,
            ),
        )
        return tool

    def mark_nested(self, outer: ToolCall, orphan: re.Match[str]) -> None:
        for finding in outer.findings:
            if finding.code == UNCLOSED_TAG:
                finding.code = NESTED_TAG
                finding.end = orphan.end()
                finding.message = (
                    f"tag {outer.index} contains tag {outer.index + 1}: tags cannot be nested "
                    f"(the outer tag's closing marker is at offset {orphan.start()})"
                )
                return


def parse(text: str, syntax: Syntax = "atp") -> ParsedText:
    """Split ``text`` into ordered text and tool-call segments (see the module docstring).

    ``syntax`` is ``"atp"`` (``<tool>`` tags with JSON payloads) or ``"llmi"`` (``<imgen>``
    tags with Python dict literals)."""
    if syntax not in SYNTAXES:
        raise ValueError(f"unknown syntax {syntax!r}; expected one of {', '.join(SYNTAXES)}")
    return _Parser(text, syntax).run()
