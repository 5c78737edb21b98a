"""The limits on what people send: one table, read by the item form, the API serializers and
parser, every import format and the bulk import. Pure Python: no Django.

A value at its limit is accepted; one over it is refused with a message naming the field (and,
in an import, the file and record). README's "Limits" section lists the same table.

Besides the sizes, two rules hold for every value, because no database column can keep
otherwise: no text may contain a NUL character (PostgreSQL refuses it in text and in jsonb),
and no JSON may nest deeper than ``JSON_DEPTH`` (deeper input would exhaust Python's stack).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Limit:
    """The most a field may hold, in ``unit``s."""

    field: str
    limit: int
    unit: str
    what: str


#: Item fields, by the name the form, the API and the import messages use.
EXTERNAL_ID = Limit("external_id", 255, "characters", "an item's id (its database column)")
QUERY = Limit(
    "query", 100_000, "characters", "the query, prompt, user request or question of an item"
)
EXPECTED_ANSWER = Limit("expected_answer", 100_000, "characters", "Agentic-MME's expected answer")
ACCEPTED_VARIANT = Limit(
    "accepted_variants", 100_000, "characters", "each accepted variant of the answer"
)
CRITERION = Limit("rubric", 100_000, "characters", "each LLM-I rubric criterion")
DOCUMENT = Limit("documents", 1_000_000, "characters", "each ATP-Bench document's text")
ANSWER = Limit(
    "answer", 1_000_000, "characters", "an answer's text (ground truth or a model's response)"
)
LABEL = Limit("category", 200, "characters", "category, intent and domain (database columns)")
#: The JSON text of one record (an imported record, the API's ``record``, a request body).
RECORD_BYTES = Limit(
    "record", 20_000_000, "bytes", "the JSON text of one record (import or API) or request body"
)
JSON_DEPTH = Limit("JSON depth", 64, "levels", "nesting of arrays and objects in any JSON")
#: A CSV cell can hold a record's responses or plans as JSON text, so it may be as long as a
#: record is.
CSV_CELL = Limit("CSV cell", RECORD_BYTES.limit, "characters", "one cell of an imported CSV file")

TABLE: tuple[Limit, ...] = (
    EXTERNAL_ID,
    QUERY,
    EXPECTED_ANSWER,
    ACCEPTED_VARIANT,
    CRITERION,
    DOCUMENT,
    ANSWER,
    LABEL,
    RECORD_BYTES,
    JSON_DEPTH,
    CSV_CELL,
)


def over(limit: Limit, value: str) -> str | None:
    """Why ``value`` does not fit ``limit`` ("is longer than N characters"), or None."""
    if len(value) > limit.limit:
        return f"is longer than {limit.limit:,} {limit.unit} ({len(value):,})"
    return None


# --------------------------------------------------------------------------- NUL characters

NUL_MESSAGE = "contains a NUL character (\\u0000), which cannot be stored"


def nul_path(value: Any, path: str = "") -> str | None:
    """The path (``a.b[2]``) of the first string in ``value`` (keys included) holding a NUL
    character, or None. Iterative, so any depth is safe."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, str):
            if "\x00" in node:
                return where or "value"
        elif isinstance(node, dict):
            for key, child in reversed(list(node.items())):
                name = f"{where}.{key}" if where else str(key)
                if isinstance(key, str) and "\x00" in key:
                    return name
                stack.append((child, name))
        elif isinstance(node, list | tuple):
            for i in range(len(node) - 1, -1, -1):
                stack.append((node[i], f"{where}[{i}]"))
    return None


def json_text_nul_path(text: str | bytes, value: Any, path: str = "") -> str | None:
    """``nul_path(value)`` for ``value`` parsed from ``text``, without walking it unless the
    text has the escape a NUL needs in JSON (a raw NUL byte is not valid JSON)."""
    needle = b"\\u0000" if isinstance(text, bytes) else "\\u0000"
    if needle not in text:  # type: ignore[operator]
        return None
    return nul_path(value, path)


# --------------------------------------------------------------------------- JSON depth

# A JSON string (unrolled: no backtracking), or one bracket.
_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_INNERMOST = re.compile(rb"\[\]|\{\}")
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))
_STEP = {b"[": 1, b"{": 1, b"]": -1, b"}": -1}


def _first_too_deep(data: bytes, limit: int) -> int | None:
    """The offset of the first bracket past ``limit`` levels (a token by token scan)."""
    depth = 0
    for match in _TOKENS.finditer(data):
        depth += _STEP.get(match.group(), 0)
        if depth > limit:
            return match.start()
    return None


def json_too_deep(text: str | bytes, limit: int = JSON_DEPTH.limit) -> int | None:
    """The offset (in UTF-8 bytes) of the first bracket that opens level ``limit + 1`` of the
    JSON ``text``, or None. Brackets inside strings do not count. Cheap: text with at most
    ``limit`` opening brackets is not looked at further; otherwise the strings are cut out and
    the other characters dropped (C speed), and each pass removes the innermost pairs, at
    most ``limit`` passes (ordinary JSON, a few levels deep, is empty after a few). Only too
    deep text is then scanned token by token, to say where."""
    data = text.encode() if isinstance(text, str) else text
    if data.count(b"[") + data.count(b"{") <= limit:
        return None
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    if re.search(rb"[\[{]{%d}" % (limit + 1), brackets):  # that many opened in a row
        return _first_too_deep(data, limit)
    for _ in range(limit):
        if not brackets:
            return None
        shorter = _INNERMOST.sub(b"", brackets)
        if len(shorter) == len(brackets):  # unbalanced, so not JSON: the parser says so,
            return _first_too_deep(data, limit)  # unless it would recurse too deep first
        brackets = shorter
    return _first_too_deep(data, limit) if brackets else None


class JsonTooDeep(json.JSONDecodeError):
    """JSON nested deeper than ``JSON_DEPTH``; a JSONDecodeError, so every reader that handles
    bad JSON handles it (its text ends "line L column C (char N)")."""


def json_check_depth(text: str | bytes) -> None:
    """Raise JsonTooDeep when ``text`` nests deeper than ``JSON_DEPTH``."""
    at = json_too_deep(text)
    if at is not None:
        if isinstance(text, bytes):
            doc = text[: at + 1].decode("utf-8", "replace")
        else:
            doc = text.encode()[: at + 1].decode("utf-8", "replace")
        raise JsonTooDeep(
            f"JSON nested deeper than {JSON_DEPTH.limit} levels (the limit)", doc, len(doc) - 1
        )


class JsonHasNul(json.JSONDecodeError):
    """JSON whose strings hold a NUL character (``\\u0000``), which no column can store."""


def json_loads(text: str | bytes, **kwargs: Any) -> Any:
    """``json.loads`` for text from a request or a file, within the limits: too deep raises
    JsonTooDeep (instead of exhausting the stack), a NUL character in a string JsonHasNul
    naming where it is. Both are JSONDecodeErrors."""
    json_check_depth(text)
    try:
        value = json.loads(text, **kwargs)
    except RecursionError:  # not reached after the check; kept as a last guard
        raise JsonTooDeep(f"JSON nested deeper than {JSON_DEPTH.limit} levels", "", 0) from None
    where = json_text_nul_path(text, value)
    if where is not None:
        doc = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        raise JsonHasNul(f"{where} {NUL_MESSAGE}", doc, max(doc.find("\\u0000"), 0))
    return value
