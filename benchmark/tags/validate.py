"""Check parsed tool calls against a toolset and the benchmarks' rules.

``validate(parsed, toolset, ...)`` returns the parse findings plus these, sorted by position:

Payload and parameters (both syntaxes)
    ``unknown_tool``, ``missing_param`` (also for a missing ``tool_name``/``source``,
    ``description`` or ``params`` key), ``unknown_param`` (also for unexpected top-level keys),
    ``bad_param_type``, ``empty_prompt`` (a blank text parameter or description),
    ``code_syntax`` (a code parameter that ``compile()`` rejects; Markdown fences are stripped
    first, as LLM-I's ``sanitize_code`` does; the code is never run).

Image indices
    ATP-Bench: Reference and Edit index the item's document images, so valid indices are
    ``0 .. image_count - 1`` (checked when ``image_count`` is given). Using the same document
    image in two Reference calls is ``reference_reused``.
    LLM-I: an edit indexes the input images, then the images of earlier tags in the answer,
    so for the k-th tag (0-based, counting closed tags only, as LLM-I's tag regex does) valid
    indices are ``0 .. input_images + k - 1``.

Image-number constraint (LLM-I, when ``image_num`` is given)
    ``image_count_constraint`` with ``score`` = R_rule when R_rule < 1. N_gen counts the
    closed tags whose payload could be read, i.e. the tags LLM-I would dispatch.

Placement (ATP-Bench §4.2; on by default for ``atp`` only, since LLM-I places tags inline)
    ``mid_sentence``: a tag must sit at a paragraph boundary. Its *before* side is at a
    boundary when the text before it ends with a blank line (two line breaks with only
    spaces/tabs between them, plus any spaces), or when only whitespace precedes it in the
    answer; its *after* side when the text after it starts with a blank line, or when only
    whitespace follows it. Tags separated only by whitespace without a blank line count as one
    block, judged by the block's outer sides. Severity is ``error`` when text shares a line
    with the tag and ``warning`` when the tag has its own line but no blank line separates it
    from the paragraph.
    ``figure_phrase``: a phrase that introduces or points at a figure ("as shown in the image
    below", "the chart above", "see the figure", "here is a photo of", "this diagram shows",
    ...) in the paragraph directly before or after a tag (up to 600 characters, not crossing
    another tag). The finding spans the phrase; "above" phrases are attributed to the tag
    before them, others to the tag after them.
"""

from __future__ import annotations

import math
import re
import reprlib
import warnings
from collections.abc import Mapping
from functools import cache, lru_cache
from typing import Any

from .model import (
    BAD_PARAM_TYPE,
    CODE_SYNTAX,
    EMPTY_PROMPT,
    ERROR,
    FIGURE_PHRASE,
    IMAGE_COUNT_CONSTRAINT,
    IMG_INDEX_OUT_OF_RANGE,
    MID_SENTENCE,
    MISSING_PARAM,
    REFERENCE_REUSED,
    UNKNOWN_PARAM,
    UNKNOWN_TOOL,
    WARNING,
    Finding,
    ParsedText,
    TextSegment,
    ToolCall,
)
from .toolsets import Toolset, builtin_toolset, normalize_toolset

__all__ = ["ImageNum", "parse_image_num", "rule_score", "validate"]

ImageNum = int | float | str

#: LLM-I's penalty per extra image (paper eq. 1, alpha = 0.3).
ALPHA = 0.3


# --------------------------------------------------------------------------- image number


def parse_image_num(value: ImageNum) -> int | float:
    """Normalize an image-number constraint: -1 (none allowed), 0 (unconstrained), n > 0
    (exactly n), or ``math.inf`` (at least one). ``99``, ``"inf"`` and ``"Inf"`` mean
    ``math.inf``, as in LLM-I's reward code (so "exactly 99" cannot be expressed)."""
    if isinstance(value, bool):
        raise ValueError(f"invalid image-number constraint {value!r}")
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("inf", "+inf", "infinity"):
            return math.inf
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"invalid image-number constraint {value!r}") from None
    if isinstance(value, float):
        if math.isinf(value) and value > 0:
            return math.inf
        if not value.is_integer():
            raise ValueError(f"invalid image-number constraint {value!r}")
        value = int(value)
    if not isinstance(value, int) or value < -1:
        raise ValueError(f"invalid image-number constraint {value!r}")
    return math.inf if value == 99 else value


def rule_score(n_gen: int, image_num: ImageNum) -> float:
    """LLM-I's rule reward R_rule (paper §2.2.2, eq. 1).

    Binary for -1 (1 only with no images) and for "at least one" (1 only with one or more);
    always 1 when unconstrained (0); for exactly n: N_gen / n up to n, then
    max(0, 1 - 0.3 * (N_gen - n)).
    """
    if n_gen < 0:
        raise ValueError("n_gen must be >= 0")
    n_req = parse_image_num(image_num)
    if n_req == -1:
        return 1.0 if n_gen == 0 else 0.0
    if n_req == 0:
        return 1.0
    if math.isinf(n_req):
        return 1.0 if n_gen > 0 else 0.0
    if n_gen <= n_req:
        return round(n_gen / n_req, 10)
    return round(max(0.0, 1.0 - ALPHA * (n_gen - n_req)), 10)


def _describe_constraint(n_req: int | float) -> str:
    if n_req == -1:
        return "no images"
    if math.isinf(n_req):
        return "at least one image"
    return f"exactly {int(n_req)} image{'s' if n_req != 1 else ''}"


# --------------------------------------------------------------------------- types


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_BASE_TYPES: dict[str, Any] = {
    "str": lambda v: isinstance(v, str),
    "string": lambda v: isinstance(v, str),
    "text": lambda v: isinstance(v, str),
    "int": _is_int,
    "integer": _is_int,
    "float": _is_number,
    "number": _is_number,
    "bool": lambda v: isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "dict": lambda v: isinstance(v, dict),
    "object": lambda v: isinstance(v, dict),
}


def _type_ok(value: Any, type_name: str) -> bool:
    """Whether ``value`` fits ``type_name``; unknown type names always fit."""
    name = type_name.strip().lower()
    if not name:
        return True
    if name in _BASE_TYPES:
        return bool(_BASE_TYPES[name](value))
    if name in ("list", "array") or name.startswith(("list[", "array[")):
        if not isinstance(value, list):
            return False
        inner = name[name.find("[") + 1 : -1] if "[" in name and name.endswith("]") else ""
        check = _BASE_TYPES.get(inner.strip())
        return check is None or all(check(item) for item in value)
    return True


def _type_label(value: Any) -> str:
    return "null" if value is None else type(value).__name__


_PREVIEW = reprlib.Repr()
_PREVIEW.maxlevel = 2
_PREVIEW.maxstring = 60
_PREVIEW.maxother = 60


def _preview(value: Any) -> str:
    """A short repr that stays short and safe on huge or deeply nested values."""
    try:
        return _PREVIEW.repr(value)
    except Exception:
        return f"<{type(value).__name__}>"


def _role(spec: Mapping[str, Any]) -> str:
    role = spec.get("role")
    if isinstance(role, str) and role:
        return role
    name = spec.get("name")
    if name == "img_index":
        return "image_index"
    if name == "code":
        return "code"
    if str(spec.get("type", "")).lower() in ("str", "string", "text"):
        return "text"
    return "none"


# --------------------------------------------------------------------------- code


_FENCE_OPEN = re.compile(r"\A```(?:python|py)?", re.IGNORECASE)
_FENCE_CLOSE = re.compile(r"```\Z")


@lru_cache(maxsize=2048)
def _compile_error(code: str) -> tuple[str, int, int] | None:
    source = _FENCE_CLOSE.sub("", _FENCE_OPEN.sub("", code.strip()).strip())
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(source, "<code>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return exc.msg, exc.lineno or 0, exc.offset or 0
    except Exception as exc:  # ValueError (null bytes), RecursionError, MemoryError
        return (str(exc).splitlines() or [type(exc).__name__])[0][:200], 0, 0
    return None


# --------------------------------------------------------------------------- locating values


_COLON = re.compile(r"\s*:\s*")
_STRING_VALUE = {
    '"': re.compile(r'"(?:[^"\\]++|\\[\s\S])*+"'),
    "'": re.compile(r"'(?:[^'\\]++|\\[\s\S])*+'"),
}
_SCALAR_VALUE = re.compile(r"[^,}\]\s]+")


def _find_key(text: str, key: str, lo: int, hi: int) -> tuple[int, int] | None:
    """First ``"key":`` or ``'key':`` in ``text[lo:hi]``: (start of key, start of value)."""
    best: tuple[int, int] | None = None
    for quote in ('"', "'"):
        needle = quote + key + quote
        i = text.find(needle, lo, hi)
        while i >= 0 and (best is None or i < best[0]):
            colon = _COLON.match(text, i + len(needle), hi)
            if colon is not None:
                best = (i, colon.end())
                break
            i = text.find(needle, i + 1, hi)
    return best


def _locate(text: str, tool: ToolCall, key: str, in_params: bool) -> tuple[int, int]:
    """Best-effort span of ``key: value`` inside the tag's payload, else the whole tag."""
    lo, hi = tool.payload_start, tool.payload_end
    if in_params:
        params = _find_key(text, "params", lo, hi)
        if params is None:
            return tool.start, tool.end
        lo = params[1]
    found = _find_key(text, key, lo, hi)
    if found is None:
        return tool.start, tool.end
    start, after = found
    if after < hi:
        first = text[after]
        if first in _STRING_VALUE:
            value = _STRING_VALUE[first].match(text, after, hi)
        elif first not in "{[":
            value = _SCALAR_VALUE.match(text, after, hi)
        else:
            value = None
        if value is not None:
            return start, value.end()
    return start, after


# --------------------------------------------------------------------------- placement

_HWS_NL = " \t\r\n"
_WINDOW = 600

_NOUN = (
    r"(?:image|picture|photo(?:graph)?|figure|diagram|chart|graph|plot|illustration|"
    r"visuali[sz]ation|visual|screenshot|drawing|rendering|infographic|mock-?up|map)s?"
)
_DET = r"(?:the|this|that|these|those|our|my)"
_WHERE = r"(?:\s+(?:below|above|here))?"
_FIGURE_PATTERNS = "|".join(
    [
        rf"\bas\s+(?:is\s+)?(?:shown|illustrated|depicted|pictured|displayed|visuali[sz]ed)"
        rf"\s+(?:below|above|here|(?:in|on)\s+{_DET}\s+(?:\w+\s+)?{_NOUN}{_WHERE})\b",
        rf"\bas\s+(?:you\s+can\s+|we\s+can\s+)?see(?:n)?\s+"
        rf"(?:below|above|here|(?:in|on)\s+{_DET}\s+(?:\w+\s+)?{_NOUN}{_WHERE})\b",
        r"\b(?:shown|illustrated|depicted|pictured|displayed|visuali[sz]ed)\s+"
        r"(?:below|above|here)\b",
        rf"\b{_DET}\s+{_NOUN}\s+(?:below|above)\b",
        rf"\bthe\s+following\s+{_NOUN}\b",
        rf"\b(?:see|refer\s+to|look\s+at|take\s+a\s+look\s+at|check\s+out|view)\s+"
        rf"(?:{_DET}|an?)\s+{_NOUN}\b",
        rf"\b(?:here|below|above)\s+(?:is|are)\s+(?:an?\s+|the\s+|some\s+)?{_NOUN}\b",
        rf"\b(?:this|the\s+following)\s+{_NOUN}\s+"
        r"(?:shows|illustrates|depicts|demonstrates|highlights)\b",
    ]
)
# The patterns are lower case. Windows are lower-cased and searched case-sensitively, which is
# about 50 times faster than IGNORECASE; a window whose length changes when lower-cased (a few
# non-ASCII letters do) is searched with IGNORECASE instead, so positions stay exact.
_FIGURE_PHRASE = re.compile(_FIGURE_PATTERNS)
_FIGURE_PHRASE_ANY_CASE = re.compile(_FIGURE_PATTERNS, re.IGNORECASE)
# Every pattern contains one of these, so a window without any of them cannot match, and a
# phrase never reaches further than _ANCHOR_REACH characters from its keyword.
_ANCHOR_REACH = 90
_FIGURE_KEYWORDS = (
    "image", "pictur", "photo", "figure", "diagram", "chart", "graph", "plot", "illustrat",
    "visual", "screenshot", "drawing", "rendering", "infographic", "mock", "map", "shown",
    "depict", "display", "see",
)  # fmt: skip


def _figure_phrases(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Spans of figure-introducing phrases in ``text[start:end]``.

    The full pattern only runs on the stretches around keyword hits (found with ``str.find``),
    merged where they overlap; a window without any keyword costs a few ``find`` calls."""
    window = text[start:end]
    low = window.lower()
    if len(low) != len(window):
        return [
            (start + m.start(), start + m.end()) for m in _FIGURE_PHRASE_ANY_CASE.finditer(window)
        ]
    if not any(keyword in low for keyword in _FIGURE_KEYWORDS):
        return []
    hits = []
    for keyword in _FIGURE_KEYWORDS:
        i = low.find(keyword)
        while i >= 0:
            hits.append(i)
            i = low.find(keyword, i + 1)
    hits.sort()
    n = len(low)
    regions: list[list[int]] = []  # merged [lo, hi) stretches around the hits
    for i in hits:
        lo, hi = max(0, i - _ANCHOR_REACH), min(n, i + _ANCHOR_REACH)
        if regions and lo <= regions[-1][1]:
            regions[-1][1] = max(regions[-1][1], hi)
        else:
            regions.append([lo, hi])
    spans: list[tuple[int, int]] = []
    for lo, hi in regions:
        while hi < n and low[hi].isalnum():  # do not end a stretch inside a word
            hi += 1
        for m in _FIGURE_PHRASE.finditer(low, lo, hi):
            if not spans or m.start() >= spans[-1][1]:
                spans.append((m.start(), m.end()))
    return [(start + a, start + b) for a, b in spans]


def _last_break_end(text: str, lo: int, hi: int) -> int | None:
    """End of the last blank-line run inside ``text[lo:hi]`` (None if there is none)."""
    j = text.rfind("\n", lo, hi)
    while j >= 0:
        i = text.rfind("\n", lo, j)
        if i < 0:
            return None
        if not text[i + 1 : j].strip(" \t\r"):
            return j + 1
        j = i
    return None


def _first_break_start(text: str, lo: int, hi: int) -> int | None:
    """Start of the first blank-line run inside ``text[lo:hi]`` (None if there is none)."""
    i = text.find("\n", lo, hi)
    while i >= 0:
        j = text.find("\n", i + 1, hi)
        if j < 0:
            return None
        if not text[i + 1 : j].strip(" \t\r"):
            k = i
            while k > lo and text[k - 1] in " \t\r":
                k -= 1
            return k
        i = j
    return None


def paragraph_sides(parsed: ParsedText) -> tuple[list[tuple[bool, bool]], list[tuple[bool, bool]]]:
    """Per tag, for its before side and its after side: (at a paragraph boundary, separated
    from the neighbouring text by at least a line break). See the module docstring."""
    segments, tools = parsed.segments, parsed.tools
    last = len(segments) - 1
    before: list[tuple[bool, bool]] = []
    for tool in tools:
        k = tool.segment_pos
        if k == 0:
            before.append((True, True))
            continue
        prev = segments[k - 1]
        if isinstance(prev, ToolCall):
            before.append(before[prev.index])
            continue
        core = prev.text.rstrip(_HWS_NL)
        tail = prev.text[len(core) :]
        if tail.count("\n") >= 2 or (not core and k - 1 == 0):
            before.append((True, True))
        elif not core:
            # whitespace-only text between two tags: the block's outer side decides
            before.append(before[tool.index - 1])
        else:
            before.append((False, "\n" in tail))
    after: list[tuple[bool, bool]] = [(True, True)] * len(tools)
    for tool in reversed(tools):
        k = tool.segment_pos
        if k == last:
            continue
        nxt = segments[k + 1]
        if isinstance(nxt, ToolCall):
            after[tool.index] = after[nxt.index]
            continue
        core = nxt.text.lstrip(_HWS_NL)
        lead = nxt.text[: len(nxt.text) - len(core)]
        if lead.count("\n") >= 2 or (not core and k + 1 == last):
            after[tool.index] = (True, True)
        elif not core:
            after[tool.index] = after[tool.index + 1]
        else:
            after[tool.index] = (False, "\n" in lead)
    return before, after


def _snippet(text: str, start: int, end: int) -> str:
    piece = " ".join(text[start:end].split())
    return piece if len(piece) <= 40 else (piece[:37] + "...")


def _check_mid_sentence(parsed: ParsedText, out: list[Finding]) -> None:
    if not parsed.tools:
        return
    text = parsed.text
    before, after = paragraph_sides(parsed)
    for tool in parsed.tools:
        (b_ok, b_line), (a_ok, a_line) = before[tool.index], after[tool.index]
        if b_ok and a_ok:
            continue
        problems = []
        if not b_ok:
            where = "on the same line" if not b_line else "with no blank line"
            problems.append(
                f"text runs into it from before ({where}: "
                f"'{_snippet(text, max(0, tool.start - 40), tool.start)}')"
            )
        if not a_ok:
            where = "on the same line" if not a_line else "with no blank line"
            problems.append(
                f"text continues right after it ({where}: "
                f"'{_snippet(text, tool.end, tool.end + 40)}')"
            )
        same_line = (not b_ok and not b_line) or (not a_ok and not a_line)
        out.append(
            Finding(
                MID_SENTENCE,
                f"tag {tool.index} is not at a paragraph boundary: {'; '.join(problems)}. "
                "Put it on its own paragraph, after the text it supports",
                tool.start,
                tool.end,
                tool.index,
                severity=ERROR if same_line else WARNING,
            ),
        )


def _check_figure_phrases(parsed: ParsedText, out: list[Finding]) -> None:
    segments = parsed.segments
    candidates: dict[tuple[int, int], list[tuple[int, str]]] = {}
    for tool in parsed.tools:
        k = tool.segment_pos
        if k > 0 and isinstance(segments[k - 1], TextSegment):
            seg = segments[k - 1]
            assert isinstance(seg, TextSegment)
            core_end = len(seg.text.rstrip())
            lo = max(0, core_end - _WINDOW)
            start = _last_break_end(seg.text, lo, core_end)
            if start is None:
                start = lo
            for a, b in _figure_phrases(seg.text, start, core_end):
                candidates.setdefault((seg.start + a, seg.start + b), []).append(
                    (tool.index, "before")
                )
        if k + 1 < len(segments) and isinstance(segments[k + 1], TextSegment):
            seg = segments[k + 1]
            assert isinstance(seg, TextSegment)
            lead = len(seg.text) - len(seg.text.lstrip())
            hi = min(len(seg.text), lead + _WINDOW)
            end = _first_break_start(seg.text, lead, hi)
            if end is None:
                end = hi
            for a, b in _figure_phrases(seg.text, lead, end):
                candidates.setdefault((seg.start + a, seg.start + b), []).append(
                    (tool.index, "after")
                )
    text = parsed.text
    for (start, end), tags in candidates.items():
        phrase = text[start:end]
        looks_back = "above" in phrase.lower()
        preferred = "after" if looks_back else "before"
        tag = next((t for t, side in tags if side == preferred), tags[0][0])
        out.append(
            Finding(
                FIGURE_PHRASE,
                f"'{' '.join(phrase.split())}' introduces a figure next to tag {tag}; the "
                "ground-truth rules forbid figure-introducing phrases, so the text must read "
                "on its own without pointing at the image",
                start,
                end,
                tag,
            )
        )


# --------------------------------------------------------------------------- per-tag checks

_MAX_UNKNOWN = 10  # unknown keys reported one by one per tag; the rest are summed up


class _Checker:
    def __init__(
        self,
        parsed: ParsedText,
        tools: dict[str, list[dict[str, Any]]],
        image_count: int | None,
        input_images: int,
    ) -> None:
        self.parsed = parsed
        self.text = parsed.text
        self.tools = tools
        self.image_count = image_count
        self.input_images = input_images
        self.out: list[Finding] = []
        self.references: dict[int, int] = {}
        self.closed_before = 0

    def add(self, code: str, message: str, span: tuple[int, int], tool: ToolCall) -> None:
        self.out.append(Finding(code, message, span[0], span[1], tool.index))

    def check(self, tool: ToolCall) -> None:
        data = tool.data
        k = self.closed_before
        if tool.closed:
            self.closed_before += 1
        if data is None:
            return
        name_key = tool.name_key
        whole = (tool.start, tool.end)
        # top-level keys
        extra = [key for key in data if key not in (name_key, "description", "params")]
        for key in extra[:_MAX_UNKNOWN]:
            self.add(
                UNKNOWN_PARAM,
                f"tag {tool.index}: unexpected top-level key {_preview(key)}; a tag holds "
                f"only {name_key}, description and params",
                _locate(self.text, tool, str(key), False),
                tool,
            )
        if len(extra) > _MAX_UNKNOWN:
            self.add(
                UNKNOWN_PARAM,
                f"tag {tool.index}: {len(extra) - _MAX_UNKNOWN} more unexpected top-level keys",
                (tool.payload_start, tool.payload_end),
                tool,
            )
        description = data.get("description")
        if "description" not in data:
            self.add(
                MISSING_PARAM,
                f"tag {tool.index}: no 'description' key (the image's title is required "
                "next to the tool and its params)",
                whole,
                tool,
            )
        elif not isinstance(description, str):
            self.add(
                BAD_PARAM_TYPE,
                f"tag {tool.index}: description must be a string, not {_type_label(description)}",
                _locate(self.text, tool, "description", False),
                tool,
            )
        elif not description.strip():
            self.add(
                EMPTY_PROMPT,
                f"tag {tool.index}: the description is empty",
                _locate(self.text, tool, "description", False),
                tool,
            )
        # tool name
        name = data.get(name_key)
        specs: list[dict[str, Any]] | None = None
        if name_key not in data:
            self.add(MISSING_PARAM, f"tag {tool.index}: no {name_key!r} key", whole, tool)
        elif not isinstance(name, str):
            self.add(
                BAD_PARAM_TYPE,
                f"tag {tool.index}: {name_key} must be a string, not {_type_label(name)}",
                _locate(self.text, tool, name_key, False),
                tool,
            )
        else:
            specs = self.tools.get(name.lower())
            if specs is None:
                known = ", ".join(sorted(self.tools)) or "none"
                self.add(
                    UNKNOWN_TOOL,
                    f"tag {tool.index}: unknown tool {_preview(name)} (known: {known})",
                    _locate(self.text, tool, name_key, False),
                    tool,
                )
        # params
        params = data.get("params")
        if "params" not in data:
            self.add(MISSING_PARAM, f"tag {tool.index}: no 'params' key", whole, tool)
            return
        if not isinstance(params, dict):
            self.add(
                BAD_PARAM_TYPE,
                f"tag {tool.index}: params must be an object/dict, not {_type_label(params)}",
                _locate(self.text, tool, "params", False),
                tool,
            )
            return
        if specs is None:
            return
        assert isinstance(name, str)
        self.check_params(tool, name, params, specs, k)

    def check_params(
        self,
        tool: ToolCall,
        name: str,
        params: dict[Any, Any],
        specs: list[dict[str, Any]],
        k: int,
    ) -> None:
        known = {spec.get("name") for spec in specs}
        unknown = [key for key in params if key not in known]
        expected = ", ".join(str(n) for n in known) or "none"
        for key in unknown[:_MAX_UNKNOWN]:
            self.add(
                UNKNOWN_PARAM,
                f"tag {tool.index}: {name} has no parameter {_preview(key)} (expected: {expected})",
                _locate(self.text, tool, str(key), True),
                tool,
            )
        if len(unknown) > _MAX_UNKNOWN:
            self.add(
                UNKNOWN_PARAM,
                f"tag {tool.index}: {len(unknown) - _MAX_UNKNOWN} more unknown parameters",
                (tool.payload_start, tool.payload_end),
                tool,
            )
        for spec in specs:
            pname = spec.get("name")
            if pname not in params:
                if spec.get("required", True):
                    self.add(
                        MISSING_PARAM,
                        f"tag {tool.index}: {name} needs the parameter {pname!r}",
                        _locate(self.text, tool, "params", False),
                        tool,
                    )
                continue
            value = params[pname]
            span = _locate(self.text, tool, str(pname), True)
            type_name = str(spec.get("type") or "")
            if not _type_ok(value, type_name):
                self.add(
                    BAD_PARAM_TYPE,
                    f"tag {tool.index}: {name}.{pname} must be {type_name}, not "
                    f"{_type_label(value)} ({_preview(value)})",
                    span,
                    tool,
                )
                continue
            role = _role(spec)
            if role == "image_index" and _is_int(value):
                self.check_image_index(tool, name, str(pname), value, span, k)
            elif role in ("text", "code") and isinstance(value, str) and not value.strip():
                self.add(EMPTY_PROMPT, f"tag {tool.index}: {name}.{pname} is empty", span, tool)
            elif role == "code" and isinstance(value, str):
                error = _compile_error(value)
                if error is not None:
                    message, line, col = error
                    where = f" (line {line}, column {col} of the code)" if line else ""
                    self.add(
                        CODE_SYNTAX,
                        f"tag {tool.index}: {name}.{pname} is not valid Python: {message}{where}",
                        span,
                        tool,
                    )

    def check_image_index(
        self, tool: ToolCall, name: str, pname: str, value: int, span: tuple[int, int], k: int
    ) -> None:
        if self.parsed.syntax == "atp":
            if self.image_count is not None and not 0 <= value < self.image_count:
                valid = f"0-{self.image_count - 1}" if self.image_count > 0 else "none: no images"
                self.add(
                    IMG_INDEX_OUT_OF_RANGE,
                    f"tag {tool.index}: {name}.{pname} = {value}, but the item has "
                    f"{self.image_count} image{'s' if self.image_count != 1 else ''} "
                    f"(valid: {valid})",
                    span,
                    tool,
                )
            if name.lower() == "reference":
                first = self.references.setdefault(value, tool.index)
                if first != tool.index:
                    self.add(
                        REFERENCE_REUSED,
                        f"tag {tool.index}: Reference to image {value} again (tag {first} "
                        "already shows it); each document image may be referenced once",
                        span,
                        tool,
                    )
            return
        available = self.input_images + k
        if not 0 <= value < available:
            valid = f"0-{available - 1}" if available > 0 else "none: no image exists yet"
            self.add(
                IMG_INDEX_OUT_OF_RANGE,
                f"tag {tool.index}: {name}.{pname} = {value}, but only {available} image"
                f"{'s' if available != 1 else ''} exist at this point ({self.input_images} "
                f"input + {k} from earlier tags; valid: {valid})",
                span,
                tool,
            )


# --------------------------------------------------------------------------- entry point


@cache
def _builtin(syntax: str) -> dict[str, list[dict[str, Any]]]:
    return normalize_toolset(builtin_toolset(syntax))  # type: ignore[arg-type]


def validate(
    parsed: ParsedText,
    toolset: Toolset | None = None,
    *,
    image_count: int | None = None,
    input_images: int = 0,
    image_num: ImageNum | None = None,
    placement: bool | None = None,
) -> list[Finding]:
    """All findings for a parsed answer (parse findings included), sorted by position.

    ``toolset`` is ``{tool_name_lower: {"params": [{"name", "type", "required"}]}}``; ``None``
    uses the built-in toolset of ``parsed.syntax``. ``image_count`` is the ATP-Bench item's
    number of document images (``None``: indices are not range-checked); ``input_images``
    and ``image_num`` are LLM-I's input image count and image-number constraint.
    ``placement`` turns the ``mid_sentence`` and ``figure_phrase`` checks on or off (default:
    on for ATP-Bench, off for LLM-I). Raises only on invalid arguments (e.g. an
    ``image_num`` that is not -1, 0, n, 99 or inf), never because of the answer text.
    """
    n_req = parse_image_num(image_num) if image_num is not None else None
    if input_images < 0 or (image_count is not None and image_count < 0):
        raise ValueError("image counts must be >= 0")
    tools = normalize_toolset(toolset) if toolset is not None else _builtin(parsed.syntax)
    checker = _Checker(parsed, tools, image_count, input_images)
    for tool in parsed.tools:
        checker.check(tool)
    out = list(parsed.findings)
    out.extend(checker.out)
    if placement if placement is not None else parsed.syntax == "atp":
        _check_mid_sentence(parsed, out)
        _check_figure_phrases(parsed, out)
    if n_req is not None:
        _check_image_count(parsed, n_req, out)
    out.sort(key=lambda f: (f.start, f.end, f.code))
    return out


def _check_image_count(parsed: ParsedText, n_req: int | float, out: list[Finding]) -> None:
    counted = [tool for tool in parsed.tools if tool.closed and tool.payload is not None]
    n_gen = len(counted)
    score = rule_score(n_gen, n_req)
    if score >= 1.0:
        return
    if n_req > 0 and not math.isinf(n_req) and n_gen > n_req:
        extra = n_gen - int(n_req)
        formula = f"max(0, 1 - {ALPHA}*{extra}) = {score:g}"
        first_extra = counted[int(n_req)]
        start, end = first_extra.start, counted[-1].end
    else:
        if n_req > 0 and not math.isinf(n_req):
            formula = f"{n_gen}/{int(n_req)} = {score:g}"
        else:
            formula = f"{score:g} (binary)"
        start, end = 0, len(parsed.text)
    out.append(
        Finding(
            IMAGE_COUNT_CONSTRAINT,
            f"the answer has {n_gen} image tag{'s' if n_gen != 1 else ''} but the prompt "
            f"asks for {_describe_constraint(n_req)}: R_rule = {formula}",
            start,
            end,
            None,
            score=score,
        )
    )
