"""One reviewer edit at a time on the working text of an interleaved answer.

Pure Python (no Django): each function takes the parsed working text and returns an ``Edit``:
the new text, the decision to record (``TagDecision`` fields as a dict), and the per-tag marks
the review screen shows on each card ("kept", "fixed", ...). The tag edits themselves are
``benchmark.tags``'s; this module adds form-value conversion, the reason codes of ATP-Bench's
annotation guide (§4.2) and the bookkeeping of which card got which decision.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from benchmark.tags import (
    NAME_KEY,
    ParsedText,
    TagEditError,
    TextSegment,
    ToolCall,
    insert_tag,
    make_payload,
    move_tag,
    parse,
    remove_tag,
    replace_payload,
    set_tool,
)

__all__ = [
    "DECISIONS",
    "FIX_REASONS",
    "REMOVE_REASONS",
    "Edit",
    "EditError",
    "boundaries",
    "convert_value",
    "display_value",
    "fix_fields",
    "fix_raw",
    "guess",
    "insert",
    "keep",
    "move",
    "remap_marks",
    "remove",
    "retool",
    "tool_name_of",
]

DECISIONS: tuple[str, ...] = ("kept", "removed", "fixed", "moved", "inserted", "retooled")

#: Why a call is removed (ATP-Bench §4.2: "redundant or semantically mismatched calls"; a call
#: is retained only if its image "materially improves understanding").
REMOVE_REASONS: tuple[tuple[str, str], ...] = (
    ("redundant", "Redundant"),
    ("mismatched", "Semantically mismatched"),
    ("no_gain", "Does not improve understanding"),
    ("other", "Other"),
)

#: What a fix repairs ("malformed syntax and inappropriate tool choices").
FIX_REASONS: tuple[tuple[str, str], ...] = (
    ("malformed_syntax", "Malformed syntax"),
    ("wrong_params", "Wrong parameters"),
    ("wrong_tool", "Inappropriate tool"),
    ("other", "Other"),
)

# A blank line, matched from its first newline: the same breaks as ``(?:[ \t\r]*\n){2,}``,
# found without trying every space of the answer (``boundaries`` on 1 MB: 22 ms -> 1 ms).
_BREAK = re.compile(r"\n(?:[ \t\r]*\n)+")
Direction = Literal["before", "after"]


class EditError(ValueError):
    """An edit that cannot be made; the message is for the reviewer."""


@dataclass
class Edit:
    text: str
    decision: dict[str, Any] | None
    marks: list[str] = field(default_factory=list)


def _decision(
    tool: ToolCall | None,
    index: int,
    kind: str,
    reason: str = "",
    tool_name: str | None = None,
    **detail: Any,
) -> dict[str, Any]:
    name = tool_name if tool_name is not None else (tool_name_of(tool) if tool else None)
    return {
        "tag": index,
        "tool": (name or "")[:100],
        "decision": kind,
        "reason": reason[:50],
        "detail": {k: v for k, v in detail.items() if v not in (None, "")},
    }


def _tool(parsed: ParsedText, tag: int) -> ToolCall:
    if not 0 <= tag < len(parsed.tools):
        raise EditError(
            f"there is no tag {tag + 1} (the answer has {len(parsed.tools)}); reload the page"
        )
    return parsed.tools[tag]


def remap_marks(
    old: ParsedText, new: ParsedText, marks: Sequence[str], mark: str | None
) -> list[str]:
    """Carry each card's mark over to the new text: tags whose exact bytes are still there (in
    the same order) keep theirs; new or rewritten tags get ``mark``."""
    padded = list(marks)[: len(old.tools)]
    padded += [""] * (len(old.tools) - len(padded))
    out = [mark or ""] * len(new.tools)
    for a, b in _matched(old, new):
        out[b] = padded[a]
    return out


def _matched(old: ParsedText, new: ParsedText) -> list[tuple[int, int]]:
    """Pairs (old index, new index) of tags whose bytes did not change."""
    matcher = difflib.SequenceMatcher(
        None, [t.raw for t in old.tools], [t.raw for t in new.tools], autojunk=False
    )
    return [
        (block.a + k, block.b + k)
        for block in matcher.get_matching_blocks()
        for k in range(block.size)
    ]


def _unmatched(old: ParsedText, new: ParsedText) -> list[int]:
    """New indices of the tags that are new or rewritten."""
    seen = {b for _, b in _matched(old, new)}
    return [i for i in range(len(new.tools)) if i not in seen] or [len(new.tools) - 1]


def _result(old: ParsedText, text: str, marks: Sequence[str], mark: str, dec: dict) -> Edit:
    new = parse(text, old.syntax)
    return Edit(text=text, decision=dec, marks=remap_marks(old, new, marks, mark))


def _check_reason(reason: str, allowed: Sequence[tuple[str, str]], note: str) -> None:
    if reason not in {code for code, _ in allowed}:
        raise EditError("choose a reason: " + ", ".join(label for _, label in allowed))
    if reason == "other" and not note.strip():
        raise EditError("say why in the note when the reason is Other")


# --------------------------------------------------------------------------- edits


def keep(parsed: ParsedText, tag: int, marks: Sequence[str]) -> Edit:
    tool = _tool(parsed, tag)
    out = list(marks)[: len(parsed.tools)]
    out += [""] * (len(parsed.tools) - len(out))
    out[tag] = out[tag] or "kept"  # a fixed or moved call stays marked as such
    return Edit(text=parsed.text, decision=_decision(tool, tag, "kept"), marks=out)


def remove(
    parsed: ParsedText, tag: int, marks: Sequence[str], *, reason: str, note: str = ""
) -> Edit:
    tool = _tool(parsed, tag)
    _check_reason(reason, REMOVE_REASONS, note)
    text = remove_tag(parsed, tag, tidy=True)
    dec = _decision(tool, tag, "removed", reason, note=note.strip(), payload=tool.payload_text)
    return _result(parsed, text, marks, "", dec)


def retool(parsed: ParsedText, tag: int, marks: Sequence[str], *, tool_name: str) -> Edit:
    tool = _tool(parsed, tag)
    if not tool_name:
        raise EditError("choose the new tool")
    if tool.data is None:
        raise EditError("this payload cannot be read; fix it first (Edit, raw payload)")
    if (tool.tool_name or "").lower() == tool_name.lower():
        raise EditError(f"the tag already uses {tool_name}")
    try:
        text = set_tool(parsed, tag, tool_name)
    except TagEditError as exc:
        raise EditError(str(exc)) from None
    dec = _decision(tool, tag, "retooled", "wrong_tool", tool_name=tool.tool_name, to=tool_name)
    return _result(parsed, text, marks, "retooled", dec)


def move(parsed: ParsedText, tag: int, marks: Sequence[str], *, direction: str) -> Edit:
    tool = _tool(parsed, tag)
    if direction not in ("before", "after"):
        raise EditError("move before or after")
    text = move_tag(parsed, tag, direction)  # type: ignore[arg-type]
    if text == parsed.text:
        raise EditError(f"there is no paragraph boundary {direction} this tag to move it to")
    dec = _decision(tool, tag, "moved", "misplaced", direction=direction)
    edit = _result(parsed, text, marks, "moved", dec)
    new = parse(text, parsed.syntax)
    same = [i for i, t in enumerate(new.tools) if t.raw == tool.raw]
    edit.marks[min(same, key=lambda i: abs(i - tag))] = "moved"
    return edit


def fix_raw(
    parsed: ParsedText, tag: int, marks: Sequence[str], *, payload: str, reason: str = ""
) -> Edit:
    """Replace the payload text as typed (for a payload the fields cannot express)."""
    tool = _tool(parsed, tag)
    payload = payload.strip()
    if not payload:
        raise EditError("the payload is empty; remove the tag instead")
    if payload == tool.payload_text and tool.closed:
        raise EditError("the payload is unchanged")
    text = replace_payload(parsed, tag, payload)
    reason = reason or ("malformed_syntax" if tool.payload is None else "wrong_params")
    dec = _decision(tool, tag, "fixed", reason, before=tool.payload_text, after=payload)
    return _result(parsed, text, marks, "fixed", dec)


_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off", ""}


def convert_value(raw: str, type_name: str) -> Any:
    """A form value as the parameter's type (``int``, ``float``, ``bool``, ``str``; anything
    else is read as JSON, or kept as text when it is not JSON)."""
    name = (type_name or "").strip().lower()
    if name in ("int", "integer"):
        try:
            return int(raw.strip())
        except ValueError:
            raise EditError(f"{raw!r} is not a whole number") from None
    if name in ("float", "number"):
        try:
            return float(raw.strip())
        except ValueError:
            raise EditError(f"{raw!r} is not a number") from None
    if name in ("bool", "boolean"):
        value = raw.strip().lower()
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
        raise EditError(f"{raw!r} is not true or false")
    if name in ("str", "string", "text"):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        if name.startswith(("list", "array", "dict", "object")):
            raise EditError(f"{raw!r} is not valid JSON") from None
        return raw


def display_value(value: Any, type_name: str) -> str:
    """The inverse of ``convert_value`` for prefilling a form field."""
    if isinstance(value, str) and (type_name or "").lower() in ("str", "string", "text", ""):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False)


_SCALAR = (
    r"""(?P<v>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|-?\d+(?:\.\d+)?|true|false|True|False)"""
)


def guess(payload_text: str, key: str) -> Any:
    """Best effort: the scalar value of ``key`` in a payload that does not parse (so the fix
    form of a malformed call can be prefilled). ``None`` when not found."""
    m = re.search(rf"""["']{re.escape(key)}["']\s*:\s*{_SCALAR}""", payload_text)
    if m is None:
        return None
    literal = m.group("v")
    if literal[0] == "'":
        literal = '"' + literal[1:-1].replace('"', '\\"') + '"'
    try:
        return json.loads(literal.replace("True", "true").replace("False", "false"))
    except ValueError:
        return literal.strip("\"'")


def tool_name_of(tool: ToolCall) -> str:
    """The tool a call names, read from a malformed payload too."""
    if tool.tool_name:
        return tool.tool_name
    value = guess(tool.payload_text, NAME_KEY[tool.syntax])
    return value if isinstance(value, str) else ""


def fix_fields(
    parsed: ParsedText,
    tag: int,
    marks: Sequence[str],
    *,
    specs: Sequence[Mapping[str, Any]],
    values: Mapping[str, str],
    description: str,
    reason: str = "",
) -> Edit:
    """Rebuild the payload from a form built on the tool's parameter schema. Keys the schema
    does not list are dropped; blank optional parameters are left out. A payload that does
    not parse is rebuilt from scratch (the tool name read from it as well as possible)."""
    tool = _tool(parsed, tag)
    data = copy.deepcopy(tool.data) if tool.data is not None else {}
    name = tool_name_of(tool)
    if not name:
        raise EditError("the tag names no tool; change the tool or edit the raw payload")
    params: dict[str, Any] = {}
    for spec in specs:
        pname = str(spec.get("name", ""))
        raw = values.get(pname, "")
        if raw == "" and not spec.get("required", True):
            continue
        params[pname] = convert_value(raw, str(spec.get("type", "")))
    if not data:
        data = make_payload(parsed.syntax, name, description, params)
    else:
        data["description"] = description
        data["params"] = params
    try:
        text = replace_payload(parsed, tag, data)
    except TagEditError as exc:
        raise EditError(str(exc)) from None
    if text == parsed.text:
        raise EditError("nothing changed in this tag")
    if not reason:
        reason = "malformed_syntax" if tool.payload is None or not tool.closed else "wrong_params"
    new_payload = parse(text, parsed.syntax).tools[tag].payload_text
    dec = _decision(tool, tag, "fixed", reason, before=tool.payload_text, after=new_payload)
    return _result(parsed, text, marks, "fixed", dec)


def boundaries(parsed: ParsedText) -> list[tuple[int, str]]:
    """Where a new tag may go: the start, every blank line outside tags, and the end, as
    ``(offset, label)`` with a snippet of the text just before."""
    text = parsed.text
    out: list[tuple[int, str]] = [(0, "At the start")]
    last = len(text.rstrip())
    for segment in parsed.segments:
        if isinstance(segment, TextSegment) and "\n" in segment.text:
            for m in _BREAK.finditer(segment.text):
                at = segment.start + segment.text.index("\n", m.start())
                if at == 0 or at >= last:
                    continue
                before = " ".join(text[max(0, at - 60) : at].split())
                out.append((at, f"After “…{before[-48:]}”"))
    out.append((len(text), "At the end"))
    return out


def insert(
    parsed: ParsedText,
    marks: Sequence[str],
    *,
    at: int,
    tool_name: str,
    description: str,
    params: str,
) -> Edit:
    """Insert a new call as its own paragraph at the boundary ``at`` (see ``boundaries``)."""
    if not tool_name:
        raise EditError("choose the tool of the new call")
    if at not in {offset for offset, _ in boundaries(parsed)}:
        raise EditError("choose where the new call goes")
    try:
        values = json.loads(params or "{}")
    except ValueError:
        raise EditError('the parameters must be a JSON object, e.g. {"img_index": 0}') from None
    if not isinstance(values, dict):
        raise EditError('the parameters must be a JSON object, e.g. {"img_index": 0}')
    payload = make_payload(parsed.syntax, tool_name, description, values)
    direction: Direction = "before" if at == 0 else "after"
    try:
        text = insert_tag(parsed, payload, at=at, direction=direction)
    except TagEditError as exc:
        raise EditError(str(exc)) from None
    new = parse(text, parsed.syntax)
    new_marks = remap_marks(parsed, new, marks, "inserted")
    index = _unmatched(parsed, new)[0]
    dec = _decision(
        None, index, "inserted", tool_name=tool_name, after=new.tools[index].payload_text
    )
    return Edit(text=text, decision=dec, marks=new_marks)
